//! Who may use a QP: a request is carried out only when it comes from the QP's requester (its IPv4
//! address, as rxe checks against the QP's path) and from a UDP source port in the RoCE v2 range.

use dta_collector::responder::{
    DropReason, Outcome, Responder, ResponderConfig, ROCEV2_SOURCE_PORTS,
};

mod support;

use support::*;

#[test]
fn a_write_from_a_spoofed_source_is_dropped_counted_and_leaves_the_qp_as_it_was() {
    let arena = arena();
    let r = arena.slots()[0].region;
    let mut resp = Responder::new(ResponderConfig::default(), arena.slots().to_vec());
    resp.open_qp(0x100, TRANSLATOR_A, TRANSLATOR_QPN, 50);
    // A live QPN, the expected PSN and the right R_Key, from another address: dropped silently.
    let spoofed = write(
        endpoints([198, 18, 0, 66], 49152),
        0x100,
        50,
        r.va,
        r.rkey,
        &[0xEE; 8],
    );
    let got = feed(&mut resp, &arena, &spoofed);
    assert_eq!(got.0, Outcome::Dropped(DropReason::WrongSource));
    assert_eq!(mem(&arena, 0, 8), [0; 8], "nothing written");
    assert_eq!(resp.stats().drops_for(DropReason::WrongSource), 1);
    assert_eq!(resp.stats().acks + resp.stats().writes, 0);
    let s = resp.qp(0x100).unwrap();
    assert_eq!((s.expected_psn, s.error, s.nak_sent), (50, false, false));
    // The real requester's write at the same PSN is carried out.
    let real = write(
        endpoints(TRANSLATOR_A, 49152),
        0x100,
        50,
        r.va,
        r.rkey,
        &[0x11; 8],
    );
    assert_acked(&feed(&mut resp, &arena, &real), 50, TRANSLATOR_A);
    assert_eq!(mem(&arena, 0, 8), [0x11; 8]);
    // A spoofed request that would otherwise earn a NAK (a bad R_Key) does not move the QP to error.
    let bad = write(
        endpoints([10, 9, 9, 9], 49152),
        0x100,
        51,
        r.va,
        r.rkey ^ 1,
        &[0; 8],
    );
    assert_eq!(
        feed(&mut resp, &arena, &bad).0,
        Outcome::Dropped(DropReason::WrongSource)
    );
    assert!(!resp.qp(0x100).unwrap().error);
    assert_eq!(resp.stats().drops_for(DropReason::WrongSource), 2);
}

#[test]
fn the_udp_source_port_may_vary_within_the_rocev2_range_only() {
    let arena = arena();
    let r = arena.slots()[0].region;
    let mut resp = Responder::new(ResponderConfig::default(), arena.slots().to_vec());
    resp.open_qp(0x100, TRANSLATOR_A, TRANSLATOR_QPN, 0);
    // ECMP entropy: every port of the range is fine, one packet to the next.
    for (psn, port) in [0xC000u16, 0xFFFF, 49999, 0xC001].into_iter().enumerate() {
        let f = write(
            endpoints(TRANSLATOR_A, port),
            0x100,
            psn as u32,
            r.va,
            r.rkey,
            &[psn as u8; 4],
        );
        assert_acked(&feed(&mut resp, &arena, &f), psn as u32, TRANSLATOR_A);
    }
    for port in [0u16, 4791, 40000, 0xBFFF] {
        assert!(!ROCEV2_SOURCE_PORTS.contains(&port));
        let f = write(
            endpoints(TRANSLATOR_A, port),
            0x100,
            4,
            r.va,
            r.rkey,
            &[9; 4],
        );
        assert_eq!(
            feed(&mut resp, &arena, &f).0,
            Outcome::Dropped(DropReason::WrongSource),
            "port {port}"
        );
    }
    assert_eq!(resp.qp(0x100).unwrap().expected_psn, 4);
    // The destination must be RoCE v2's port.
    let mut ep = endpoints(TRANSLATOR_A, 49152);
    ep.dst_port = 4792;
    let f = write(ep, 0x100, 4, r.va, r.rkey, &[9; 4]);
    assert_eq!(
        feed(&mut resp, &arena, &f).0,
        Outcome::Dropped(DropReason::NotRoce)
    );
}
