//! Which RoCE frames the engine takes as responses: only those addressed to the translator's IP, and, through
//! `handle_reporter_frames`, none from a port that faces the reporters (where a host could forge them).

mod support;

use dta_protocol::dta::{Body, KeyWriteRepr};
use dta_protocol::roce::{AckKind, AethRepr, FrameRepr};
use dta_protocol::udp::UdpEndpoints;
use dta_translator::{Config, Engine, Handled, Instant};
use support::*;

const OK: AckKind = AckKind::Ack { credits: 31 };

/// An ACK of `psn` from the collector to `dst_ip`, for the translator's QP.
fn ack_to(dst_ip: [u8; 4], psn: u32) -> Vec<u8> {
    let ep = UdpEndpoints::new(
        COLLECTOR_MAC,
        [2, 0, 0, 0, 0, 1],
        COLLECTOR_IP,
        dst_ip,
        49152,
        4791,
    );
    let f = FrameRepr::acknowledge(ep, TRANSLATOR_QPN, psn, AethRepr { kind: OK, msn: 0 });
    let mut out = vec![0u8; f.buffer_len()];
    f.emit(&mut out).unwrap();
    out
}

/// An engine with one Key-Write sent and not yet acknowledged; the PSN it went out with.
fn one_in_flight() -> (Engine, u32) {
    let mut e = Engine::new(Config::default(), &[welcome()], Instant(0)).unwrap();
    let kw = report(
        &reporter(1),
        Body::KeyWrite(KeyWriteRepr {
            redundancy: 1,
            key: 7,
            data: &[1, 2, 3, 4],
        }),
        0,
        false,
    );
    e.handle_frame(Instant(0), &kw);
    let sent = drain(&mut e, Instant(0));
    assert_eq!(sent.len(), 1);
    let psn = psns(&sent)[0].0;
    assert_eq!(e.qp_stats(0).unwrap().window, 1);
    (e, psn)
}

#[test]
fn roce_addressed_to_another_host_is_not_a_response() {
    let (mut e, psn) = one_in_flight();
    let other = ack_to([198, 18, 0, 9], psn);
    assert_eq!(e.handle_frame(Instant(1), &other), Handled::NotForUs);
    assert_eq!(e.qp_stats(0).unwrap().window, 1, "nothing retired");
    assert_eq!(e.counters().acks, 0);
    // The same ACK to us retires the write.
    assert_eq!(
        e.handle_frame(Instant(1), &ack_to([198, 18, 0, 1], psn)),
        Handled::Consumed
    );
    assert_eq!(e.qp_stats(0).unwrap().window, 0);
    assert_eq!(e.counters().acks, 1);
}

#[test]
fn responses_from_the_reporters_side_are_not_taken() {
    let (mut e, psn) = one_in_flight();
    let forged = ack_to([198, 18, 0, 1], psn);
    let mut passed = Vec::new();
    e.handle_reporter_frames(Instant(1), [&forged[..]], |f| passed.push(f.to_vec()));
    assert_eq!(passed, vec![forged.clone()], "handed back to be forwarded");
    assert_eq!(e.qp_stats(0).unwrap().window, 1, "nothing retired");
    assert_eq!(e.counters().acks, 0);
    // Reports are still taken from that side.
    let kw = report(
        &reporter(1),
        Body::KeyWrite(KeyWriteRepr {
            redundancy: 1,
            key: 8,
            data: &[5, 6, 7, 8],
        }),
        1,
        false,
    );
    passed.clear();
    e.handle_reporter_frames(Instant(1), [&kw[..]], |f| passed.push(f.to_vec()));
    assert!(passed.is_empty());
    assert_eq!(e.counters().reports_in.iter().sum::<u64>(), 2);
    // From the collectors' side the same ACK is a response.
    e.handle_frames(Instant(1), [&forged[..]], |_| panic!("taken"));
    assert_eq!(e.counters().acks, 1);
}
