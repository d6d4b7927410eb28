//! Token bucket per collector (packets and bytes per second), so the translator cannot overrun the
//! collector NIC. Integer arithmetic in nano-tokens keeps it exact and free of float drift.

use std::time::Duration;

use crate::config::RateConfig;
use crate::time::{nanos, Instant};

const NANOS: u128 = 1_000_000_000;

#[derive(Debug, Clone)]
struct Bucket {
    /// Tokens per second; 0 means unlimited.
    rate: u128,
    /// Capacity in nano-tokens.
    cap: u128,
    /// Current level in nano-tokens (one token = 10^9 nano-tokens).
    level: u128,
}

impl Bucket {
    fn new(rate: u64, burst: u64) -> Self {
        let cap = u128::from(burst) * NANOS;
        Bucket {
            rate: rate.into(),
            cap,
            level: cap,
        }
    }

    fn refill(&mut self, elapsed: Duration) {
        if self.rate > 0 {
            self.level = (self.level + u128::from(nanos(elapsed)) * self.rate).min(self.cap);
        }
    }

    /// The time until `n` tokens are there (zero if now).
    fn wait_for(&self, n: u64) -> Duration {
        let need = u128::from(n) * NANOS;
        if self.rate == 0 || self.level >= need {
            return Duration::ZERO;
        }
        let ns = (need - self.level).div_ceil(self.rate);
        Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
    }

    fn take(&mut self, n: u64) {
        if self.rate > 0 {
            self.level = self.level.saturating_sub(u128::from(n) * NANOS);
        }
    }
}

/// Packets-and-bytes token bucket.
#[derive(Debug, Clone)]
pub struct RateLimiter {
    packets: Bucket,
    bytes: Bucket,
    last: Instant,
    /// The configured packet rate (0: unlimited), before any congestion cap.
    packets_configured: u64,
}

impl RateLimiter {
    /// A full bucket at `now`.
    pub fn new(cfg: &RateConfig, now: Instant) -> Self {
        RateLimiter {
            packets: Bucket::new(cfg.packets_per_sec, cfg.burst_packets),
            bytes: Bucket::new(cfg.bytes_per_sec, cfg.burst_bytes),
            last: now,
            packets_configured: cfg.packets_per_sec,
        }
    }

    /// Caps the packet rate at `cap` packets per second (congestion control), or lifts the cap. The
    /// configured rate still applies when it is lower; tokens earned so far are kept.
    pub fn set_packet_cap(&mut self, now: Instant, cap: Option<u64>) {
        self.refill(now);
        let rate = match (self.packets_configured, cap) {
            (configured, None) => configured,
            (0, Some(cap)) => cap.max(1),
            (configured, Some(cap)) => configured.min(cap.max(1)),
        };
        self.packets.rate = rate.into();
    }

    fn refill(&mut self, now: Instant) {
        let dt = now - self.last;
        self.packets.refill(dt);
        self.bytes.refill(dt);
        self.last = self.last.max(now);
    }

    /// When a frame of `len` bytes may go: `now` if at once, otherwise the first instant it may.
    pub fn ready_at(&mut self, now: Instant, len: usize) -> Instant {
        // The common case has no limit at all: skip the 128-bit bucket arithmetic on the packet path
        // (callgrind put the limiter at ~5 % of a Key-Write report with no limit configured).
        if self.packets.rate == 0 && self.bytes.rate == 0 {
            return now;
        }
        self.refill(now);
        let wait = self
            .packets
            .wait_for(1)
            .max(self.bytes.wait_for(len as u64));
        now + wait
    }

    /// Takes the tokens of one frame of `len` bytes (call after [`ready_at`](Self::ready_at) said now).
    pub fn take(&mut self, len: usize) {
        if self.packets.rate == 0 && self.bytes.rate == 0 {
            return;
        }
        self.packets.take(1);
        self.bytes.take(len as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_per_second() {
        let cfg = RateConfig {
            packets_per_sec: 1_000_000,
            bytes_per_sec: 0,
            burst_packets: 2,
            burst_bytes: 0,
            ..RateConfig::default()
        };
        let mut r = RateLimiter::new(&cfg, Instant(0));
        for _ in 0..2 {
            assert_eq!(r.ready_at(Instant(0), 100), Instant(0));
            r.take(100);
        }
        // One packet per microsecond after the burst.
        assert_eq!(r.ready_at(Instant(0), 100), Instant(1000));
        assert_eq!(r.ready_at(Instant(400), 100), Instant(1000));
        assert_eq!(r.ready_at(Instant(1000), 100), Instant(1000));
        r.take(100);
        assert_eq!(r.ready_at(Instant(1000), 100), Instant(2000));
    }

    #[test]
    fn congestion_cap_applies_and_lifts() {
        let cfg = RateConfig {
            packets_per_sec: 0,
            burst_packets: 1,
            ..RateConfig::default()
        };
        let mut r = RateLimiter::new(&cfg, Instant(0));
        // Unlimited: no wait, and taking costs nothing.
        for _ in 0..3 {
            assert_eq!(r.ready_at(Instant(0), 100), Instant(0));
            r.take(100);
        }
        // Capped at 1 Mpps: the bucket's one token goes, then one packet per microsecond.
        r.set_packet_cap(Instant(0), Some(1_000_000));
        assert_eq!(r.ready_at(Instant(0), 100), Instant(0));
        r.take(100);
        assert_eq!(r.ready_at(Instant(0), 100), Instant(1000));
        r.set_packet_cap(Instant(0), None);
        assert_eq!(r.ready_at(Instant(0), 100), Instant(0));
    }

    #[test]
    fn bytes_per_second_and_unlimited() {
        let cfg = RateConfig {
            packets_per_sec: 0,
            bytes_per_sec: 1_000_000_000,
            burst_packets: 0,
            burst_bytes: 2000,
            ..RateConfig::default()
        };
        let mut r = RateLimiter::new(&cfg, Instant(0));
        assert_eq!(r.ready_at(Instant(0), 1500), Instant(0));
        r.take(1500);
        // 500 bytes left, 1000 more at one byte per ns.
        assert_eq!(r.ready_at(Instant(0), 1500), Instant(1000));
        let mut free = RateLimiter::new(&RateConfig::default(), Instant(0));
        for _ in 0..1000 {
            assert_eq!(free.ready_at(Instant(5), 1500), Instant(5));
            free.take(1500);
        }
    }
}
