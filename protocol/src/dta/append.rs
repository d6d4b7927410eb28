//! Append sub-header (opcode 0x02): add one entry to list `list_id`.
//!
//! ```text
//! 0: list_id:32 | 4: data: E bytes (configured entry size, default 4)
//! ```
//!
//! E is not on the wire, so [`AppendRepr::parse`] takes the configured E to check the length.

use super::check_exact_len;
use super::format::ReportFormat;
use super::subheader::{self, StateKey, SubHeader};
use crate::error::{check_len, check_room};
use crate::field::{f, FieldSpec};
use crate::field::{get_u32, set_u32, Field, Rest};
use crate::refusal::{ensure, Refusal};
use crate::{Error, Result};

/// Byte offsets of the fields, relative to the start of this header: the one statement of where each
/// lies, which the view reads and the fast paths shift to frame or report offsets.
pub mod field {
    use super::{Field, Rest};
    /// List ID.
    pub const LIST_ID: Field = 0..4;
    /// The entry, the rest of the report.
    pub const DATA: Rest = 4..;
}

pub(crate) const HEADER: &str = "DTA Append";

/// Length of the fixed field (the list ID), before the entry.
pub const HEADER_LEN: usize = field::DATA.start;
/// The fixed fields; the entry that follows is variable and not listed.
pub const LAYOUT: &[FieldSpec] = &[f("list_id", 32)];

/// A read/write view of an Append sub-header; the entry is everything after the list ID.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking its length; accessors may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Self {
        Packet { buffer }
    }

    /// Wraps a buffer that must hold at least the list ID.
    pub fn new_checked(buffer: T) -> Result<Self> {
        check_len(HEADER, buffer.as_ref(), HEADER_LEN)?;
        Ok(Packet { buffer })
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The list the entry goes to.
    pub fn list_id(&self) -> u32 {
        get_u32(&self.buffer.as_ref()[field::LIST_ID])
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Packet<&'a T> {
    /// The entry: every byte after the list ID.
    pub fn data(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::DATA]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the list ID.
    pub fn set_list_id(&mut self, v: u32) {
        set_u32(&mut self.buffer.as_mut()[field::LIST_ID], v);
    }
    /// The entry, for writing in place.
    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::DATA]
    }
}

/// A parsed Append sub-header; `data` borrows the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AppendRepr<'a> {
    /// The list the entry goes to.
    pub list_id: u32,
    /// The entry, as received; the collector stores it verbatim.
    pub data: &'a [u8],
}

impl<'a> AppendRepr<'a> {
    /// Parses a sub-header that must be exactly the list ID and an `entry_len`-byte entry.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(
        packet: &Packet<&'a T>,
        entry_len: usize,
    ) -> Result<Self> {
        check_exact_len(HEADER, packet.buffer.as_ref(), HEADER_LEN + entry_len)?;
        Ok(AppendRepr {
            list_id: packet.list_id(),
            data: packet.data(),
        })
    }

    /// Bytes [`emit`](Self::emit) writes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN + self.data.len()
    }

    /// Writes the sub-header and entry into the first [`buffer_len`](Self::buffer_len) bytes of `buf`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        let len = self.buffer_len();
        check_room(buf, len)?;
        let mut p = Packet::new_unchecked(&mut buf[..len]);
        p.set_list_id(self.list_id);
        p.data_mut().copy_from_slice(self.data);
        Ok(())
    }
}

impl<'a> SubHeader<'a> for AppendRepr<'a> {
    /// The list ID, then exactly the configured entry size E.
    #[inline(always)]
    fn parse_body<M: Refusal>(
        rest: &'a [u8],
        fmt: &ReportFormat,
    ) -> core::result::Result<Self, M::Err> {
        let (h, data) = subheader::split::<M, HEADER_LEN>(rest, HEADER)?;
        let e = fmt.append_entry_len;
        ensure::<M>(data.len() == e, || {
            Error::mismatch(HEADER, HEADER_LEN + e, rest.len())
        })?;
        Ok(AppendRepr {
            list_id: get_u32(&h[field::LIST_ID]),
            data,
        })
    }

    #[inline(always)]
    fn state(sub: &[u8]) -> Option<StateKey> {
        subheader::u32_at(sub, field::LIST_ID).map(StateKey::List)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::layout_check::{case, check};
    use crate::Error;

    // List 7, entry 00 00 01 00.
    const VECTOR: [u8; 8] = [0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x01, 0x00];

    #[test]
    fn layout_matches_accessors() {
        check(
            LAYOUT,
            HEADER_LEN,
            &[case(
                "list_id",
                |b| Packet::new_unchecked(b).set_list_id(u32::MAX),
                |b| Packet::new_unchecked(b).list_id() == u32::MAX,
            )],
        );
    }

    #[test]
    fn parses_and_emits_vector() {
        let r = AppendRepr::parse(&Packet::new_checked(&VECTOR[..]).unwrap(), 4).unwrap();
        assert_eq!(
            r,
            AppendRepr {
                list_id: 7,
                data: &[0, 0, 1, 0]
            }
        );
        let mut out = [0xEEu8; 8];
        r.emit(&mut out).unwrap();
        assert_eq!(out, VECTOR);
        // The entry size is configuration: the first six bytes are a valid report with 2-byte entries.
        let r = AppendRepr::parse(&Packet::new_checked(&VECTOR[..6]).unwrap(), 2).unwrap();
        assert_eq!(
            r,
            AppendRepr {
                list_id: 7,
                data: &[0, 0]
            }
        );
    }

    #[test]
    fn rejects_bad_input() {
        assert_eq!(
            Packet::new_checked(&VECTOR[..3]).unwrap_err(),
            Error::Truncated {
                header: HEADER,
                needed: 4,
                available: 3
            }
        );
        let p = Packet::new_checked(&VECTOR[..]).unwrap();
        assert_eq!(
            AppendRepr::parse(&p, 8),
            Err(Error::LengthMismatch {
                header: HEADER,
                expected: 12,
                actual: 8
            })
        );
        assert_eq!(
            AppendRepr::parse(&p, 2),
            Err(Error::LengthMismatch {
                header: HEADER,
                expected: 6,
                actual: 8
            })
        );
        let r = AppendRepr {
            list_id: 1,
            data: &[1, 2, 3, 4],
        };
        assert_eq!(
            r.emit(&mut [0u8; 7]),
            Err(Error::BufferTooSmall {
                needed: 8,
                available: 7
            })
        );
    }
}
