//! A packets-per-second pacer: packet i is due at `start + i / rate`.
//!
//! Scheduling against the start time rather than the previous packet keeps the long-run rate exact even
//! when single sleeps overshoot (the next packets are simply due at once). Waits shorter than
//! [`SPIN_BELOW`] spin, because a thread sleep on Linux overshoots by tens of microseconds.

use std::time::{Duration, Instant};

/// Waits shorter than this spin instead of sleeping.
pub const SPIN_BELOW: Duration = Duration::from_micros(200);

/// Paces packets to a target rate, or not at all.
#[derive(Debug, Clone)]
pub struct Pacer {
    start: Instant,
    /// Nanoseconds per packet; `None` for as fast as possible.
    interval_ns: Option<f64>,
    issued: u64,
}

impl Pacer {
    /// A pacer at `pps` packets per second; `None`, zero or a non-finite rate means unpaced.
    pub fn new(pps: Option<f64>) -> Self {
        let interval_ns = pps.filter(|r| r.is_finite() && *r > 0.0).map(|r| 1e9 / r);
        Pacer {
            start: Instant::now(),
            interval_ns,
            issued: 0,
        }
    }

    /// Packets granted so far.
    pub fn issued(&self) -> u64 {
        self.issued
    }

    /// When packet number `i` is due.
    fn due_at(&self, i: u64) -> Option<Instant> {
        self.interval_ns
            .map(|ns| self.start + Duration::from_nanos((i as f64 * ns) as u64))
    }

    /// How many of the next `max` packets are due at `now` (at least 1 once the first is due; all of
    /// them when unpaced). They count as issued.
    pub fn grant(&mut self, now: Instant, max: u64) -> u64 {
        let n = match self.interval_ns {
            None => max,
            Some(ns) => {
                let elapsed = now.saturating_duration_since(self.start).as_nanos() as f64;
                let due = (elapsed / ns) as u64 + 1;
                due.saturating_sub(self.issued).min(max)
            }
        };
        self.issued += n;
        n
    }

    /// Blocks until the next packet is due, then counts it as issued.
    pub fn wait(&mut self) {
        if let Some(at) = self.due_at(self.issued) {
            loop {
                let now = Instant::now();
                if now >= at {
                    break;
                }
                let left = at - now;
                if left > SPIN_BELOW {
                    std::thread::sleep(left - SPIN_BELOW);
                } else {
                    std::hint::spin_loop();
                }
            }
        }
        self.issued += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_follow_the_schedule() {
        let mut p = Pacer::new(Some(1000.0));
        let t0 = p.start;
        // At the start only packet 0 is due; 10.5 ms later packets 1..=10 are.
        assert_eq!(p.grant(t0, 100), 1);
        assert_eq!(p.grant(t0, 100), 0);
        assert_eq!(p.grant(t0 + Duration::from_micros(10_500), 100), 10);
        assert_eq!(p.grant(t0 + Duration::from_secs(1), 5), 5);
        assert_eq!(p.issued(), 16);
        let mut free = Pacer::new(None);
        assert_eq!(free.grant(Instant::now(), 64), 64);
        assert_eq!(Pacer::new(Some(0.0)).grant(Instant::now(), 3), 3);
    }

    #[test]
    fn wait_keeps_the_rate() {
        let mut p = Pacer::new(Some(20_000.0));
        let t0 = Instant::now();
        for _ in 0..200 {
            p.wait();
        }
        // 200 packets at 20 kpps: the 200th is due at 9.95 ms.
        let took = t0.elapsed();
        assert!(took >= Duration::from_micros(9_900), "{took:?}");
        assert!(took < Duration::from_millis(500), "{took:?}");
    }
}
