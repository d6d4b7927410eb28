//! The RoCEv2 requester of one QP: PSNs, AckReq cadence, the retransmission window, go-back-N,
//! retransmit timeout with backoff, RNR waits, atomic responses and the QP error state.
//!
//! Work requests enter a bounded queue; [`Requester::poll_transmit`] (or
//! [`poll_transmit_into`](Requester::poll_transmit_into), straight into a NIC buffer) takes them into the
//! window as the window, the responder's atomic limit and the rate limiter allow. Queue and window are one
//! ring (`ring::Ring`), the window at its head, so taking a work request in moves a boundary, not the
//! request, and retiring acknowledged ones moves the head. The window keeps the work request, not
//! the frame: a retransmission rebuilds the identical frame from the same PSN, which costs less than
//! keeping a copy of every frame in flight.
//!
//! Over 500 lines on purpose: one state machine whose window, timers and response handling share every
//! field and invariant (`sent`, `atomics`, `probe`); split across files they would be harder to check.

use std::time::Duration;

use dta_protocol::roce::{
    aeth::rnr_timer_ns, AckKind, BthOpcode, Extension, FrameRepr, NakCode, PSN_MASK, QPN_MASK,
};

use crate::config::{RateConfig, RequesterConfig};
use crate::dcqcn::Dcqcn;
use crate::frames::{FrameBuilder, FrameOut, Op, Payload};
use crate::psn;
use crate::rate::RateLimiter;
use crate::rtt::RttEstimator;
use crate::stats::{Tag, Tally};
use crate::time::{nanos, Earliest, Instant};

use self::burst::{BurstBuild, FetchAdds, Stage8, Writes, Writes8};
use self::ring::Ring;

mod burst;

/// An operation and the caller's tag for it (handed back when it is first sent, see [`Tally::first_sent`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkRequest {
    /// What to do.
    pub op: Op,
    /// The caller's tag.
    pub tag: Tag,
    /// Reports this work request completes (the caller's unit; the requester only sums them). Every
    /// report the translator's engine takes is carried by exactly one work
    /// request (the last of its own, or the one that writes what the caller batched or cached) or held
    /// by the caller until one carries it: acknowledged, its reports are written; dropped (a collector
    /// restart, a stop), they are counted as lost, in reports ([`Requester::held_reports`]).
    pub reports: u32,
}

/// Why a QP stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QpError {
    /// The responder refused a request (bad R_Key, bounds, alignment, or it failed).
    Nak(NakCode),
    /// Timeouts or RNR NAKs in a row beyond the retry limit.
    RetriesExhausted,
}

/// What [`Requester::on_response_frame`] made of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Response {
    /// An ACKNOWLEDGE or ATOMIC ACKNOWLEDGE for this QP, handled.
    Handled,
    /// A congestion notification.
    Cnp,
    /// Not a response to this QP (another QPN, or a request opcode).
    NotOurs,
}

/// Requester parameters: the configuration plus what the collector advertised.
#[derive(Debug, Clone)]
pub struct RequesterParams {
    /// Configured behaviour.
    pub cfg: RequesterConfig,
    /// Rate limits.
    pub rate: RateConfig,
    /// The responder's `max_dest_rd_atomic`.
    pub max_atomics: u32,
    /// First PSN.
    pub start_psn: u32,
}

/// A work request in the ring: queued, or in the window with the facts of its sending.
#[derive(Debug)]
struct InFlight {
    wr: WorkRequest,
    /// When it was first sent (in the window).
    sent_at: Instant,
    /// Its PSN (in the window).
    psn: u32,
    /// For atomics: the ATOMIC ACKNOWLEDGE arrived.
    answered: bool,
    /// Sent more than once: its response cannot be told apart, so it gives no RTT sample (Karn).
    resent: bool,
}

/// Whether the responder's atomic limit (`max` atomics in the window) holds back the next work request
/// after a frame that is an atomic or not (`atomic`), sent with `atomics` atomics in the window before
/// it; `next_atomic` says whether the next is an atomic, and is asked only when the limit could bite.
/// Such a frame is the last before a stall, so it asks for an ACK (or the window waits for the timeout).
/// The one rule for every transmit path.
#[inline(always)]
fn atomic_limit_stalls(
    atomic: bool,
    atomics: u32,
    max: u32,
    next_atomic: impl FnOnce() -> bool,
) -> bool {
    atomics + u32::from(atomic) >= max && next_atomic()
}

/// The least window loss shrinks it to (frames).
const MIN_CWND: u32 = 8;

/// One QP's requester.
pub struct Requester {
    p: RequesterParams,
    builder: FrameBuilder,
    rate: RateLimiter,
    /// Rate cuts on congestion notifications; its cap is applied to `rate`.
    dcqcn: Dcqcn,
    /// The window and then the queue, in one ring: `ring[..win]` is the window (sent, or waiting for a
    /// go-back-N retransmission), `ring[win..]` the queue of work requests not sent yet (their `psn`,
    /// `sent_at` and flags are set when they enter the window). One ring, so that a work request is written
    /// once when queued and retired by moving the ring's head, instead of moved from a queue into a window
    /// (two ~90-byte moves a frame, which callgrind counted) and dropped through a `VecDeque` drain.
    ring: Ring,
    /// Entries of `ring` in the window.
    win: usize,
    /// `ring[..sent]` is on the wire; `ring[sent..win]` waits for a go-back-N retransmission.
    sent: usize,
    /// Work requests in the window whose payload has a heap buffer (counted as they enter it): without
    /// any, retiring is moving the ring's head, with no look at each work request (~14 instructions
    /// each under callgrind, 16 a Key-Write ACK).
    heap_in_win: usize,
    next_psn: u32,
    since_ack_req: u32,
    /// Atomics in the window, answered or not, until they retire. The responder keeps the answers of its
    /// newest `max_dest_rd_atomic` atomics only (rxe's responder resources, a ring every new atomic
    /// overwrites) and silently drops a duplicate whose answer is gone. An atomic stays in the window
    /// until everything before it is acknowledged, so counting it until then (as IBA counts an
    /// outstanding atomic until it completes, in order) keeps the answer of the oldest unretired atomic
    /// in that cache: counting only unanswered ones let newer atomics push it out, and its
    /// retransmission then went unanswered forever (a livelock seen against rxe under netem).
    atomics: u32,
    retries: u32,
    backoff: u32,
    rtt: RttEstimator,
    /// The configured retransmit timeout in ns (`p` never changes): the timers are armed in whole ns on
    /// every response and window's first frame, where `Duration` arithmetic cost ~30 instructions.
    fixed_rto_ns: u64,
    /// The window in force (frames), below `cfg.window` after losses.
    cwnd: u32,
    /// Frames acknowledged since `cwnd` last grew.
    cwnd_acked: u32,
    /// The instant the retransmit timer was armed at: it fires `rto_from(armed)` later, computed when
    /// asked (`rto_deadline`). Exact, because what that depends on (the RTT estimate, `backoff`) changes
    /// only where the timer is armed again right after (`on_ack`'s sample and `progress`, `on_timeout`,
    /// `reestablish`); an RNR wait arms it at the wait's end. Keeping the deadline itself cost every
    /// ACK the timeout's computation (~20 instructions with the estimator's clamp) for a deadline read
    /// once per poll.
    rto_armed: Option<Instant>,
    rnr_until: Option<Instant>,
    /// Whether a rate applies now (see `sync_limited`).
    limited: bool,
    /// Set when the rate limiter holds the next frame back.
    rate_wait: Option<Instant>,
    /// The PSN and time of the last go-back-N from a sequence NAK, to ignore the echoes of the same loss.
    last_rewind: Option<(u32, Instant)>,
    /// After a retransmit timeout: how many frames of the window had been sent. Only the oldest frame
    /// goes again (a probe, like TCP's retransmission after an RTO) until a response says where the
    /// responder is, so a timeout that fired while ACKs were merely late costs one duplicate, not a
    /// window.
    probe: Option<usize>,
    error: Option<QpError>,
    /// The staging area of bursts of 8-byte WRITEs, kept between bursts (see [`Writes8`]).
    stage8: Option<Box<Stage8>>,
    /// Closed ([`close`](Self::close)): its collector cannot be used; it takes no work.
    closed: bool,
}

impl Requester {
    /// A fresh QP at `now`.
    pub fn new(p: RequesterParams, builder: FrameBuilder, now: Instant) -> Self {
        let rate = RateLimiter::new(&p.rate, now);
        let dcqcn = Dcqcn::new(p.rate.congestion.clone(), p.rate.packets_per_sec);
        let base = p.cfg.retransmit_timeout();
        let rtt = RttEstimator::new(base, base, p.cfg.max_retransmit_timeout());
        let mut r = Requester {
            rtt,
            fixed_rto_ns: nanos(base),
            cwnd: p.cfg.window,
            cwnd_acked: 0,
            dcqcn,
            next_psn: p.start_psn,
            p,
            builder,
            rate,
            ring: Ring::new(),
            win: 0,
            sent: 0,
            heap_in_win: 0,
            since_ack_req: 0,
            atomics: 0,
            retries: 0,
            backoff: 0,
            rto_armed: None,
            rnr_until: None,
            rate_wait: None,
            last_rewind: None,
            probe: None,
            error: None,
            limited: true,
            stage8: Some(burst::stage8()),
            closed: false,
        };
        r.sync_limited();
        r
    }

    /// Room left in the queue.
    pub fn queue_room(&self) -> usize {
        self.queue_limit().saturating_sub(self.ring.len())
    }

    /// The ring length at which the queue is full, `window + queue_capacity`: what
    /// [`queue_room`](Self::queue_room) is measured from. It holds while work requests are only pushed
    /// (nothing sent or acknowledged), so a caller that pushes many in a row (a run of reports) takes it
    /// once and asks [`queue_fits`](Self::queue_fits) per push.
    pub fn queue_limit(&self) -> usize {
        self.win + self.p.cfg.queue_capacity as usize
    }

    /// Whether `n` (at least 1) more work requests fit the queue whose limit is `limit`
    /// ([`queue_limit`](Self::queue_limit), taken since the last send or acknowledgement):
    /// `queue_room() >= n`, in one compare.
    #[inline]
    pub fn queue_fits(&self, limit: usize, n: usize) -> bool {
        self.ring.len() + n <= limit
    }

    /// Work requests waiting for the window.
    pub fn queue_depth(&self) -> usize {
        self.ring.len() - self.win
    }

    /// Frames that would go if the window and the rate let them: queued work requests and frames awaiting
    /// retransmission (a bound for sizing a transmit burst).
    pub fn pending_frames(&self) -> usize {
        self.ring.len() - self.sent.min(self.win)
    }

    /// Frames in flight (sent or awaiting retransmission, unacknowledged).
    pub fn window_occupancy(&self) -> usize {
        self.win
    }

    /// The PSN the next new frame gets.
    pub fn next_psn(&self) -> u32 {
        self.next_psn
    }

    /// The error the QP stopped with, if it did.
    pub fn error(&self) -> Option<QpError> {
        self.error
    }

    /// Whether nothing is queued or in flight.
    pub fn is_idle(&self) -> bool {
        self.ring.is_empty()
    }

    /// The responder QP.
    pub fn dest_qp(&self) -> u32 {
        self.builder.dest_qp()
    }

    /// Queues a work request. The caller checks [`queue_room`](Self::queue_room) for reports; internal
    /// flushes (timers) may go past it by a few entries rather than lose data already accepted.
    #[inline]
    pub fn push(&mut self, wr: WorkRequest) {
        // Its `psn`, `sent_at` and flags are set when it enters the window.
        self.ring.push_back(wr);
    }

    /// Queues a WRITE of `payload` at `va`, tagged `tag`: what [`push`](Self::push) of that work request
    /// queues, with the work request written field by field into its ring slot. `push` builds the whole
    /// work request first and copies it in after the ring's growth check (a call the work request must
    /// outlive, so it sat on the stack): callgrind counted ~20 instructions a Key-Write copy for that.
    #[inline(always)]
    pub fn push_write(&mut self, tag: Tag, va: u64, rkey: u32, payload: Payload) {
        // Its `psn`, `sent_at` and flags are set when it enters the window.
        let Some(wr) = self.ring.push_back_in_place() else {
            return;
        };
        wr.tag = tag;
        // A caller whose write completes reports says so next ([`add_reports`](Self::add_reports)).
        wr.reports = 0;
        ring::overwrite(&mut wr.op, Op::Write { va, rkey, payload });
    }

    /// Adds `n` reports to the work request pushed last: it completes them (see
    /// [`WorkRequest::reports`]). Called right after the push, so that one is in the queue.
    #[inline]
    pub fn add_reports(&mut self, n: u32) {
        if let Some(last) = self.ring.len().checked_sub(1) {
            if let Some(f) = self.ring.get_mut(last) {
                f.wr.reports = f.wr.reports.saturating_add(n);
            }
        }
    }

    /// Reports that the work queued or unacknowledged completes: what is lost if the QP's work is dropped.
    pub fn held_reports(&self) -> u64 {
        (0..self.ring.len())
            .filter_map(|i| self.ring.get(i))
            .map(|f| u64::from(f.wr.reports))
            .sum()
    }

    /// Closes the QP: its collector cannot be used (it came back with memory the translator cannot write).
    /// Its queued and unacknowledged work is dropped (returns the reports that work completes, to be
    /// counted as lost), and it takes no more work: its [`queue_room`](Self::queue_room) is 0 until it is
    /// replaced by a new QP.
    pub fn close(&mut self) -> u64 {
        let lost = self.held_reports();
        self.ring.pop_front(self.ring.len());
        self.win = 0;
        self.sent = 0;
        self.heap_in_win = 0;
        self.atomics = 0;
        self.since_ack_req = 0;
        self.retries = 0;
        self.backoff = 0;
        self.rto_armed = None;
        self.rnr_until = None;
        self.rate_wait = None;
        self.last_rewind = None;
        self.probe = None;
        self.error = None;
        self.p.cfg.queue_capacity = 0;
        self.closed = true;
        lost
    }

    /// Whether the QP was [`close`](Self::close)d.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Queues `n` work requests tagged `tag`, the `k`th's operation `op(k)` (`k` in `0..n`): what `n`
    /// [`push`](Self::push)es of them queue, with the ring's growth checked and its length moved once
    /// for all `n` and each operation built in its slot (Key-Write's and Key-Increment's N copies a
    /// report).
    #[inline(always)]
    pub fn push_n_with(&mut self, tag: Tag, n: u8, mut op: impl FnMut(u8) -> Op) {
        // Their `psn`, `sent_at` and flags are set when they enter the window.
        let (slots, first, mask) = self.ring.push_back_n_in_place(usize::from(n));
        for k in 0..n {
            // Always there: `mask` wraps an index into the slots (a power of two of them).
            let Some(slot) = slots.get_mut((first + usize::from(k)) & mask) else {
                continue;
            };
            let wr = &mut slot.wr;
            wr.tag = tag;
            // The report's last copy carries it (written once all its copies are).
            wr.reports = u32::from(k + 1 == n);
            ring::overwrite(&mut wr.op, op(k));
        }
    }

    /// Writes the next frame to send into `out`, if any may go now.
    pub fn poll_transmit(&mut self, now: Instant, c: &mut impl Tally, out: &mut Vec<u8>) -> bool {
        self.transmit(now, c, out).is_some()
    }

    /// [`poll_transmit`](Self::poll_transmit) straight into `buf` (a NIC buffer's data room): the frame's
    /// length, or `None` when nothing may go now or the next frame is longer than `buf` (then it stays
    /// queued; a buffer of the path MTU plus 128 bytes always fits).
    pub fn poll_transmit_into(
        &mut self,
        now: Instant,
        c: &mut impl Tally,
        buf: &mut [u8],
    ) -> Option<usize> {
        self.transmit(now, c, buf)
    }

    fn transmit<O: FrameOut + ?Sized>(
        &mut self,
        now: Instant,
        c: &mut impl Tally,
        out: &mut O,
    ) -> Option<usize> {
        if self.error.is_some() {
            return None;
        }
        if let Some(t) = self.rnr_until {
            if t > now {
                return None;
            }
            self.rnr_until = None;
        }
        if self.probe.is_some() && self.sent >= 1 {
            // Probing after a timeout: nothing more until the probe is answered.
            return None;
        }
        if self.sent < self.win {
            return self.retransmit(now, c, out);
        }
        // The front work request's slot found once (its facts read once: opcode, tag, length), and
        // the next one's from it: each ring lookup and op match costs a few instructions on every frame.
        let at = self.win;
        let slot = self.ring.slot_of(at)?;
        let front = &self.ring.at(slot)?.wr;
        let (atomic, tag) = (front.op.is_atomic(), front.tag);
        // The frame's length only for the rate: whether it fits `out` is learnt from the build (below),
        // which saves computing it for every frame.
        let limited_len = self.limited.then(|| front.op.frame_len());
        if at >= self.cwnd as usize || (atomic && self.atomics >= self.p.max_atomics) {
            return None;
        }
        if let Some(len) = limited_len {
            if !out.fits(len) || !self.rate_ok(now, len, c) {
                return None;
            }
        }
        self.since_ack_req += 1;
        let psn = self.next_psn;
        let window_full = at + 1 >= self.cwnd as usize;
        let stalls = match self.ring.next_of(at, slot) {
            None => true,
            Some(next) => {
                // `next` cannot follow at once: the responder's atomic limit, or the rate.
                atomic_limit_stalls(atomic, self.atomics, self.p.max_atomics, || {
                    next.wr.op.is_atomic()
                }) || (self.limited && self.rate.ready_at(now, next.wr.op.frame_len()) > now)
            }
        };
        let ack_req = self.since_ack_req >= self.p.cfg.ack_every || window_full || stalls;
        // `slot` holds element `at`: `at` above found it.
        let f = self.ring.at_mut(slot)?;
        let Some(n) = out.build(&mut self.builder, &f.wr.op, psn, ack_req) else {
            if !out.fits(f.wr.op.frame_len()) {
                // `out` is too short (the build wrote nothing): it stays queued, and nothing changed
                // but the cadence count, put back (a rate, which the frame's length went to, checked
                // the fit before anything changed).
                self.since_ack_req -= 1;
                return None;
            }
            // A frame that cannot be emitted at all (beyond the UDP length limit, which the MTU cap rules
            // out) is dropped, as when the queue was apart from the window, so it cannot block the queue.
            self.ring.remove(at);
            return None;
        };
        f.psn = psn;
        f.answered = false;
        f.sent_at = now;
        f.resent = false;
        let heap = ring::on_heap(&f.wr.op);
        if ack_req {
            self.since_ack_req = 0;
        }
        if atomic {
            self.atomics += 1;
        }
        self.heap_in_win += usize::from(heap);
        c.first_sent(tag);
        self.win += 1;
        self.sent += 1;
        self.next_psn = psn::add(psn, 1);
        self.account(now, n, c);
        Some(n)
    }

    /// Up to `bufs.len()` (and `lens.len()`) frames, frame `k` written into `bufs[k]` and its length into
    /// `lens[k]`: how many. The same frames, state and counters as calling
    /// [`poll_transmit_into`](Self::poll_transmit_into) on `bufs[0]`, `bufs[1]`, ... until it gives
    /// `None` (buffers from there on are left as they were). New frames of the shape built last, with no
    /// retransmission, probe, RNR wait or rate in the way (the steady state) are built in one tight loop
    /// that checks those once; anything else goes through the per-frame path, one frame at a time.
    pub fn transmit_burst(
        &mut self,
        now: Instant,
        c: &mut impl Tally,
        bufs: &mut [&mut [u8]],
        lens: &mut [usize],
    ) -> usize {
        let want = bufs.len().min(lens.len());
        let mut n = 0;
        while n < want {
            if self.error.is_none()
                && self.rnr_until.is_none()
                && self.probe.is_none()
                && self.sent == self.win
                && !self.limited
            {
                let (Some(b), Some(l)) = (bufs.get_mut(n..want), lens.get_mut(n..want)) else {
                    break;
                };
                n += self.burst_new(now, c, b, l);
                if n >= want {
                    break;
                }
            }
            // The next frame (whatever stopped the loop above: another shape, a stall, a short buffer)
            // the general way; `None` ends the burst as it ends a caller's loop.
            let (Some(b), Some(l)) = (bufs.get_mut(n), lens.get_mut(n)) else {
                break;
            };
            match self.transmit(now, c, &mut **b) {
                Some(len) => *l = len,
                None => break,
            }
            n += 1;
        }
        n
    }

    /// The tight loop of [`transmit_burst`](Self::transmit_burst): new frames while they have the
    /// builder's last shape, the window has room and nothing but the cadence decides AckReq. The caller
    /// checked that no error, RNR wait, probe, retransmission or rate applies (none of which a new frame
    /// changes). It stops before the first frame it cannot build exactly as [`transmit`](Self::transmit)
    /// would (leaving it, untouched, to that), and returns how many it built. Each step is `transmit`'s
    /// new-frame path with those checks taken out and the shape looked up once.
    #[inline(never)]
    fn burst_new(
        &mut self,
        now: Instant,
        c: &mut impl Tally,
        bufs: &mut [&mut [u8]],
        lens: &mut [usize],
    ) -> usize {
        let Some(shape) = self.builder.last_shape() else {
            return 0;
        };
        if let Some((frame_len, payload_len)) = shape.short_write_lens() {
            if shape.write8().is_some() {
                // The staging area is lent to the burst and given back (allocated only if a panic
                // had lost it).
                let fields = self.stage8.take().unwrap_or_else(burst::stage8);
                let mut w = Writes8 { fields };
                let k = self.burst_templated(now, c, (bufs, lens), frame_len, &mut w);
                self.stage8 = Some(w.fields);
                return k;
            }
            let mut writes = Writes { payload_len };
            return self.burst_templated(now, c, (bufs, lens), frame_len, &mut writes);
        }
        if let Some(frame_len) = shape.fetch_add_len() {
            return self.burst_templated(now, c, (bufs, lens), frame_len, &mut FetchAdds);
        }
        let cwnd = self.cwnd as usize;
        let (max_atomics, ack_every) = (self.p.max_atomics, self.p.cfg.ack_every);
        let mut psn = self.next_psn;
        let mut bytes = 0u64;
        let mut k = 0;
        for (buf, len_out) in bufs.iter_mut().zip(lens.iter_mut()) {
            let at = self.win;
            if at >= cwnd {
                break;
            }
            let Some(slot) = self.ring.slot_of(at) else {
                break;
            };
            let Some(f) = self.ring.at(slot) else {
                break;
            };
            let op = &f.wr.op;
            let atomic = op.is_atomic();
            if (atomic && self.atomics >= max_atomics) || !shape.fits(op) {
                break;
            }
            let since = self.since_ack_req + 1;
            let stalls = match self.ring.next_of(at, slot) {
                None => true,
                Some(next) => {
                    // As in `transmit`, without the rate (none applies).
                    atomic_limit_stalls(atomic, self.atomics, max_atomics, || {
                        next.wr.op.is_atomic()
                    })
                }
            };
            let ack_req = since >= ack_every || at + 1 >= cwnd || stalls;
            // A buffer too short: nothing written, nothing changed; `transmit` decides about it. A
            // WRITE's payload bytes are read out once, for the build and the heap test.
            let (built, heap) = match op {
                Op::Write { va, rkey, payload } => {
                    let data: &[u8] = payload;
                    let heap = !ring::is_inline_data(payload, data);
                    let built = shape.write_rdma_write(op, *va, *rkey, data, psn, ack_req, buf);
                    (built, heap)
                }
                Op::FetchAdd { .. } => (shape.write(op, psn, ack_req, buf), false),
            };
            let Some(n) = built else {
                break;
            };
            let tag = f.wr.tag;
            if let Some(f) = self.ring.at_mut(slot) {
                f.psn = psn;
                f.answered = false;
                f.sent_at = now;
                f.resent = false;
            }
            self.since_ack_req = if ack_req { 0 } else { since };
            self.atomics += u32::from(atomic);
            self.heap_in_win += usize::from(heap);
            c.first_sent(tag);
            self.win += 1;
            self.sent += 1;
            psn = psn::add(psn, 1);
            bytes += n as u64;
            *len_out = n;
            k += 1;
        }
        if k > 0 {
            self.burst_sent(now, c, psn, k, bytes);
        }
        k
    }

    /// The end of a burst of `k` new frames (`bytes` in all), the next PSN `psn`: `account` for each
    /// frame (no rate applies, and `now` is the same for all of them) and the retransmission timer.
    #[inline(always)]
    fn burst_sent(&mut self, now: Instant, c: &mut impl Tally, psn: u32, k: usize, bytes: u64) {
        self.next_psn = psn;
        c.frames_out(k as u64, bytes);
        if self.rto_armed.is_none() {
            self.rto_armed = Some(now);
        }
    }

    /// [`burst_new`](Self::burst_new) when the builder's last shape is a short WRITE ONLY (every
    /// Key-Write entry, Postcarding chunk and Append head word) or FETCH_ADD (Key-Increment): the same
    /// frames, state and counters, in two passes. The first walks the work requests, keeping the
    /// requester's state in locals, and stages each frame through `b` (writing it but for its iCRC, or
    /// only its fields); the second finishes the burst in one call (its iCRCs, or the whole frames),
    /// whose carry-less fold runs in its own loop. Every frame of the burst is an atomic
    /// (`B::ATOMIC`) or none is, so the responder's atomic limit is counted in a local or stands as it is.
    /// It stops, as `burst_new` does, before the first work request of another shape or a buffer too
    /// short, leaving it untouched.
    #[inline(always)]
    fn burst_templated<B: BurstBuild>(
        &mut self,
        now: Instant,
        c: &mut impl Tally,
        (bufs, lens): (&mut [&mut [u8]], &mut [usize]),
        frame_len: usize,
        b: &mut B,
    ) -> usize {
        let Some(shape) = self.builder.last_shape() else {
            return 0;
        };
        let cwnd = self.cwnd as usize;
        let (max_atomics, ack_every) = (self.p.max_atomics, self.p.cfg.ack_every);
        let first = self.win;
        // A frame is the window's last, or the queue's, when the next element is past this (AckReq).
        let last = cwnd.min(self.ring.len());
        let (slots, head, mask) = self.ring.slots_mut();
        // The AckReq cadence as the burst index of the next frame to ask: `since_ack_req` frames went
        // since the last ask, so frame `ack_every - 1 - since_ack_req` asks (the first, if that is
        // negative), and each ask puts the next one `ack_every` frames on. One compare a frame where a
        // count took an add, a compare and a select.
        let ack_every = ack_every as usize;
        let mut next_ack = ack_every
            .saturating_sub(1)
            .saturating_sub(self.since_ack_req as usize);
        // A 24-bit PSN from here on (`psn::add` keeps it one), so the word below takes it as it is.
        let mut psn = self.next_psn & PSN_MASK;
        let mut atomics = self.atomics;
        let mut heap = 0;
        let mut k = 0;
        // The window's room, the queue and the rooms bound the burst, as `burst_new`'s per-frame checks
        // do, but once, before the loop: it carries fewer values then (callgrind saw it spill).
        let room = last.saturating_sub(first);
        let n = room.min(B::CAP).min(bufs.len()).min(lens.len());
        while k < n {
            if B::ATOMIC && atomics >= max_atomics {
                break;
            }
            let at = first + k;
            let slot = (head + at) & mask;
            let stalls = k + 1 >= room
                || atomic_limit_stalls(B::ATOMIC, atomics, max_atomics, || {
                    slots
                        .get((slot + 1) & mask)
                        .is_some_and(|next| next.wr.op.is_atomic())
                });
            // A room too short ends the burst; only the builders that write frames at staging are
            // handed theirs.
            let frame: &mut [u8] = match bufs.get_mut(k).and_then(|b| b.get_mut(..frame_len)) {
                Some(room) if B::FRAMES_AT_STAGE => room,
                Some(_) => &mut [],
                None => break,
            };
            let Some(f) = slots.get_mut(slot) else {
                break;
            };
            let ack_req = k >= next_ack || stalls;
            let word = u32::from(ack_req) << 31 | psn;
            let Some(on_heap) = b.stage(shape, k, &f.wr.op, word, frame) else {
                break;
            };
            heap += usize::from(on_heap);
            f.psn = psn;
            f.answered = false;
            f.sent_at = now;
            f.resent = false;
            c.first_sent(f.wr.tag);
            if ack_req {
                next_ack = k + ack_every;
            }
            psn = psn::add(psn, 1);
            atomics += u32::from(B::ATOMIC);
            k += 1;
        }
        lens[..k].fill(frame_len);
        if k > 0 {
            if let Some(built) = bufs.get_mut(..k) {
                b.finish(shape, built, frame_len);
            }
            // Frames sent since the last ask: the burst's `k` after the last one that asked (`next_ack` is
            // `ack_every` past it), or the `since_ack_req` before it and all `k` when none asked.
            let since = (k + ack_every).saturating_sub(1).saturating_sub(next_ack);
            self.since_ack_req = u32::try_from(since).unwrap_or(u32::MAX);
            self.atomics = atomics;
            self.heap_in_win += heap;
            self.win += k;
            self.sent += k;
            self.burst_sent(now, c, psn, k, (k * frame_len) as u64);
        }
        k
    }

    /// The next frame of a go-back-N retransmission (`sent < win`): out of line, so the new-frame path
    /// keeps its registers.
    #[inline(never)]
    fn retransmit<O: FrameOut + ?Sized>(
        &mut self,
        now: Instant,
        c: &mut impl Tally,
        out: &mut O,
    ) -> Option<usize> {
        let len = self.ring.get(self.sent)?.wr.op.frame_len();
        if !out.fits(len) || !self.rate_ok(now, len, c) {
            return None;
        }
        let f = self.ring.get_mut(self.sent)?;
        // A retransmission always asks for an ACK: recovery should not wait for the cadence.
        let n = out.build(&mut self.builder, &f.wr.op, f.psn, true)?;
        f.resent = true;
        self.sent += 1;
        self.since_ack_req = 0;
        c.retransmitted();
        self.account(now, n, c);
        Some(n)
    }

    /// Whether a rate applies (configured, or a congestion cap): with none, the bucket is never asked,
    /// which callgrind put at ~100 instructions a frame for two calls that always said "now".
    fn sync_limited(&mut self) {
        self.limited = self.p.rate.packets_per_sec > 0
            || self.p.rate.bytes_per_sec > 0
            || self.dcqcn.cap_pps().is_some();
        if !self.limited {
            self.rate_wait = None;
        }
    }

    #[inline]
    fn rate_ok(&mut self, now: Instant, len: usize, c: &mut impl Tally) -> bool {
        if !self.limited {
            return true;
        }
        let at = self.rate.ready_at(now, len);
        if at > now {
            if self.rate_wait.is_none() {
                c.rate_limited();
            }
            self.rate_wait = Some(at);
            return false;
        }
        self.rate_wait = None;
        true
    }

    #[inline(always)]
    fn account(&mut self, now: Instant, len: usize, c: &mut impl Tally) {
        if self.limited {
            self.rate.take(len);
        }
        c.frames_out(1, len as u64);
        if self.rto_armed.is_none() {
            self.rto_armed = Some(now);
        }
    }

    /// `now + self.rto()`, in whole ns: `Duration::saturating_mul` and `Instant + Duration` saturate where
    /// these `u64` operations do (at `u64::MAX` ns, or beyond, which `nanos` caps there), so the instant
    /// is the same.
    #[inline]
    fn rto_from(&self, now: Instant) -> Instant {
        let base = if self.p.cfg.adaptive_timeout {
            self.rtt.timeout_ns()
        } else {
            self.fixed_rto_ns
        };
        // The same shift as `rto`'s (a `u32`, as `Duration::saturating_mul` takes).
        let m: u32 = 1 << self.backoff.min(self.p.cfg.max_backoff_shift);
        Instant(now.0.saturating_add(base.saturating_mul(u64::from(m))))
    }

    /// When the retransmit timer fires, if armed.
    #[inline]
    fn rto_deadline(&self) -> Option<Instant> {
        self.rto_armed.map(|t| self.rto_from(t))
    }

    /// The retransmit timeout, backoff included.
    fn rto(&self) -> Duration {
        self.base_timeout()
            .saturating_mul(1 << self.backoff.min(self.p.cfg.max_backoff_shift))
    }

    /// The retransmit timeout before backoff: measured, or the configured one.
    fn base_timeout(&self) -> Duration {
        if self.p.cfg.adaptive_timeout {
            self.rtt.timeout()
        } else {
            self.p.cfg.retransmit_timeout()
        }
    }

    /// The base retransmit timeout in force (before backoff) and the smoothed RTT, once measured.
    pub fn timeout(&self) -> (Duration, Option<Duration>) {
        (self.base_timeout(), self.rtt.srtt())
    }

    /// The window in force (frames in flight at most), below the configured one after losses.
    pub fn window_limit(&self) -> u32 {
        self.cwnd
    }

    /// A loss (sequence NAK or timeout): halve the window, down to `MIN_CWND`.
    fn on_loss(&mut self) {
        if self.p.cfg.adaptive_window {
            self.cwnd = (self.cwnd / 2).max(MIN_CWND.min(self.p.cfg.window));
            self.cwnd_acked = 0;
        }
    }

    /// `n` frames acknowledged: one frame more per window's worth (additive increase).
    fn on_acked(&mut self, n: usize) {
        if self.cwnd >= self.p.cfg.window {
            return;
        }
        self.cwnd_acked = self.cwnd_acked.saturating_add(n as u32);
        if self.cwnd_acked >= self.cwnd {
            self.cwnd_acked -= self.cwnd;
            self.cwnd += 1;
        }
    }

    /// Index in the window of `psn`, if it is in flight.
    fn index_of(&self, psn: u32) -> Option<usize> {
        if self.win == 0 {
            return None;
        }
        let front = self.ring.get(0)?.psn;
        let i = psn::distance(front, psn) as usize;
        (i < self.win).then_some(i)
    }

    /// Retires every frame before `until` (exclusive). An unanswered atomic stops the retirement: its
    /// response was lost, so it must be asked again (the responder answers from its cache). Returns whether
    /// that happened.
    #[inline]
    fn retire_before(&mut self, until: usize) -> bool {
        if until == 1 {
            // One frame (every ATOMIC ACKNOWLEDGE that answers the oldest atomic).
            return self.retire_one();
        }
        let until = until.min(self.win);
        // Find how far retirement goes. Without atomics in the window (writes only: the common case)
        // nothing can stop it, so there is nothing to look at.
        let (n, atomics, stuck) = if self.atomics == 0 {
            (until, 0, false)
        } else {
            self.retirable(until)
        };
        self.retire_ring(n);
        self.win -= n;
        self.atomics = self.atomics.saturating_sub(atomics);
        self.sent = self.sent.saturating_sub(n);
        if self.cwnd < self.p.cfg.window {
            // One at a time, as the window grows by one per window's worth acknowledged.
            for _ in 0..n {
                self.on_acked(1);
            }
        }
        stuck
    }

    /// [`retire_before(1)`](Self::retire_before) without the count.
    fn retire_one(&mut self) -> bool {
        if self.win == 0 {
            return false;
        }
        let Some(f) = self.ring.get(0) else {
            return false;
        };
        let atomic = f.wr.op.is_atomic();
        if atomic && !f.answered {
            return true;
        }
        self.retire_front(atomic);
        false
    }

    /// Retires the front of the window (`win > 0`), which may retire (`atomic`: whether it is an atomic,
    /// answered then).
    #[inline]
    fn retire_front(&mut self, atomic: bool) {
        self.retire_ring(1);
        self.win -= 1;
        self.atomics = self.atomics.saturating_sub(u32::from(atomic));
        self.sent = self.sent.saturating_sub(1);
        if self.cwnd < self.p.cfg.window {
            self.on_acked(1);
        }
    }

    /// Retires the first `n` work requests of the ring (of the window): moving the ring's head, unless
    /// some in the window have a heap buffer to give back.
    #[inline]
    fn retire_ring(&mut self, n: usize) {
        if self.heap_in_win == 0 {
            self.ring.advance(n);
        } else {
            let released = self.ring.pop_front(n);
            self.heap_in_win = self.heap_in_win.saturating_sub(released);
        }
    }

    /// How many of the first `until` frames of the window may retire (up to the first unanswered atomic),
    /// how many atomics are among them, and whether an unanswered atomic stopped the count.
    fn retirable(&self, until: usize) -> (usize, u32, bool) {
        let mut atomics = 0;
        for i in 0..until {
            let Some(f) = self.ring.get(i) else {
                break;
            };
            if f.wr.op.is_atomic() {
                if !f.answered {
                    return (i, atomics, true);
                }
                atomics += 1;
            }
        }
        (until, atomics, false)
    }

    fn progress(&mut self, now: Instant) {
        self.retries = 0;
        self.backoff = 0;
        self.rto_armed = (self.win > 0).then_some(now);
    }

    /// Handles a parsed RoCE frame that arrived for this QP's local QPN `local_qpn`: ACKNOWLEDGE and ATOMIC
    /// ACKNOWLEDGE go to [`on_response`](Self::on_response), a CNP to [`on_cnp`](Self::on_cnp); the
    /// outcome is reported back so the caller can count it. Shared by the translator engine and DART reporters.
    // Inline: with the inline response parse, the fields of the repr no response needs (addresses, P_Key,
    // flags) are never computed.
    #[inline]
    pub fn on_response_frame(
        &mut self,
        now: Instant,
        local_qpn: u32,
        f: &FrameRepr,
        c: &mut impl Tally,
    ) -> Response {
        match (f.bth.opcode, f.ext) {
            _ if f.bth.dest_qp != local_qpn & QPN_MASK => Response::NotOurs,
            (BthOpcode::Cnp, _) => {
                self.on_cnp(now);
                Response::Cnp
            }
            (BthOpcode::Acknowledge, Extension::Aeth(a)) => {
                self.on_response(now, f.bth.psn, a.kind, None, c);
                Response::Handled
            }
            (BthOpcode::AtomicAcknowledge, Extension::AtomicAck(a, o)) => {
                self.on_response(now, f.bth.psn, a.kind, Some(o.orig_remote_data), c);
                Response::Handled
            }
            _ => Response::NotOurs,
        }
    }

    /// A congestion notification for this QP: cut the packet rate (DCQCN-style; see [`crate::dcqcn`]).
    pub fn on_cnp(&mut self, now: Instant) {
        self.dcqcn.on_cnp(now);
        self.rate.set_packet_cap(now, self.dcqcn.cap_pps());
        self.sync_limited();
    }

    /// The packet-rate cap congestion control has in force, if any.
    pub fn congestion_cap_pps(&self) -> Option<u64> {
        self.dcqcn.cap_pps()
    }

    /// Handles a response (ACKNOWLEDGE or ATOMIC ACKNOWLEDGE) with `psn` and AETH `kind`.
    /// `atomic` is the original value an ATOMIC ACKNOWLEDGE carries.
    #[inline]
    pub fn on_response(
        &mut self,
        now: Instant,
        psn: u32,
        kind: AckKind,
        atomic: Option<u64>,
        c: &mut impl Tally,
    ) {
        if self.error.is_some() {
            c.stale_response();
            return;
        }
        if let AckKind::Ack { .. } = kind {
            return self.on_ack(now, psn, atomic.is_some(), c);
        }
        self.on_nak(now, psn, kind, c);
    }

    /// A NAK or RNR NAK (`kind` is not an ACK): out of line, off the per-response path.
    #[inline(never)]
    fn on_nak(&mut self, now: Instant, psn: u32, kind: AckKind, c: &mut impl Tally) {
        match kind {
            // `on_response` handled it.
            AckKind::Ack { .. } => {}
            AckKind::Nak(NakCode::PsnSequenceError) => {
                c.nak_psn_sequence();
                self.probe = None;
                // The responder expects `psn`: everything before it arrived.
                let i = if psn == self.next_psn {
                    self.win
                } else {
                    match self.index_of(psn) {
                        Some(i) => i,
                        None => {
                            c.stale_response();
                            return;
                        }
                    }
                };
                let stuck = self.retire_before(i);
                self.progress(now);
                // Ignore the same NAK seen again within one timeout: it is the echo of a loss we are
                // already repairing, and rewinding again would resend the window twice.
                let echo = self
                    .last_rewind
                    .is_some_and(|(p, t)| p == psn && now - t < self.rto());
                if !echo || stuck {
                    self.last_rewind = Some((psn, now));
                    self.rewind_to_front();
                    if !echo {
                        self.on_loss();
                    }
                }
            }
            AckKind::RnrNak { timer } => {
                c.nak_rnr();
                self.probe = None;
                let Some(i) = self.index_of(psn) else {
                    c.stale_response();
                    return;
                };
                self.retire_before(i);
                self.retries += 1;
                if self.retries > self.p.cfg.retry_limit {
                    self.fail(QpError::RetriesExhausted, c);
                    return;
                }
                self.sent = 0;
                let rnr = Duration::from_nanos(rnr_timer_ns(timer));
                self.rnr_until = Some(now + rnr);
                // Armed at the wait's end: the timer fires `rto()` after it.
                self.rto_armed = Some(now + rnr);
            }
            AckKind::Nak(code) => {
                match code {
                    NakCode::InvalidRequest | NakCode::InvalidRdRequest => c.nak_invalid_request(),
                    NakCode::RemoteAccessError => c.nak_remote_access(),
                    _ => c.nak_remote_operational(),
                }
                self.fail(QpError::Nak(code), c);
            }
        }
    }

    /// An ACKNOWLEDGE (`atomic`: an ATOMIC ACKNOWLEDGE) of `psn`: the per-response path, apart from the
    /// NAKs so it stays small. In line, the common case: the response of the window's front (an ACK of a
    /// write, an ATOMIC ACKNOWLEDGE of an atomic), no probe out, no heap buffer to give back, which
    /// retires the front. Everything else goes to [`on_ack_past_front`](Self::on_ack_past_front) (a
    /// cumulative ACK of writes) and from there to [`on_ack_any`](Self::on_ack_any), of which this is
    /// the same steps with the facts of that case known (callgrind: ~150 instructions an ATOMIC ACKNOWLEDGE
    /// before, most of them finding the front twice, the checks of cases that cannot be, and the timeout
    /// computed on every response).
    #[inline(always)]
    fn on_ack(&mut self, now: Instant, psn: u32, atomic: bool, c: &mut impl Tally) {
        if self.win > 0 && self.probe.is_none() && self.heap_in_win == 0 {
            // `win > 0`: the front is in the ring.
            if let Some(f) = self.ring.front_mut() {
                let f_atomic = f.wr.op.is_atomic();
                if psn::distance(f.psn, psn) == 0 && f_atomic == atomic {
                    if atomic {
                        if !f.answered {
                            f.answered = true;
                            c.atomic_ack();
                        }
                    } else {
                        c.ack();
                    }
                    if !f.resent {
                        self.rtt.sample_ns(now.0.saturating_sub(f.sent_at.0));
                    }
                    // `retire_front(f_atomic)`, the ring's head moved by one (`heap_in_win == 0`).
                    self.ring.advance_one();
                    self.win -= 1;
                    self.atomics = self.atomics.saturating_sub(u32::from(f_atomic));
                    self.sent = self.sent.saturating_sub(1);
                    if self.cwnd < self.p.cfg.window {
                        self.on_acked(1);
                    }
                    self.progress(now);
                    return;
                }
            }
        }
        self.on_ack_past_front(now, psn, atomic, c);
    }

    /// [`on_ack_any`](Self::on_ack_any), with its common case first: a plain ACK past the front, with
    /// no probe out, no heap buffer and no atomic in the window (Key-Write's one ACK per `ack_every`
    /// writes, which retires them all). Every step of `on_ack_any` whose outcome those facts fix is
    /// left out (the atomic checks, `retire_before`'s `retirable` scan and clamps, the probe's
    /// rewind): it counts, samples the RTT, moves the ring's head past all of them and re-arms the
    /// timer once (callgrind: ~160 instructions an ACK of 16 writes through `on_ack_any` and
    /// `retire_before`, ~100 here).
    /// Out of line, and not in [`on_ack`](Self::on_ack): there it made the per-response path of
    /// atomics (Key-Increment's ATOMIC ACKNOWLEDGE of the front) an instruction longer.
    #[inline(never)]
    fn on_ack_past_front(&mut self, now: Instant, psn: u32, atomic: bool, c: &mut impl Tally) {
        if atomic
            || self.win == 0
            || self.probe.is_some()
            || self.heap_in_win != 0
            || self.atomics != 0
        {
            return self.on_ack_any(now, psn, atomic, c);
        }
        // `index_of(psn)`, `win > 0`.
        let Some(front) = self.ring.get(0) else {
            return self.on_ack_any(now, psn, atomic, c);
        };
        let i = psn::distance(front.psn, psn) as usize;
        if i == 0 || i >= self.win {
            // The front (an ACK for an atomic there), or not in the window (stale).
            return self.on_ack_any(now, psn, atomic, c);
        }
        // `i < win`: in the ring (`on_ack_any` does nothing otherwise, as here).
        let Some(f) = self.ring.get(i) else {
            return;
        };
        c.ack();
        if !f.resent {
            self.rtt.sample_ns(now.0.saturating_sub(f.sent_at.0));
        }
        let n = i + 1;
        // `retire_before(n)`: `n <= win`, no atomic to stop at, no heap buffer to give back.
        self.ring.advance(n);
        self.win -= n;
        self.sent = self.sent.saturating_sub(n);
        if self.cwnd < self.p.cfg.window {
            for _ in 0..n {
                self.on_acked(1);
            }
        }
        self.progress(now);
    }

    /// [`on_ack`](Self::on_ack), any case.
    #[inline(never)]
    fn on_ack_any(&mut self, now: Instant, psn: u32, atomic: bool, c: &mut impl Tally) {
        let Some(i) = self.index_of(psn) else {
            c.stale_response();
            return;
        };
        // `index_of` found `i` in the window, which is in the ring.
        let Some(f) = self.ring.get_mut(i) else {
            return;
        };
        let f_atomic = f.wr.op.is_atomic();
        if atomic {
            if !f_atomic {
                c.stale_response();
                return;
            }
            if !f.answered {
                f.answered = true;
                c.atomic_ack();
            }
        } else {
            c.ack();
        }
        let stuck_at_front = f_atomic && !f.answered;
        if !f.resent {
            // `now - f.sent_at` in ns, as `Instant - Instant` saturates.
            self.rtt.sample_ns(now.0.saturating_sub(f.sent_at.0));
        }
        let probe = self.probe.take();
        let stuck = if i == 0 {
            // `retire_before(1)` with the front's facts at hand (every ATOMIC ACKNOWLEDGE of the oldest
            // atomic, Key-Increment's per-report path).
            if !stuck_at_front {
                self.retire_front(f_atomic);
            }
            stuck_at_front
        } else {
            self.retire_before(i + 1)
        };
        if stuck {
            // An ACK past an unanswered atomic: go back to it.
            self.rewind_to_front();
        } else if let Some(before) = probe {
            // The responder answers a duplicate with its newest in-order PSN (C9-105). An answer
            // for the probe alone means it has nothing after it: go back N. An answer beyond it
            // means the ACKs were late, and the frames sent before the timeout may still be on
            // their way: leave them be (another timeout probes again).
            if i > 0 {
                self.sent = before.saturating_sub(i + 1).min(self.win);
            }
        }
        self.progress(now);
    }

    /// Go-back-N: everything in the window goes again, oldest first.
    fn rewind_to_front(&mut self) {
        self.sent = 0;
    }

    fn fail(&mut self, e: QpError, c: &mut impl Tally) {
        c.qp_error();
        self.probe = None;
        self.error = Some(e);
        self.rto_armed = None;
        self.rnr_until = None;
    }

    /// The next instant [`on_timeout`](Self::on_timeout) has work, if any.
    // Inline: the engine asks once per burst, and the call cost about as much as the answer.
    #[inline]
    pub fn poll_timeout(&self) -> Option<Instant> {
        let mut t = Earliest::NONE;
        self.add_timeouts(&mut t);
        t.get()
    }

    /// [`poll_timeout`](Self::poll_timeout) folded into `t`: for a caller that takes the earliest of
    /// many deadlines (the engine's), without an `Option` made and taken apart per requester.
    #[inline]
    pub fn add_timeouts(&self, t: &mut Earliest) {
        if self.error.is_some() {
            return;
        }
        if self.win > 0 {
            t.add(self.rto_deadline());
        }
        t.add(self.rnr_until);
        t.add(self.dcqcn.poll_timeout());
        t.add(self.rate_wait);
    }

    /// Fires the retransmit timer if due. Returns the error if the QP just failed.
    pub fn on_timeout(&mut self, now: Instant, c: &mut impl Tally) -> Option<QpError> {
        if self.error.is_some() {
            return None;
        }
        if self.rate_wait.is_some_and(|t| t <= now) {
            self.rate_wait = None;
        }
        if self.dcqcn.poll_timeout().is_some_and(|t| t <= now) {
            self.dcqcn.on_timer(now);
            self.rate.set_packet_cap(now, self.dcqcn.cap_pps());
            self.sync_limited();
        }
        match self.rto_deadline() {
            Some(t) if t <= now && self.win > 0 => {}
            _ => return None,
        }
        c.retransmit_timeout();
        if log::log_enabled!(log::Level::Debug) {
            let oldest = (self.win > 0)
                .then(|| self.ring.get(0).map(|f| (now - f.sent_at).as_micros()))
                .flatten();
            log::debug!(
                "retransmit timeout: {} in flight, oldest sent {oldest:?} µs ago, srtt {:?} µs, rttvar {:?} µs, timeout {} µs, backoff {}",
                self.win,
                self.rtt.srtt().map(|v| v.as_micros()),
                self.rtt.rttvar().map(|v| v.as_micros()),
                self.rto().as_micros(),
                self.backoff
            );
        }
        self.retries += 1;
        if self.retries > self.p.cfg.retry_limit {
            self.fail(QpError::RetriesExhausted, c);
            return self.error;
        }
        self.backoff = (self.backoff + 1).min(self.p.cfg.max_backoff_shift);
        // One halving per loss event: a probe that times out again is the same loss.
        if self.probe.is_none() {
            self.on_loss();
        }
        self.probe = Some(self.probe.map_or(self.sent, |b| b.max(self.sent)));
        self.sent = 0;
        self.rnr_until = None;
        self.rto_armed = Some(now);
        None
    }

    /// Offline mode (no responder, no ACKs): every frame sent so far counts as delivered.
    pub fn assume_delivered(&mut self) {
        let n = self.sent.min(self.win);
        for i in 0..n {
            if self.ring.get(i).is_some_and(|f| f.wr.op.is_atomic()) {
                self.atomics = self.atomics.saturating_sub(1);
            }
        }
        self.retire_ring(n);
        self.win -= n;
        self.sent = 0;
        self.rto_armed = None;
    }

    /// Brings a failed QP back after the control channel re-established it with a new responder QP and
    /// start PSN. Unacknowledged work goes first in the queue again; writes are idempotent, and an atomic
    /// whose answer never came is sent again (counted), since the old responder state is gone.
    pub fn reestablish(&mut self, builder: FrameBuilder, start_psn: u32, now: Instant) {
        // The window becomes the head of the queue again, in order, less the atomics already answered.
        let win = self.win;
        self.ring
            .retain(|k, f| k >= win || !(f.wr.op.is_atomic() && f.answered));
        self.win = 0;
        // Counted again as they enter the window.
        self.heap_in_win = 0;
        self.builder = builder;
        self.next_psn = start_psn & dta_protocol::roce::PSN_MASK;
        self.sent = 0;
        self.since_ack_req = 0;
        self.atomics = 0;
        self.retries = 0;
        self.backoff = 0;
        self.rto_armed = None;
        self.rnr_until = None;
        self.last_rewind = None;
        self.probe = None;
        self.error = None;
        self.rate = RateLimiter::new(&self.p.rate, now);
        self.sync_limited();
        self.cwnd = self.p.cfg.window;
        self.cwnd_acked = 0;
    }
}

/// The ring of work requests behind the window and the queue.
mod ring {
    use std::mem;

    use super::{InFlight, WorkRequest};
    use crate::frames::{Op, Payload};
    use crate::stats::Tag;
    use crate::time::Instant;

    /// Slots the first push makes room for.
    const INITIAL: usize = 64;

    /// A double-ended queue of work requests whose slots stay initialised: a slot that leaves the front
    /// keeps its (retired) work request until a push overwrites it, so retiring `n` work requests moves
    /// the head by `n` ([`advance`](Self::advance)) when none has a heap buffer (the requester counts
    /// those in its window), and otherwise ([`pop_front`](Self::pop_front)) gives each heap buffer back
    /// to the payload pool at once, as its drop did. A `VecDeque` dropped each retired work request
    /// through its drain (~29 instructions a Key-Write frame under callgrind) and wrapped every index
    /// with a compare; here the capacity is a power of two and an index is a mask. (Counting heap payloads
    /// at push cost more: the larger push was no longer inlined into its callers.)
    pub(super) struct Ring {
        /// Capacity a power of two (or 0 before the first push).
        slots: Box<[InFlight]>,
        /// The slot of element 0.
        head: usize,
        len: usize,
    }

    /// What a slot out of use holds: a payload-less work request, nothing to drop.
    fn vacant() -> InFlight {
        InFlight {
            wr: WorkRequest {
                op: Op::FetchAdd {
                    va: 0,
                    rkey: 0,
                    add: 0,
                },
                tag: Tag(0),
                reports: 0,
            },
            sent_at: Instant(0),
            psn: 0,
            answered: false,
            resent: false,
        }
    }

    /// Whether `p` keeps its bytes inside itself (no heap buffer): an inline payload's data lies within
    /// the payload's own bytes, a heap buffer never does. Wherever `p` is (a test checks both kinds).
    #[inline]
    pub(super) fn is_inline(p: &Payload) -> bool {
        let at = p as *const Payload as usize;
        (p.as_ptr() as usize).wrapping_sub(at) < mem::size_of::<Payload>()
    }

    /// [`is_inline`] of `p`, whose bytes (its deref) are `data`.
    #[inline(always)]
    pub(super) fn is_inline_data(p: &Payload, data: &[u8]) -> bool {
        let at = p as *const Payload as usize;
        (data.as_ptr() as usize).wrapping_sub(at) < mem::size_of::<Payload>()
    }

    /// Whether `op` holds a heap buffer.
    #[inline]
    pub(super) fn on_heap(op: &Op) -> bool {
        match op {
            Op::Write { payload, .. } => !is_inline(payload),
            Op::FetchAdd { .. } => false,
        }
    }

    /// Writes `new` over `old`, a part of a slot out of use (a slot just taken by a push): it holds a
    /// retired work request without a heap buffer (`release` took it, or `vacant` never had one), so
    /// there is nothing to drop, and skipping the drop glue saved ~20 instructions a push. Forgetting
    /// it could at worst keep a buffer, never free one twice.
    #[inline(always)]
    pub(super) fn overwrite<T>(old: &mut T, new: T) {
        mem::forget(mem::replace(old, new));
    }

    /// Gives a retired work request's heap buffer back (to the payload pool, through its drop); whether
    /// it had one.
    #[inline]
    fn release(f: &mut InFlight) -> bool {
        if let Op::Write { payload, .. } = &mut f.wr.op {
            if !is_inline(payload) {
                *payload = Payload::with_capacity(0);
                return true;
            }
        }
        false
    }

    impl Ring {
        /// An empty ring (no allocation until the first push).
        pub(super) fn new() -> Self {
            Ring {
                slots: Box::new([]),
                head: 0,
                len: 0,
            }
        }

        /// The slot of element `i` (meaningful for `i < len`, or `i == len` below the capacity).
        #[inline]
        fn slot(&self, i: usize) -> usize {
            (self.head + i) & (self.slots.len().wrapping_sub(1))
        }

        pub(super) fn len(&self) -> usize {
            self.len
        }

        pub(super) fn is_empty(&self) -> bool {
            self.len == 0
        }

        /// Slots out of use whose payload still has a heap buffer (none should).
        #[cfg(test)]
        pub(super) fn heap_out_of_use(&self) -> usize {
            (self.len..self.slots.len())
                .filter(|&i| match &self.slots[self.slot(i)].wr.op {
                    Op::Write { payload, .. } => !is_inline(payload),
                    Op::FetchAdd { .. } => false,
                })
                .count()
        }

        /// The slot of element `i`, if there are more than `i`.
        #[inline]
        pub(super) fn slot_of(&self, i: usize) -> Option<usize> {
            (i < self.len).then(|| self.slot(i))
        }

        /// The element in `slot` (from [`slot_of`](Self::slot_of)).
        #[inline]
        pub(super) fn at(&self, slot: usize) -> Option<&InFlight> {
            self.slots.get(slot)
        }

        /// The element in `slot` (from [`slot_of`](Self::slot_of)).
        #[inline]
        pub(super) fn at_mut(&mut self, slot: usize) -> Option<&mut InFlight> {
            self.slots.get_mut(slot)
        }

        /// The slots, the slot of element 0 and the mask that wraps a slot index: for a loop over many
        /// elements that keeps them in registers (element `i` is in slot `(head + i) & mask`, for `i`
        /// below [`len`](Self::len)).
        #[inline]
        pub(super) fn slots_mut(&mut self) -> (&mut [InFlight], usize, usize) {
            let mask = self.slots.len().wrapping_sub(1);
            (&mut self.slots, self.head, mask)
        }

        /// Element `i + 1`, given the slot of element `i`, if there are more than `i + 1`.
        #[inline]
        pub(super) fn next_of(&self, i: usize, slot: usize) -> Option<&InFlight> {
            if i + 1 >= self.len {
                return None;
            }
            self.slots
                .get((slot + 1) & (self.slots.len().wrapping_sub(1)))
        }

        /// Element `i`, if there are more than `i`.
        #[inline]
        pub(super) fn get(&self, i: usize) -> Option<&InFlight> {
            if i >= self.len {
                return None;
            }
            self.slots.get(self.slot(i))
        }

        /// Element 0's slot, if the ring has slots (element 0 if it is not empty).
        #[inline]
        pub(super) fn front_mut(&mut self) -> Option<&mut InFlight> {
            // `head` is a slot (masked, or 0 before the first push).
            self.slots.get_mut(self.head)
        }

        /// Element `i`, if there are more than `i`.
        #[inline]
        pub(super) fn get_mut(&mut self, i: usize) -> Option<&mut InFlight> {
            if i >= self.len {
                return None;
            }
            let s = self.slot(i);
            self.slots.get_mut(s)
        }

        /// Appends `wr` (growing the ring when full). Only the work request is written: the slot's
        /// other fields are set when it enters the window.
        #[inline]
        pub(super) fn push_back(&mut self, wr: WorkRequest) {
            if let Some(slot) = self.push_back_in_place() {
                overwrite(slot, wr);
            }
        }

        /// Appends an element whose work request the caller then writes in place (growing the ring
        /// when full): the slot's work request is a retired one without a heap buffer (see
        /// [`push_back`](Self::push_back)), which the caller overwrites; its other fields are set when it
        /// enters the window. `None` never happens (the ring has room after `grow`).
        #[inline(always)]
        pub(super) fn push_back_in_place(&mut self) -> Option<&mut WorkRequest> {
            if self.len == self.slots.len() {
                self.grow();
            }
            let s = self.slot(self.len);
            let slot = self.slots.get_mut(s)?;
            self.len += 1;
            Some(&mut slot.wr)
        }

        /// Appends `n` elements whose work requests the caller then writes in place, as `n`
        /// [`push_back_in_place`](Self::push_back_in_place)es (growing the ring until they fit): the
        /// slots, the slot of the first new element and the mask that wraps a slot index (element
        /// `len + k` before the call is in slot `(first + k) & mask`). One growth check and one length
        /// update for all `n`.
        #[inline(always)]
        pub(super) fn push_back_n_in_place(&mut self, n: usize) -> (&mut [InFlight], usize, usize) {
            while self.len + n > self.slots.len() {
                self.grow();
            }
            let first = self.slot(self.len);
            self.len += n;
            let mask = self.slots.len().wrapping_sub(1);
            (&mut self.slots, first, mask)
        }

        /// Twice the slots (at least `INITIAL`), the elements moved to the front in order.
        #[cold]
        #[inline(never)]
        fn grow(&mut self) {
            let cap = (self.slots.len() * 2).max(INITIAL);
            let mut slots: Box<[InFlight]> = (0..cap).map(|_| vacant()).collect();
            for (i, to) in slots.iter_mut().enumerate().take(self.len) {
                let s = self.slot(i);
                *to = mem::replace(&mut self.slots[s], vacant());
            }
            self.slots = slots;
            self.head = 0;
        }

        /// Retires the first `n` elements (all of them, if fewer), giving their heap buffers back: how
        /// many there were.
        #[inline]
        pub(super) fn pop_front(&mut self, n: usize) -> usize {
            let n = n.min(self.len);
            let released = self.release_front(n);
            self.advance(n);
            released
        }

        /// [`advance(1)`](Self::advance).
        #[inline]
        pub(super) fn advance_one(&mut self) {
            if self.len > 0 {
                self.head = self.slot(1);
                self.len -= 1;
            }
        }

        /// Retires the first `n` elements (all of them, if fewer), which hold no heap buffer: moving
        /// the head is all.
        #[inline]
        pub(super) fn advance(&mut self, n: usize) {
            let n = n.min(self.len);
            if n > 0 {
                self.head = self.slot(n);
                self.len -= n;
            }
        }

        /// Gives back the heap buffers of the first `n` elements (`n <= len`), over the ring's two
        /// contiguous runs (no masked index per element); how many there were.
        fn release_front(&mut self, n: usize) -> usize {
            let (wrapped, from_head) = self.slots.split_at_mut(self.head.min(self.slots.len()));
            let first = from_head.len().min(n);
            let mut released = 0;
            for f in from_head.iter_mut().take(first) {
                released += usize::from(release(f));
            }
            for f in wrapped.iter_mut().take(n - first) {
                released += usize::from(release(f));
            }
            released
        }

        /// Removes element `i`, keeping the order of the others (rare: a frame that cannot be built).
        pub(super) fn remove(&mut self, i: usize) {
            if i >= self.len {
                return;
            }
            for j in i..self.len - 1 {
                let (a, b) = (self.slot(j), self.slot(j + 1));
                self.slots.swap(a, b);
            }
            self.len -= 1;
            let s = self.slot(self.len);
            let _ = release(&mut self.slots[s]);
        }

        /// Keeps the elements `keep(index, element)` accepts, in order (rare: a QP re-established).
        pub(super) fn retain(&mut self, mut keep: impl FnMut(usize, &InFlight) -> bool) {
            let mut kept = 0;
            for i in 0..self.len {
                let s = self.slot(i);
                if keep(i, &self.slots[s]) {
                    let to = self.slot(kept);
                    self.slots.swap(s, to);
                    kept += 1;
                }
            }
            for i in kept..self.len {
                let s = self.slot(i);
                let _ = release(&mut self.slots[s]);
            }
            self.len = kept;
        }
    }
}

#[cfg(test)]
#[path = "requester_reference.rs"]
mod reference;

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use dta_protocol::roce::ROCEV2_UDP_PORT;
    use dta_protocol::udp::UdpEndpoints;

    use super::reference::RefRequester;
    use super::ring::{is_inline, Ring};
    use super::*;
    use crate::frames::Payload;
    use crate::stats::RcStats;
    use crate::test_rng::Rng;

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
                add: rng.next(),
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
            ack_every: rng.below(6) as u32 + 1,
            window: rng.below(20) as u32 + 1,
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
    /// A requester and the model it replaced, on the same random parameters, at `now`.
    fn with_model(rng: &mut Rng, now: Instant) -> (Requester, RefRequester) {
        let p = params(rng);
        (
            Requester::new(p.clone(), builder(0x11), now),
            RefRequester::new(p, builder(0x11), now),
        )
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

    /// Everything the requester shows, which must equal the model's.
    fn same(r: &Requester, m: &RefRequester, rc: &Counts, mc: &Counts, step: &str) {
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

    /// The requester and the model it replaced, driven side by side through random streams of work
    /// requests, transmissions (into a `Vec` and into buffers, some too short), ACKs, ATOMIC ACKs, NAKs
    /// and RNR NAKs at PSNs in and around the window, timeouts, congestion notifications, offline
    /// delivery and re-establishment, with the PSN wrapping: the same frames, byte for byte, the same
    /// counters, timers and state after every step.
    #[test]
    fn requester_equals_the_model_it_replaced() {
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

    /// Key-Write's ACK path against the model: writes only (now and then one with a heap buffer), sent
    /// in bursts and answered mostly by plain ACKs anywhere in and around the window (the cumulative
    /// ACK of `on_ack_past_front`), with NAKs, ATOMIC ACKs of writes, timeouts and the probes they
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
                    3..=5 => burst_step(&mut rng, now, (&mut r, &mut rc), (&mut m, &mut mc), &at),
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
                        let atomic = rng.chance(3).then(|| rng.next());
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
        // The cumulative path ran, often.
        assert!(fast > 2_000, "{fast}");
    }

    /// A burst of `k` buffers, some too short, through `r.transmit_burst` and the model frame by frame.
    fn burst_step(
        rng: &mut Rng,
        now: Instant,
        (r, rc): (&mut Requester, &mut Counts),
        (m, mc): (&mut RefRequester, &mut Counts),
        at: &str,
    ) {
        let k = rng.below(12) as usize + 1;
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
    }

    fn drive_against_model(burst: bool) {
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
                        for _ in 0..rng.below(6) + 1 {
                            tag += 1;
                            let wr = work(&mut rng, tag);
                            r.push(same_storage(&wr));
                            m.push(wr);
                        }
                    }
                    25..=49 => {
                        what = "transmit";
                        if burst && rng.chance(70) {
                            let at = format!("burst (seed {seed} step {step})");
                            burst_step(&mut rng, now, (&mut r, &mut rc), (&mut m, &mut mc), &at);
                            same(&r, &m, &rc, &mc, &at);
                            continue;
                        }
                        for _ in 0..rng.below(8) + 1 {
                            if rng.chance(50) {
                                let (mut a, mut b) = (Vec::new(), Vec::new());
                                let x = r.poll_transmit(now, &mut rc, &mut a);
                                let y = m.poll_transmit(now, &mut mc, &mut b);
                                assert_eq!((x, &a), (y, &b), "seed {seed} step {step}");
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
                        let atomic = rng.chance(30).then(|| rng.next());
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
    }
}
