//! Key-Increment sub-header (opcode 0x03): add `counter` to the counters of `key` in `redundancy` slots.
//!
//! ```text
//! 0: redundancy:8 | 1: key:32 | 5: counter:64
//! ```

use super::format::ReportFormat;
use super::subheader::{self, StateKey, SubHeader};
use super::{check_exact_len, check_redundancy};
use crate::error::{check_len, check_room};
use crate::field::{f, FieldSpec};
use crate::field::{get_u32, get_u64, set_u32, set_u64, Field};
use crate::refusal::Refusal;
use crate::Result;

/// Byte offsets of the fields, relative to the start of this header: the one statement of where each
/// lies, which the view reads and the fast paths shift to frame or report offsets.
pub mod field {
    use super::Field;
    /// Redundancy N.
    pub const REDUNDANCY: usize = 0;
    /// Key.
    pub const KEY: Field = 1..5;
    /// The value to add.
    pub const COUNTER: Field = 5..13;
}

pub(crate) const HEADER: &str = "DTA Key-Increment";

/// Length of the sub-header.
pub const HEADER_LEN: usize = field::COUNTER.end;
/// The sub-header's fields.
pub const LAYOUT: &[FieldSpec] = &[f("redundancy", 8), f("key", 32), f("counter", 64)];

/// A read/write view of a Key-Increment sub-header.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking its length; accessors may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Self {
        Packet { buffer }
    }

    /// Wraps a buffer that must hold at least the whole sub-header.
    pub fn new_checked(buffer: T) -> Result<Self> {
        check_len(HEADER, buffer.as_ref(), HEADER_LEN)?;
        Ok(Packet { buffer })
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Number of counters to increment.
    pub fn redundancy(&self) -> u8 {
        self.buffer.as_ref()[field::REDUNDANCY]
    }
    /// The key.
    pub fn key(&self) -> u32 {
        get_u32(&self.buffer.as_ref()[field::KEY])
    }
    /// The amount to add.
    pub fn counter(&self) -> u64 {
        get_u64(&self.buffer.as_ref()[field::COUNTER])
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
    /// Sets the amount to add.
    pub fn set_counter(&mut self, v: u64) {
        set_u64(&mut self.buffer.as_mut()[field::COUNTER], v);
    }
}

/// A parsed Key-Increment sub-header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyIncrementRepr {
    /// Number of counters to increment, `1..=N_MAX`.
    pub redundancy: u8,
    /// The key.
    pub key: u32,
    /// The amount to add (RDMA FETCH_ADD operand).
    pub counter: u64,
}

impl KeyIncrementRepr {
    /// Parses a sub-header that must be exactly [`HEADER_LEN`] bytes.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Self> {
        check_exact_len(HEADER, packet.buffer.as_ref(), HEADER_LEN)?;
        check_redundancy(packet.redundancy())?;
        Ok(KeyIncrementRepr {
            redundancy: packet.redundancy(),
            key: packet.key(),
            counter: packet.counter(),
        })
    }

    /// Bytes [`emit`](Self::emit) writes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the sub-header into the first [`HEADER_LEN`] bytes of `buf`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        check_redundancy(self.redundancy)?;
        check_room(buf, HEADER_LEN)?;
        let mut p = Packet::new_unchecked(&mut buf[..HEADER_LEN]);
        p.set_redundancy(self.redundancy);
        p.set_key(self.key);
        p.set_counter(self.counter);
        Ok(())
    }
}

impl<'a> SubHeader<'a> for KeyIncrementRepr {
    /// Exactly [`HEADER_LEN`] bytes, then the redundancy.
    #[inline(always)]
    fn parse_body<M: Refusal>(
        rest: &'a [u8],
        _: &ReportFormat,
    ) -> core::result::Result<Self, M::Err> {
        let b = subheader::exact::<M, HEADER_LEN>(rest, HEADER)?;
        let redundancy = b[field::REDUNDANCY];
        subheader::redundancy::<M>(redundancy)?;
        Ok(KeyIncrementRepr {
            redundancy,
            key: get_u32(&b[field::KEY]),
            counter: get_u64(&b[field::COUNTER]),
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

    // Redundancy 2, key 0x0000007b (123), counter 0x0000000100000005.
    const VECTOR: [u8; 13] = [
        0x02, 0x00, 0x00, 0x00, 0x7b, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x05,
    ];

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
                case(
                    "counter",
                    |b| Packet::new_unchecked(b).set_counter(u64::MAX),
                    |b| Packet::new_unchecked(b).counter() == u64::MAX,
                ),
            ],
        );
    }

    #[test]
    fn parses_and_emits_vector() {
        let r = KeyIncrementRepr::parse(&Packet::new_checked(&VECTOR[..]).unwrap()).unwrap();
        assert_eq!(
            r,
            KeyIncrementRepr {
                redundancy: 2,
                key: 123,
                counter: 0x1_0000_0005
            }
        );
        let mut out = [0xEEu8; 13];
        r.emit(&mut out).unwrap();
        assert_eq!(out, VECTOR);
    }

    #[test]
    fn rejects_bad_input() {
        assert_eq!(
            Packet::new_checked(&VECTOR[..12]).unwrap_err(),
            Error::Truncated {
                header: HEADER,
                needed: 13,
                available: 12
            }
        );
        let mut long = [0u8; 14];
        long[..13].copy_from_slice(&VECTOR);
        assert_eq!(
            KeyIncrementRepr::parse(&Packet::new_checked(&long[..]).unwrap()),
            Err(Error::LengthMismatch {
                header: HEADER,
                expected: 13,
                actual: 14
            })
        );
        let mut v = VECTOR;
        v[0] = 0;
        assert_eq!(
            KeyIncrementRepr::parse(&Packet::new_checked(&v[..]).unwrap()),
            Err(Error::BadRedundancy { value: 0, max: 8 })
        );
        let r = KeyIncrementRepr {
            redundancy: 0,
            key: 1,
            counter: 1,
        };
        assert_eq!(
            r.emit(&mut [0u8; 13]),
            Err(Error::BadRedundancy { value: 0, max: 8 })
        );
        let r = KeyIncrementRepr {
            redundancy: 1,
            key: 1,
            counter: 1,
        };
        assert_eq!(
            r.emit(&mut [0u8; 12]),
            Err(Error::BufferTooSmall {
                needed: 13,
                available: 12
            })
        );
    }
}
