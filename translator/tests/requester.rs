//! The requester through the engine, on a virtual clock: PSN wrap, AckReq cadence, backpressure, go-back-N,
//! retransmit timeout with backoff, RNR wait, atomics, QP errors, congestion notifications.

mod support;

use dta_protocol::dta::{Body, KeyIncrementRepr, KeyWriteRepr};
use dta_protocol::roce::{AckKind, NakCode};
use dta_translator::{Config, DropReason, Engine, Event, Instant, QpError};
use support::*;

const OK: AckKind = AckKind::Ack { credits: 31 };

fn kw(key: u32, seq: u8, retransmit: bool) -> Vec<u8> {
    report(
        &reporter(1),
        Body::KeyWrite(KeyWriteRepr {
            redundancy: 1,
            key,
            data: &[1, 2, 3, 4],
        }),
        seq,
        retransmit,
    )
}

fn ki(key: u32) -> Vec<u8> {
    report(
        &reporter(1),
        Body::KeyIncrement(KeyIncrementRepr {
            redundancy: 1,
            key,
            counter: 5,
        }),
        0,
        false,
    )
}

fn engine(f: impl FnOnce(&mut Config)) -> Engine {
    let mut c = Config::default();
    c.requester.retransmit_timeout_us = 10;
    f(&mut c);
    Engine::new(c, &[welcome()], Instant(0)).unwrap()
}

#[test]
fn psn_wraps_at_2_24_and_ack_cadence() {
    let mut e = engine(|c| {
        c.local.start_psn = 0xFF_FFFE;
        c.requester.ack_every = 2;
    });
    for k in 0..5 {
        e.handle_frame(Instant(0), &kw(k, k as u8, false));
    }
    let f = drain(&mut e, Instant(0));
    assert_eq!(
        psns(&f),
        vec![
            (0xFF_FFFE, false),
            (0xFF_FFFF, true),
            (0, false),
            (1, true),
            (2, true) // last before the queue idles
        ]
    );
    // A coalesced ACK of PSN 1 retires four frames across the wrap.
    e.handle_frame(Instant(1), &response(1, OK, None));
    assert_eq!(e.qp_stats(0).unwrap().window, 1);
    e.handle_frame(Instant(1), &response(2, OK, None));
    assert!(e.is_idle());
    assert_eq!(e.poll_timeout(), None);
}

#[test]
fn backpressure_drops_and_nacks_then_go_back_n() {
    let mut e = engine(|c| {
        c.requester.window = 4;
        c.requester.queue_capacity = 4;
    });
    for k in 0..4 {
        e.handle_frame(Instant(0), &kw(k, 0, false));
    }
    assert_eq!(psns(&drain(&mut e, Instant(0))).len(), 4);
    // Window full: four more wait in the queue, two beyond it are dropped.
    for k in 4..10 {
        e.handle_frame(Instant(0), &kw(k, 0, false));
    }
    assert!(drain(&mut e, Instant(0)).is_empty());
    assert_eq!(e.qp_stats(0).unwrap().queue, 4);
    assert_eq!(e.counters().dropped(DropReason::QueueFull), 2);
    // A retransmittable report is NACKed instead: last in-order seqnum is the one before it.
    e.handle_frame(Instant(0), &kw(99, 7, true));
    let nack = drain(&mut e, Instant(0));
    assert_eq!(nack.len(), 1);
    assert_eq!(&nack[0][42..], &[0x01, 0x06, 0x00, 0x06, 0x80]);
    assert_eq!(e.counters().dta_nacks_sent, 1);
    // The responder expects PSN 1: 0 is retired, 1..=3 go again (AckReq set), then one new frame.
    e.handle_frame(
        Instant(5),
        &response(1, AckKind::Nak(NakCode::PsnSequenceError), None),
    );
    assert_eq!(
        psns(&drain(&mut e, Instant(5))),
        vec![(1, true), (2, true), (3, true), (4, true)]
    );
    assert_eq!(e.counters().retransmitted_frames, 3);
    assert_eq!(e.counters().nak_psn_sequence, 1);
    // The same NAK again within the timeout is an echo of the same loss: nothing is resent.
    e.handle_frame(
        Instant(6),
        &response(1, AckKind::Nak(NakCode::PsnSequenceError), None),
    );
    assert!(drain(&mut e, Instant(6)).is_empty());
}

#[test]
fn timeout_backs_off_exponentially_then_errors() {
    let mut e = engine(|c| c.requester.retry_limit = 2);
    e.handle_frame(Instant(0), &kw(1, 0, false));
    assert_eq!(psns(&drain(&mut e, Instant(0))), vec![(0, true)]);
    assert_eq!(e.poll_timeout(), Some(Instant(10_000)));
    e.handle_timeout(Instant(9_999));
    assert!(drain(&mut e, Instant(9_999)).is_empty());
    e.handle_timeout(Instant(10_000));
    assert_eq!(psns(&drain(&mut e, Instant(10_000))), vec![(0, true)]);
    assert_eq!(e.poll_timeout(), Some(Instant(30_000)));
    e.handle_timeout(Instant(30_000));
    assert_eq!(drain(&mut e, Instant(30_000)).len(), 1);
    assert_eq!(e.poll_timeout(), Some(Instant(70_000)));
    e.handle_timeout(Instant(70_000));
    assert_eq!(
        e.poll_event(),
        Some(Event::QpError {
            collector: 0,
            error: QpError::RetriesExhausted
        })
    );
    assert!(drain(&mut e, Instant(70_000)).is_empty());
    assert_eq!(e.counters().retransmit_timeouts, 3);
    // Re-established with a new start PSN: the unacknowledged write goes again, nothing is lost.
    e.reestablish(0, &welcome(), 500, Instant(80_000)).unwrap();
    assert_eq!(psns(&drain(&mut e, Instant(80_000))), vec![(500, true)]);
}

#[test]
fn rnr_nak_waits_its_timer() {
    let mut e = engine(|_| {});
    e.handle_frame(Instant(0), &kw(1, 0, false));
    e.handle_frame(Instant(0), &kw(2, 0, false));
    assert_eq!(drain(&mut e, Instant(0)).len(), 2);
    // RNR code 1 is 10 µs.
    e.handle_frame(
        Instant(100),
        &response(1, AckKind::RnrNak { timer: 1 }, None),
    );
    assert_eq!(e.qp_stats(0).unwrap().window, 1);
    assert!(drain(&mut e, Instant(10_099)).is_empty());
    assert_eq!(psns(&drain(&mut e, Instant(10_100))), vec![(1, true)]);
    assert_eq!(e.counters().nak_rnr, 1);
}

#[test]
fn atomics_bounded_and_matched() {
    let mut w = welcome();
    w.max_dest_rd_atomic = 2;
    let mut e = Engine::new(Config::default(), &[w], Instant(0)).unwrap();
    for k in 0..3 {
        e.handle_frame(Instant(0), &ki(k));
    }
    let f = psns(&drain(&mut e, Instant(0)));
    // Two atomics in flight at most; the second asks for an ACK since the queue stalls behind it.
    assert_eq!(f, vec![(0, false), (1, true)]);
    // An ATOMIC ACKNOWLEDGE for PSN 0 frees a slot.
    e.handle_frame(Instant(1), &response(0, OK, Some(77)));
    assert_eq!(psns(&drain(&mut e, Instant(1))), vec![(2, true)]);
    assert_eq!(e.counters().atomic_acks, 1);
    // A plain ACK past the unanswered atomic 1 means its answer was lost: ask again from PSN 1.
    e.handle_frame(Instant(2), &response(2, OK, None));
    assert_eq!(psns(&drain(&mut e, Instant(2))), vec![(1, true), (2, true)]);
}

/// An answered atomic behind an unanswered one still counts against `max_dest_rd_atomic` until it
/// retires: a newer atomic would take the responder's cached answer of the unanswered one (rxe keeps the
/// newest `max_dest_rd_atomic` answers), and its retransmission would never be answered.
#[test]
fn atomics_count_until_retired_not_until_answered() {
    let mut w = welcome();
    w.max_dest_rd_atomic = 2;
    let mut e = Engine::new(Config::default(), &[w], Instant(0)).unwrap();
    for k in 0..3 {
        e.handle_frame(Instant(0), &ki(k));
    }
    assert_eq!(
        psns(&drain(&mut e, Instant(0))),
        vec![(0, false), (1, true)]
    );
    // The answer to PSN 0 is lost; PSN 1's arrives. PSN 0 goes again, and so does 1 (go-back-N), but
    // PSN 2 waits: the responder must still hold PSN 0's answer when the retransmission reaches it.
    e.handle_frame(Instant(1), &response(1, OK, Some(5)));
    assert_eq!(psns(&drain(&mut e, Instant(1))), vec![(0, true), (1, true)]);
    // PSN 0's answer (replayed from the cache) retires both; PSN 2 may go.
    e.handle_frame(Instant(2), &response(0, OK, Some(4)));
    assert_eq!(psns(&drain(&mut e, Instant(2))), vec![(2, true)]);
    assert_eq!(e.counters().atomic_acks, 2);
}

#[test]
fn remote_access_error_stops_the_qp() {
    let mut e = engine(|_| {});
    e.handle_frame(Instant(0), &kw(1, 0, false));
    drain(&mut e, Instant(0));
    e.handle_frame(
        Instant(1),
        &response(0, AckKind::Nak(NakCode::RemoteAccessError), None),
    );
    assert_eq!(
        e.poll_event(),
        Some(Event::QpError {
            collector: 0,
            error: QpError::Nak(NakCode::RemoteAccessError)
        })
    );
    assert_eq!(
        e.qp_stats(0).unwrap().next_psn,
        1,
        "PSN never reset silently"
    );
    e.handle_frame(Instant(1), &kw(2, 0, false));
    assert!(drain(&mut e, Instant(1)).is_empty());
}

#[test]
fn congestion_notification_cuts_the_rate_then_recovers() {
    let mut e = engine(|c| {
        c.rate.burst_packets = 1;
        c.rate.congestion.line_rate_pps = 1_000_000;
        c.rate.congestion.recovery_period_us = 100;
    });
    // Unlimited before any CNP: three writes go at once.
    for k in 0..3 {
        e.handle_frame(Instant(0), &kw(k, 0, false));
    }
    assert_eq!(drain(&mut e, Instant(0)).len(), 3);
    e.handle_frame(Instant(0), &response(2, OK, None));
    // A CNP halves the line rate: 500 kpps, one frame every 2 µs after the bucket's single token.
    e.handle_frame(Instant(0), &cnp());
    assert_eq!(e.counters().cnps, 1);
    for k in 3..6 {
        e.handle_frame(Instant(0), &kw(k, 0, false));
    }
    assert_eq!(drain(&mut e, Instant(0)).len(), 1);
    assert!(drain(&mut e, Instant(1_999)).is_empty());
    assert_eq!(drain(&mut e, Instant(2_000)).len(), 1);
    assert_eq!(drain(&mut e, Instant(4_000)).len(), 1);
    e.handle_frame(Instant(4_000), &response(5, OK, None));
    // Quiet for long enough: recovery lifts the cap (the timers run through handle_timeout).
    let mut now = Instant(4_000);
    while let Some(t) = e.poll_timeout() {
        now = t;
        e.handle_timeout(t);
    }
    assert!(now.0 > 4_000, "recovery ran on its timer");
    for k in 6..9 {
        e.handle_frame(now, &kw(k, 0, false));
    }
    assert_eq!(drain(&mut e, now).len(), 3, "cap lifted");
}

/// RFC 6298 through the engine: a responder answering in 8 µs and then 20 µs moves the timeout from the
/// initial 10 µs to SRTT + 4·RTTVAR (24 µs, then 33.5 µs), so an ACK at 20 µs is not preceded by a spurious
/// go-back-N; with `adaptive_timeout = false` the same exchange times out and resends.
#[test]
fn adaptive_timeout_follows_a_slow_responder() {
    for adaptive in [true, false] {
        let mut e = engine(|c| {
            c.requester.ack_every = 1;
            c.requester.adaptive_timeout = adaptive;
        });
        e.handle_frame(Instant(0), &kw(1, 0, false));
        assert_eq!(psns(&drain(&mut e, Instant(0))), vec![(0, true)]);
        assert_eq!(e.poll_timeout(), Some(Instant(10_000)));
        e.handle_frame(Instant(8_000), &response(0, OK, None));
        let s = e.qp_stats(0).unwrap();
        // First sample R = 8 µs: SRTT = R, RTTVAR = R/2, timeout = R + 4·R/2 = 24 µs.
        assert_eq!(s.srtt_ns, Some(8_000));
        assert_eq!(s.timeout_ns, if adaptive { 24_000 } else { 10_000 });
        e.handle_frame(Instant(8_000), &kw(2, 1, false));
        assert_eq!(psns(&drain(&mut e, Instant(8_000))), vec![(1, true)]);
        let deadline = if adaptive { 32_000 } else { 18_000 };
        assert_eq!(e.poll_timeout(), Some(Instant(deadline)));
        // The timer fires only where it is due: before 28 µs for the fixed timeout.
        e.handle_timeout(Instant(deadline.min(28_000)));
        let resent = drain(&mut e, Instant(deadline.min(28_000)));
        e.handle_frame(Instant(28_000), &response(1, OK, None));
        assert!(e.is_idle());
        let s = e.qp_stats(0).unwrap();
        if adaptive {
            assert!(resent.is_empty());
            assert_eq!(e.counters().retransmitted_frames, 0);
            // R' = 20 µs: RTTVAR = 3/4·4 + 1/4·|8 - 20| = 6 µs, SRTT = 7/8·8 + 1/8·20 = 9.5 µs.
            assert_eq!(s.srtt_ns, Some(9_500));
            assert_eq!(s.timeout_ns, 9_500 + 4 * 6_000);
        } else {
            assert_eq!(psns(&resent), vec![(1, true)]);
            assert_eq!(e.counters().retransmitted_frames, 1);
            // Karn: the resent frame's ACK is no sample.
            assert_eq!(s.srtt_ns, Some(8_000));
        }
    }
}

/// A retransmit timeout resends only the oldest frame (a probe); where the answer shows the responder
/// has more than the probe, the rest of the window is not sent again.
#[test]
fn timeout_probes_with_the_oldest_frame_and_late_acks_stop_the_resend() {
    let mut e = engine(|c| c.requester.adaptive_timeout = false);
    for k in 0..4 {
        e.handle_frame(Instant(0), &kw(k, k as u8, false));
    }
    assert_eq!(
        psns(&drain(&mut e, Instant(0))),
        vec![(0, false), (1, false), (2, false), (3, true)]
    );
    e.handle_timeout(Instant(10_000));
    // Only the probe goes, and nothing else until it is answered.
    assert_eq!(psns(&drain(&mut e, Instant(10_000))), vec![(0, true)]);
    e.handle_frame(Instant(10_000), &kw(9, 4, false));
    assert!(drain(&mut e, Instant(10_500)).is_empty());
    // The responder had 0 and 1 (its duplicate ACK names the newest in-order PSN): 2 and 3 may still be
    // on their way, so they are not resent; the new report goes out.
    e.handle_frame(Instant(11_000), &response(1, OK, None));
    assert_eq!(psns(&drain(&mut e, Instant(11_000))), vec![(4, true)]);
    assert_eq!(e.counters().retransmitted_frames, 1);
    // The late ACK of the original transmission retires the rest.
    e.handle_frame(Instant(11_500), &response(4, OK, None));
    assert!(e.is_idle());
    assert_eq!(e.counters().retransmitted_frames, 1);
}

/// When the probe's answer covers the probe alone, the responder has nothing after it: go back N.
#[test]
fn timeout_probe_answered_alone_goes_back_n() {
    let mut e = engine(|c| c.requester.adaptive_timeout = false);
    for k in 0..4 {
        e.handle_frame(Instant(0), &kw(k, k as u8, false));
    }
    assert_eq!(drain(&mut e, Instant(0)).len(), 4);
    e.handle_timeout(Instant(10_000));
    assert_eq!(psns(&drain(&mut e, Instant(10_000))), vec![(0, true)]);
    // The probe is lost too: the next timeout (backed off to 20 µs) probes again.
    assert_eq!(e.poll_timeout(), Some(Instant(30_000)));
    e.handle_timeout(Instant(30_000));
    assert_eq!(psns(&drain(&mut e, Instant(30_000))), vec![(0, true)]);
    e.handle_frame(Instant(31_000), &response(0, OK, None));
    assert_eq!(
        psns(&drain(&mut e, Instant(31_000))),
        vec![(1, true), (2, true), (3, true)]
    );
    assert_eq!(e.counters().retransmitted_frames, 5);
    assert_eq!(e.counters().retransmit_timeouts, 2);
    e.handle_frame(Instant(32_000), &response(3, OK, None));
    assert!(e.is_idle());
}

/// Loss halves the window (not below 8), echoes of the same loss do not, and ACKs grow it back by one
/// frame per window acknowledged.
#[test]
fn loss_halves_the_window_and_acks_grow_it_back() {
    let mut e = engine(|c| {
        c.requester.window = 32;
        c.requester.ack_every = 1;
    });
    for k in 0..40 {
        e.handle_frame(Instant(0), &kw(k, 0, false));
    }
    assert_eq!(drain(&mut e, Instant(0)).len(), 32);
    assert_eq!(e.qp_stats(0).unwrap().window_limit, 32);
    // The responder lost PSN 4: 0..=3 retire, the window halves to 16, 4..=19 go again.
    let nak = AckKind::Nak(NakCode::PsnSequenceError);
    e.handle_frame(Instant(100), &response(4, nak, None));
    assert_eq!(e.qp_stats(0).unwrap().window_limit, 16);
    let resent = psns(&drain(&mut e, Instant(100)));
    assert_eq!(resent.first(), Some(&(4, true)));
    assert_eq!(
        resent.len(),
        28,
        "the 28 frames in the window go again; no new ones beyond 16"
    );
    // The echo of the same NAK changes nothing.
    e.handle_frame(Instant(101), &response(4, nak, None));
    assert_eq!(e.qp_stats(0).unwrap().window_limit, 16);
    // ACK of 4..=19 (16 frames): one window acknowledged, the window grows to 17.
    e.handle_frame(Instant(200), &response(19, OK, None));
    assert_eq!(e.qp_stats(0).unwrap().window_limit, 17);
    // Another loss: 8.5 -> 8; a third: stays at the floor of 8.
    e.handle_frame(Instant(300), &response(20, nak, None));
    assert_eq!(e.qp_stats(0).unwrap().window_limit, 8);
    e.handle_frame(Instant(20_000), &response(21, nak, None));
    assert_eq!(e.qp_stats(0).unwrap().window_limit, 8);
}

#[test]
fn a_response_with_a_bad_icrc_is_counted_as_such_and_ignored() {
    let mut e = engine(|_| {});
    e.handle_frame(Instant(0), &kw(1, 0, false));
    assert_eq!(drain(&mut e, Instant(0)).len(), 1);
    // The ACK that would retire the write, with its last iCRC byte flipped on the way.
    let mut bad = response(0, OK, None);
    if let Some(b) = bad.last_mut() {
        *b ^= 0xFF;
    }
    e.handle_frame(Instant(1), &bad);
    let c = e.counters();
    assert_eq!((c.bad_icrc_responses, c.stale_responses, c.acks), (1, 0, 0));
    assert_eq!(e.qp_stats(0).unwrap().window, 1, "nothing retired");
    // The intact ACK still works.
    e.handle_frame(Instant(2), &response(0, OK, None));
    assert!(e.is_idle());
    assert_eq!(e.counters().bad_icrc_responses, 1);
}
