//! Key distributions: uniform over `base..base + n`, or Zipf with exponent `s` over the same range (rank 0,
//! the key `base`, most popular), as the paper's skewed workloads.
//!
//! Zipf samples by inverting a precomputed CDF with a binary search: exact, and its float operations (a
//! running sum of `1 / (r + 1)^s`) are the same in the Python profiles, so both pick the same key.

use crate::divisor::Divisor;
use crate::rng::SplitMix64;

/// How keys are drawn.
#[derive(Debug, Clone)]
pub enum KeyDist {
    /// Every key equally likely.
    Uniform {
        /// First key.
        base: u32,
        /// Number of keys.
        n: u32,
    },
    /// Zipf: key `base + r` with probability proportional to `1 / (r + 1)^s`.
    Zipf {
        /// First (most popular) key.
        base: u32,
        /// Running sums of the weights; the last is the total.
        cdf: Vec<f64>,
    },
}

impl KeyDist {
    /// Uniform over `base..base + n` (`n` at least 1).
    pub fn uniform(base: u32, n: u32) -> Self {
        KeyDist::Uniform { base, n: n.max(1) }
    }

    /// Zipf with exponent `s` over `base..base + n` (`n` at least 1).
    pub fn zipf(base: u32, n: u32, s: f64) -> Self {
        let mut cdf = Vec::with_capacity(n.max(1) as usize);
        let mut sum = 0.0f64;
        for r in 0..n.max(1) {
            sum += 1.0 / (f64::from(r) + 1.0).powf(s);
            cdf.push(sum);
        }
        KeyDist::Zipf { base, cdf }
    }

    /// Draws a key (one draw from `rng`).
    pub fn sample(&self, rng: &mut SplitMix64) -> u32 {
        match self {
            KeyDist::Uniform { base, n } => base.wrapping_add(rng.below(u64::from(*n)) as u32),
            KeyDist::Zipf { base, cdf } => {
                let total = cdf.last().copied().unwrap_or(1.0);
                let u = rng.unit() * total;
                let r = cdf
                    .partition_point(|&c| c <= u)
                    .min(cdf.len().saturating_sub(1));
                base.wrapping_add(r as u32)
            }
        }
    }
}

/// [`KeyDist::sample`] with the uniform range's modulo prepared (see [`Divisor`]): the same keys from the
/// same draws, for the fast generator.
#[derive(Debug, Clone)]
pub struct FastKeys {
    dist: KeyDist,
    uniform: Option<(u32, Divisor)>,
}

impl FastKeys {
    /// Prepares `dist`.
    pub fn new(dist: &KeyDist) -> Self {
        let uniform = match dist {
            KeyDist::Uniform { base, n } => Some((*base, Divisor::new(u64::from(*n)))),
            KeyDist::Zipf { .. } => None,
        };
        FastKeys {
            dist: dist.clone(),
            uniform,
        }
    }

    /// Draws a key, as [`KeyDist::sample`] does.
    #[inline]
    pub fn sample(&self, rng: &mut SplitMix64) -> u32 {
        match &self.uniform {
            Some((base, d)) => base.wrapping_add(rng.below_by(d) as u32),
            None => self.dist.sample(rng),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_stays_in_range() {
        let d = KeyDist::uniform(100, 10);
        let mut r = SplitMix64::new(1);
        let mut seen = [0u32; 10];
        for _ in 0..10_000 {
            let k = d.sample(&mut r);
            assert!((100..110).contains(&k));
            seen[(k - 100) as usize] += 1;
        }
        assert!(seen.iter().all(|&c| (800..1200).contains(&c)), "{seen:?}");
    }

    #[test]
    fn zipf_is_skewed_by_its_weights() {
        // s = 1 over 4 keys: weights 1, 1/2, 1/3, 1/4 of 25/12, so rank 0 gets 48 %, rank 3 gets 12 %.
        let d = KeyDist::zipf(0, 4, 1.0);
        let mut r = SplitMix64::new(7);
        let mut seen = [0u32; 4];
        for _ in 0..100_000 {
            seen[d.sample(&mut r) as usize] += 1;
        }
        assert!((47_000..49_000).contains(&seen[0]), "{seen:?}");
        assert!((11_400..12_600).contains(&seen[3]), "{seen:?}");
        assert_eq!(KeyDist::zipf(5, 1, 1.2).sample(&mut r), 5);
    }

    #[test]
    fn fast_keys_are_the_same_keys() {
        for d in [
            KeyDist::uniform(7, 1_000_000),
            KeyDist::uniform(u32::MAX - 3, 16),
            KeyDist::uniform(0, 0),
            KeyDist::zipf(3, 100, 1.1),
        ] {
            let f = FastKeys::new(&d);
            let (mut a, mut b) = (SplitMix64::new(11), SplitMix64::new(11));
            for _ in 0..10_000 {
                assert_eq!(f.sample(&mut a), d.sample(&mut b), "{d:?}");
            }
        }
    }
}
