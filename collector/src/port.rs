//! The software responder's port through dta-netio: an AF_PACKET socket on an interface, or a DPDK port
//! (a PCI device the EAL probed, or vdev devargs such as `net_af_packet0,iface=eth1`, hot-plugged).

use dta_netio::{AfPacketConfig, OpenPort};

use crate::error::{Error, Result};

/// Which packet I/O drives the software responder (dta-netio's, shared with the translator).
pub use dta_netio::IoKind;

/// Opens `spec` with `kind`; `eal_args` initialise DPDK (once per process).
pub fn open(kind: IoKind, spec: &str, eal_args: &[String]) -> Result<OpenPort> {
    match kind {
        IoKind::AfPacket => OpenPort::af_packet(spec, &AfPacketConfig::daemon(64)).map_err(|e| {
            Error::Config(format!(
                "AF_PACKET on {spec} (needs root or CAP_NET_RAW): {e}"
            ))
        }),
        IoKind::Dpdk => open_dpdk(spec, eal_args),
    }
}

#[cfg(feature = "dpdk")]
fn open_dpdk(spec: &str, eal_args: &[String]) -> Result<OpenPort> {
    OpenPort::dpdk(spec, eal_args, 64).map_err(|e| {
        Error::Config(format!(
            "DPDK port {spec} (EAL arguments {eal_args:?}): {e}"
        ))
    })
}

#[cfg(not(feature = "dpdk"))]
fn open_dpdk(_spec: &str, _eal_args: &[String]) -> Result<OpenPort> {
    Err(Error::Config(
        "this build has no DPDK support (feature `dpdk` off); use io = \"af_packet\"".into(),
    ))
}
