//! Opening the translator's ports through dta-netio: AF_PACKET sockets, or DPDK ports (EAL initialised
//! once with the configured arguments, vdev devargs hot-plugged). Every port is one queue pair owned by the
//! I/O thread.

use anyhow::{Context, Result};
use dta_netio::AfPacketConfig;

use super::settings::{IoKind, IoSection};

pub use dta_netio::OpenPort as Port;

/// Opens every configured port.
pub fn open(io: &IoSection) -> Result<Vec<Port>> {
    match io.kind {
        IoKind::AfPacket => io
            .ports
            .iter()
            .map(|p| open_af_packet(p, io.burst))
            .collect(),
        IoKind::Dpdk => open_dpdk(io),
    }
}

fn open_af_packet(ifname: &str, burst: usize) -> Result<Port> {
    Port::af_packet(ifname, &AfPacketConfig::daemon(burst))
        .with_context(|| format!("opening AF_PACKET on {ifname} (needs root or CAP_NET_RAW)"))
}

#[cfg(feature = "dpdk")]
fn open_dpdk(io: &IoSection) -> Result<Vec<Port>> {
    use dta_netio::dpdk::{eal_init, register_thread};
    let eal = eal_init(io.eal_args.clone())
        .with_context(|| format!("DPDK EAL init with {:?}", io.eal_args))?;
    register_thread(eal).context("registering the I/O thread with DPDK")?;
    io.ports
        .iter()
        .map(|spec| {
            Port::dpdk(spec, &io.eal_args, io.burst as u16)
                .with_context(|| format!("opening DPDK port {spec}"))
        })
        .collect()
}

#[cfg(not(feature = "dpdk"))]
fn open_dpdk(_io: &IoSection) -> Result<Vec<Port>> {
    anyhow::bail!("this build has no DPDK support (feature `dpdk` off); use --io af_packet")
}
