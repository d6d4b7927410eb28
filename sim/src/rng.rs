//! A seeded generator and a key permutation, so every run is reproducible from its seed alone.

/// SplitMix64: tiny, fast, and good enough for Monte Carlo draws (it passes BigCrush).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator whose whole stream is fixed by `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix64(self.0)
    }

    /// Uniform in `0..n` (n > 0). Multiply-shift instead of `%`: no modulo bias worth measuring at n ≪ 2^64.
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// SplitMix64's finaliser: a bijection on u64 that scrambles every input bit into every output bit.
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The `i`-th key of stream `seed`: a bijection of u32 (xor, odd multiply and xorshift are each invertible),
/// so keys `0..2^32` of one stream are distinct without a set to check them, as the analysis needs
/// ("αM *distinct* keys written after the queried one").
pub fn key(seed: u64, i: u32) -> u32 {
    let mut x = i ^ (seed as u32);
    x = x.wrapping_mul(0x9E37_79B1);
    x ^= x >> 16;
    x = x.wrapping_mul(0x85EB_CA6B);
    x ^= x >> 13;
    x = x.wrapping_mul(0xC2B2_AE35);
    x ^ (x >> 16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_distinct_and_draws_are_uniform() {
        let mut seen: Vec<u32> = (0..100_000).map(|i| key(7, i)).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 100_000);
        let mut r = Rng::new(1);
        let n = 100_000;
        let ones = (0..n).filter(|_| r.below(2) == 1).count() as f64;
        // Binomial(n, 1/2): standard error 158; 5 of them.
        assert!((ones - n as f64 / 2.0).abs() < 5.0 * (n as f64 * 0.25).sqrt());
    }
}
