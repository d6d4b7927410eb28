//! Round-trip time estimation for the retransmit timer, after RFC 6298 (TCP's RTO), in nanoseconds.
//!
//! A fixed timeout is either too short under load (the responder's ACKs queue behind its own work, every
//! timeout resends the whole go-back-N window, and the resends add load: a retransmission storm) or too
//! long on a fast path (a lost tail waits for it). The estimator follows the measured RTT instead:
//! `SRTT` and `RTTVAR` from samples of frames sent exactly once (Karn's rule, applied by the caller),
//! timeout = `max(SRTT + 4·RTTVAR, 2·SRTT)`, clamped to `[floor, ceiling]`.
//!
//! The `2·SRTT` term departs from RFC 6298: a QP is sampled on every ACK, many per round trip, so RTTVAR
//! collapses while the RTT is steady and the next queueing hiccup (a responder answering a burst of
//! atomics in turn) fires the timer. TCP avoids the same with a 200 ms minimum; a RoCE path's RTT is
//! microseconds to milliseconds, so the bound is relative instead.
//!
//! Times go in and out as [`Duration`]s; inside they are whole nanoseconds, so the integer divisions
//! truncate exactly as RFC 6298's arithmetic written in ns does.

use std::time::Duration;

use crate::time::nanos;

/// Smoothed RTT, its variation and the resulting base timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RttEstimator {
    /// Smoothed RTT and RTT variation, once a sample was taken.
    state: Option<(u64, u64)>,
    initial: u64,
    floor: u64,
    ceiling: u64,
}

impl RttEstimator {
    /// Timeout `initial` before the first sample; afterwards the estimate, held within
    /// `[floor, ceiling]`.
    pub fn new(initial: Duration, floor: Duration, ceiling: Duration) -> Self {
        let (initial, floor, ceiling) = (nanos(initial), nanos(floor), nanos(ceiling));
        let ceiling = ceiling.max(floor);
        let initial = initial.clamp(floor, ceiling);
        RttEstimator {
            state: None,
            initial,
            floor,
            ceiling,
        }
    }

    /// Takes one RTT sample (RFC 6298 section 2: alpha = 1/8, beta = 1/4).
    pub fn sample(&mut self, rtt: Duration) {
        self.sample_ns(nanos(rtt));
    }

    /// [`sample`](Self::sample) of `rtt` ns (the requester's per-response path, without the round trip
    /// through `Duration`).
    #[inline]
    pub fn sample_ns(&mut self, rtt: u64) {
        // Updated in place (no tag written once sampled). The timeout is computed when asked: the
        // requester samples on every ACK but reads the timeout only when its timer is polled (see
        // `Requester::rto_deadline`).
        match &mut self.state {
            None => self.state = Some((rtt, rtt / 2)),
            Some((srtt, rttvar)) => {
                let s = *srtt;
                *srtt = s - s / 8 + rtt / 8;
                *rttvar = *rttvar - *rttvar / 4 + s.abs_diff(rtt) / 4;
            }
        }
    }

    /// The smoothed RTT, once sampled.
    pub fn srtt(&self) -> Option<Duration> {
        self.state.map(|(s, _)| Duration::from_nanos(s))
    }

    /// The RTT variation, once sampled.
    pub fn rttvar(&self) -> Option<Duration> {
        self.state.map(|(_, v)| Duration::from_nanos(v))
    }

    /// The base retransmit timeout (before any backoff).
    #[inline]
    pub fn timeout(&self) -> Duration {
        Duration::from_nanos(self.timeout_ns())
    }

    /// [`timeout`](Self::timeout) in ns.
    #[inline]
    pub fn timeout_ns(&self) -> u64 {
        match self.state {
            None => self.initial,
            // `floor <= ceiling` (`new`), so max-then-min is the clamp.
            Some((srtt, rttvar)) => srtt
                .saturating_add(rttvar.saturating_mul(4))
                .max(srtt.saturating_mul(2))
                .max(self.floor)
                .min(self.ceiling),
        }
    }

    #[cfg(test)]
    fn compute_timeout(&self) -> u64 {
        match self.state {
            None => self.initial,
            Some((srtt, rttvar)) => srtt
                .saturating_add(rttvar.saturating_mul(4))
                .max(srtt.saturating_mul(2))
                .clamp(self.floor, self.ceiling),
        }
    }

    /// Forgets the samples (a new path: a re-established QP).
    pub fn reset(&mut self) {
        self.state = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: Duration = Duration::from_micros(1);
    const NS: Duration = Duration::from_nanos(1);

    /// The kept timeout is the one the state gives, through samples and resets.
    #[test]
    fn kept_timeout_follows_the_state() {
        let mut e = RttEstimator::new(1_000 * US, 50 * US, 20_000 * US);
        let mut x = 12_345u64;
        for k in 0..500 {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            if k % 97 == 96 {
                e.reset();
            } else {
                e.sample(Duration::from_nanos(x >> 40));
            }
            assert_eq!(nanos(e.timeout()), e.compute_timeout());
        }
    }

    #[test]
    fn initial_timeout_until_the_first_sample() {
        let e = RttEstimator::new(1_000 * US, 200 * US, 100_000 * US);
        assert_eq!(e.timeout(), 1_000 * US);
        assert_eq!(e.srtt(), None);
    }

    #[test]
    fn follows_rfc_6298_by_hand() {
        let mut e = RttEstimator::new(1_000 * US, NS, Duration::MAX);
        // First sample R: SRTT = R, RTTVAR = R/2, RTO = R + 4·R/2 = 3R.
        e.sample(800 * US);
        assert_eq!((e.srtt(), e.rttvar()), (Some(800 * US), Some(400 * US)));
        assert_eq!(e.timeout(), 2_400 * US);
        // R' = 1600 µs: RTTVAR = 3/4·400 + 1/4·|800 - 1600| = 300 + 200 = 500;
        // SRTT = 7/8·800 + 1/8·1600 = 700 + 200 = 900; RTO = 900 + 2000 = 2900.
        e.sample(1_600 * US);
        assert_eq!((e.srtt(), e.rttvar()), (Some(900 * US), Some(500 * US)));
        assert_eq!(e.timeout(), 2_900 * US);
        // R'' = 900 µs: RTTVAR = 375 + 0 = 375; SRTT = 787.5 + 112.5 = 900; RTO = 900 + 1500 = 2400.
        e.sample(900 * US);
        assert_eq!((e.srtt(), e.rttvar()), (Some(900 * US), Some(375 * US)));
        assert_eq!(e.timeout(), 2_400 * US);
        // Steady 900 µs: RTTVAR decays by 3/4 per sample, and once 4·RTTVAR < SRTT the timeout rests at
        // 2·SRTT = 1800 µs instead of following RTTVAR down to SRTT.
        for _ in 0..40 {
            e.sample(900 * US);
        }
        assert_eq!(e.srtt(), Some(900 * US));
        assert_eq!(e.timeout(), 1_800 * US);
    }

    #[test]
    fn clamped_to_floor_and_ceiling() {
        let mut fast = RttEstimator::new(1_000 * US, 1_000 * US, 50_000 * US);
        for _ in 0..100 {
            fast.sample(20 * US);
        }
        assert_eq!(fast.srtt(), Some(20 * US));
        assert_eq!(fast.timeout(), 1_000 * US, "never below the floor");
        let mut slow = RttEstimator::new(1_000 * US, 1_000 * US, 50_000 * US);
        slow.sample(40_000 * US);
        assert_eq!(slow.timeout(), 50_000 * US, "never above the ceiling");
        slow.reset();
        assert_eq!(slow.timeout(), 1_000 * US);
    }

    #[test]
    fn steady_rtt_converges_and_variation_decays() {
        let mut e = RttEstimator::new(1_000 * US, NS, Duration::MAX);
        e.sample(5_000 * US);
        for _ in 0..200 {
            e.sample(3_000 * US);
        }
        // SRTT converges to the steady sample and RTTVAR to zero, within nanoseconds of integer rounding
        // (truncating divisions stall both a few ns short).
        let srtt = e.srtt().unwrap_or(Duration::ZERO);
        assert!(srtt.abs_diff(3_000 * US) <= 8 * NS, "{srtt:?}");
        assert!(
            e.rttvar().unwrap_or(Duration::MAX) <= 16 * NS,
            "{:?}",
            e.rttvar()
        );
        // With RTTVAR gone, twice the smoothed RTT bounds the timeout from below.
        assert!(
            e.timeout().abs_diff(6_000 * US) <= 16 * NS,
            "{:?}",
            e.timeout()
        );
    }
}
