//! The collector's two backends behind one set of traits.
//!
//! [`Verbs`] is the handful of verbs the collector needs from an RDMA device: register memory, create an
//! RC QP and move it through INIT, RTR and RTS. The setup logic ([`register_arena`], [`connect_qp`],
//! [`VerbsOpener`]) is written against it, so tests drive it with a fake device, and
//! [`ibverbs::IbvDevice`](self::ibverbs) (feature `ibverbs`) drives a real one. The software responder
//! plugs into the control channel through [`soft::SoftOpener`].
//!
//! (Over 500 lines: 270 of them are the tests beside the code.)

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
mod tests {
    use super::*;
    use crate::control::{QpLimits, QpStats, QpTable};
    use crate::error::Error;
    use std::cell::RefCell;

    thread_local! {
        /// The control server's QP table (which replaces a translator QP's old QP), one per test thread.
        static TABLE: RefCell<QpTable> = RefCell::new(QpTable::default());
    }

    impl<V: Verbs> VerbsOpener<V> {
        /// A hello as the control server handles it.
        fn open(&self, h: &Hello) -> std::result::Result<Vec<ResponderQp>, String> {
            TABLE.with(|t| {
                t.borrow_mut()
                    .open(self, h, 1, &QpLimits::default(), &QpStats::default())
            })
        }
    }
    use dta_protocol::control::CONTROL_VERSION;
    use dta_protocol::layout::{Geometry, KeyIncrementGeometry, KeyWriteGeometry};

    /// Records every verb call; `fail_rtr` makes the RTR transition fail.
    #[derive(Default)]
    struct FakeDevice {
        calls: Vec<String>,
        next_qpn: u32,
        fail_rtr: bool,
    }

    impl Verbs for FakeDevice {
        fn gid_table(&mut self) -> Result<Vec<GidEntry>> {
            Ok(rxe_table().to_vec())
        }
        fn register(&mut self, addr: u64, len: usize, access: u32) -> Result<u32> {
            self.calls
                .push(format!("reg_mr len={len} access={access:#x}"));
            let _ = addr;
            Ok(0xAB00 + self.calls.len() as u32)
        }
        fn create_qp(&mut self) -> Result<u32> {
            self.next_qpn += 1;
            self.calls
                .push(format!("create_qp {:#x}", 0x40 + self.next_qpn));
            Ok(0x40 + self.next_qpn)
        }
        fn modify_to_init(&mut self, qpn: u32, access: u32) -> Result<()> {
            self.calls.push(format!("init {qpn:#x} access={access:#x}"));
            Ok(())
        }
        fn modify_to_rtr(&mut self, qpn: u32, a: &RtrAttrs) -> Result<()> {
            self.calls.push(format!(
                "rtr {qpn:#x} dest={:#x} rq_psn={:#x} gid_last={} mtu={} max_dest_rd_atomic={}",
                a.dest_qpn, a.rq_psn, a.remote_gid[15], a.path_mtu, a.max_dest_rd_atomic
            ));
            if self.fail_rtr {
                return Err(Error::Rdma("ibv_modify_qp(RTR): Invalid argument".into()));
            }
            Ok(())
        }
        fn modify_to_rts(&mut self, qpn: u32, a: &RtsAttrs) -> Result<()> {
            self.calls.push(format!("rts {qpn:#x} sq_psn={}", a.sq_psn));
            Ok(())
        }
        fn destroy_qp(&mut self, qpn: u32) -> Result<()> {
            self.calls.push(format!("destroy {qpn:#x}"));
            Ok(())
        }
    }

    /// The GID table rxe shows on a veth with 198.18.0.2 (`ibv_devinfo -v` in the guest): the IPv6
    /// link-local entry first, then the IPv4-mapped one, both RoCE v2; plus a RoCE v1 twin of the IPv4
    /// entry as a ConnectX port lists it.
    fn rxe_table() -> [GidEntry; 3] {
        let mut link_local = [0u8; 16];
        link_local[..2].copy_from_slice(&[0xfe, 0x80]);
        link_local[8..].copy_from_slice(&[0x28, 0x94, 0x3c, 0xff, 0xfe, 0x5b, 0xec, 0x66]);
        let mapped = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 0, 2];
        [
            GidEntry {
                index: 0,
                gid: link_local,
                kind: GidKind::RoceV2,
                ifindex: 7,
            },
            GidEntry {
                index: 1,
                gid: mapped,
                kind: GidKind::RoceV1,
                ifindex: 7,
            },
            GidEntry {
                index: 3,
                gid: mapped,
                kind: GidKind::RoceV2,
                ifindex: 7,
            },
        ]
    }

    #[test]
    fn the_source_gid_is_the_roce_v2_entry_of_the_collector_address() {
        let table = rxe_table();
        let e = roce_v2_gid(&table, Ipv4Addr::new(198, 18, 0, 2)).unwrap();
        // Not index 0 (link-local, what the collector used to pass) nor 1 (the RoCE v1 twin).
        assert_eq!(e.index, 3);
        assert_eq!(
            ipv4_gid(Ipv4Addr::new(198, 18, 0, 2)),
            [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 0, 2]
        );
        let err = roce_v2_gid(&table, Ipv4Addr::new(198, 18, 0, 9))
            .unwrap_err()
            .to_string();
        assert!(err.contains("no RoCE v2 GID ::ffff:198.18.0.9"), "{err}");
        assert!(
            err.contains("[0] fe80::2894:3cff:fe5b:ec66 RoCE v2 (ifindex 7)"),
            "the error lists the table: {err}"
        );
        assert!(err.contains("[3] ::ffff:198.18.0.2 RoCE v2"), "{err}");
        let empty = roce_v2_gid(&[], Ipv4Addr::new(198, 18, 0, 2)).unwrap_err();
        assert!(empty.to_string().contains("no valid entries"), "{empty}");
    }

    fn hello(qps: &[(u32, u32)]) -> Hello {
        hello_from([198, 18, 0, 1], qps)
    }

    fn hello_from(ip: [u8; 4], qps: &[(u32, u32)]) -> Hello {
        Hello {
            version: CONTROL_VERSION,
            token: "t".into(),
            mac: [2, 0, 0, 0, 0, ip[3]],
            ip,
            gid: ipv4_gid(Ipv4Addr::from(ip)),
            qps: qps
                .iter()
                .map(|&(qpn, start_psn)| RequesterQp { qpn, start_psn })
                .collect(),
        }
    }

    #[test]
    fn registers_every_region_with_write_and_atomic_access() {
        let mut arena = Arena::new_normal(&[
            (
                0,
                Geometry::KeyWrite(KeyWriteGeometry::new(256, 8, 4).unwrap()),
            ),
            (
                0,
                Geometry::KeyIncrement(KeyIncrementGeometry::new(64, 2).unwrap()),
            ),
        ])
        .unwrap();
        let mut dev = FakeDevice::default();
        register_arena(&mut dev, &mut arena).unwrap();
        assert_eq!(
            dev.calls,
            ["reg_mr len=2048 access=0xb", "reg_mr len=512 access=0xb"]
        );
        let keys: Vec<u32> = arena.regions().iter().map(|r| r.rkey).collect();
        assert_eq!(keys, [0xAB01, 0xAB02]);
    }

    #[test]
    fn connects_each_translator_qp_init_rtr_rts() {
        let opener = VerbsOpener::new(
            FakeDevice::default(),
            QpSettings {
                path_mtu: 1024,
                max_dest_rd_atomic: 4,
                sgid_index: 3,
            },
        );
        let qps = opener
            .open(&hello(&[(0x11, 100), (0x12, 0xFF_FFFF)]))
            .unwrap();
        assert_eq!(
            qps,
            [
                ResponderQp {
                    qpn: 0x41,
                    peer_qpn: 0x11
                },
                ResponderQp {
                    qpn: 0x42,
                    peer_qpn: 0x12
                },
            ]
        );
        opener.with_verbs(|d| {
            assert_eq!(
                d.calls,
                [
                    "create_qp 0x41",
                    "init 0x41 access=0xb",
                    // max_dest_rd_atomic 4 was configured; the collector never goes below 16.
                    "rtr 0x41 dest=0x11 rq_psn=0x64 gid_last=1 mtu=1024 max_dest_rd_atomic=16",
                    "rts 0x41 sq_psn=0",
                    "create_qp 0x42",
                    "init 0x42 access=0xb",
                    "rtr 0x42 dest=0x12 rq_psn=0xffffff gid_last=1 mtu=1024 max_dest_rd_atomic=16",
                    "rts 0x42 sq_psn=0",
                ]
            );
            d.calls.clear();
        });
        // Saying hello again for translator QP 0x11 replaces its QP.
        let qps = opener.open(&hello(&[(0x11, 5)])).unwrap();
        assert_eq!(
            qps,
            [ResponderQp {
                qpn: 0x43,
                peer_qpn: 0x11
            }]
        );
        opener.with_verbs(|d| assert_eq!(d.calls[0], "destroy 0x41"));
    }

    #[test]
    fn two_translators_with_equal_qpns_keep_their_qps_and_a_re_hello_replaces_only_its_own() {
        let opener = VerbsOpener::new(
            FakeDevice::default(),
            QpSettings {
                path_mtu: 1024,
                max_dest_rd_atomic: 16,
                sgid_index: 3,
            },
        );
        let (a, b) = ([198, 18, 0, 1], [198, 18, 0, 3]);
        let qa = opener
            .open(&hello_from(a, &[(0x100, 1), (0x101, 1)]))
            .unwrap();
        let qb = opener
            .open(&hello_from(b, &[(0x100, 2), (0x101, 2)]))
            .unwrap();
        let qpns = |v: &[ResponderQp]| v.iter().map(|q| q.qpn).collect::<Vec<_>>();
        assert_eq!((qpns(&qa), qpns(&qb)), (vec![0x41, 0x42], vec![0x43, 0x44]));
        opener.with_verbs(|d| {
            assert!(
                !d.calls.iter().any(|c| c.starts_with("destroy")),
                "B's hello destroyed A's QPs: {:?}",
                d.calls
            );
            // B's QPs are connected to B's GID.
            assert!(d.calls.contains(
                &"rtr 0x43 dest=0x100 rq_psn=0x2 gid_last=3 mtu=1024 max_dest_rd_atomic=16".into()
            ));
            d.calls.clear();
        });
        // A says hello again: A's QPs are replaced, B's stay.
        let qa2 = opener
            .open(&hello_from(a, &[(0x100, 9), (0x101, 9)]))
            .unwrap();
        assert_eq!(qpns(&qa2), [0x45, 0x46]);
        opener.with_verbs(|d| {
            let destroyed: Vec<&String> = d
                .calls
                .iter()
                .filter(|c| c.starts_with("destroy"))
                .collect();
            assert_eq!(destroyed, ["destroy 0x41", "destroy 0x42"]);
        });
    }

    #[test]
    fn a_failed_transition_destroys_the_qp_and_reports_the_verb() {
        let dev = FakeDevice {
            fail_rtr: true,
            ..Default::default()
        };
        let opener = VerbsOpener::new(
            dev,
            QpSettings {
                path_mtu: 1024,
                max_dest_rd_atomic: 16,
                sgid_index: 0,
            },
        );
        let e = opener.open(&hello(&[(0x11, 0)])).unwrap_err();
        assert!(e.contains("ibv_modify_qp(RTR)"), "{e}");
        opener.with_verbs(|d| assert_eq!(d.calls.last().unwrap(), "destroy 0x41"));
    }
}
