//! The QP's life beyond the data path: failing into the error state, offline delivery, closing, and
//! re-establishment with a new responder QP.

use super::*;
use crate::frames::FrameBuilder;
use crate::rate::RateLimiter;
use crate::stats::Tally;
use crate::time::Instant;

impl Requester {
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
        self.timers.stop(Timer::Retransmit);
        self.timers.stop(Timer::Rnr);
        self.timers.stop(Timer::RateWait);
        self.last_rewind = None;
        self.probe = None;
        self.error = None;
        self.p.cfg.queue_capacity = 0;
        self.closed = true;
        lost
    }

    pub(super) fn fail(&mut self, e: QpError, c: &mut impl Tally) {
        c.qp_error();
        self.probe = None;
        self.error = Some(e);
        self.timers.stop(Timer::Retransmit);
        self.timers.stop(Timer::Rnr);
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
        self.timers.stop(Timer::Retransmit);
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
        self.timers.stop(Timer::Retransmit);
        self.timers.stop(Timer::Rnr);
        self.last_rewind = None;
        self.probe = None;
        self.error = None;
        self.rate = RateLimiter::new(&self.p.rate, now);
        self.sync_limited();
        self.cwnd = self.p.cfg.window;
        self.cwnd_acked = 0;
    }
}
