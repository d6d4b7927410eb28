//! The software responder's port through dta-netio: an AF_PACKET socket on an interface, or a DPDK port
//! (a PCI device the EAL probed, or vdev devargs such as `net_af_packet0,iface=eth1`, hot-plugged).

use std::time::Duration;

use dta_netio::{AfPacket, AfPacketConfig, NetioError, RxBurst, TxBurst};
use serde::Deserialize;

use crate::error::{Error, Result};

/// Which packet I/O drives the software responder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IoKind {
    /// A raw socket on a kernel interface.
    #[default]
    AfPacket,
    /// A DPDK port.
    Dpdk,
}

/// What the I/O loop needs from a port.
pub trait ResponderPort: RxBurst + TxBurst + Send {
    /// Blocks up to `timeout` for input; a polled backend sleeps briefly instead, so an idle collector does
    /// not spin a core.
    fn wait(&self, timeout: Duration) -> std::result::Result<(), NetioError>;
}

impl ResponderPort for AfPacket {
    fn wait(&self, timeout: Duration) -> std::result::Result<(), NetioError> {
        self.wait_readable(timeout).map(|_| ())
    }
}

#[cfg(feature = "dpdk")]
impl ResponderPort for dta_netio::dpdk::DpdkQueue {
    fn wait(&self, timeout: Duration) -> std::result::Result<(), NetioError> {
        std::thread::sleep(timeout.min(Duration::from_micros(50)));
        Ok(())
    }
}

/// An open port.
pub struct Port {
    /// As configured (interface name or DPDK device name).
    pub name: String,
    /// The queue the loop polls.
    pub io: Box<dyn ResponderPort>,
    /// Keeps a DPDK port started while its queue is in use.
    _keep: Option<Box<dyn Send>>,
}

impl Port {
    /// Opens `spec` with `kind`; `eal_args` initialise DPDK (once per process).
    pub fn open(kind: IoKind, spec: &str, eal_args: &[String]) -> Result<Port> {
        match kind {
            IoKind::AfPacket => {
                let cfg = AfPacketConfig {
                    // Responses come from the collector's configured MAC, which need not be the interface's.
                    promiscuous: true,
                    // A translator's burst of a full window per QP must fit while the loop is busy.
                    rcvbuf: 32 << 20,
                    sndbuf: 8 << 20,
                    max_burst: 64,
                };
                let sock = AfPacket::open(spec, &cfg).map_err(|e| {
                    Error::Config(format!(
                        "AF_PACKET on {spec} (needs root or CAP_NET_RAW): {e}"
                    ))
                })?;
                Ok(Port {
                    name: spec.to_string(),
                    io: Box::new(sock),
                    _keep: None,
                })
            }
            IoKind::Dpdk => open_dpdk(spec, eal_args),
        }
    }
}

#[cfg(feature = "dpdk")]
fn open_dpdk(spec: &str, eal_args: &[String]) -> Result<Port> {
    use dta_netio::dpdk::{eal_init, Port as DpdkPort, PortConfig};
    let dpdk = |what: String, e: NetioError| Error::Config(format!("{what}: {e}"));
    let eal = eal_init(eal_args.to_vec())
        .map_err(|e| dpdk(format!("DPDK EAL init with {eal_args:?}"), e))?;
    let cfg = PortConfig {
        queues: 1,
        ..PortConfig::default()
    };
    let (port, mut queues) = DpdkPort::open_spec(eal, spec, &cfg)
        .map_err(|e| dpdk(format!("opening DPDK port {spec}"), e))?;
    let queue = queues
        .pop()
        .ok_or_else(|| Error::Config(format!("DPDK port {spec} has no queue")))?;
    let name = spec.split_once(',').map_or(spec, |(n, _)| n).to_string();
    Ok(Port {
        name,
        io: Box::new(queue),
        _keep: Some(Box::new(port)),
    })
}

#[cfg(not(feature = "dpdk"))]
fn open_dpdk(_spec: &str, _eal_args: &[String]) -> Result<Port> {
    Err(Error::Config(
        "this build has no DPDK support (feature `dpdk` off); use io = \"af_packet\"".into(),
    ))
}
