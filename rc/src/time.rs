//! The notion of time of the requester and the engines built on it: a caller-supplied monotonic instant in
//! nanoseconds.
//!
//! The engine never reads a clock; every entry point takes `now`. Tests drive it with a virtual clock and
//! the daemon with `std::time::Instant` (`CLOCK_MONOTONIC`) since its start, so a test's run is
//! reproducible bit for bit.

use std::ops::{Add, Sub};
use std::time::Duration;

/// A point in time, nanoseconds since an arbitrary origin chosen by the caller. Intervals are
/// [`Duration`]s: `Instant + Duration` and `Instant - Instant` both saturate, so a huge timeout means
/// "never" instead of wrapping to the past, and time never runs backwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(pub u64);

impl Instant {
    /// The origin.
    pub const ZERO: Instant = Instant(0);

    /// Nanoseconds since the origin.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// The time from `earlier` to `self`, zero if `earlier` is later.
    pub const fn saturating_since(self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

/// Nanoseconds of `d`, saturating at `u64::MAX` (about 584 years).
pub fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(nanos(d)))
    }
}

impl Sub for Instant {
    type Output = Duration;
    /// The time from `earlier` to `self`, zero if `earlier` is later ([`Instant::saturating_since`]).
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_since(earlier)
    }
}

/// The earlier of two optional deadlines.
pub fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// The earliest of deadlines added one at a time, as [`earliest`] folds them:
/// the least instant added and whether any was, kept apart (two registers, a compare and a move per
/// deadline) instead of an `Option` rebuilt per step (callgrind: ~7 instructions a step). `get` is
/// `None` exactly when no deadline was added, and a deadline at `u64::MAX` ns stays one.
#[derive(Debug, Clone, Copy)]
pub struct Earliest {
    min: u64,
    any: bool,
}

impl Earliest {
    /// No deadline yet.
    pub const NONE: Earliest = Earliest {
        min: u64::MAX,
        any: false,
    };

    /// Adds `t`, if any.
    #[inline(always)]
    pub fn add(&mut self, t: Option<Instant>) {
        if let Some(t) = t {
            self.min = self.min.min(t.0);
            self.any = true;
        }
    }

    /// The earliest added.
    #[inline(always)]
    pub fn get(self) -> Option<Instant> {
        self.any.then_some(Instant(self.min))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic() {
        let ns = Duration::from_nanos;
        assert_eq!(Instant(5) + ns(7), Instant(12));
        assert_eq!(Instant(u64::MAX - 1) + ns(7), Instant(u64::MAX));
        assert_eq!(Instant(1) + Duration::MAX, Instant(u64::MAX));
        assert_eq!(Instant(10) - Instant(4), ns(6));
        assert_eq!(Instant(4) - Instant(10), Duration::ZERO);
        assert_eq!(Instant(10).saturating_since(Instant(4)), ns(6));
        assert_eq!(
            earliest(Some(Instant(3)), Some(Instant(2))),
            Some(Instant(2))
        );
        assert_eq!(earliest(None, Some(Instant(2))), Some(Instant(2)));
        assert_eq!(earliest(None, None), None);
    }

    /// `Earliest` folds like `earliest` over every sequence of up to three deadlines drawn from none,
    /// the origin, a middle instant and `u64::MAX` ns (which stays a deadline).
    #[test]
    fn earliest_fold_equals_the_option_fold() {
        let values = [
            None,
            Some(Instant(0)),
            Some(Instant(7)),
            Some(Instant(u64::MAX)),
        ];
        for a in values {
            for b in values {
                for c in values {
                    let mut t = Earliest::NONE;
                    for x in [a, b, c] {
                        t.add(x);
                    }
                    assert_eq!(t.get(), earliest(earliest(a, b), c), "{a:?} {b:?} {c:?}");
                }
            }
        }
        assert_eq!(Earliest::NONE.get(), None);
    }
}
