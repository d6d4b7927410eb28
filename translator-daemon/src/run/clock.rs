//! The daemon's clock for the engines: monotonic nanoseconds since the daemon started, shared by every
//! thread so that instants from different workers compare.

use dta_translator::Instant;

/// A shared origin.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    origin: std::time::Instant,
}

impl Clock {
    /// Starts now.
    pub fn start() -> Self {
        Clock {
            origin: std::time::Instant::now(),
        }
    }

    /// The engine's `now`.
    pub fn now(&self) -> Instant {
        Instant(u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }
}
