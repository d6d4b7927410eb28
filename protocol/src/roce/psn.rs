//! Packet sequence numbers (IBA 9.7.1): 24 bits that wrap, compared on the circle.
//!
//! A PSN has no total order: after 2^24 packets it comes round again. IBA orders two PSNs only when they
//! are closer than half the space (2^23): the one that a short step forward reaches from the other is the
//! later one. Every requester, responder and test model needs the same few operations on that circle, and
//! getting the wrap or the half-window boundary wrong in one copy makes two sides disagree about which
//! packet is a duplicate, so they live here once, in [`Psn`].
//!
//! `Psn` deliberately implements neither `PartialOrd` nor `Ord`: `<` on the raw values is wrong across the
//! wrap, so ordering is only offered through [`Psn::before`] and [`Psn::offset_from`].

use crate::roce::PSN_MASK;
use crate::{Error, Result};

/// Half the PSN space: PSNs closer than this are ordered.
pub const HALF_WINDOW: u32 = 1 << 23;

/// A 24-bit packet sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Psn(u32);

impl Psn {
    /// The PSN of the low 24 bits of `v` (what the BTH field holds; higher bits are dropped, as the wire
    /// drops them).
    #[inline]
    pub const fn new(v: u32) -> Self {
        Psn(v & PSN_MASK)
    }

    /// The PSN `v`, which must fit in 24 bits: for values from configuration or a peer, where a wider
    /// value is a mistake to report rather than to wrap silently.
    pub const fn try_new(v: u32) -> Result<Self> {
        if v & !PSN_MASK != 0 {
            return Err(Error::InvalidField {
                header: "BTH",
                field: "psn",
                value: v as u64,
            });
        }
        Ok(Psn(v))
    }

    /// The 24-bit value.
    #[inline]
    pub const fn value(self) -> u32 {
        self.0
    }

    /// `self + n`, wrapped to 24 bits.
    #[inline]
    pub const fn add(self, n: u32) -> Self {
        Psn::new(self.0.wrapping_add(n))
    }

    /// `self - n`, wrapped to 24 bits.
    #[inline]
    pub const fn sub(self, n: u32) -> Self {
        Psn::new(self.0.wrapping_sub(n))
    }

    /// The PSN after this one.
    #[inline]
    pub const fn next(self) -> Self {
        self.add(1)
    }

    /// The PSN before this one.
    #[inline]
    pub const fn prev(self) -> Self {
        self.sub(1)
    }

    /// How many steps forward `to` is from `self`, modulo 2^24 (`0..2^24`).
    #[inline]
    pub const fn distance_to(self, to: Psn) -> u32 {
        to.0.wrapping_sub(self.0) & PSN_MASK
    }

    /// Whether `self` comes strictly before `other`: `other` is 1 to 2^23 - 1 steps ahead.
    #[inline]
    pub const fn before(self, other: Psn) -> bool {
        let d = self.distance_to(other);
        d != 0 && d < HALF_WINDOW
    }

    /// The signed step from `base` to `self`, in `-2^23..2^23`: positive when `self` is ahead of `base`.
    ///
    /// The PSN exactly half the space away has no order in IBA; it is read as behind (`-2^23`), which is
    /// how rxe's responder treats it (a duplicate, not a sequence error), so a responder and its test
    /// model built on this agree with rxe there too.
    #[inline]
    pub const fn offset_from(self, base: Psn) -> i32 {
        // The 24-bit difference in the top of an i32: its sign bit is the difference's bit 23.
        ((self.0.wrapping_sub(base.0) << 8) as i32) >> 8
    }
}

impl From<Psn> for u32 {
    fn from(p: Psn) -> u32 {
        p.0
    }
}

/// `psn + n`, wrapped to 24 bits, on raw values (for code that keeps PSNs as `u32`).
#[inline]
pub const fn add(psn: u32, n: u32) -> u32 {
    Psn::new(psn).add(n).value()
}

/// How many PSNs `to` is ahead of `from`, modulo 2^24, on raw values.
#[inline]
pub const fn distance(from: u32, to: u32) -> u32 {
    Psn::new(from).distance_to(Psn::new(to))
}

/// Whether `a` comes strictly before `b` in sequence order, on raw values.
#[inline]
pub const fn before(a: u32, b: u32) -> bool {
    Psn::new(a).before(Psn::new(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_at_2_24() {
        let max = Psn::new(0xFF_FFFF);
        assert_eq!(max.next(), Psn::new(0));
        assert_eq!(Psn::new(0).prev(), max);
        assert_eq!(Psn::new(0xFF_FFFE).add(3).value(), 1);
        assert_eq!(max.distance_to(Psn::new(2)), 3);
        assert!(max.before(Psn::new(0)));
        assert!(!Psn::new(0).before(max));
        assert!(!Psn::new(7).before(Psn::new(7)));
        assert!(Psn::new(0).before(Psn::new(HALF_WINDOW - 1)));
        assert!(!Psn::new(0).before(Psn::new(HALF_WINDOW)));
        assert_eq!(Psn::new(1 << 24 | 5), Psn::new(5));
    }

    #[test]
    fn offsets_are_signed_and_the_half_point_is_behind() {
        let z = Psn::new(0);
        assert_eq!(Psn::new(5).offset_from(Psn::new(5)), 0);
        assert_eq!(Psn::new(6).offset_from(Psn::new(5)), 1);
        assert_eq!(Psn::new(4).offset_from(Psn::new(5)), -1);
        assert_eq!(z.offset_from(Psn::new(0xFF_FFFF)), 1);
        assert_eq!(Psn::new(0xFF_FFFF).offset_from(z), -1);
        assert_eq!(Psn::new(0x7F_FFFF).offset_from(z), 0x7F_FFFF);
        assert_eq!(Psn::new(0x80_0000).offset_from(z), -0x80_0000);
    }

    #[test]
    fn try_new_checks_24_bits() {
        assert_eq!(Psn::try_new(0xFF_FFFF), Ok(Psn::new(0xFF_FFFF)));
        assert!(matches!(
            Psn::try_new(1 << 24),
            Err(Error::InvalidField { field: "psn", .. })
        ));
    }

    #[test]
    fn raw_helpers_agree() {
        assert_eq!(add(0xFF_FFFF, 1), 0);
        assert_eq!(distance(0xFF_FFFF, 2), 3);
        assert!(before(0xFF_FFFF, 0));
        assert!(!before(0, HALF_WINDOW));
    }
}
