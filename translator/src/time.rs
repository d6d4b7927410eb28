//! The engine's notion of time: a caller-supplied monotonic instant in nanoseconds.
//!
//! The engine never reads a clock; every entry point takes `now`. Tests drive it with a virtual clock and
//! the daemon with `std::time::Instant` (`CLOCK_MONOTONIC`) since its start, so a test's run is
//! reproducible bit for bit.

use std::ops::Add;

/// A point in time, nanoseconds since an arbitrary origin chosen by the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(pub u64);

impl Instant {
    /// The origin.
    pub const ZERO: Instant = Instant(0);

    /// Nanoseconds since the origin.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Nanoseconds from `earlier` to `self`, zero if `earlier` is later (time never runs backwards here).
    pub const fn saturating_since(self, earlier: Instant) -> u64 {
        self.0.saturating_sub(earlier.0)
    }
}

impl Add<u64> for Instant {
    type Output = Instant;
    /// Adds nanoseconds, saturating so that a huge timeout means "never" instead of wrapping to the past.
    fn add(self, ns: u64) -> Instant {
        Instant(self.0.saturating_add(ns))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic() {
        assert_eq!(Instant(5) + 7, Instant(12));
        assert_eq!(Instant(u64::MAX - 1) + 7, Instant(u64::MAX));
        assert_eq!(Instant(10).saturating_since(Instant(4)), 6);
        assert_eq!(Instant(4).saturating_since(Instant(10)), 0);
        assert_eq!(
            earliest(Some(Instant(3)), Some(Instant(2))),
            Some(Instant(2))
        );
        assert_eq!(earliest(None, Some(Instant(2))), Some(Instant(2)));
        assert_eq!(earliest(None, None), None);
    }
}
