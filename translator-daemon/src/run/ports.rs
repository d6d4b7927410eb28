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

/// DPDK ports set up for run-to-completion workers: every port with one queue pair per worker.
#[cfg(feature = "dpdk")]
pub struct DpdkPorts {
    /// The started ports (kept until the queues are dropped), in configured order.
    pub ports: Vec<dta_netio::dpdk::Port>,
    /// Per worker, its queue of every port, in port order.
    pub queues: Vec<Vec<dta_netio::dpdk::DpdkQueue>>,
    /// Each port's name, as configured (the part of a vdev spec before the comma).
    pub names: Vec<String>,
    /// The EAL.
    pub eal: &'static dta_netio::dpdk::Eal,
}

/// Opens every configured DPDK port with `workers` queue pairs: RSS spreads flows over them where the device
/// hashes IP/UDP; a vdev that does not (`net_af_packet` with `qpairs=N`, `net_memif`) delivers on each queue
/// what it delivers.
#[cfg(feature = "dpdk")]
pub fn open_dpdk_queues(io: &IoSection, workers: usize) -> Result<DpdkPorts> {
    use dta_netio::dpdk::{eal_init, Port as DpdkPort, PortConfig};
    let eal = eal_init(io.eal_args.clone())
        .with_context(|| format!("DPDK EAL init with {:?}", io.eal_args))?;
    let nq = u16::try_from(workers).context("worker count")?;
    let cfg = PortConfig {
        queues: nq,
        max_burst: io.burst as u16,
        require_rss: false,
        // Every RX ring full, the TX rings, the handoff rings and the bursts in flight, per worker.
        mbufs: (8192 * u32::from(nq)).max(8191),
        ..PortConfig::default()
    };
    let mut ports = Vec::new();
    let mut queues: Vec<Vec<_>> = (0..workers).map(|_| Vec::new()).collect();
    let mut names = Vec::new();
    for spec in &io.ports {
        let (port, qs) = DpdkPort::open_spec(eal, spec, &cfg).with_context(|| {
            format!(
                "opening DPDK port {spec} with {workers} queue pair(s), one per worker (a vdev \
                     needs as many: `qpairs={workers}` for net_af_packet, `queues` for net_null)"
            )
        })?;
        for (k, q) in qs.into_iter().enumerate() {
            queues[k].push(q);
        }
        names.push(
            spec.split_once(',')
                .map_or(spec.as_str(), |(n, _)| n)
                .to_string(),
        );
        ports.push(port);
    }
    Ok(DpdkPorts {
        ports,
        queues,
        names,
        eal,
    })
}
