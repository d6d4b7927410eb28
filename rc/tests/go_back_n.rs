//! Go-back-N as a spec: what a reliable connection must do, checked against the real requester over a
//! lossy link to a model responder, with proptest drawing the schedules (pushes, sends, losses in
//! both directions, waits).
//!
//! The spec, for WRITEs:
//! - **PSNs**: work request `i` (in push order) always goes with PSN `start + i` (mod 2^24), however
//!   often it is sent.
//! - **In order, once**: the responder, which takes only the PSN it expects, takes exactly the work
//!   requests pushed, in push order, each once, with the bytes pushed.
//! - **Retransmit after NAK**: after a PSN sequence NAK for PSN `p`, the next frame sent is `p`.
//! - **Retransmit after timeout**: after a retransmit timeout, the next frame sent is the oldest
//!   unacknowledged one.
//! - **Delivery**: once the link stops losing frames, everything pushed is delivered and acknowledged
//!   (the requester idles) without the QP failing.

use std::time::Duration;

use dta_protocol::roce::psn::Psn;
use dta_protocol::roce::{AckKind, Extension, FrameRepr, NakCode, ROCEV2_UDP_PORT};
use dta_protocol::udp::UdpEndpoints;
use dta_rc::frames::{FrameBuilder, Op, Payload};
use dta_rc::{Instant, RcStats, Requester, RequesterConfig, RequesterParams, Tag, WorkRequest};
use proptest::prelude::*;

/// The responder of the spec: it takes the PSN it expects and nothing else. An in-order frame that
/// asks for an ACK is acknowledged, a duplicate is answered with the newest in-order PSN (IBA C9-105),
/// and the first frame past a gap gets one sequence NAK for the expected PSN (then frames are dropped
/// silently until the expected one arrives).
struct Responder {
    epsn: Psn,
    nak_sent: bool,
    /// What it took, in order: (address, bytes).
    delivered: Vec<(u64, Vec<u8>)>,
}

impl Responder {
    fn receive(&mut self, frame: &[u8]) -> Option<(u32, AckKind)> {
        let f = FrameRepr::parse(frame).expect("the requester sends well-formed frames");
        let Extension::Reth(reth) = f.ext else {
            panic!("only WRITEs are pushed: {:?}", f.ext);
        };
        let psn = Psn::new(f.bth.psn);
        if psn == self.epsn {
            self.delivered.push((reth.va, f.payload.to_vec()));
            self.epsn = self.epsn.next();
            self.nak_sent = false;
            return f
                .bth
                .ack_req
                .then_some((psn.value(), AckKind::Ack { credits: 31 }));
        }
        if psn.before(self.epsn) {
            return Some((self.epsn.prev().value(), AckKind::Ack { credits: 31 }));
        }
        if self.nak_sent {
            return None;
        }
        self.nak_sent = true;
        Some((self.epsn.value(), AckKind::Nak(NakCode::PsnSequenceError)))
    }
}

/// One step of a schedule.
#[derive(Debug, Clone)]
enum Step {
    /// Push this many WRITEs.
    Push(u8),
    /// Send up to this many frames; frame `k` is lost when bit `k` of the first mask is set, and its
    /// answer when bit `k` of the second is.
    Send(u8, u16, u16),
    /// Let this many microseconds pass, then run the timers.
    Wait(u16),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (1u8..8).prop_map(Step::Push),
        (1u8..16, any::<u16>(), any::<u16>()).prop_map(|(n, a, b)| Step::Send(n, a, b)),
        (0u16..3000).prop_map(Step::Wait),
    ]
}

/// The requester under test, the spec's responder and what the spec tracks.
struct Link {
    qp: Requester,
    stats: RcStats,
    responder: Responder,
    now: Instant,
    start: Psn,
    /// Every work request pushed: (address, bytes); the `i`th at address `i * 64`.
    pushed: Vec<(u64, Vec<u8>)>,
    /// The PSN the next frame must carry (after a NAK or a timeout), if the spec says which.
    must_resend: Option<u32>,
}

impl Link {
    fn new(start_psn: u32, ack_every: u32, window: u32) -> Self {
        let ep = UdpEndpoints::new(
            [2, 0, 0, 0, 0, 1],
            [2, 0, 0, 0, 0, 2],
            [198, 18, 0, 1],
            [198, 18, 0, 2],
            49152,
            ROCEV2_UDP_PORT,
        );
        let params = RequesterParams {
            cfg: RequesterConfig {
                ack_every,
                window,
                // Losses may go on for long: the spec's QP must not give up.
                retry_limit: u32::MAX,
                ..RequesterConfig::default()
            },
            rate: Default::default(),
            max_atomics: 16,
            start_psn,
        };
        let now = Instant(1_000_000);
        Link {
            qp: Requester::new(params, FrameBuilder::new(ep, 0x11), now),
            stats: RcStats::default(),
            responder: Responder {
                epsn: Psn::new(start_psn),
                nak_sent: false,
                delivered: Vec::new(),
            },
            now,
            start: Psn::new(start_psn),
            pushed: Vec::new(),
            must_resend: None,
        }
    }

    fn push(&mut self, n: u8) {
        for _ in 0..n {
            let i = self.pushed.len() as u64;
            let bytes: Vec<u8> = (0..4 + i % 29).map(|k| (i + k) as u8).collect();
            let va = i * 64;
            self.qp.push(WorkRequest {
                op: Op::Write {
                    va,
                    rkey: 7,
                    payload: Payload::from_slice(&bytes),
                },
                tag: Tag(0),
                reports: 1,
            });
            self.pushed.push((va, bytes));
        }
    }

    /// Sends up to `n` frames over the link (losing those `lost` says, and the answers `mute` says),
    /// checking each against the spec. Returns how many went.
    fn send(&mut self, n: u8, lost: u16, mute: u16) -> usize {
        let mut frame = Vec::new();
        for k in 0..usize::from(n) {
            if !self.qp.poll_transmit(self.now, &mut self.stats, &mut frame) {
                return k;
            }
            let f = FrameRepr::parse(&frame).expect("well-formed");
            let Extension::Reth(reth) = f.ext else {
                panic!("not a WRITE");
            };
            // PSNs: work request `i` goes with `start + i`, always.
            let i = (reth.va / 64) as u32;
            assert_eq!(
                f.bth.psn,
                self.start.add(i).value(),
                "PSN of work request {i}"
            );
            assert_eq!((reth.va, f.payload), {
                let (va, b) = &self.pushed[i as usize];
                (*va, &b[..])
            });
            if let Some(p) = self.must_resend.take() {
                assert_eq!(f.bth.psn, p, "the frame after a NAK or timeout");
            }
            if lost >> (k % 16) & 1 == 1 {
                continue;
            }
            let Some((psn, kind)) = self.responder.receive(&frame) else {
                continue;
            };
            if mute >> (k % 16) & 1 == 1 {
                continue;
            }
            let win = self.qp.window_occupancy() as u32;
            self.qp
                .on_response(self.now, psn, kind, None, &mut self.stats);
            if matches!(kind, AckKind::Nak(_)) && win > 0 && self.qp.window_occupancy() > 0 {
                // Go back N: the NAKed PSN goes next (the responder NAKs a gap once, so this is
                // never the echo of a NAK already acted on).
                self.must_resend = Some(psn);
            }
        }
        usize::from(n)
    }

    /// Lets `us` microseconds pass and runs the timers.
    fn wait(&mut self, us: u16) {
        self.now = self.now + Duration::from_micros(u64::from(us));
        self.fire();
    }

    fn fire(&mut self) {
        let before = self.stats.retransmit_timeouts;
        assert_eq!(self.qp.on_timeout(self.now, &mut self.stats), None);
        if self.stats.retransmit_timeouts > before {
            // The oldest unacknowledged frame goes next.
            let win = self.qp.window_occupancy() as u32;
            self.must_resend = Some(Psn::new(self.qp.next_psn()).sub(win).value());
        }
    }

    /// In order, once: what the responder took is a prefix of what was pushed.
    fn check_delivered(&self) {
        let got = &self.responder.delivered;
        assert!(got.len() <= self.pushed.len());
        assert_eq!(
            got[..],
            self.pushed[..got.len()],
            "delivered in push order, each once"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn go_back_n_delivers_in_order(
        start_psn in prop_oneof![Just(0xFF_FFF0u32), 0u32..(1 << 24)],
        ack_every in 1u32..20,
        window in 1u32..40,
        steps in proptest::collection::vec(step(), 1..120),
    ) {
        let mut link = Link::new(start_psn, ack_every, window);
        for s in steps {
            match s {
                Step::Push(n) => link.push(n),
                Step::Send(n, lost, mute) => {
                    link.send(n, lost, mute);
                }
                Step::Wait(us) => link.wait(us),
            }
            link.check_delivered();
        }
        // Delivery: a lossless link from here on. Each round sends what may go, then moves the clock
        // to the next deadline; a round that leaves the requester as it was (nothing delivered or
        // acknowledged, nothing to wait for) fails the test, so the loop is bounded by progress.
        let mut stalled = 0;
        while !link.qp.is_idle() {
            let state = (link.responder.delivered.len(), link.qp.window_occupancy(), link.qp.queue_depth());
            let sent = link.send(u8::MAX, 0, 0);
            if sent == 0 {
                let Some(t) = link.qp.poll_timeout() else {
                    panic!("not idle, nothing to send and no timer: {state:?}");
                };
                link.now = link.now.max(t);
                link.fire();
            }
            link.check_delivered();
            let after = (link.responder.delivered.len(), link.qp.window_occupancy(), link.qp.queue_depth());
            stalled = if after == state { stalled + 1 } else { 0 };
            // A timeout's probe and its answer take two rounds without a visible change at most.
            prop_assert!(stalled < 8, "no progress: {after:?}");
        }
        prop_assert_eq!(link.responder.delivered.len(), link.pushed.len());
        prop_assert_eq!(link.qp.error(), None);
    }
}
