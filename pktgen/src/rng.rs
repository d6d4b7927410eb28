//! SplitMix64 (Steele, Lea and Flood, 2014): tiny, fast, statistically fine for traffic generation, and
//! trivially identical in Python (`pktgen/trex/dta_workloads.py`), which is why it is used instead of a
//! crate's generator whose stream is defined only by its own code.

use crate::divisor::Divisor;

/// A SplitMix64 generator.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator seeded with `seed`.
    pub const fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Steps over `n` draws without computing them: the state only ever advances by the constant, so this
    /// leaves the generator exactly where `n` calls of [`next_u64`](Self::next_u64) would.
    pub fn skip(&mut self, n: u64) {
        self.state = self
            .state
            .wrapping_add(0x9e37_79b9_7f4a_7c15u64.wrapping_mul(n));
    }

    /// A value in `0..n` (`n` > 0) by modulo; the bias is below 2^-32 for the ranges used here.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// [`below`](Self::below) with the divisor prepared: the same value from the same draw.
    #[inline]
    pub fn below_by(&mut self, d: &Divisor) -> u64 {
        d.rem(self.next_u64())
    }

    /// A float in `[0, 1)` from the top 53 bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_outputs() {
        // SplitMix64 with seed 0: the first outputs published with the algorithm (and in every port of it).
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        assert_eq!(r.next_u64(), 0x06c4_5d18_8009_454f);
    }

    #[test]
    fn skip_is_that_many_draws() {
        for n in [0u64, 1, 2, 5, 1000] {
            let (mut a, mut b) = (SplitMix64::new(9), SplitMix64::new(9));
            for _ in 0..n {
                a.next_u64();
            }
            b.skip(n);
            assert_eq!(a.next_u64(), b.next_u64(), "n = {n}");
        }
    }
}
