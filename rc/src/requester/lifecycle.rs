//! The QP's life beyond the data path: creation, failing into the error state, offline delivery,
//! closing, and re-establishment with a new responder QP.

use super::build;
use super::ring::Ring;
use super::state::{QpError, Requester, RequesterParams};
use super::timer_table::{Timer, TimerTable};
use crate::dcqcn::Dcqcn;
use crate::frames::FrameBuilder;
use crate::rate::RateLimiter;
use crate::rtt::RttEstimator;
use crate::stats::Tally;
use crate::time::{nanos, Instant};

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
            timers: TimerTable::default(),
            last_rewind: None,
            probe: None,
            error: None,
            limited: true,
            stage8: Some(build::stage8()),
            closed: false,
            #[cfg(test)]
            slow_acks: false,
        };
        r.timers.set_to(Timer::Congestion, r.dcqcn.poll_timeout());
        r.sync_limited();
        r
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
