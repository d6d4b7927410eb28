//! Field ranges and big-endian accessors shared by every header view.
//!
//! Views check their length once in `new_checked`; these helpers then index fixed ranges inside it.
//!
//! The [`FieldSpec`] tables live here too, beside the ranges they describe, so that a header module imports
//! only from this leaf module; [`crate::contract`] re-exports them and gathers the tables, which keeps the
//! dependency one-way (contract -> headers -> field).

/// A field occupying a byte range of a header.
pub(crate) type Field = core::ops::Range<usize>;
/// The rest of a buffer from an offset on.
pub(crate) type Rest = core::ops::RangeFrom<usize>;

pub(crate) fn get_u16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}

pub(crate) fn get_u24(b: &[u8]) -> u32 {
    u32::from_be_bytes([0, b[0], b[1], b[2]])
}

pub(crate) fn get_u32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

pub(crate) fn get_u64(b: &[u8]) -> u64 {
    u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
}

pub(crate) fn set_u16(b: &mut [u8], v: u16) {
    b[..2].copy_from_slice(&v.to_be_bytes());
}

pub(crate) fn set_u24(b: &mut [u8], v: u32) {
    b[..3].copy_from_slice(&v.to_be_bytes()[1..]);
}

pub(crate) fn set_u32(b: &mut [u8], v: u32) {
    b[..4].copy_from_slice(&v.to_be_bytes());
}

pub(crate) fn set_u64(b: &mut [u8], v: u64) {
    b[..8].copy_from_slice(&v.to_be_bytes());
}

/// One field of a header: its name and its width in bits, in wire order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldSpec {
    /// Field name, as the P4 header declares it too.
    pub name: &'static str,
    /// Width in bits.
    pub bits: u32,
}

/// Shorthand for building `LAYOUT` tables.
pub const fn f(name: &'static str, bits: u32) -> FieldSpec {
    FieldSpec { name, bits }
}

/// Total width of a layout in bytes (layouts are whole bytes).
pub const fn layout_bytes(layout: &[FieldSpec]) -> usize {
    let mut bits = 0;
    let mut i = 0;
    while i < layout.len() {
        bits += layout[i].bits;
        i += 1;
    }
    (bits / 8) as usize
}

#[cfg(test)]
pub(crate) mod layout_check {
    //! Checks a `LAYOUT` table against a header's setters and getters.

    use super::{layout_bytes, FieldSpec};

    /// One field's accessors: `set_max` writes the field's largest value into a zeroed header, `reads_max`
    /// says whether the getter returns that value from a header in which only this field's bits are set.
    pub(crate) struct Case {
        name: &'static str,
        set_max: Setter,
        reads_max: Getter,
    }

    type Setter = Box<dyn Fn(&mut [u8])>;
    type Getter = Box<dyn Fn(&[u8]) -> bool>;

    /// Builds a [`Case`].
    pub(crate) fn case(
        name: &'static str,
        set_max: impl Fn(&mut [u8]) + 'static,
        reads_max: impl Fn(&[u8]) -> bool + 'static,
    ) -> Case {
        Case {
            name,
            set_max: Box::new(set_max),
            reads_max: Box::new(reads_max),
        }
    }

    /// The header bytes with exactly the bits that `layout` gives to `name` set (MSB first, as on the wire).
    fn mask(layout: &[FieldSpec], name: &str) -> Vec<u8> {
        let mut out = vec![0u8; layout_bytes(layout)];
        let mut bit = 0usize;
        for f in layout {
            for b in bit..bit + f.bits as usize {
                if f.name == name {
                    out[b / 8] |= 0x80 >> (b % 8);
                }
            }
            bit += f.bits as usize;
        }
        out
    }

    /// Every field of `layout`, in order, must have a case; each setter must set exactly the field's bits and
    /// each getter must read them back.
    pub(crate) fn check(layout: &[FieldSpec], header_len: usize, cases: &[Case]) {
        let bits: u32 = layout.iter().map(|f| f.bits).sum();
        assert_eq!(bits % 8, 0, "layout is not whole bytes");
        assert_eq!(
            layout_bytes(layout),
            header_len,
            "layout length differs from HEADER_LEN"
        );
        let names: Vec<_> = layout.iter().map(|f| f.name).collect();
        let case_names: Vec<_> = cases.iter().map(|c| c.name).collect();
        assert_eq!(names, case_names, "cases must cover the layout in order");
        for c in cases {
            let want = mask(layout, c.name);
            let mut buf = vec![0u8; header_len];
            (c.set_max)(&mut buf);
            assert_eq!(buf, want, "setter of {} touches other bits", c.name);
            assert!(
                (c.reads_max)(&want),
                "getter of {} does not read its bits",
                c.name
            );
        }
    }
}
