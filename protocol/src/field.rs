//! Field ranges and big-endian accessors shared by every header view.
//!
//! Views check their length once in `new_checked`; these helpers then index fixed ranges inside it.

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
