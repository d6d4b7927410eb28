//! The requester as it was before its ring (a `VecDeque` of work requests, `Duration` timers): the model
//! the requester's differential test drives side by side with the requester, to check that the faster
//! bookkeeping changed no frame, counter, timer or state. Test-only; kept verbatim but for the types it
//! shares with the requester.
#![allow(dead_code, clippy::all)]

use std::collections::VecDeque;
use std::time::Duration;

use dta_protocol::roce::{
    aeth::rnr_timer_ns, AckKind, BthOpcode, Extension, FrameRepr, NakCode, QPN_MASK,
};

use crate::dcqcn::Dcqcn;
use crate::frames::{FrameBuilder, FrameOut};
use crate::psn;
use crate::rate::RateLimiter;
use crate::rtt::RttEstimator;
use crate::stats::Tally;
use crate::time::Instant;

use super::{QpError, RequesterParams, Response, WorkRequest};

#[derive(Debug)]
struct InFlight {
    psn: u32,
    wr: WorkRequest,
    /// For atomics: the ATOMIC ACKNOWLEDGE arrived.
    answered: bool,
    /// When it was first sent.
    sent_at: Instant,
    /// Sent more than once: its response cannot be told apart, so it gives no RTT sample (Karn).
    resent: bool,
}

/// The least window loss shrinks it to (frames).
const MIN_CWND: u32 = 8;

/// One QP's requester.
pub struct RefRequester {
    p: RequesterParams,
    builder: FrameBuilder,
    rate: RateLimiter,
    /// Rate cuts on congestion notifications; its cap is applied to `rate`.
    dcqcn: Dcqcn,
    /// The window and then the queue, in one ring: `ring[..win]` is the window (sent, or waiting for a
    /// go-back-N retransmission), `ring[win..]` the queue of work requests not sent yet (their `psn`,
    /// `sent_at` and flags are set when they enter the window). One ring, so that a work request is written
    /// once when queued and dropped once when retired, instead of moved from a queue into a window (two
    /// ~90-byte moves a frame, which callgrind counted).
    ring: VecDeque<InFlight>,
    /// Entries of `ring` in the window.
    win: usize,
    /// `ring[..sent]` is on the wire; `ring[sent..win]` waits for a go-back-N retransmission.
    sent: usize,
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
    /// The window in force (frames), below `cfg.window` after losses.
    cwnd: u32,
    /// Frames acknowledged since `cwnd` last grew.
    cwnd_acked: u32,
    rto_at: Option<Instant>,
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
}

impl RefRequester {
    /// A fresh QP at `now`.
    pub fn new(p: RequesterParams, builder: FrameBuilder, now: Instant) -> Self {
        let rate = RateLimiter::new(&p.rate, now);
        let dcqcn = Dcqcn::new(p.rate.congestion.clone(), p.rate.packets_per_sec);
        let base = p.cfg.retransmit_timeout();
        let rtt = RttEstimator::new(base, base, p.cfg.max_retransmit_timeout());
        let mut r = RefRequester {
            rtt,
            cwnd: p.cfg.window,
            cwnd_acked: 0,
            dcqcn,
            next_psn: p.start_psn,
            p,
            builder,
            rate,
            ring: VecDeque::new(),
            win: 0,
            sent: 0,
            since_ack_req: 0,
            atomics: 0,
            retries: 0,
            backoff: 0,
            rto_at: None,
            rnr_until: None,
            rate_wait: None,
            last_rewind: None,
            probe: None,
            error: None,
            limited: true,
        };
        r.sync_limited();
        r
    }

    /// Room left in the queue.
    pub fn queue_room(&self) -> usize {
        (self.p.cfg.queue_capacity as usize).saturating_sub(self.queue_depth())
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
    pub fn push(&mut self, wr: WorkRequest) {
        self.ring.push_back(InFlight {
            psn: 0,
            wr,
            answered: false,
            sent_at: Instant(0),
            resent: false,
        });
    }

    fn atomic_blocked(&self, wr: &WorkRequest) -> bool {
        wr.op.is_atomic() && self.atomics >= self.p.max_atomics
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
            let len = self.ring[self.sent].wr.op.frame_len();
            if !out.fits(len) || !self.rate_ok(now, len, c) {
                return None;
            }
            let f = &mut self.ring[self.sent];
            // A retransmission always asks for an ACK: recovery should not wait for the cadence.
            let n = out.build(&mut self.builder, &f.wr.op, f.psn, true)?;
            f.resent = true;
            self.sent += 1;
            self.since_ack_req = 0;
            c.retransmitted();
            self.account(now, n, c);
            return Some(n);
        }
        // The front work request's facts once (its opcode, primitive and length), then one mutable index
        // for the build and the window's bookkeeping: each VecDeque index and op match costs a few
        // instructions on every frame.
        let at = self.win;
        let front = &self.ring.get(at)?.wr;
        let (atomic, tag, len) = (front.op.is_atomic(), front.tag, front.op.frame_len());
        if at >= self.cwnd as usize || (atomic && self.atomics >= self.p.max_atomics) {
            return None;
        }
        if !out.fits(len) || !self.rate_ok(now, len, c) {
            return None;
        }
        self.since_ack_req += 1;
        let psn = self.next_psn;
        let window_full = at + 1 >= self.cwnd as usize;
        let stalls = match self.ring.get(at + 1).map(|f| &f.wr) {
            None => true,
            Some(next) => {
                self.atomic_blocked(next)
                    || (atomic && next.op.is_atomic() && self.atomics + 1 >= self.p.max_atomics)
                    || (self.limited && self.rate.ready_at(now, next.op.frame_len()) > now)
            }
        };
        let ack_req = self.since_ack_req >= self.p.cfg.ack_every || window_full || stalls;
        let f = &mut self.ring[at];
        let Some(n) = out.build(&mut self.builder, &f.wr.op, psn, ack_req) else {
            // A frame that cannot be emitted at all (beyond the UDP length limit, which the MTU cap rules
            // out) is dropped, as when the queue was apart from the window, so it cannot block the queue.
            self.ring.remove(at);
            return None;
        };
        f.psn = psn;
        f.answered = false;
        f.sent_at = now;
        f.resent = false;
        if ack_req {
            self.since_ack_req = 0;
        }
        if atomic {
            self.atomics += 1;
        }
        c.first_sent(tag);
        self.win += 1;
        self.sent += 1;
        self.next_psn = psn::add(psn, 1);
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

    fn account(&mut self, now: Instant, len: usize, c: &mut impl Tally) {
        if self.limited {
            self.rate.take(len);
        }
        c.frames_out(1, len as u64);
        if self.rto_at.is_none() {
            self.rto_at = Some(now + self.rto());
        }
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
        let front = self.ring.front()?.psn;
        let i = psn::distance(front, psn) as usize;
        (i < self.win).then_some(i)
    }

    /// Retires every frame before `until` (exclusive). An unanswered atomic stops the retirement: its
    /// response was lost, so it must be asked again (the responder answers from its cache). Returns whether
    /// that happened.
    fn retire_before(&mut self, until: usize) -> bool {
        if until == 1 && self.win > 0 {
            // One frame (every ATOMIC ACKNOWLEDGE that answers the oldest atomic): the loop below without
            // its iterator's set-up, ~40 instructions of Key-Increment's per-report path under callgrind.
            let f = &self.ring[0];
            let atomic = f.wr.op.is_atomic();
            if atomic && !f.answered {
                return true;
            }
            self.ring.pop_front();
            self.win -= 1;
            self.atomics = self.atomics.saturating_sub(u32::from(atomic));
            self.sent = self.sent.saturating_sub(1);
            if self.cwnd < self.p.cfg.window {
                self.on_acked(1);
            }
            return false;
        }
        // Find how far retirement goes, then drop that run at once: a drain for a run (popping frame by
        // frame moved each work request out of the ring just to drop it, ~70 instructions a frame under
        // callgrind), pops for one or two.
        let mut n = 0;
        let mut atomics = 0;
        let mut stuck = false;
        for f in self.ring.iter().take(until.min(self.win)) {
            if f.wr.op.is_atomic() {
                if !f.answered {
                    stuck = true;
                    break;
                }
                atomics += 1;
            }
            n += 1;
        }
        if n < 4 {
            // A drain's set-up costs more than popping one or two (an ATOMIC ACKNOWLEDGE retires one).
            for _ in 0..n {
                self.ring.pop_front();
            }
        } else {
            self.ring.drain(..n);
        }
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

    fn progress(&mut self, now: Instant) {
        self.retries = 0;
        self.backoff = 0;
        self.rto_at = (self.win > 0).then(|| now + self.rto());
    }

    /// Handles a parsed RoCE frame that arrived for this QP's local QPN `local_qpn`: ACKNOWLEDGE and ATOMIC
    /// ACKNOWLEDGE go to [`on_response`](Self::on_response), a CNP to [`on_cnp`](Self::on_cnp); the
    /// outcome is reported back so the caller can count it. Shared by the translator engine and DART reporters.
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
        match kind {
            AckKind::Ack { .. } => {
                let Some(i) = self.index_of(psn) else {
                    c.stale_response();
                    return;
                };
                if atomic.is_some() {
                    let f = &mut self.ring[i];
                    if !f.wr.op.is_atomic() {
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
                let f = &self.ring[i];
                if !f.resent {
                    self.rtt.sample(now - f.sent_at);
                }
                let probe = self.probe.take();
                if self.retire_before(i + 1) {
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
                self.rto_at = Some(now + rnr + self.rto());
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

    /// Go-back-N: everything in the window goes again, oldest first.
    fn rewind_to_front(&mut self) {
        self.sent = 0;
    }

    fn fail(&mut self, e: QpError, c: &mut impl Tally) {
        c.qp_error();
        self.probe = None;
        self.error = Some(e);
        self.rto_at = None;
        self.rnr_until = None;
    }

    /// The next instant [`on_timeout`](Self::on_timeout) has work, if any.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.error.is_some() {
            return None;
        }
        let mut t = self.rto_at.filter(|_| self.win > 0);
        t = crate::time::earliest(t, self.rnr_until);
        t = crate::time::earliest(t, self.dcqcn.poll_timeout());
        crate::time::earliest(t, self.rate_wait)
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
        match self.rto_at {
            Some(t) if t <= now && self.win > 0 => {}
            _ => return None,
        }
        c.retransmit_timeout();
        if log::log_enabled!(log::Level::Debug) {
            let oldest = (self.win > 0)
                .then(|| self.ring.front().map(|f| (now - f.sent_at).as_micros()))
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
        self.rto_at = Some(now + self.rto());
        None
    }

    /// Offline mode (no responder, no ACKs): every frame sent so far counts as delivered.
    pub fn assume_delivered(&mut self) {
        let n = self.sent.min(self.win);
        for f in self.ring.drain(..n) {
            if f.wr.op.is_atomic() {
                self.atomics = self.atomics.saturating_sub(1);
            }
        }
        self.win -= n;
        self.sent = 0;
        self.rto_at = None;
    }

    /// Brings a failed QP back after the control channel re-established it with a new responder QP and
    /// start PSN. Unacknowledged work goes first in the queue again; writes are idempotent, and an atomic
    /// whose answer never came is sent again (counted), since the old responder state is gone.
    pub fn reestablish(&mut self, builder: FrameBuilder, start_psn: u32, now: Instant) {
        // The window becomes the head of the queue again, in order, less the atomics already answered.
        let win = self.win;
        let mut k = 0;
        self.ring.retain(|f| {
            let keep = k >= win || !(f.wr.op.is_atomic() && f.answered);
            k += 1;
            keep
        });
        self.win = 0;
        self.builder = builder;
        self.next_psn = start_psn & dta_protocol::roce::PSN_MASK;
        self.sent = 0;
        self.since_ack_req = 0;
        self.atomics = 0;
        self.retries = 0;
        self.backoff = 0;
        self.rto_at = None;
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
