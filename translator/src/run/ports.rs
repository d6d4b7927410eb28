//! Opening the translator's ports through dta-netio: AF_PACKET sockets, or DPDK ports (EAL initialised
//! once with the configured arguments, vdev devargs hot-plugged). Every port is one queue pair owned by the
//! I/O thread.

use std::time::Duration;

use anyhow::{Context, Result};
use dta_netio::{AfPacket, AfPacketConfig, NetioError, RxBurst, RxStats, TxBurst, TxStats};

use super::settings::{IoKind, IoSection};

/// What the I/O thread needs from a port.
pub trait PortIo: RxBurst + TxBurst + Send {
    /// Blocks up to `timeout` for a frame to arrive; backends that cannot wait (DPDK polls) sleep briefly
    /// instead, which keeps an idle translator from spinning a core on a shared machine.
    fn wait(&self, timeout: Duration) -> Result<(), NetioError>;
}

impl PortIo for AfPacket {
    fn wait(&self, timeout: Duration) -> Result<(), NetioError> {
        self.wait_readable(timeout).map(|_| ())
    }
}

#[cfg(feature = "dpdk")]
impl PortIo for dta_netio::dpdk::DpdkQueue {
    fn wait(&self, timeout: Duration) -> Result<(), NetioError> {
        std::thread::sleep(timeout.min(Duration::from_micros(50)));
        Ok(())
    }
}

/// One open port.
pub struct Port {
    /// As configured.
    pub name: String,
    /// Its MAC address.
    pub mac: [u8; 6],
    /// The queue pair.
    pub io: Box<dyn PortIo>,
    /// Keeps a DPDK port up while its queue is in use.
    _keep: Option<Box<dyn Send>>,
}

impl Port {
    /// Receive counters.
    pub fn rx_stats(&self) -> RxStats {
        self.io.rx_stats()
    }
    /// Transmit counters.
    pub fn tx_stats(&self) -> TxStats {
        self.io.tx_stats()
    }
}

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
    let cfg = AfPacketConfig {
        // A bump in the wire forwards frames for every MAC, and reports are addressed to the collector.
        promiscuous: true,
        // Large buffers absorb report bursts between two bursts of the I/O thread.
        rcvbuf: 32 << 20,
        sndbuf: 8 << 20,
        max_burst: burst,
    };
    let sock = AfPacket::open(ifname, &cfg)
        .with_context(|| format!("opening AF_PACKET on {ifname} (needs root or CAP_NET_RAW)"))?;
    Ok(Port {
        name: ifname.to_string(),
        mac: sock.mac(),
        io: Box::new(sock),
        _keep: None,
    })
}

#[cfg(feature = "dpdk")]
fn open_dpdk(io: &IoSection) -> Result<Vec<Port>> {
    use dta_netio::dpdk::{eal_init, register_thread, Port as DpdkPort, PortConfig};
    let eal = eal_init(io.eal_args.clone())
        .with_context(|| format!("DPDK EAL init with {:?}", io.eal_args))?;
    register_thread(eal).context("registering the I/O thread with DPDK")?;
    let mut out = Vec::new();
    for spec in &io.ports {
        // `name,key=value` is a vdev to hot-plug; a bare name is a device the EAL already has.
        let name = spec.split_once(',').map_or(spec.as_str(), |(name, _)| name);
        let cfg = PortConfig {
            queues: 1,
            max_burst: io.burst as u16,
            ..PortConfig::default()
        };
        let (port, mut queues) = DpdkPort::open_spec(eal, spec, &cfg)
            .with_context(|| format!("opening DPDK port {spec}"))?;
        let queue = queues.pop().context("DPDK port without a queue")?;
        out.push(Port {
            name: name.to_string(),
            mac: port.mac(),
            io: Box::new(queue),
            _keep: Some(Box::new(port)),
        });
    }
    Ok(out)
}

#[cfg(not(feature = "dpdk"))]
fn open_dpdk(_io: &IoSection) -> Result<Vec<Port>> {
    anyhow::bail!("this build has no DPDK support (feature `dpdk` off); use --io af_packet")
}
