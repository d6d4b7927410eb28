//! The requester's unit tests: the ring against a deque, and the requester's fast paths against its
//! general ones: a requester driven through bursts, `Vec`s and the ACK path's in-line prefix, and its
//! twin (the model) driven frame by frame into buffers with every ACK through `on_ack_any`, side by
//! side.
//! (What go-back-N must deliver is the spec model's, in `tests/go_back_n.rs`.)

use std::collections::VecDeque;
use std::time::Duration;

use dta_protocol::roce::{AckKind, NakCode, ROCEV2_UDP_PORT};
use dta_protocol::udp::UdpEndpoints;

use super::ring::{self, is_inline, Ring};
use super::state::{Requester, RequesterParams};
use super::work::{InFlight, WorkRequest};
use crate::config::{RateConfig, RequesterConfig};
use crate::frames::{FrameBuilder, Op, Payload};
use crate::psn;
use crate::stats::Tag;
use crate::stats::{RcStats, Tally};
use crate::test_rng::Rng;
use crate::time::Instant;

/// The requester's counts and its first sends by tag, as the translator's engine keeps them (per
/// primitive): what the differential tests compare.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Counts {
    all: RcStats,
    first_sent: [u64; 4],
}

impl Tally for Counts {
    fn first_sent(&mut self, tag: Tag) {
        self.all.first_sent(tag);
        self.first_sent[usize::from(tag.0)] += 1;
    }
    fn frames_out(&mut self, frames: u64, bytes: u64) {
        self.all.frames_out(frames, bytes);
    }
    fn retransmitted(&mut self) {
        self.all.retransmitted();
    }
    fn rate_limited(&mut self) {
        self.all.rate_limited();
    }
    fn stale_response(&mut self) {
        self.all.stale_response();
    }
    fn ack(&mut self) {
        self.all.ack();
    }
    fn atomic_ack(&mut self) {
        self.all.atomic_ack();
    }
    fn nak_psn_sequence(&mut self) {
        self.all.nak_psn_sequence();
    }
    fn nak_rnr(&mut self) {
        self.all.nak_rnr();
    }
    fn nak_invalid_request(&mut self) {
        self.all.nak_invalid_request();
    }
    fn nak_remote_access(&mut self) {
        self.all.nak_remote_access();
    }
    fn nak_remote_operational(&mut self) {
        self.all.nak_remote_operational();
    }
    fn retransmit_timeout(&mut self) {
        self.all.retransmit_timeout();
    }
    fn qp_error(&mut self) {
        self.all.qp_error();
    }
}

fn builder(dest_qp: u32) -> FrameBuilder {
    let ep = UdpEndpoints::new(
        [2, 0, 0, 0, 0, 1],
        [2, 0, 0, 0, 0, 2],
        [198, 18, 0, 1],
        [198, 18, 0, 2],
        49152,
        ROCEV2_UDP_PORT,
    );
    FrameBuilder::new(ep, dest_qp)
}

/// A Write with an inline or a heap payload, or a FETCH_ADD; `tag` marks it.
fn work(rng: &mut Rng, tag: u32) -> WorkRequest {
    let op = if rng.chance(30) {
        Op::FetchAdd {
            va: u64::from(tag) * 8,
            rkey: 7,
            add: rng.next_u64(),
        }
    } else {
        let len = [0, 4, 8, 32, 33, 40, 64, 200][rng.below(8) as usize];
        let bytes: Vec<u8> = (0..len)
            .map(|k| (tag as u8).wrapping_add(k as u8))
            .collect();
        let payload = if rng.chance(20) {
            // Heap capacity, short contents: inline by length, not by storage.
            let mut p = Payload::with_capacity(100);
            p.extend_from_slice(&bytes[..bytes.len().min(8)]);
            p
        } else {
            Payload::from_slice(&bytes)
        };
        Op::Write {
            va: u64::from(tag) * 64,
            rkey: 9,
            payload,
        }
    };
    let primitive = if op.is_atomic() { Tag(2) } else { Tag(3) };
    WorkRequest {
        op,
        tag: primitive,
        reports: 0,
    }
}

/// A copy of `wr` whose payload is where `wr`'s is: `clone` puts a short payload inline, and the
/// requester must also be shown short payloads with heap storage (`work` makes some).
fn same_storage(wr: &WorkRequest) -> WorkRequest {
    let Op::Write { va, rkey, payload } = &wr.op else {
        return wr.clone();
    };
    if !ring::on_heap(&wr.op) {
        return wr.clone();
    }
    let mut p = Payload::with_capacity(100.max(payload.len()));
    p.extend_from_slice(payload);
    WorkRequest {
        op: Op::Write {
            va: *va,
            rkey: *rkey,
            payload: p,
        },
        tag: wr.tag,
        reports: wr.reports,
    }
}

#[test]
fn inline_payloads_are_told_from_heap_ones() {
    assert!(is_inline(&Payload::from_slice(&[1; 8])));
    assert!(is_inline(&Payload::from_slice(&[])));
    assert!(!is_inline(&Payload::from_slice(&[1; 33])));
    assert!(!is_inline(&Payload::with_capacity(100)));
    // Wherever the payload is: moved into a work request and a box.
    let wr = Box::new(WorkRequest {
        op: Op::Write {
            va: 0,
            rkey: 0,
            payload: Payload::from_slice(&[3; 32]),
        },
        tag: Tag(1),
        reports: 0,
    });
    let Op::Write { payload, .. } = &wr.op else {
        unreachable!()
    };
    assert!(is_inline(payload));
}

fn tag_of(f: &InFlight) -> u32 {
    f.psn
}

/// The ring against a `VecDeque` of the same work requests: pushes past several growths, retirement
/// of partial runs across the wrap, removal, retention; after every step the elements and their order
/// agree, and no slot out of use keeps a heap buffer.
#[test]
fn ring_equals_a_deque() {
    for seed in 1..200u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut ring = Ring::new();
        let mut model: VecDeque<(u32, WorkRequest)> = VecDeque::new();
        let mut tag = 0u32;
        for _ in 0..400 {
            match rng.below(10) {
                0..=4 => {
                    for _ in 0..rng.below(20) {
                        tag += 1;
                        let wr = work(&mut rng, tag);
                        model.push_back((tag, wr.clone()));
                        ring.push_back(wr);
                        // The tag in the slot's PSN, which only the window sets otherwise.
                        if let Some(f) = ring.get_mut(model.len() - 1) {
                            f.psn = tag;
                        }
                    }
                }
                5..=7 => {
                    let n = rng.below(model.len() as u64 + 3) as usize;
                    ring.pop_front(n);
                    model.drain(..n.min(model.len()));
                }
                8 => {
                    let i = rng.below(model.len() as u64 + 2) as usize;
                    ring.remove(i);
                    if i < model.len() {
                        model.remove(i);
                    }
                }
                _ => {
                    let m = rng.below(4) as usize + 1;
                    ring.retain(|k, f| (k + tag_of(f) as usize) % m != 0);
                    let mut k = 0;
                    model.retain(|(t, _)| {
                        let keep = (k + *t as usize) % m != 0;
                        k += 1;
                        keep
                    });
                }
            }
            assert_eq!(ring.len(), model.len());
            assert_eq!(ring.is_empty(), model.is_empty());
            for (i, (t, wr)) in model.iter().enumerate() {
                let f = ring.get(i).expect("element in the ring");
                assert_eq!((tag_of(f), &f.wr), (*t, wr));
                let slot = ring.slot_of(i).expect("slot");
                assert_eq!(ring.at(slot).map(tag_of), Some(*t));
                assert_eq!(
                    ring.next_of(i, slot).map(tag_of),
                    model.get(i + 1).map(|e| e.0)
                );
            }
            assert!(ring.get(model.len()).is_none());
            assert_eq!(ring.heap_out_of_use(), 0);
            assert_eq!(ring.slot_of(model.len()), None);
        }
    }
}

/// A retired heap payload gives its buffer back to the pool at once, as its drop did.
#[test]
fn retiring_returns_heap_buffers() {
    let mut ring = Ring::new();
    let p = Payload::from_slice(&[5; 100]);
    let at = p.as_ptr();
    ring.push_back(WorkRequest {
        op: Op::Write {
            va: 0,
            rkey: 0,
            payload: p,
        },
        tag: Tag(3),
        reports: 0,
    });
    ring.pop_front(1);
    assert_eq!(Payload::with_capacity(100).as_ptr(), at);
}

fn params(rng: &mut Rng) -> RequesterParams {
    let cfg = RequesterConfig {
        // Now and then Key-Write's cadence and a window that lets a burst run long.
        ack_every: if rng.chance(25) {
            16
        } else {
            rng.below(6) as u32 + 1
        },
        window: if rng.chance(25) {
            rng.below(240) as u32 + 16
        } else {
            rng.below(20) as u32 + 1
        },
        adaptive_window: rng.chance(50),
        queue_capacity: 4096,
        retransmit_timeout_us: rng.below(2_000) + 10,
        adaptive_timeout: rng.chance(50),
        max_retransmit_timeout_us: 50_000,
        max_backoff_shift: rng.below(7) as u32,
        retry_limit: rng.below(8) as u32 + 1,
    };
    let rate = match rng.below(4) {
        0 => RateConfig {
            packets_per_sec: 200_000,
            burst_packets: 4,
            ..RateConfig::default()
        },
        1 => RateConfig {
            bytes_per_sec: 20_000_000,
            burst_bytes: 600,
            ..RateConfig::default()
        },
        _ => RateConfig::default(),
    };
    RequesterParams {
        cfg,
        rate,
        max_atomics: rng.below(4) as u32 + 1,
        start_psn: 0xFF_FFF0 + rng.below(32) as u32,
    }
}

/// `queue_fits` against the limit taken before a row of pushes says what `queue_room() >= n` says, for
/// every N of a report, as the queue fills up to its capacity and past the ring's growth, with part of
/// the queue sent (the window moved) before the limit is taken.
#[test]
fn queue_fits_is_queue_room() {
    for seed in 1..30u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut p = params(&mut rng);
        p.cfg.queue_capacity = 1 + rng.below(300) as u32;
        let mut qp = Requester::new(p, builder(0x11), Instant(0));
        let (mut c, mut out) = (Counts::default(), Vec::new());
        for tag in 0..rng.below(40) as u32 {
            qp.push(work(&mut rng, tag));
        }
        while rng.chance(800) && qp.poll_transmit(Instant(0), &mut c, &mut out) {}
        let limit = qp.queue_limit();
        let mut full = 0;
        for tag in 0..400u32 {
            for n in 1..=8 {
                assert_eq!(
                    qp.queue_fits(limit, n),
                    qp.queue_room() >= n,
                    "seed {seed} tag {tag} n {n}"
                );
            }
            if qp.queue_room() == 0 {
                full += 1;
            } else {
                qp.push(work(&mut rng, tag));
            }
        }
        assert!(full > 0, "seed {seed}: the queue never filled");
    }
}

/// `push_n_with` queues what `push` of each of the same work requests queues, groups of 0 to 8 (a
/// Key-Write or Key-Increment report's N) with the ring growing under them: the same work requests,
/// frames and counters, no heap buffer left out of use.
#[test]
fn push_n_with_equals_pushes() {
    for seed in 1..40u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let (mut a, mut b) = twin_requesters(&mut rng);
        let (mut ca, mut cb) = (Counts::default(), Counts::default());
        let (mut fa, mut fb) = (Vec::new(), Vec::new());
        let mut tag = 0u32;
        for step in 0..200u64 {
            for _ in 0..rng.below(12) {
                let n = rng.below(9) as u8;
                let primitive = [Tag(1), Tag(2), Tag(3)][rng.below(3) as usize];
                let mut twins = Vec::new();
                for k in 0..n {
                    tag += 1;
                    // The same work request twice (a clone would not keep a heap payload's storage).
                    let wr = work(&mut Rng(rng.0), tag);
                    twins.push(Some(work(&mut rng, tag).op));
                    a.push(WorkRequest {
                        op: wr.op,
                        tag: primitive,
                        // `push_n_with`'s last work request carries the report.
                        reports: u32::from(k + 1 == n),
                    });
                }
                let mut calls = 0u8;
                b.push_n_with(primitive, n, |k| {
                    assert_eq!(k, calls);
                    calls += 1;
                    twins[usize::from(k)].take().unwrap()
                });
                assert_eq!(calls, n);
            }
            same_rings_and_frames(
                (&mut a, &mut ca, &mut fa),
                (&mut b, &mut cb, &mut fb),
                &mut rng,
                Instant(step * 1_000),
                &format!("seed {seed} step {step}"),
            );
        }
        assert_eq!(ca, cb);
    }
}

/// Two fresh requesters with the same random parameters, for the push-equivalence tests.
/// A requester and its model (a twin whose ACKs all take the general path), on the same random
/// parameters, at `now`.
fn with_model(rng: &mut Rng, now: Instant) -> (Requester, Requester) {
    let p = params(rng);
    let mut model = Requester::new(p.clone(), builder(0x11), now);
    model.slow_acks = true;
    (Requester::new(p, builder(0x11), now), model)
}

fn twin_requesters(rng: &mut Rng) -> (Requester, Requester) {
    let p = params(rng);
    (
        Requester::new(p.clone(), builder(0x11), Instant(0)),
        Requester::new(p, builder(0x11), Instant(0)),
    )
}

/// After the same work went into `a` and `b` (one way each): the same work requests in the same
/// slots with the same heap-ness, then the same frames as both send at `now`; sometimes everything in
/// flight is delivered. No heap buffer is left in a slot out of use in `b`.
fn same_rings_and_frames(
    (a, ca, fa): (&mut Requester, &mut Counts, &mut Vec<u8>),
    (b, cb, fb): (&mut Requester, &mut Counts, &mut Vec<u8>),
    rng: &mut Rng,
    now: Instant,
    at: &str,
) {
    assert_eq!(a.ring.len(), b.ring.len(), "{at}");
    for i in 0..a.ring.len() {
        let (x, y) = (a.ring.get(i), b.ring.get(i));
        assert_eq!(x.map(|f| &f.wr), y.map(|f| &f.wr), "{at}");
        let heap = |f: Option<&InFlight>| f.map(|f| ring::on_heap(&f.wr.op));
        assert_eq!(heap(x), heap(y), "{at}");
    }
    for _ in 0..rng.below(60) {
        let (sa, sb) = (a.poll_transmit(now, ca, fa), b.poll_transmit(now, cb, fb));
        assert_eq!(sa, sb, "{at}");
        if !sa {
            break;
        }
        assert_eq!(fa, fb, "{at}");
    }
    if rng.chance(70) {
        a.assume_delivered();
        b.assume_delivered();
    }
    assert_eq!(b.ring.heap_out_of_use(), 0, "{at}");
}

/// `push_write` queues what `push` of the same WRITE queues: two requesters fed the same work, one
/// through each, hold the same work requests (in slots that held anything: retired inline and heap
/// WRITEs, FETCH_ADDs, vacant ones) and send the same frames, with no heap buffer left out of use.
#[test]
fn push_write_equals_push() {
    for seed in 1..60u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let (mut a, mut b) = twin_requesters(&mut rng);
        let (mut ca, mut cb) = (Counts::default(), Counts::default());
        let (mut fa, mut fb) = (Vec::new(), Vec::new());
        let mut tag = 0u32;
        for step in 0..300u64 {
            for _ in 0..rng.below(40) {
                tag += 1;
                // The same work request twice (a clone would not keep a heap payload's storage).
                let wr = work(&mut Rng(rng.0), tag);
                let twin = work(&mut rng, tag);
                let primitive = if rng.chance(50) { Tag(1) } else { wr.tag };
                match twin.op {
                    Op::Write { va, rkey, payload } => {
                        a.push(WorkRequest {
                            op: wr.op,
                            tag: primitive,
                            reports: 0,
                        });
                        b.push_write(primitive, va, rkey, payload);
                    }
                    Op::FetchAdd { .. } => {
                        a.push(wr);
                        b.push(twin);
                    }
                }
            }
            same_rings_and_frames(
                (&mut a, &mut ca, &mut fa),
                (&mut b, &mut cb, &mut fb),
                &mut rng,
                Instant(step * 1_000),
                &format!("seed {seed} step {step}"),
            );
        }
        assert_eq!(ca, cb);
    }
}

fn kind(rng: &mut Rng) -> AckKind {
    match rng.below(20) {
        0..=12 => AckKind::Ack { credits: 31 },
        13..=15 => AckKind::Nak(NakCode::PsnSequenceError),
        16..=17 => AckKind::RnrNak {
            timer: rng.below(32) as u8,
        },
        18 => AckKind::Nak(NakCode::RemoteAccessError),
        _ => AckKind::Nak(NakCode::InvalidRequest),
    }
}

/// A window element's sending: its PSN (24 bits), answered, resent, when first sent.
type Sending = (u32, bool, bool, Instant);

/// Element `i` of `q`'s ring, with its sending's facts while it is in the window.
fn facts(q: &Requester, i: usize) -> Option<(&WorkRequest, Option<Sending>)> {
    q.ring.get(i).map(|f| {
        let sending = (i < q.win).then_some((
            f.psn & dta_protocol::roce::PSN_MASK,
            f.answered,
            f.resent,
            f.sent_at,
        ));
        (&f.wr, sending)
    })
}

/// Everything the requester shows, which must equal the model's.
fn same(r: &Requester, m: &Requester, rc: &Counts, mc: &Counts, step: &str) {
    // Every field of the state machine, and every work request in the ring with its sending's facts.
    let state = |q: &Requester| {
        (
            (
                q.win,
                q.sent,
                q.heap_in_win,
                q.next_psn,
                q.since_ack_req,
                q.atomics,
            ),
            (
                q.retries,
                q.backoff,
                q.cwnd,
                q.cwnd_acked,
                q.timers,
                q.limited,
            ),
            (q.last_rewind, q.probe, q.error, q.closed),
        )
    };
    assert_eq!(state(r), state(m), "state after {step}");
    assert_eq!(r.ring.len(), m.ring.len(), "{step}");
    // The window and the queue's head (the rest of the queue is only ever written by pushes). A PSN
    // is 24 bits wherever it is kept (the start PSN is taken as given until `psn::add` masks it).
    for i in 0..r.ring.len().min(r.win + 4) {
        assert_eq!(facts(r, i), facts(m, i), "ring element {i} after {step}");
    }
    assert_eq!(rc, mc, "counters after {step}");
    assert_eq!(r.queue_depth(), m.queue_depth(), "{step}");
    assert_eq!(r.queue_room(), m.queue_room(), "{step}");
    assert_eq!(r.pending_frames(), m.pending_frames(), "{step}");
    assert_eq!(r.window_occupancy(), m.window_occupancy(), "{step}");
    assert_eq!(r.next_psn(), m.next_psn(), "{step}");
    assert_eq!(r.error(), m.error(), "{step}");
    assert_eq!(r.is_idle(), m.is_idle(), "{step}");
    assert_eq!(
        r.poll_timeout(),
        m.poll_timeout(),
        "poll_timeout after {step}"
    );
    assert_eq!(r.timeout(), m.timeout(), "{step}");
    assert_eq!(r.window_limit(), m.window_limit(), "{step}");
    assert_eq!(r.congestion_cap_pps(), m.congestion_cap_pps(), "{step}");
    // Retired work requests gave their heap buffers back, and the window's count of them is exact.
    assert_eq!(r.ring.heap_out_of_use(), 0, "{step}");
    let heap = (0..r.win)
        .filter(|&i| r.ring.get(i).is_some_and(|f| ring::on_heap(&f.wr.op)))
        .count();
    assert_eq!(r.heap_in_win, heap, "{step}");
}

/// The requester and its model, driven side by side through random streams of work requests,
/// transmissions (into a `Vec` against the model's buffers, and into buffers, some too short), ACKs,
/// ATOMIC ACKs, NAKs and RNR NAKs at PSNs in and around the window, timeouts, congestion
/// notifications, offline delivery and re-establishment, with the PSN wrapping: the same frames, byte
/// for byte, the same counters, timers and state after every step.
#[test]
fn requester_equals_its_model() {
    drive_against_model(false);
}

/// [`Requester::transmit_burst`] against the model's `poll_transmit_into` called on each buffer in turn
/// until it gives `None`, in the same random streams (rates, stalled atomics, windows of one frame,
/// retransmissions, probes, RNR waits, errors, buffers too short in the middle of a burst): the same
/// frames, lengths, untouched buffers past the burst, counters and state.
#[test]
fn burst_equals_repeated_transmit_into() {
    drive_against_model(true);
}

/// Key-Write's ACK path against the model's general one: writes only (now and then one with a heap
/// buffer), sent in bursts and answered mostly by plain ACKs anywhere in and around the window (a
/// cumulative ACK past the front, which `retire_before` retires without a look at the work requests
/// when no atomic is in the window), with NAKs, ATOMIC ACKs of writes, timeouts and the probes they
/// send mixed in: the same frames, counters, timers and state after every step.
#[test]
fn cumulative_acks_of_writes_equal_the_model() {
    let mut fast = 0;
    for seed in 1..200u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut now = Instant(1_000_000);
        let (mut r, mut m) = with_model(&mut rng, now);
        let (mut rc, mut mc) = (Counts::default(), Counts::default());
        let mut tag = 0;
        for step in 0..400 {
            let at = format!("seed {seed} step {step}");
            match rng.below(10) {
                0..=2 => {
                    for _ in 0..rng.below(8) + 1 {
                        tag += 1;
                        let wr = loop {
                            let wr = work(&mut rng, tag);
                            let heap = ring::on_heap(&wr.op);
                            if !wr.op.is_atomic() && (!heap || rng.chance(5)) {
                                break wr;
                            }
                        };
                        r.push(same_storage(&wr));
                        m.push(wr);
                    }
                }
                3..=5 => {
                    burst_step(&mut rng, now, (&mut r, &mut rc), (&mut m, &mut mc), &at);
                }
                6..=8 => {
                    let win = m.window_occupancy() as u32;
                    let front = psn::add(m.next_psn(), 0u32.wrapping_sub(win));
                    let psn = psn::add(
                        front,
                        (rng.below(u64::from(win) + 4) as u32).wrapping_sub(2),
                    );
                    let k = if rng.chance(90) {
                        AckKind::Ack { credits: 31 }
                    } else {
                        kind(&mut rng)
                    };
                    let atomic = rng.chance(3).then(|| rng.next_u64());
                    let i = psn::distance(front, psn) as usize;
                    fast += usize::from(
                        atomic.is_none()
                            && i > 0
                            && i < r.win
                            && r.probe.is_none()
                            && r.heap_in_win == 0
                            && matches!(k, AckKind::Ack { .. }),
                    );
                    r.on_response(now, psn, k, atomic, &mut rc);
                    m.on_response(now, psn, k, atomic, &mut mc);
                }
                _ => {
                    now = now
                        + Duration::from_nanos(
                            [0, 1_000, 50_000, 1_000_000, 20_000_000][rng.below(5) as usize],
                        );
                    assert_eq!(
                        r.on_timeout(now, &mut rc),
                        m.on_timeout(now, &mut mc),
                        "{at}"
                    );
                }
            }
            same(&r, &m, &rc, &mc, &at);
        }
    }
    // Cumulative ACKs of writes with nothing in the way (no probe, no heap buffer) ran, often.
    assert!(fast > 2_000, "{fast}");
}

/// A burst of `k` buffers, some too short, through `r.transmit_burst` and the model frame by frame.
fn burst_step(
    rng: &mut Rng,
    now: Instant,
    (r, rc): (&mut Requester, &mut Counts),
    (m, mc): (&mut Requester, &mut Counts),
    at: &str,
) -> usize {
    let k = if rng.chance(30) {
        64
    } else {
        rng.below(12) as usize + 1
    };
    let rooms: Vec<usize> = (0..k)
        .map(|_| match rng.below(20) {
            0 => 70,
            1 => rng.below(130) as usize,
            _ => 400,
        })
        .collect();
    let mut a: Vec<Vec<u8>> = rooms.iter().map(|&n| vec![0xA5u8; n]).collect();
    let mut b = a.clone();
    let mut la = vec![usize::MAX; k + rng.below(2) as usize];
    let mut bufs: Vec<&mut [u8]> = a.iter_mut().map(|v| &mut v[..]).collect();
    let n = r.transmit_burst(now, rc, &mut bufs, &mut la);
    let mut lb = vec![usize::MAX; la.len()];
    let mut nb = 0;
    for (buf, l) in b.iter_mut().zip(lb.iter_mut()) {
        match m.poll_transmit_into(now, mc, buf) {
            Some(len) => *l = len,
            None => break,
        }
        nb += 1;
    }
    assert_eq!(n, nb, "{at}");
    assert_eq!(la, lb, "{at}");
    assert_eq!(a, b, "{at}");
    n
}

fn drive_against_model(burst: bool) {
    // Bursts of 16 frames or more (the tight loop's steady state), which the comparison must see.
    let mut long_bursts = 0;
    for seed in 1..300u64 {
        let mut rng = Rng(seed.wrapping_mul(0xD1B5_4A32_D192_ED03) | 1);
        let mut now = Instant(1_000_000);
        let (mut r, mut m) = with_model(&mut rng, now);
        let (mut rc, mut mc) = (Counts::default(), Counts::default());
        let mut tag = 0;
        for step in 0..600 {
            let what;
            match rng.below(100) {
                0..=24 => {
                    what = "push";
                    // Now and then a run of one shape (Key-Write's steady state), so that a burst
                    // builds many frames in the tight loop, not the one or two a random mix allows.
                    let run = rng.chance(30).then(|| (rng.below(40) + 8, rng.next_u64()));
                    let n = run.map_or(rng.below(6) + 1, |(n, _)| n);
                    for _ in 0..n {
                        tag += 1;
                        let wr = match run {
                            Some((_, shape)) => work(&mut Rng(shape | 1), tag),
                            None => work(&mut rng, tag),
                        };
                        r.push(same_storage(&wr));
                        m.push(wr);
                    }
                }
                25..=49 => {
                    what = "transmit";
                    if burst && rng.chance(70) {
                        let at = format!("burst (seed {seed} step {step})");
                        let sent =
                            burst_step(&mut rng, now, (&mut r, &mut rc), (&mut m, &mut mc), &at);
                        long_bursts += usize::from(sent >= 16);
                        same(&r, &m, &rc, &mc, &at);
                        continue;
                    }
                    for _ in 0..rng.below(8) + 1 {
                        if rng.chance(50) {
                            // A `Vec` against a buffer of the longest frame's room.
                            let (mut a, mut b) = (Vec::new(), vec![0xA5u8; 400]);
                            let x = r.poll_transmit(now, &mut rc, &mut a);
                            let y = m.poll_transmit_into(now, &mut mc, &mut b);
                            assert_eq!(x, y.is_some(), "seed {seed} step {step}");
                            assert_eq!(&a[..], &b[..y.unwrap_or(0)], "seed {seed} step {step}");
                        } else {
                            let room = if rng.chance(10) { 70 } else { 400 };
                            let (mut a, mut b) = (vec![0xA5u8; room], vec![0xA5u8; room]);
                            let x = r.poll_transmit_into(now, &mut rc, &mut a);
                            let y = m.poll_transmit_into(now, &mut mc, &mut b);
                            assert_eq!((x, &a), (y, &b), "seed {seed} step {step}");
                        }
                    }
                }
                50..=79 => {
                    what = "response";
                    let win = m.window_occupancy() as u32;
                    let front = psn::add(m.next_psn(), 0u32.wrapping_sub(win));
                    let psn = if rng.chance(10) {
                        m.next_psn()
                    } else {
                        psn::add(
                            front,
                            (rng.below(u64::from(win) + 4) as u32).wrapping_sub(2),
                        )
                    };
                    let k = kind(&mut rng);
                    let atomic = rng.chance(30).then(|| rng.next_u64());
                    r.on_response(now, psn, k, atomic, &mut rc);
                    m.on_response(now, psn, k, atomic, &mut mc);
                }
                80..=89 => {
                    what = "time";
                    now = now
                        + Duration::from_nanos(
                            [0, 1_000, 50_000, 1_000_000, 20_000_000][rng.below(5) as usize],
                        );
                    assert_eq!(r.on_timeout(now, &mut rc), m.on_timeout(now, &mut mc));
                }
                90..=92 => {
                    what = "cnp";
                    r.on_cnp(now);
                    m.on_cnp(now);
                }
                93..=94 => {
                    what = "assume_delivered";
                    r.assume_delivered();
                    m.assume_delivered();
                }
                _ => {
                    what = "reestablish";
                    if r.error().is_some() || rng.chance(20) {
                        let start = rng.below(1 << 24) as u32;
                        r.reestablish(builder(0x12), start, now);
                        m.reestablish(builder(0x12), start, now);
                    }
                }
            }
            same(
                &r,
                &m,
                &rc,
                &mc,
                &format!("{what} (seed {seed} step {step})"),
            );
        }
    }
    if burst {
        assert!(
            long_bursts > 30,
            "only {long_bursts} bursts of 16 frames or more"
        );
    }
}

/// The AckReq cadence against its rule, not against another run of the same code (`transmit` and the
/// burst share `NewFrames`, so comparing them cannot see a cadence both get wrong): with `ack_every` A,
/// no rate and a window wider than the queue, frame i (0-based) asks for an ACK exactly when i + 1 is a
/// multiple of A or it is the last work request queued (nothing follows it, so the window would wait
/// for the timeout). Read from the frames' BTH by dta-protocol's parser, for bursts and single frames.
#[test]
fn ack_requests_follow_the_cadence() {
    for ack_every in [1u32, 3, 16] {
        for burst in [false, true] {
            let p = RequesterParams {
                cfg: RequesterConfig {
                    ack_every,
                    window: 512,
                    adaptive_window: false,
                    ..RequesterConfig::default()
                },
                rate: RateConfig::default(),
                max_atomics: 16,
                start_psn: 0xFF_FFF0,
            };
            let mut r = Requester::new(p, builder(0x11), Instant(0));
            let queued = 100u32;
            for tag in 0..queued {
                r.push(WorkRequest {
                    op: Op::Write {
                        va: u64::from(tag) * 8,
                        rkey: 9,
                        payload: Payload::from_slice(&tag.to_le_bytes()),
                    },
                    tag: Tag(3),
                    reports: 0,
                });
            }
            let mut c = Counts::default();
            let mut frames: Vec<Vec<u8>> = Vec::new();
            while frames.len() < queued as usize {
                let before = frames.len();
                if burst {
                    let mut rooms = vec![vec![0u8; 400]; 64];
                    let mut lens = vec![0usize; 64];
                    let mut bufs: Vec<&mut [u8]> = rooms.iter_mut().map(|v| &mut v[..]).collect();
                    let n = r.transmit_burst(Instant(0), &mut c, &mut bufs, &mut lens);
                    frames.extend(
                        rooms
                            .iter()
                            .zip(&lens)
                            .take(n)
                            .map(|(f, &l)| f[..l].to_vec()),
                    );
                } else {
                    let mut f = vec![0u8; 400];
                    if let Some(l) = r.poll_transmit_into(Instant(0), &mut c, &mut f) {
                        frames.push(f[..l].to_vec());
                    }
                }
                assert!(frames.len() > before, "the window has room for every frame");
            }
            for (i, f) in frames.iter().enumerate() {
                let repr = dta_protocol::roce::FrameRepr::parse(f).expect("a RoCE frame");
                let want = (i + 1) % ack_every as usize == 0 || i + 1 == queued as usize;
                assert_eq!(
                    repr.bth.ack_req, want,
                    "ack_every {ack_every}, burst {burst}: frame {i}"
                );
            }
        }
    }
}
