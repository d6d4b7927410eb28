//! Two translators with the same QPN (every translator's default `qpn_base` is 0x100) on one collector:
//! each gets its own responder QPs, neither's hello closes the other's, and each writes through its own.
//! Re-establishment by one (same address, same QPN) replaces its QPs only.
// The daemon's parts (control server, HTTP API, the binary) exist with the `server` feature only.
#![cfg(feature = "server")]

mod support;

use std::sync::{Arc, Mutex};

use dta_collector::backend::soft::SoftOpener;
use dta_collector::control::{QpLimits, QpStats, QpTable};
use dta_collector::responder::{DropReason, Outcome, Responder, ResponderConfig};
use support::*;

#[test]
fn two_translators_with_the_same_qpn_write_through_their_own_qps() {
    let arena = arena();
    let r = arena.slots()[0].region;
    let resp = Arc::new(Mutex::new(Responder::new(
        ResponderConfig::default(),
        arena.slots().to_vec(),
    )));
    let shared = resp.clone();
    let opener = SoftOpener::new(resp);
    // Hellos as the control server handles them: its table replaces a translator QP's old QP.
    let (mut table, stats) = (QpTable::default(), QpStats::default());
    let mut open = |h, lease| table.open(&opener, &h, lease, &QpLimits::default(), &stats);
    let a = open(hello(TRANSLATOR_A, 10), 1).unwrap();
    let b = open(hello(TRANSLATOR_B, 20), 2).unwrap();
    assert_eq!((a.len(), b.len()), (1, 1));
    assert_eq!(
        (a[0].peer_qpn, b[0].peer_qpn),
        (TRANSLATOR_QPN, TRANSLATOR_QPN)
    );
    assert_ne!(a[0].qpn, b[0].qpn, "distinct responder QPs");
    let mut resp = shared.lock().unwrap();
    assert!(resp.qp(a[0].qpn).is_some(), "B's hello kept A's QP");
    // Interleaved writes from both land, each ACKed to its own translator.
    for i in 0..4u32 {
        let fa = write(
            endpoints(TRANSLATOR_A, 49152),
            a[0].qpn,
            10 + i,
            r.va + 8 * u64::from(i),
            r.rkey,
            &[0xA0 + i as u8; 8],
        );
        assert_acked(&feed(&mut resp, &arena, &fa), 10 + i, TRANSLATOR_A);
        let fb = write(
            endpoints(TRANSLATOR_B, 49153),
            b[0].qpn,
            20 + i,
            r.va + 64 + 8 * u64::from(i),
            r.rkey,
            &[0xB0 + i as u8; 8],
        );
        assert_acked(&feed(&mut resp, &arena, &fb), 20 + i, TRANSLATOR_B);
    }
    assert_eq!(mem(&arena, 24, 8), [0xA3; 8]);
    assert_eq!(mem(&arena, 64 + 24, 8), [0xB3; 8]);
    // Neither may use the other's QP, even with the right PSN.
    let cross = write(
        endpoints(TRANSLATOR_A, 49152),
        b[0].qpn,
        24,
        r.va,
        r.rkey,
        &[0xFF; 8],
    );
    assert_eq!(
        feed(&mut resp, &arena, &cross).0,
        Outcome::Dropped(DropReason::WrongSource)
    );
    assert_eq!(resp.stats().writes, 8);
    drop(resp);
    // A's re-hello (same address, same QPN) replaces A's QP only.
    let a2 = open(hello(TRANSLATOR_A, 99), 3).unwrap();
    let mut resp = shared.lock().unwrap();
    assert!(resp.qp(a[0].qpn).is_none(), "A's old QP closed");
    assert_eq!(resp.qp(a2[0].qpn).unwrap().expected_psn, 99);
    assert_eq!(
        resp.qp(b[0].qpn).unwrap().expected_psn,
        24,
        "B's QP untouched"
    );
    let fb = write(
        endpoints(TRANSLATOR_B, 49153),
        b[0].qpn,
        24,
        r.va + 128,
        r.rkey,
        &[0xBB; 8],
    );
    assert_acked(&feed(&mut resp, &arena, &fb), 24, TRANSLATOR_B);
    let fa = write(
        endpoints(TRANSLATOR_A, 49152),
        a2[0].qpn,
        99,
        r.va + 136,
        r.rkey,
        &[0xAA; 8],
    );
    assert_acked(&feed(&mut resp, &arena, &fa), 99, TRANSLATOR_A);
}
