//! `x % d` for a divisor fixed at start-up, without a division instruction: the fast generator draws
//! several bounded values per frame (a key, then fat-tree pods and switches), and a 64-bit `div` costs
//! more than the rest of drawing one.
//!
//! Powers of two are a mask. Other divisors use Lemire, Kaser and Kurz's direct remainder ("Faster
//! Remainder by Direct Computation", 2019; `fastmod_u64` of their fastmod.h): with
//! `M = ceil(2^128 / d)`, `x % d` is the high 64 bits of `(M * x mod 2^128) * d / 2^64`, exact for every
//! 64-bit `x` and `d`. The tests compare it with `%`.

/// A divisor prepared for [`rem`](Self::rem).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Divisor {
    d: u64,
    /// `ceil(2^128 / d)`, or 0 for a power of two (then `d - 1` is the mask).
    m: u128,
}

impl Divisor {
    /// Prepares `d`; 0 is taken as 1, as [`SplitMix64::below`](crate::rng::SplitMix64::below) takes it.
    pub const fn new(d: u64) -> Self {
        let d = if d == 0 { 1 } else { d };
        let m = if d.is_power_of_two() {
            0
        } else {
            // Not a power of two, so 2^128 / d is not whole and this is its ceiling.
            u128::MAX / d as u128 + 1
        };
        Divisor { d, m }
    }

    /// The divisor.
    pub const fn get(&self) -> u64 {
        self.d
    }

    /// `x % d`.
    #[inline]
    pub const fn rem(&self, x: u64) -> u64 {
        if self.m == 0 {
            return x & (self.d - 1);
        }
        let low = self.m.wrapping_mul(x as u128);
        let d = self.d as u128;
        // (low * d) >> 128 in two 64 x 64 halves; neither sum overflows 128 bits.
        let bottom = ((low as u64 as u128) * d) >> 64;
        let top = (low >> 64) * d;
        ((bottom + top) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    #[test]
    fn equals_the_remainder_operator() {
        let mut r = SplitMix64::new(77);
        let mut divisors: Vec<u64> = vec![
            1,
            2,
            3,
            4,
            5,
            7,
            8,
            10,
            1000,
            1_000_000,
            (1 << 32) - 1,
            1 << 32,
            (1 << 32) + 1,
            u64::MAX,
            u64::MAX - 1,
            u64::MAX / 3,
            (1 << 63) + 1,
        ];
        divisors.extend((0..200).map(|_| r.next_u64() >> (r.next_u64() % 64)));
        for d in divisors {
            let v = Divisor::new(d);
            let d = d.max(1);
            assert_eq!(v.get(), d);
            let mut xs = vec![0, 1, d - 1, d, d.wrapping_add(1), u64::MAX, u64::MAX - 1];
            xs.extend((1..4).map(|k| d.wrapping_mul(k)));
            xs.extend((0..2000).map(|_| r.next_u64()));
            for x in xs {
                assert_eq!(v.rem(x), x % d, "{x} % {d}");
            }
        }
        assert_eq!(Divisor::new(0).rem(12345), 0);
    }
}
