//! A polled port as the daemons use it: one queue pair of an AF_PACKET socket or a DPDK port, with a way to
//! wait for input that does not spin a core on a shared machine. The translator's I/O thread and the
//! collector's software responder both open their ports here.

use std::time::Duration;

use crate::{AfPacket, AfPacketConfig, NetioError, RxBurst, RxStats, TxBurst, TxStats};

/// What a daemon's I/O loop needs from a port.
pub trait PollPort: RxBurst + TxBurst + Send {
    /// Blocks up to `timeout` for a frame to arrive; backends that cannot wait (DPDK polls) sleep briefly
    /// instead, which keeps an idle daemon from spinning a core.
    fn wait(&self, timeout: Duration) -> Result<(), NetioError>;

    /// The DPDK queue behind this port, for a loop that runs to completion on it and moves mbufs instead of
    /// copying frames through batches; `None` for every other backend.
    #[cfg(feature = "dpdk")]
    fn dpdk_queue(&mut self) -> Option<&mut crate::dpdk::DpdkQueue> {
        None
    }
}

impl PollPort for AfPacket {
    fn wait(&self, timeout: Duration) -> Result<(), NetioError> {
        self.wait_readable(timeout).map(|_| ())
    }
}

#[cfg(feature = "dpdk")]
impl PollPort for crate::dpdk::DpdkQueue {
    fn wait(&self, timeout: Duration) -> Result<(), NetioError> {
        std::thread::sleep(timeout.min(Duration::from_micros(50)));
        Ok(())
    }

    fn dpdk_queue(&mut self) -> Option<&mut crate::dpdk::DpdkQueue> {
        Some(self)
    }
}

/// One open port: its queue pair, and (DPDK) the device kept started while the queue is in use.
pub struct OpenPort {
    /// As configured: an interface name, or a DPDK device name (the part of a vdev spec before the comma).
    pub name: String,
    /// Its MAC address.
    pub mac: [u8; 6],
    /// The queue pair.
    pub io: Box<dyn PollPort>,
    _keep: Option<Box<dyn Send>>,
}

impl OpenPort {
    /// An AF_PACKET socket on `ifname` (in the calling thread's network namespace).
    pub fn af_packet(ifname: &str, config: &AfPacketConfig) -> Result<Self, NetioError> {
        let sock = AfPacket::open(ifname, config)?;
        Ok(OpenPort {
            name: ifname.to_string(),
            mac: sock.mac(),
            io: Box::new(sock),
            _keep: None,
        })
    }

    /// Queue 0 of DPDK port `spec`: a device the EAL knows (a PCI address) or vdev devargs such as
    /// `net_af_packet0,iface=eth1`, hot-plugged. The EAL is initialised with `eal_args` if it is not yet.
    #[cfg(feature = "dpdk")]
    pub fn dpdk(spec: &str, eal_args: &[String], max_burst: u16) -> Result<Self, NetioError> {
        use crate::dpdk::{eal_init, Port, PortConfig};
        let eal = eal_init(eal_args.to_vec())?;
        let cfg = PortConfig {
            queues: 1,
            max_burst,
            ..PortConfig::default()
        };
        let (port, mut queues) = Port::open_spec(eal, spec, &cfg)?;
        let queue = queues
            .pop()
            .ok_or_else(|| NetioError::Config(format!("DPDK port {spec} has no queue")))?;
        Ok(OpenPort {
            name: spec.split_once(',').map_or(spec, |(n, _)| n).to_string(),
            mac: port.mac(),
            io: Box::new(queue),
            _keep: Some(Box::new(port)),
        })
    }

    /// The DPDK queue pair, when this is a DPDK port (see [`PollPort::dpdk_queue`]).
    #[cfg(feature = "dpdk")]
    pub fn dpdk_queue(&mut self) -> Option<&mut crate::dpdk::DpdkQueue> {
        self.io.dpdk_queue()
    }

    /// Receive counters.
    pub fn rx_stats(&self) -> RxStats {
        self.io.rx_stats()
    }

    /// Transmit counters.
    pub fn tx_stats(&self) -> TxStats {
        self.io.tx_stats()
    }
}
