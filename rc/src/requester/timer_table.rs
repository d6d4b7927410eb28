//! The requester's timers, named, in one table (quinn-proto's `TimerTable` is the model): each
//! [`Timer`] is an instant or unset, and what a timer means and when it is set is said once, on its
//! variant. Every entry is a deadline but the retransmit timer's, which is the instant it was armed at
//! (its deadline is computed when asked, see the variant).

use crate::time::Instant;

/// One of the requester's timers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Timer {
    /// The retransmit timeout, armed while frames are in flight. Its entry is the instant it was armed
    /// at (a send that found it unset, a response that made progress, a timeout, the end of an RNR
    /// wait); it fires `rto_from(armed)` later, computed when asked (`rto_deadline`). Exact, because
    /// what that depends on (the RTT estimate, the backoff) changes only where the timer is armed
    /// again right after. Keeping the deadline itself cost the timeout's computation on every ACK and
    /// every burst that arms it (callgrind, Key-Write N=1: ~2 instructions a report).
    Retransmit,
    /// The end of an RNR NAK's wait: nothing is sent before it.
    Rnr,
    /// When the rate limiter lets the held-back frame go (set while it holds one back).
    RateWait,
    /// DCQCN's next rate-recovery step: the congestion controller's own timer
    /// ([`Dcqcn::poll_timeout`](crate::dcqcn::Dcqcn::poll_timeout)), copied here whenever it changes
    /// (a CNP, a recovery step) so that the table holds every deadline.
    Congestion,
}

impl Timer {
    /// Every timer, in the table's order.
    const ALL: [Timer; 4] = [
        Timer::Retransmit,
        Timer::Rnr,
        Timer::RateWait,
        Timer::Congestion,
    ];
}

/// A deadline per [`Timer`], or none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct TimerTable {
    at: [Option<Instant>; Timer::ALL.len()],
}

impl TimerTable {
    /// Sets `timer` to fire at `at`.
    #[inline(always)]
    pub(super) fn set(&mut self, timer: Timer, at: Instant) {
        self.at[timer as usize] = Some(at);
    }

    /// Sets `timer` to `at`, or stops it (`None`).
    #[inline(always)]
    pub(super) fn set_to(&mut self, timer: Timer, at: Option<Instant>) {
        self.at[timer as usize] = at;
    }

    /// Stops `timer`.
    #[inline(always)]
    pub(super) fn stop(&mut self, timer: Timer) {
        self.at[timer as usize] = None;
    }

    /// `timer`'s deadline, if set.
    #[inline(always)]
    pub(super) fn get(&self, timer: Timer) -> Option<Instant> {
        self.at[timer as usize]
    }

    /// Whether `timer` is set.
    #[inline(always)]
    pub(super) fn is_set(&self, timer: Timer) -> bool {
        self.at[timer as usize].is_some()
    }

    /// Whether `timer` is set and due at `now`.
    #[inline(always)]
    pub(super) fn expired(&self, timer: Timer, now: Instant) -> bool {
        self.at[timer as usize].is_some_and(|t| t <= now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each timer is its own slot: setting, stopping and expiring one leaves the others.
    #[test]
    fn timers_are_independent_and_next_is_the_earliest() {
        let mut t = TimerTable::default();
        assert_eq!(Timer::ALL.map(|x| t.get(x)), [None; 4]);
        for (k, timer) in Timer::ALL.into_iter().enumerate() {
            t.set(timer, Instant(100 - k as u64 * 10));
        }
        assert_eq!(t.get(Timer::Rnr), Some(Instant(90)));
        assert!(t.expired(Timer::Congestion, Instant(70)));
        assert!(!t.expired(Timer::RateWait, Instant(79)));
        assert!(t.expired(Timer::RateWait, Instant(80)));
        t.stop(Timer::Congestion);
        assert!(!t.is_set(Timer::Congestion));
        assert!(!t.expired(Timer::Congestion, Instant(u64::MAX)));
        t.set_to(Timer::RateWait, None);
        t.set_to(Timer::Retransmit, Some(Instant(5)));
        assert_eq!(
            Timer::ALL.map(|x| t.get(x)),
            [Some(Instant(5)), Some(Instant(90)), None, None]
        );
    }
}
