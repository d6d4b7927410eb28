//! The responder's settings and state, shared by the general path (`core.rs`, which owns the methods) and
//! the fast path (`fast.rs`, which reads the same fields). Defined below both so that each depends on it
//! and neither on the other's definitions.

use super::bounds::Bounds;
use super::qp_table::QpTable;
#[cfg(doc)]
use super::stats::DropReason;
use super::stats::Stats;
use crate::memory::RegionSlot;

/// UDP source ports a request may come from: 0xC000..=0xFFFF, the range the Linux RDMA core gives RoCE v2
/// flows (`IB_ROCE_UDP_ENCAP_VALID_PORT_MIN..=MAX`, IANA's dynamic ports) and where the translator's
/// `udp_src_port_base` (default 49152) and DART's default port lie. A translator configured below it is
/// dropped as [`DropReason::WrongSource`]; the hello does not declare ports, so the range is fixed.
pub const ROCEV2_SOURCE_PORTS: std::ops::RangeInclusive<u16> = 0xC000..=0xFFFF;

/// Settings of the responder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponderConfig {
    /// Atomics answered from the cache per QP; 0 refuses every atomic. Advertised to the translator.
    pub max_dest_rd_atomic: u32,
    /// Largest WRITE payload accepted (the advertised path MTU).
    pub path_mtu: u32,
    /// When set, frames to another IPv4 address are dropped (an AF_PACKET socket sees all traffic).
    pub local_ip: Option<[u8; 4]>,
    /// When set, RoCE to any destination MAC but this one and broadcast is dropped
    /// ([`DropReason::ForeignMac`]), as a NIC's address filter drops it before rxe could see it.
    pub local_mac: Option<[u8; 6]>,
    /// The VLAN the responder sits on, as a NIC's (VLAN) interface would: `None` takes untagged frames and
    /// VID 0 priority tags, `Some(vid)` only frames tagged with that VID; anything else is dropped
    /// ([`DropReason::Vlan`]). A response carries the request's tag (VID and priority) back.
    pub vlan: Option<u16>,
}

impl Default for ResponderConfig {
    fn default() -> Self {
        ResponderConfig {
            max_dest_rd_atomic: 16,
            path_mtu: 1024,
            local_ip: None,
            local_mac: None,
            vlan: None,
        }
    }
}

/// The software RoCEv2 responder.
#[derive(Debug)]
pub struct Responder {
    pub(super) config: ResponderConfig,
    pub(super) slots: Vec<RegionSlot>,
    /// The slots' R_Keys and VA ranges as the fast path checks them.
    pub(super) bounds: Bounds,
    pub(super) qps: QpTable,
    pub(super) next_qpn: u32,
    pub(super) stats: Stats,
    /// A tagged request without its tag, handled as untagged (kept to allocate once).
    pub(super) untagged: Vec<u8>,
}
