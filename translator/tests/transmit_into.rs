//! `Engine::poll_transmit_into` (frames built straight into a caller's buffer) gives byte for byte the frames
//! `poll_transmit` gives, in the same order, through retransmissions and DTA NACKs; a buffer too short
//! for the next frame leaves it queued; `pending_frames` bounds what can be drained.

mod support;

use dta_protocol::dta::{AppendRepr, Body, KeyIncrementRepr, KeyWriteRepr, PostcardRepr};
use dta_protocol::roce::{AckKind, FrameRepr, NakCode};
use dta_translator::{Engine, Instant};
use support::*;

/// A mixed stream: Key-Write with N of 1 to 3, Key-Increment, Append, Postcarding, and retransmittable
/// reports with a sequence gap (a DTA NACK).
fn reports() -> Vec<Vec<u8>> {
    let from = reporter(7);
    let data = [1u8, 2, 3, 4];
    let mut out = Vec::new();
    for i in 0..300u32 {
        let body = match i % 5 {
            0 | 1 => Body::KeyWrite(KeyWriteRepr {
                redundancy: (i % 3) as u8 + 1,
                key: i.wrapping_mul(0x9E37_79B1),
                data: &data,
            }),
            2 => Body::KeyIncrement(KeyIncrementRepr {
                redundancy: 2,
                key: i,
                counter: u64::from(i),
            }),
            3 => Body::Append(AppendRepr {
                list_id: 1,
                data: &data,
            }),
            _ => Body::Postcard(PostcardRepr {
                key: i / 20,
                hop: ((i / 5) % 5) as u8 + 1,
                data: i,
            }),
        };
        out.push(report(&from, body, i as u8, false));
    }
    // Retransmittable Key-Writes 0, 1, then 5: a gap, NACKed.
    for seq in [0u8, 1, 5] {
        let body = Body::KeyWrite(KeyWriteRepr {
            redundancy: 1,
            key: u32::from(seq),
            data: &data,
        });
        out.push(report(&reporter(9), body, seq, true));
    }
    out
}

/// Drains both engines, one through each call; returns the frames, checked equal.
fn drain_both(a: &mut Engine, b: &mut Engine, now: Instant) -> Vec<Vec<u8>> {
    let bound = a.pending_frames();
    assert_eq!(bound, b.pending_frames());
    let mut frames = Vec::new();
    let mut v = Vec::new();
    // A dirty buffer, as an mbuf's data room is.
    let mut room = vec![0xA5u8; 2048];
    loop {
        let got_a = a.poll_transmit(now, &mut v);
        let got_b = b.poll_transmit_into(now, &mut room);
        match (got_a, got_b) {
            (true, Some(n)) => {
                assert_eq!(&room[..n], &v[..], "frame {}", frames.len());
                frames.push(v.clone());
            }
            (false, None) => break,
            other => panic!("poll_transmit and poll_transmit_into disagree: {other:?}"),
        }
    }
    assert!(
        frames.len() <= bound,
        "{} frames, bound {bound}",
        frames.len()
    );
    frames
}

#[test]
fn into_a_buffer_equals_into_a_vec() {
    let (mut a, mut b) = (seq_engine(), seq_engine());
    let mut now = Instant(1_000);
    let mut sent = 0;
    for chunk in reports().chunks(16) {
        for r in chunk {
            a.handle_frame(now, r);
            b.handle_frame(now, r);
        }
        let frames = drain_both(&mut a, &mut b, now);
        sent += frames.len();
        answer_all(&mut [&mut a, &mut b], now, &frames);
        now = Instant(now.0 + 10_000);
    }
    assert!(sent > 300, "{sent} frames");
    assert!(a.counters().dta_nacks_sent > 0);
    // Eight more writes, unacknowledged, then a sequence NAK for the third: go-back-N resends six, and
    // the retransmissions come out equal too.
    let data = [5u8; 4];
    for key in 0..8u32 {
        let kw = Body::KeyWrite(KeyWriteRepr {
            redundancy: 1,
            key,
            data: &data,
        });
        let r = report(&reporter(11), kw, 0, false);
        a.handle_frame(now, &r);
        b.handle_frame(now, &r);
    }
    let fresh = drain_both(&mut a, &mut b, now);
    assert_eq!(fresh.len(), 8);
    let third = FrameRepr::parse(&fresh[2]).unwrap().bth.psn;
    let nak = response(third, AckKind::Nak(NakCode::PsnSequenceError), None);
    a.handle_frame(now, &nak);
    b.handle_frame(now, &nak);
    let again = drain_both(&mut a, &mut b, now);
    assert_eq!(again.len(), 6);
    assert_eq!(FrameRepr::parse(&again[0]).unwrap().bth.psn, third);
    assert_eq!(a.counters(), b.counters());
    assert_eq!(a.counters().retransmitted_frames, 6);
}

#[test]
fn a_short_buffer_leaves_the_frame_queued() {
    let mut e = seq_engine();
    let data = [9u8; 4];
    let kw = Body::KeyWrite(KeyWriteRepr {
        redundancy: 1,
        key: 42,
        data: &data,
    });
    e.handle_frame(Instant(0), &report(&reporter(3), kw, 0, false));
    assert_eq!(e.pending_frames(), 1);
    let mut small = [0u8; 40];
    assert_eq!(e.poll_transmit_into(Instant(0), &mut small), None);
    assert_eq!(e.pending_frames(), 1);
    assert_eq!(e.counters().roce_frames_out, 0);
    let mut room = vec![0u8; 2048];
    let n = e
        .poll_transmit_into(Instant(0), &mut room)
        .expect("the frame, now");
    let f = FrameRepr::parse(&room[..n]).expect("a valid frame");
    assert_eq!(f.payload.len(), 8);
    assert_eq!(e.pending_frames(), 0);
    assert_eq!(e.poll_transmit_into(Instant(0), &mut room), None);
}
