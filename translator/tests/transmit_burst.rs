//! `Engine::poll_transmit_burst` (a burst of frames built into a burst of caller buffers in one call) gives
//! byte for byte the frames, lengths, counters and state of `poll_transmit_into` called on each buffer in
//! turn until it gives `None`: through DTA NACKs, every primitive's frames, shapes changing mid-burst,
//! AckReq cadence, stalled atomics, retransmissions, and buffers too short in the middle of a burst.

mod support;

use dta_protocol::dta::{AppendRepr, Body, KeyIncrementRepr, KeyWriteRepr, PostcardRepr};
use dta_protocol::roce::{AckKind, FrameRepr, NakCode};
use dta_translator::{Engine, Instant};
use support::*;

/// A mixed stream, as `transmit_into.rs` sends: Key-Write with N of 1 to 3, Key-Increment, Append,
/// Postcarding, and retransmittable reports with sequence gaps (DTA NACKs).
fn reports() -> Vec<Vec<u8>> {
    let from = reporter(7);
    let data = [1u8, 2, 3, 4];
    let mut out = Vec::new();
    for i in 0..400u32 {
        let body = match i % 7 {
            0..=2 => Body::KeyWrite(KeyWriteRepr {
                redundancy: (i % 3) as u8 + 1,
                key: i.wrapping_mul(0x9E37_79B1),
                data: &data,
            }),
            3 => Body::KeyIncrement(KeyIncrementRepr {
                redundancy: 2,
                key: i,
                counter: u64::from(i),
            }),
            4 => Body::Append(AppendRepr {
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
        if i % 50 == 0 {
            // A retransmittable Key-Write after a gap: a DTA NACK.
            let kw = Body::KeyWrite(KeyWriteRepr {
                redundancy: 1,
                key: i,
                data: &data,
            });
            out.push(report(&reporter(9), kw, (i / 50 * 3) as u8, true));
        }
    }
    out
}

/// xorshift64*: reproducible burst sizes and buffer lengths.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

/// Drains `a` frame by frame and `b` burst by burst (random burst sizes, some buffers too short), checking
/// every burst against the frames `a` gave for it; returns the frames.
fn drain_both(a: &mut Engine, b: &mut Engine, now: Instant, rng: &mut Rng) -> Vec<Vec<u8>> {
    let mut frames = Vec::new();
    loop {
        let k = rng.below(20) as usize + 1;
        let rooms: Vec<usize> = (0..k)
            .map(|_| match rng.below(25) {
                0 => 40,
                1 => 100,
                _ => 2048,
            })
            .collect();
        let mut want: Vec<Vec<u8>> = rooms.iter().map(|&n| vec![0xA5u8; n]).collect();
        let mut got = want.clone();
        let mut want_lens = vec![usize::MAX; k];
        let mut n_want = 0;
        for (buf, l) in want.iter_mut().zip(want_lens.iter_mut()) {
            match a.poll_transmit_into(now, buf) {
                Some(len) => *l = len,
                None => break,
            }
            n_want += 1;
        }
        let mut lens = vec![usize::MAX; k];
        let mut bufs: Vec<&mut [u8]> = got.iter_mut().map(|v| &mut v[..]).collect();
        let n = b.poll_transmit_burst(now, &mut bufs, &mut lens);
        assert_eq!(n, n_want, "burst of {k} after {} frames", frames.len());
        assert_eq!(lens, want_lens);
        assert_eq!(got, want);
        assert_eq!(a.counters(), b.counters());
        assert_eq!(a.pending_frames(), b.pending_frames());
        for (f, &l) in want.iter().zip(&want_lens).take(n) {
            frames.push(f[..l].to_vec());
        }
        if n == 0 && rooms.first() == Some(&2048) {
            return frames;
        }
    }
}

#[test]
fn a_burst_equals_frames_one_at_a_time() {
    let mut total = 0;
    for seed in 1..40u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let (mut a, mut b) = (seq_engine(), seq_engine());
        let mut now = Instant(1_000);
        let mut sent = 0;
        let all = reports();
        let mut at = 0;
        while at < all.len() {
            let chunk = rng.below(40) as usize + 1;
            for r in all.iter().skip(at).take(chunk) {
                a.handle_frame(now, r);
                b.handle_frame(now, r);
            }
            at += chunk;
            let frames = drain_both(&mut a, &mut b, now, &mut rng);
            sent += frames.len();
            // Sometimes leave the window unanswered for a while, so it fills and atomics stall.
            if rng.below(4) != 0 {
                answer_all(&mut [&mut a, &mut b], now, &frames);
            } else if let Some(f) = frames.iter().find_map(|f| FrameRepr::parse(f).ok()) {
                // Or lose one: a sequence NAK for it, and go-back-N.
                let nak = response(f.bth.psn, AckKind::Nak(NakCode::PsnSequenceError), None);
                a.handle_frame(now, &nak);
                b.handle_frame(now, &nak);
            }
            now = Instant(now.0 + 10_000);
            if rng.below(8) == 0 {
                now = Instant(now.0 + 50_000_000);
                a.handle_timeout(now);
                b.handle_timeout(now);
            }
        }
        assert!(a.counters().dta_nacks_sent > 0);
        assert_eq!(a.counters(), b.counters());
        total += sent;
    }
    // Some streams stall early (a lost frame's window unanswered), most send hundreds of frames.
    assert!(total > 39 * 150, "{total} frames");
}
