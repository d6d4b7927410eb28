//! Sending one frame: the next (new, or a go-back-N retransmission) into a `Vec` or a NIC buffer,
//! with the rate, the RNR wait and the probe after a timeout in the way. A new frame follows the rules
//! of [`NewFrames`], as a burst's frames do (`burst`); a retransmission is go-back-N's own step.

use super::new_frame::NewFrames;
use super::ring;
use super::state::Requester;
use super::timer_table::Timer;
use crate::frames::FrameOut;
use crate::stats::Tally;
use crate::time::Instant;

impl Requester {
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

    pub(super) fn transmit<O: FrameOut + ?Sized>(
        &mut self,
        now: Instant,
        c: &mut impl Tally,
        out: &mut O,
    ) -> Option<usize> {
        if self.error.is_some() {
            return None;
        }
        if let Some(t) = self.timers.get(Timer::Rnr) {
            if t > now {
                return None;
            }
            self.timers.stop(Timer::Rnr);
        }
        if self.probe.is_some() && self.sent >= 1 {
            // Probing after a timeout: nothing more until the probe is answered.
            return None;
        }
        if self.sent < self.win {
            return self.retransmit(now, c, out);
        }
        // The front work request's slot found once (its facts read once: opcode, length), and the
        // next one's from it: each ring lookup and op match costs a few instructions on every frame.
        let mut go = NewFrames::start(self);
        let at = go.at();
        let slot = self.ring.slot_of(at)?;
        let front = &self.ring.at(slot)?.wr;
        let atomic = front.op.is_atomic();
        // The frame's length only for the rate: whether it fits `out` is learnt from the build (below),
        // which saves computing it for every frame.
        let limited_len = self.limited.then(|| front.op.frame_len());
        if go.room() == 0 || go.atomic_limit(atomic) {
            return None;
        }
        if let Some(len) = limited_len {
            if !out.fits(len) || !self.rate_ok(now, len, c) {
                return None;
            }
        }
        let next = self.ring.next_of(at, slot);
        let stalls = go.stalls(atomic, || next.is_some_and(|n| n.wr.op.is_atomic()))
            // Or the rate holds the next back.
            || (self.limited
                && next.is_some_and(|n| self.rate.ready_at(now, n.wr.op.frame_len()) > now));
        let ack_req = go.ack_req(stalls);
        // `slot` holds element `at`: `at` above found it.
        let f = self.ring.at_mut(slot)?;
        let Some(n) = out.build(&mut self.builder, &f.wr.op, go.psn(), ack_req) else {
            if !out.fits(f.wr.op.frame_len()) {
                // `out` is too short (the build wrote nothing): it stays queued, and nothing changed (a
                // rate, which the frame's length went to, checked the fit before anything changed).
                return None;
            }
            // A frame that cannot be emitted at all (beyond the UDP length limit, which the MTU cap rules
            // out) is dropped, as when the queue was apart from the window, so it cannot block the queue.
            // It counts towards the AckReq cadence, as it always has.
            self.ring.remove(at);
            self.since_ack_req += 1;
            return None;
        };
        let heap = ring::on_heap(&f.wr.op);
        go.sent(f, now, (atomic, heap, ack_req), c);
        go.end(self, now, n as u64, c);
        if self.limited {
            self.rate.take(n);
        }
        Some(n)
    }

    /// The next frame of a go-back-N retransmission (`sent < win`): out of line, so the new-frame path
    /// keeps its registers.
    #[inline(never)]
    pub(super) fn retransmit<O: FrameOut + ?Sized>(
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
}
