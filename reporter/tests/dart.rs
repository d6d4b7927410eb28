//! DART mode: a reporter writes Key-Writes over its own QP into the collector's software responder (the
//! dta-collector responder core over its arena), and the collector's Key-Write query finds every value.

use dta_collector::memory::Arena;
use dta_collector::query::{key_write, KeyWriteAnswer};
use dta_collector::responder::{Outcome, Responder, ResponderConfig, RESPONSE_MAX};
use dta_protocol::control::{ResponderQp, Welcome, CONTROL_VERSION};
use dta_protocol::layout::{Geometry, KeyWriteGeometry};
use dta_rc::{Instant, RequesterConfig};
use dta_reporter::dart::{Dart, DartLocal};

#[test]
fn dart_key_writes_are_queryable_at_the_collector() {
    let g = KeyWriteGeometry::new(4096, 8, 4).unwrap();
    let arena = Arena::new_normal(&[(0, Geometry::KeyWrite(g))]).unwrap();
    let slot = arena.slots()[0];
    let mut responder = Responder::new(ResponderConfig::default(), arena.slots().to_vec());
    let local = DartLocal {
        mac: [2, 0, 0, 0, 0, 9],
        ip: [10, 0, 0, 9],
        udp_src_port: 49200,
        qpn: 0x77,
        start_psn: 0xFF_FFF0, // wraps during the test
    };
    responder.open_qp(0x100, local.ip, local.qpn, local.start_psn);
    let welcome = Welcome {
        version: CONTROL_VERSION,
        mac: [2, 0, 0, 0, 0, 2],
        ip: [198, 18, 0, 2],
        qps: vec![ResponderQp {
            qpn: 0x100,
            peer_qpn: local.qpn,
        }],
        max_dest_rd_atomic: 16,
        path_mtu: 1024,
        regions: arena.regions(),
        append_heads: Vec::new(),
    };
    let now = Instant(1_000);
    let mut dart = Dart::new(local, &welcome, RequesterConfig::default(), now).unwrap();
    for key in 0..200u32 {
        dart.key_write(key, &(key * 3 + 1).to_be_bytes(), 2)
            .unwrap();
    }
    let (mut frame, mut resp) = (Vec::new(), [0u8; RESPONSE_MAX]);
    let (mut writes, mut acks) = (0, 0);
    while dart.poll_transmit(now, &mut frame) {
        writes += 1;
        let mut mem = arena.write();
        match responder.handle(&frame, mem.as_mut_slice(), &mut resp) {
            Outcome::Respond(n) => {
                acks += 1;
                drop(mem);
                dart.handle_response(now, &resp[..n]);
            }
            Outcome::Silent => {}
            Outcome::Dropped(why) => panic!("responder dropped frame {writes}: {why:?}"),
        }
    }
    assert_eq!(writes, 400);
    assert!(acks > 0);
    assert!(dart.is_idle(), "every write acknowledged");
    let mem = arena.read();
    let region = &mem.as_slice()[slot.offset..slot.offset + slot.len()];
    for key in 0..200u32 {
        let want = hex::encode((key * 3 + 1).to_be_bytes());
        match key_write(region, &g, key, 2, 1).unwrap() {
            KeyWriteAnswer::Found { data, .. } => assert_eq!(data, want, "key {key}"),
            other => panic!("key {key}: {other:?}"),
        }
    }
    // A key never written is not found.
    assert!(matches!(
        key_write(region, &g, 5000, 2, 1).unwrap(),
        KeyWriteAnswer::Empty { .. } | KeyWriteAnswer::Conflict { .. }
    ));
}
