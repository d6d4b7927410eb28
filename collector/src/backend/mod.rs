//! The collector's two backends behind one set of traits.
//!
//! [`Verbs`] is the handful of verbs the collector needs from an RDMA device: register memory, create an
//! RC QP and move it through INIT, RTR and RTS. The setup logic ([`register_arena`], [`connect_qp`],
//! [`VerbsOpener`]) is written against it, so tests drive it with a fake device, and
//! [`ibverbs::IbvDevice`](self::ibverbs) (feature `ibverbs`) drives a real one. The software responder
//! plugs into the control channel through [`soft::SoftOpener`].

#[cfg(feature = "ibverbs")]
pub mod ibverbs;
pub mod soft;

use std::net::Ipv4Addr;
use std::sync::Mutex;

use dta_protocol::control::{Hello, RequesterQp, ResponderQp};

use crate::control::QpOpener;
use crate::error::{Error, Result};
use crate::memory::Arena;

/// `IBV_ACCESS_LOCAL_WRITE`.
pub const ACCESS_LOCAL_WRITE: u32 = 1;
/// `IBV_ACCESS_REMOTE_WRITE`.
pub const ACCESS_REMOTE_WRITE: u32 = 2;
/// `IBV_ACCESS_REMOTE_ATOMIC`.
pub const ACCESS_REMOTE_ATOMIC: u32 = 8;
/// What every region and every QP allows: the translator WRITEs and FETCH_ADDs, nothing reads.
pub const REGION_ACCESS: u32 = ACCESS_LOCAL_WRITE | ACCESS_REMOTE_WRITE | ACCESS_REMOTE_ATOMIC;
/// Smallest `max_dest_rd_atomic` the collector sets (DESIGN.md section 5).
pub const MIN_DEST_RD_ATOMIC: u8 = 16;

/// Attributes of the INIT → RTR transition: who the QP talks to and what it expects first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtrAttrs {
    /// The translator's QPN.
    pub dest_qpn: u32,
    /// The translator's starting PSN: the first PSN this QP accepts.
    pub rq_psn: u32,
    /// The translator's GID (RoCEv2: IPv4-mapped IPv6).
    pub remote_gid: [u8; 16],
    /// Local GID table index to send responses from.
    pub sgid_index: u8,
    /// Path MTU in bytes (256..=4096).
    pub path_mtu: u32,
    /// Atomics in flight the responder accepts.
    pub max_dest_rd_atomic: u8,
    /// RNR NAK timer code; the collector never posts receives, so the value only matters for SENDs.
    pub min_rnr_timer: u8,
}

/// Attributes of the RTR → RTS transition. The collector never sends requests, so these only have to be
/// valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtsAttrs {
    /// Send PSN.
    pub sq_psn: u32,
    /// Local ACK timeout code.
    pub timeout: u8,
    /// Retries.
    pub retry_cnt: u8,
    /// RNR retries.
    pub rnr_retry: u8,
}

/// The RoCE flavour of a GID table entry (`enum ibv_gid_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GidKind {
    /// InfiniBand (no Ethernet encapsulation).
    Ib,
    /// RoCE v1: GRH directly over Ethernet, EtherType 0x8915. The translator does not speak it.
    RoceV1,
    /// RoCE v2: over UDP port 4791, what the translator sends.
    RoceV2,
}

/// One valid entry of a port's GID table (`struct ibv_gid_entry`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GidEntry {
    /// Index in the table: the `sgid_index` a QP's address vector names.
    pub index: u32,
    /// The GID; for RoCE, an IPv6 address or an IPv4-mapped one (`::ffff:a.b.c.d`).
    pub gid: [u8; 16],
    /// Its type.
    pub kind: GidKind,
    /// The network device the entry belongs to (0 when none, as on InfiniBand).
    pub ifindex: u32,
}

impl std::fmt::Display for GidEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.kind {
            GidKind::Ib => "IB",
            GidKind::RoceV1 => "RoCE v1",
            GidKind::RoceV2 => "RoCE v2",
        };
        write!(
            f,
            "[{}] {} {kind} (ifindex {})",
            self.index,
            std::net::Ipv6Addr::from(self.gid),
            self.ifindex
        )
    }
}

/// The IPv4-mapped GID of `ip` (`::ffff:a.b.c.d`), as RoCE v2 names an IPv4 endpoint.
pub fn ipv4_gid(ip: Ipv4Addr) -> [u8; 16] {
    ip.to_ipv6_mapped().octets()
}

/// The entry a QP must send from to answer the translator over RoCE v2 at `ip`: the RoCE v2 GID whose
/// address is `ip`. Index 0 is the IPv6 link-local entry on rxe and on ConnectX NICs, and the order of the
/// rest follows the order in which addresses were configured, so an index cannot be assumed.
pub fn roce_v2_gid(table: &[GidEntry], ip: Ipv4Addr) -> Result<GidEntry> {
    let want = ipv4_gid(ip);
    table
        .iter()
        .find(|e| e.kind == GidKind::RoceV2 && e.gid == want)
        .copied()
        .ok_or_else(|| {
            let listed: Vec<String> = table.iter().map(ToString::to_string).collect();
            Error::Rdma(format!(
                "ibv_query_gid_table: no RoCE v2 GID ::ffff:{ip} on port 1 (the collector's [collector] ip); \
                 the table has {}. Configure {ip} on the RDMA device's network interface, or set \
                 [collector] ip to one of its addresses",
                if listed.is_empty() {
                    "no valid entries".to_string()
                } else {
                    listed.join(", ")
                }
            ))
        })
}

/// The verbs the collector uses. Implementations report failures as [`Error::Rdma`] with the verb's name.
pub trait Verbs: Send {
    /// The valid entries of port 1's GID table.
    fn gid_table(&mut self) -> Result<Vec<GidEntry>>;
    /// Registers `[addr, addr + len)` with `access` and returns its R_Key.
    fn register(&mut self, addr: u64, len: usize, access: u32) -> Result<u32>;
    /// Creates an RC QP in RESET and returns its QPN.
    fn create_qp(&mut self) -> Result<u32>;
    /// RESET → INIT with the access flags remote requests may use.
    fn modify_to_init(&mut self, qpn: u32, access: u32) -> Result<()>;
    /// INIT → RTR.
    fn modify_to_rtr(&mut self, qpn: u32, attrs: &RtrAttrs) -> Result<()>;
    /// RTR → RTS.
    fn modify_to_rts(&mut self, qpn: u32, attrs: &RtsAttrs) -> Result<()>;
    /// Destroys a QP.
    fn destroy_qp(&mut self, qpn: u32) -> Result<()>;
}

/// Registers every region of `arena` and records the R_Keys the device gave.
pub fn register_arena(verbs: &mut dyn Verbs, arena: &mut Arena) -> Result<()> {
    let slots = arena.slots().to_vec();
    for (i, s) in slots.iter().enumerate() {
        let rkey = verbs.register(s.region.va, s.len(), REGION_ACCESS)?;
        arena.set_rkey(i, rkey);
    }
    Ok(())
}

/// QP settings shared by every connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpSettings {
    /// Path MTU in bytes.
    pub path_mtu: u32,
    /// Atomics in flight; raised to [`MIN_DEST_RD_ATOMIC`] if configured lower.
    pub max_dest_rd_atomic: u8,
    /// Local GID index.
    pub sgid_index: u8,
}

/// Creates one RC QP for translator QP `peer` and moves it INIT → RTR → RTS. A QP that fails a transition is
/// destroyed before the error is returned.
pub fn connect_qp(
    verbs: &mut dyn Verbs,
    peer: &RequesterQp,
    remote_gid: [u8; 16],
    settings: &QpSettings,
) -> Result<ResponderQp> {
    let qpn = verbs.create_qp()?;
    let rtr = RtrAttrs {
        dest_qpn: peer.qpn,
        rq_psn: peer.start_psn,
        remote_gid,
        sgid_index: settings.sgid_index,
        path_mtu: settings.path_mtu,
        max_dest_rd_atomic: settings.max_dest_rd_atomic.max(MIN_DEST_RD_ATOMIC),
        // 12 = 0.64 ms, a common default.
        min_rnr_timer: 12,
    };
    let rts = RtsAttrs {
        sq_psn: 0,
        timeout: 14,
        retry_cnt: 7,
        rnr_retry: 7,
    };
    let steps = verbs
        .modify_to_init(qpn, REGION_ACCESS)
        .and_then(|()| verbs.modify_to_rtr(qpn, &rtr))
        .and_then(|()| verbs.modify_to_rts(qpn, &rts));
    if let Err(e) = steps {
        let _ = verbs.destroy_qp(qpn);
        return Err(e);
    }
    Ok(ResponderQp {
        qpn,
        peer_qpn: peer.qpn,
    })
}

/// The control channel's [`QpOpener`] on a verbs device: creates and connects one RC QP per translator QP,
/// and destroys it when the control server's QP table replaces or reclaims it.
pub struct VerbsOpener<V: Verbs> {
    verbs: Mutex<V>,
    settings: QpSettings,
}

impl<V: Verbs> VerbsOpener<V> {
    /// An opener on `verbs`.
    pub fn new(verbs: V, settings: QpSettings) -> Self {
        VerbsOpener {
            verbs: Mutex::new(verbs),
            settings,
        }
    }

    /// Runs `f` on the device (tests inspect fakes this way).
    pub fn with_verbs<T>(&self, f: impl FnOnce(&mut V) -> T) -> T {
        f(&mut self.verbs.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl<V: Verbs> QpOpener for VerbsOpener<V> {
    fn open_qp(&self, hello: &Hello, peer: &RequesterQp) -> std::result::Result<u32, String> {
        self.with_verbs(|v| connect_qp(v, peer, hello.gid, &self.settings))
            .map(|q| q.qpn)
            .map_err(|e| e.to_string())
    }

    fn close_qp(&self, qpn: u32) {
        if let Err(e) = self.with_verbs(|v| v.destroy_qp(qpn)) {
            log::warn!("destroying QP {qpn:#x}: {e}");
        }
    }
}

#[cfg(test)]
mod tests;
