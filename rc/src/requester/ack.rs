//! Responses: ACKNOWLEDGE and ATOMIC ACKNOWLEDGE (one path, whose in-line prefix is the window's
//! front), the NAKs, and the dispatch of a parsed response frame.

use std::time::Duration;

use dta_protocol::roce::{
    aeth::rnr_timer_ns, AckKind, BthOpcode, Extension, FrameRepr, NakCode, QPN_MASK,
};

use super::state::{QpError, Requester, Response};
use super::timer_table::Timer;
use crate::psn;
use crate::stats::Tally;
use crate::time::Instant;

impl Requester {
    /// Handles a parsed RoCE frame that arrived for this QP's local QPN `local_qpn`: ACKNOWLEDGE and ATOMIC
    /// ACKNOWLEDGE go to [`on_response`](Self::on_response), a CNP to [`on_cnp`](Self::on_cnp); the
    /// outcome is reported back so the caller can count it. Shared by the translator engine and DART
    /// reporters.
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

    /// Handles a response (ACKNOWLEDGE or ATOMIC ACKNOWLEDGE) with `psn` and AETH `kind`.
    /// `atomic` is the original value an ATOMIC ACKNOWLEDGE carries.
    // Always inline: generic over the tally, it was left out of line in the engine's response path
    // (callgrind, Key-Write N=1: ~1 instruction a report more for the call).
    #[inline(always)]
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
    pub(super) fn on_nak(&mut self, now: Instant, psn: u32, kind: AckKind, c: &mut impl Tally) {
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
                self.timers.set(Timer::Rnr, now + rnr);
                // Armed at the wait's end: the timer fires `rto()` after it.
                self.timers.set(Timer::Retransmit, now + rnr);
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

    /// An ACKNOWLEDGE (`atomic`: an ATOMIC ACKNOWLEDGE) of `psn`: the one ACK path, apart from the
    /// NAKs so it stays small. Its in-line prefix is the per-report case of atomics: the response of
    /// the window's front (an ATOMIC ACKNOWLEDGE of an atomic, or an ACK of a write), no probe out, no
    /// heap buffer to give back, which retires the front; it is [`on_ack_any`](Self::on_ack_any) with
    /// the facts of that case known (callgrind: ~150 instructions an ATOMIC ACKNOWLEDGE through the
    /// general path, most of them finding the front twice, the checks of cases that cannot be, and
    /// the timeout computed on every response). Everything else, a cumulative ACK of writes
    /// included, is `on_ack_any`, out of line.
    #[inline(always)]
    pub(super) fn on_ack(&mut self, now: Instant, psn: u32, atomic: bool, c: &mut impl Tally) {
        #[cfg(test)]
        if self.slow_acks {
            return self.on_ack_any(now, psn, atomic, c);
        }
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
        self.on_ack_any(now, psn, atomic, c);
    }

    /// [`on_ack`](Self::on_ack), any case: the rest of the one ACK path. A cumulative ACK of writes
    /// (Key-Write's one ACK per `ack_every` writes) costs what it did in a path of its own: with no
    /// atomic and no heap buffer in the window, [`retire_before`](Self::retire_before) moves the
    /// ring's head without looking at what it retires.
    #[inline(never)]
    pub(super) fn on_ack_any(&mut self, now: Instant, psn: u32, atomic: bool, c: &mut impl Tally) {
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
}
