//! DCQCN-style reaction to congestion notification packets (CNPs), per QP.
//!
//! A collector NIC that sees ECN-marked frames (the translator sends ECT(0)) answers with CNPs. Like a
//! DCQCN reaction point (Zhu et al., SIGCOMM 2015) the translator then cuts its packet rate and recovers
//! on a timer: on a CNP, `target = current` and `current *= 1 - alpha/2`, and alpha moves towards 1; every
//! recovery period without a CNP alpha decays, `current` climbs half way back to `target` (fast recovery)
//! and, after `fast_recovery_steps` periods, `target` itself grows by the additive increase. Once the rate
//! is back at the base rate the cap is lifted. Integer arithmetic (alpha in 1/1024) keeps it exact.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::time::Instant;

/// Alpha's scale: 1024 means 1.
const ALPHA_ONE: u64 = 1024;

/// How the translator reacts to CNPs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CongestionConfig {
    /// React to CNPs at all (they are counted either way).
    pub enabled: bool,
    /// The rate a cut starts from when the token bucket has no packet limit, in packets per second.
    pub line_rate_pps: u64,
    /// The rate never drops below this.
    pub min_rate_pps: u64,
    /// Alpha's gain g, as 1/2^g_shift (DCQCN's default g = 1/256).
    pub g_shift: u32,
    /// Recovery timer period in microseconds (DCQCN's rate-increase and alpha timers, 55 µs).
    pub recovery_period_us: u64,
    /// Periods of fast recovery (halving the gap to the target) before additive increase.
    pub fast_recovery_steps: u32,
    /// Additive increase of the target rate per period after fast recovery, packets per second.
    pub additive_increase_pps: u64,
}

impl Default for CongestionConfig {
    fn default() -> Self {
        CongestionConfig {
            enabled: true,
            line_rate_pps: 10_000_000,
            min_rate_pps: 10_000,
            g_shift: 8,
            recovery_period_us: 55,
            fast_recovery_steps: 5,
            additive_increase_pps: 50_000,
        }
    }
}

/// The reaction point of one QP.
#[derive(Debug, Clone)]
pub struct Dcqcn {
    cfg: CongestionConfig,
    /// The rate without congestion: the token bucket's packet rate, or the line rate when unlimited.
    base: u64,
    /// `Some((current, target))` while the rate is cut.
    cut: Option<(u64, u64)>,
    alpha: u64,
    steps: u32,
    next_update: Option<Instant>,
}

impl Dcqcn {
    /// A reaction point whose uncongested rate is `base_pps` (0: the configured line rate).
    pub fn new(cfg: CongestionConfig, base_pps: u64) -> Self {
        let base = if base_pps == 0 {
            cfg.line_rate_pps
        } else {
            base_pps
        };
        Dcqcn {
            cfg,
            base: base.max(1),
            cut: None,
            alpha: ALPHA_ONE,
            steps: 0,
            next_update: None,
        }
    }

    /// The packet-rate cap in force, if any.
    pub fn cap_pps(&self) -> Option<u64> {
        self.cut.map(|(current, _)| current)
    }

    /// When [`on_timer`](Self::on_timer) next has work.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.next_update
    }

    /// `recovery_period_us` (at least 1 µs, so the timer loop always moves on).
    fn period(&self) -> Duration {
        Duration::from_micros(self.cfg.recovery_period_us.max(1))
    }

    /// A CNP arrived: cut the rate.
    pub fn on_cnp(&mut self, now: Instant) {
        if !self.cfg.enabled {
            return;
        }
        let (current, _) = self.cut.unwrap_or((self.base, self.base));
        let reduced = current - current * self.alpha / (2 * ALPHA_ONE);
        self.cut = Some((reduced.max(self.cfg.min_rate_pps).min(current), current));
        let g = self.cfg.g_shift.min(16);
        self.alpha = self.alpha - (self.alpha >> g) + (ALPHA_ONE >> g);
        self.steps = 0;
        self.next_update = Some(now + self.period());
    }

    /// Runs every recovery period that has elapsed by `now`.
    pub fn on_timer(&mut self, now: Instant) {
        while let Some(at) = self.next_update.filter(|at| *at <= now) {
            let g = self.cfg.g_shift.min(16);
            self.alpha -= self.alpha >> g;
            let Some((current, mut target)) = self.cut else {
                self.next_update = None;
                return;
            };
            if self.steps >= self.cfg.fast_recovery_steps {
                target = (target + self.cfg.additive_increase_pps).min(self.base);
            }
            self.steps += 1;
            let current = (current + target).div_ceil(2);
            if current >= self.base {
                self.cut = None;
                self.next_update = None;
            } else {
                self.cut = Some((current, target));
                self.next_update = Some(at + self.period());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> CongestionConfig {
        CongestionConfig {
            line_rate_pps: 1_000_000,
            min_rate_pps: 1_000,
            recovery_period_us: 10,
            fast_recovery_steps: 2,
            additive_increase_pps: 100_000,
            ..CongestionConfig::default()
        }
    }

    #[test]
    fn cuts_then_recovers_exactly() {
        let mut d = Dcqcn::new(cfg(), 0);
        assert_eq!(d.cap_pps(), None);
        // alpha = 1: the first cut halves the rate; alpha -> 1024 - 4 + 4 = 1024.
        d.on_cnp(Instant(0));
        assert_eq!(d.cap_pps(), Some(500_000));
        assert_eq!(d.poll_timeout(), Some(Instant(10_000)));
        // A second CNP within the period cuts again from the current rate.
        d.on_cnp(Instant(1_000));
        assert_eq!(d.cap_pps(), Some(250_000));
        // Fast recovery: halfway to the target (500k) per period, twice.
        d.on_timer(Instant(11_000));
        assert_eq!(d.cap_pps(), Some(375_000));
        d.on_timer(Instant(21_000));
        assert_eq!(d.cap_pps(), Some(437_500));
        // Then the target grows by 100k per period: 600k -> current 518_750.
        d.on_timer(Instant(31_000));
        assert_eq!(d.cap_pps(), Some(518_750));
        // Long quiet: back at the base rate, cap lifted, no timer.
        d.on_timer(Instant(10_000_000));
        assert_eq!(d.cap_pps(), None);
        assert_eq!(d.poll_timeout(), None);
    }

    #[test]
    fn alpha_decays_so_later_cuts_are_gentler() {
        let mut d = Dcqcn::new(cfg(), 800_000);
        d.on_cnp(Instant(0));
        assert_eq!(d.cap_pps(), Some(400_000));
        // 20 quiet periods: alpha decays from ~1 by (1 - 1/256)^20 ~ 0.925; the rate recovers fully.
        d.on_timer(Instant(200_000));
        let alpha = d.alpha;
        assert!(alpha < ALPHA_ONE && alpha > 900, "{alpha}");
        d.on_cnp(Instant(200_000));
        let (now, before) = (d.cap_pps().unwrap(), 800_000u64.min(d.base));
        assert_eq!(now, before - before * alpha / 2048);
        assert!(now > 400_000);
    }

    #[test]
    fn floor_and_disabled() {
        let mut d = Dcqcn::new(cfg(), 1_500);
        d.on_cnp(Instant(0));
        assert_eq!(d.cap_pps(), Some(1_000), "never below min_rate_pps");
        let mut off = Dcqcn::new(
            CongestionConfig {
                enabled: false,
                ..cfg()
            },
            0,
        );
        off.on_cnp(Instant(0));
        assert_eq!((off.cap_pps(), off.poll_timeout()), (None, None));
    }
}
