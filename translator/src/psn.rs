//! 24-bit packet sequence numbers, which wrap at 2^24.

use dta_protocol::roce::PSN_MASK;

/// Half the PSN space: PSNs closer than this are ordered, as in IBA 9.7.1.
const HALF: u32 = 1 << 23;

/// `psn + n`, wrapped to 24 bits.
#[inline]
pub const fn add(psn: u32, n: u32) -> u32 {
    psn.wrapping_add(n) & PSN_MASK
}

/// How many PSNs `to` is ahead of `from`, modulo 2^24.
#[inline]
pub const fn distance(from: u32, to: u32) -> u32 {
    to.wrapping_sub(from) & PSN_MASK
}

/// Whether `a` comes strictly before `b` in sequence order.
#[inline]
pub const fn before(a: u32, b: u32) -> bool {
    let d = distance(a, b);
    d != 0 && d < HALF
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_at_2_24() {
        assert_eq!(add(0xFF_FFFF, 1), 0);
        assert_eq!(add(0xFF_FFFE, 3), 1);
        assert_eq!(distance(0xFF_FFFF, 2), 3);
        assert!(before(0xFF_FFFF, 0));
        assert!(!before(0, 0xFF_FFFF));
        assert!(!before(7, 7));
        assert!(before(0, HALF - 1));
        assert!(!before(0, HALF));
    }
}
