//! Key-Write sub-header (opcode 0x01): store `data` under `key` in `redundancy` slots.
//!
//! ```text
//! 0: redundancy:8 | 1: key:32 | 5: data: D bytes (configured: 4, 12 or 28)
//! ```
//!
//! D is not on the wire, so the view exposes whatever follows the key as data and
//! [`KeyWriteRepr::parse`] takes the configured D to check the length.

use super::format::ReportFormat;
use super::subheader::{self, StateKey, SubHeader};
use super::{check_exact_len, check_redundancy};
use crate::error::{check_len, check_room};
use crate::field::{f, FieldSpec};
use crate::field::{get_u32, set_u32, Field, Rest};
use crate::refusal::{ensure, Refusal};
use crate::{Error, Result};

/// Byte offsets of the fields, relative to the start of this header: the one statement of where each
/// lies, which the view reads and the fast paths shift to frame or report offsets.
pub mod field {
    use super::{Field, Rest};
    /// Redundancy N.
    pub const REDUNDANCY: usize = 0;
    /// Key.
    pub const KEY: Field = 1..5;
    /// The data, the rest of the report.
    pub const DATA: Rest = 5..;
}

pub(crate) const HEADER: &str = "DTA Key-Write";

/// Length of the fixed fields (redundancy and key), before the data.
pub const HEADER_LEN: usize = field::DATA.start;
/// The data sizes a Key-Write may be configured with: entries of 8, 16 or 32 bytes with the 4-byte checksum.
pub const DATA_LENS: [usize; 3] = [4, 12, 28];
/// The fixed fields; the data that follows is variable and not listed.
pub const LAYOUT: &[FieldSpec] = &[f("redundancy", 8), f("key", 32)];

/// A read/write view of a Key-Write sub-header; the data is everything after the key.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking its length; accessors may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Self {
        Packet { buffer }
    }

    /// Wraps a buffer that must hold at least the fixed fields.
    pub fn new_checked(buffer: T) -> Result<Self> {
        check_len(HEADER, buffer.as_ref(), HEADER_LEN)?;
        Ok(Packet { buffer })
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Number of slots to write.
    pub fn redundancy(&self) -> u8 {
        self.buffer.as_ref()[field::REDUNDANCY]
    }
    /// The key.
    pub fn key(&self) -> u32 {
        get_u32(&self.buffer.as_ref()[field::KEY])
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Packet<&'a T> {
    /// The data: every byte after the key.
    pub fn data(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::DATA]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the redundancy.
    pub fn set_redundancy(&mut self, v: u8) {
        self.buffer.as_mut()[field::REDUNDANCY] = v;
    }
    /// Sets the key.
    pub fn set_key(&mut self, v: u32) {
        set_u32(&mut self.buffer.as_mut()[field::KEY], v);
    }
    /// The data, for writing in place.
    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::DATA]
    }
}

/// A parsed Key-Write sub-header; `data` borrows the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyWriteRepr<'a> {
    /// Number of slots to write, `1..=N_MAX`.
    pub redundancy: u8,
    /// The key.
    pub key: u32,
    /// The data, as received; the collector stores it verbatim.
    pub data: &'a [u8],
}

impl<'a> KeyWriteRepr<'a> {
    /// Parses a sub-header that must be exactly the fixed fields and `data_len` bytes of data.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&'a T>, data_len: usize) -> Result<Self> {
        check_exact_len(HEADER, packet.buffer.as_ref(), HEADER_LEN + data_len)?;
        check_redundancy(packet.redundancy())?;
        Ok(KeyWriteRepr {
            redundancy: packet.redundancy(),
            key: packet.key(),
            data: packet.data(),
        })
    }

    /// Bytes [`emit`](Self::emit) writes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN + self.data.len()
    }

    /// Writes the sub-header and data into the first [`buffer_len`](Self::buffer_len) bytes of `buf`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        check_redundancy(self.redundancy)?;
        let len = self.buffer_len();
        check_room(buf, len)?;
        let mut p = Packet::new_unchecked(&mut buf[..len]);
        p.set_redundancy(self.redundancy);
        p.set_key(self.key);
        p.data_mut().copy_from_slice(self.data);
        Ok(())
    }
}

/// The general arm only: a report's parse takes Key-Write reports through its own fixed-size read of
/// base and sub-header together (`parse.rs`), with the same checks and errors as this.
impl<'a> SubHeader<'a> for KeyWriteRepr<'a> {
    /// The fixed fields, exactly the configured data size D, then the redundancy.
    #[inline(always)]
    fn parse_body<M: Refusal>(
        rest: &'a [u8],
        fmt: &ReportFormat,
    ) -> core::result::Result<Self, M::Err> {
        let (h, data) = subheader::split::<M, HEADER_LEN>(rest, HEADER)?;
        let d = fmt.keywrite_data_len;
        ensure::<M>(data.len() == d, || {
            Error::mismatch(HEADER, HEADER_LEN + d, rest.len())
        })?;
        let redundancy = h[field::REDUNDANCY];
        subheader::redundancy::<M>(redundancy)?;
        Ok(KeyWriteRepr {
            redundancy,
            key: get_u32(&h[field::KEY]),
            data,
        })
    }

    #[inline(always)]
    fn state(sub: &[u8]) -> Option<StateKey> {
        subheader::u32_at(sub, field::KEY).map(StateKey::Key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::layout_check::{case, check};
    use crate::Error;

    // Redundancy 4, key 0x01020304, 4 data bytes de ad be ef.
    const VECTOR: [u8; 9] = [0x04, 0x01, 0x02, 0x03, 0x04, 0xde, 0xad, 0xbe, 0xef];

    #[test]
    fn layout_matches_accessors() {
        check(
            LAYOUT,
            HEADER_LEN,
            &[
                case(
                    "redundancy",
                    |b| Packet::new_unchecked(b).set_redundancy(0xFF),
                    |b| Packet::new_unchecked(b).redundancy() == 0xFF,
                ),
                case(
                    "key",
                    |b| Packet::new_unchecked(b).set_key(u32::MAX),
                    |b| Packet::new_unchecked(b).key() == u32::MAX,
                ),
            ],
        );
    }

    #[test]
    fn parses_and_emits_vector() {
        let p = Packet::new_checked(&VECTOR[..]).unwrap();
        let r = KeyWriteRepr::parse(&p, 4).unwrap();
        assert_eq!(
            r,
            KeyWriteRepr {
                redundancy: 4,
                key: 0x0102_0304,
                data: &[0xde, 0xad, 0xbe, 0xef]
            }
        );
        let mut out = [0u8; 9];
        r.emit(&mut out).unwrap();
        assert_eq!(out, VECTOR);
    }

    #[test]
    fn twelve_byte_data() {
        let mut bytes = [0u8; 17];
        bytes[0] = 0x08;
        bytes[4] = 0x7b;
        bytes[5..].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
        let r = KeyWriteRepr::parse(&Packet::new_checked(&bytes[..]).unwrap(), 12).unwrap();
        assert_eq!((r.redundancy, r.key, r.data.len()), (8, 123, 12));
    }

    #[test]
    fn rejects_bad_input() {
        assert_eq!(
            Packet::new_checked(&VECTOR[..4]).unwrap_err(),
            Error::Truncated {
                header: HEADER,
                needed: 5,
                available: 4
            }
        );
        let p = Packet::new_checked(&VECTOR[..8]).unwrap();
        assert_eq!(
            KeyWriteRepr::parse(&p, 4),
            Err(Error::LengthMismatch {
                header: HEADER,
                expected: 9,
                actual: 8
            })
        );
        let p = Packet::new_checked(&VECTOR[..]).unwrap();
        assert_eq!(
            KeyWriteRepr::parse(&p, 12),
            Err(Error::LengthMismatch {
                header: HEADER,
                expected: 17,
                actual: 9
            })
        );
        for bad in [0u8, 9, 0xFF] {
            let mut v = VECTOR;
            v[0] = bad;
            let p = Packet::new_checked(&v[..]).unwrap();
            assert_eq!(
                KeyWriteRepr::parse(&p, 4),
                Err(Error::BadRedundancy { value: bad, max: 8 })
            );
        }
        let r = KeyWriteRepr {
            redundancy: 9,
            key: 0,
            data: &[0; 4],
        };
        assert_eq!(
            r.emit(&mut [0u8; 9]),
            Err(Error::BadRedundancy { value: 9, max: 8 })
        );
        let r = KeyWriteRepr {
            redundancy: 1,
            key: 0,
            data: &[0; 4],
        };
        assert_eq!(
            r.emit(&mut [0u8; 8]),
            Err(Error::BufferTooSmall {
                needed: 9,
                available: 8
            })
        );
    }
}
