use std::net::Ipv4Addr;

use dta_protocol::control::{RequesterQp, Welcome, CONTROL_VERSION};
use dta_protocol::layout::{Geometry, KeyWriteGeometry};
use dta_rc::{Instant, RequesterConfig};
use dta_reporter::dart::{Dart, DartLocal};

use super::args::parse_qpn;
use super::control::hello;
use super::run::queue_full;
use super::writes::{parse_writes, WriteLine};

#[test]
fn writes_parse_with_comments_and_blank_lines() {
    let text = "# header\n\n1 0a0b0c0d\n  0x10 0xdeadbeef  # trailing\n4294967295 00000000\n";
    let w = parse_writes(text.as_bytes()).unwrap();
    assert_eq!(
        w,
        vec![
            WriteLine {
                line: 3,
                key: 1,
                data: vec![10, 11, 12, 13]
            },
            WriteLine {
                line: 4,
                key: 16,
                data: vec![0xde, 0xad, 0xbe, 0xef]
            },
            WriteLine {
                line: 5,
                key: u32::MAX,
                data: vec![0; 4]
            },
        ]
    );
}

#[test]
fn bad_lines_are_named() {
    for (text, line) in [
        ("1 00000000\n2\n", "line 2"),
        ("1 00000000\n\n-3 00000000\n", "line 3"),
        ("4294967296 00000000\n", "line 1"),
        ("1 0000000\n", "line 1"),
        ("1 zz000000\n", "line 1"),
        ("1 00000000 extra\n", "line 1"),
    ] {
        let e = format!("{:#}", parse_writes(text.as_bytes()).unwrap_err());
        assert!(e.contains(line), "{text:?}: {e}");
    }
}

#[test]
fn a_full_queue_is_recognised() {
    use dta_protocol::control::ResponderQp;
    use dta_protocol::layout::Region;
    let g = KeyWriteGeometry::new(1024, 8, 2).unwrap();
    let welcome = Welcome {
        version: CONTROL_VERSION,
        mac: [2, 0, 0, 0, 0, 2],
        ip: [10, 0, 0, 2],
        qps: vec![ResponderQp {
            qpn: 0x100,
            peer_qpn: 0x77,
        }],
        max_dest_rd_atomic: 16,
        path_mtu: 1024,
        regions: vec![Region {
            id: 0,
            geometry: Geometry::KeyWrite(g),
            va: 0x1000,
            rkey: 1,
        }],
        append_heads: Vec::new(),
    };
    let local = DartLocal {
        mac: [2, 0, 0, 0, 0, 9],
        ip: [10, 0, 0, 9],
        udp_src_port: 49200,
        qpn: 0x77,
        start_psn: 0,
    };
    let mut dart = Dart::new(local, &welcome, RequesterConfig::default(), Instant(0)).unwrap();
    let mut accepted = 0u32;
    let refusal = loop {
        match dart.key_write(accepted, &[0; 4], 2) {
            Ok(()) => accepted += 1,
            Err(e) => break e,
        }
    };
    assert!(queue_full(&refusal), "{refusal}");
    assert_eq!(accepted, RequesterConfig::default().queue_capacity / 2);
    // A refusal of the write itself is not taken for a full queue.
    let mut dart = Dart::new(local, &welcome, RequesterConfig::default(), Instant(0)).unwrap();
    assert!(!queue_full(&dart.key_write(1, &[0; 4], 3).unwrap_err()));
}

#[test]
fn hello_carries_the_mapped_gid() {
    let h = hello(
        "t",
        [2, 0, 0, 0, 0, 10],
        Ipv4Addr::new(198, 18, 0, 10),
        0x77,
        5,
    );
    assert_eq!(
        h.gid,
        [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 0, 10]
    );
    assert_eq!(
        h.qps,
        vec![RequesterQp {
            qpn: 0x77,
            start_psn: 5
        }]
    );
    assert!(parse_qpn("0x1000000").is_err());
    assert_eq!(parse_qpn("0x77"), Ok(0x77));
}
