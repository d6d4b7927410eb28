//! The timers: the retransmit timeout (adaptive, with backoff), its deadline, what firing does (a probe
//! of the oldest frame, backoff, the retry limit), and the earliest of every timer for the caller.

use std::time::Duration;

use super::state::{QpError, Requester};
use super::timer_table::Timer;
use crate::stats::Tally;
use crate::time::{Earliest, Instant};

impl Requester {
    /// `now + self.rto()`, in whole ns: `Duration::saturating_mul` and `Instant + Duration` saturate where
    /// these `u64` operations do (at `u64::MAX` ns, or beyond, which `nanos` caps there), so the instant
    /// is the same.
    #[inline]
    pub(super) fn rto_from(&self, now: Instant) -> Instant {
        let base = if self.p.cfg.adaptive_timeout {
            self.rtt.timeout_ns()
        } else {
            self.fixed_rto_ns
        };
        // The same shift as `rto`'s (a `u32`, as `Duration::saturating_mul` takes).
        let m: u32 = 1 << self.backoff.min(self.p.cfg.max_backoff_shift);
        Instant(now.0.saturating_add(base.saturating_mul(u64::from(m))))
    }

    /// When the retransmit timer fires, if armed: `rto_from` the instant it was armed at.
    #[inline]
    pub(super) fn rto_deadline(&self) -> Option<Instant> {
        self.timers.get(Timer::Retransmit).map(|t| self.rto_from(t))
    }

    /// The retransmit timeout, backoff included.
    pub(super) fn rto(&self) -> Duration {
        self.base_timeout()
            .saturating_mul(1 << self.backoff.min(self.p.cfg.max_backoff_shift))
    }

    /// The retransmit timeout before backoff: measured, or the configured one.
    pub(super) fn base_timeout(&self) -> Duration {
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

    /// The responder made progress: the retry count and the backoff start again, and the retransmit
    /// timer is armed afresh while frames are in flight.
    pub(super) fn progress(&mut self, now: Instant) {
        self.retries = 0;
        self.backoff = 0;
        self.timers
            .set_to(Timer::Retransmit, (self.win > 0).then_some(now));
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
        // Each timer by name rather than the table folded: the retransmit timer's entry is the instant
        // it was armed at (see `Timer::Retransmit`), and its deadline counts while frames are in flight.
        if self.win > 0 {
            t.add(self.rto_deadline());
        }
        t.add(self.timers.get(Timer::Rnr));
        t.add(self.timers.get(Timer::Congestion));
        t.add(self.timers.get(Timer::RateWait));
    }

    /// Fires the retransmit timer if due. Returns the error if the QP just failed.
    pub fn on_timeout(&mut self, now: Instant, c: &mut impl Tally) -> Option<QpError> {
        if self.error.is_some() {
            return None;
        }
        if self.timers.expired(Timer::RateWait, now) {
            self.timers.stop(Timer::RateWait);
        }
        if self.timers.expired(Timer::Congestion, now) {
            self.dcqcn.on_timer(now);
            self.timers
                .set_to(Timer::Congestion, self.dcqcn.poll_timeout());
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
        self.timers.stop(Timer::Rnr);
        self.timers.set(Timer::Retransmit, now);
        None
    }
}
