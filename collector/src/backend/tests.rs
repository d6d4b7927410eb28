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
