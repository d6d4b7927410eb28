//! The INT fuzz seeds (`fuzz/corpus/int_parse/`) were encoded with Python's `struct` from the field lists
//! of fabric-tna's `header.p4` and the Telemetry Report v2.0 examples, independently of this crate: each
//! must parse to the values it was written with.

use std::net::{IpAddr, Ipv4Addr};

use dta_protocol::int::inner::{InnerRepr, IntDetect, Start};
use dta_protocol::int::v05::{Body, ReportRepr};
use dta_protocol::int::v2::{GroupRepr, InType};

fn seed(name: &str) -> Vec<u8> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../fuzz/corpus/int_parse/");
    std::fs::read(format!("{path}{name}")).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn v05_switch_local_seed() {
    let bytes = seed("v05_local");
    let r = ReportRepr::parse(&bytes).unwrap();
    assert!(r.tracked_flow && !r.dropped);
    assert_eq!((r.hw_id, r.seq_no, r.ig_tstamp), (1, 7, 1000));
    let Body::Local {
        common,
        queue_occupancy,
        eg_tstamp,
    } = r.body
    else {
        panic!("not a switch-local report: {:?}", r.body)
    };
    assert_eq!(
        (
            common.switch_id,
            common.ig_port,
            common.eg_port,
            common.queue_id
        ),
        (3, 5, 6, 2)
    );
    assert_eq!((queue_occupancy, eg_tstamp), (0x40, 1200));
    let inner = InnerRepr::parse(Start::Ethernet, r.inner, IntDetect::default()).unwrap();
    assert_eq!(inner.flow.src, IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)));
    assert_eq!(
        (
            inner.flow.protocol,
            inner.flow.src_port,
            inner.flow.dst_port,
            inner.ttl
        ),
        (6, 40000, 443, 62)
    );
}

#[test]
fn v05_drop_seed() {
    let bytes = seed("v05_drop");
    let r = ReportRepr::parse(&bytes).unwrap();
    assert!(r.dropped && r.tracked_flow);
    assert!(matches!(r.body, Body::Drop { reason: 0x42, .. }));
}

#[test]
fn v2_spec_example_seed() {
    let bytes = seed("v2_example1");
    let (g, mut reports) = GroupRepr::parse(&bytes).unwrap();
    assert_eq!((g.hw_id, g.seq_no, g.node_id), (5, 0x2A_BCDE, 0xC0A8_0001));
    let r = reports.next().unwrap().unwrap();
    assert_eq!(r.in_type, InType::Ipv4);
    let m = r.int.unwrap().metadata;
    assert_eq!((m.l1_ports, m.queue), (Some((11, 12)), Some((3, 0x1000))));
    let inner = InnerRepr::parse(Start::Ip, r.inner, IntDetect::default()).unwrap();
    assert_eq!(inner.ttl, 61);
}

#[test]
fn v2_sink_report_with_int_md_seed() {
    let bytes = seed("v2_int_md");
    let (_, mut reports) = GroupRepr::parse(&bytes).unwrap();
    let r = reports.next().unwrap().unwrap();
    assert!(r.int.is_none());
    let detect = IntDetect {
        udp_port: Some(6000),
        dscp: None,
    };
    let inner = InnerRepr::parse(Start::Ip, r.inner, detect).unwrap();
    assert_eq!(
        (
            inner.flow.protocol,
            inner.flow.src_port,
            inner.flow.dst_port
        ),
        (6, 40000, 443)
    );
    let md = inner.int_md.unwrap();
    let path: Vec<(u32, u32)> = md
        .hops()
        .map(|h| (h.node_id.unwrap(), h.queue.unwrap().1))
        .collect();
    assert_eq!(path, vec![(2, 0x40), (1, 0x10)]);
}
