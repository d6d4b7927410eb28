//! Postcarding sub-headers: one hop's value on a flow's path.
//!
//! ```text
//! opcode 0x04: 0: key:32 | 4: hop:8 |                5: data:32     (9 bytes; path length = configured B)
//! opcode 0x06: 0: key:32 | 4: hop:8 | 5: path_len:8 | 6: data:32     (10 bytes)
//! ```
//!
//! Hops are 1-based and a path has at most [`MAX_HOPS`] hops, because a postcard chunk holds eight 4-byte cells
//! (DESIGN.md section 3). The parser cannot know the configured B, so for opcode 0x04 it only enforces
//! `1..=MAX_HOPS`; a hop beyond B is the translator's to reject.

use super::{check_exact_len, Opcode};

mod subheader;
use crate::error::{check_len, check_room};
use crate::field::{f, FieldSpec};
use crate::field::{get_u32, set_u32, Field};
use crate::{Error, Result};

/// Byte offsets of the fields, relative to the start of this header: the one statement of where each
/// lies, which the view reads and the fast paths shift to report offsets.
pub mod field {
    use super::Field;
    /// Flow key.
    pub const KEY: Field = 0..4;
    /// Hop, 1-based.
    pub const HOP: usize = 4;
    /// Path length: opcode 0x06 only.
    pub const PATH_LEN: usize = 5;
    /// The data follows the hop in 0x04 and the path length in 0x06.
    pub const DATA: Field = 5..9;
    /// The data of opcode 0x06.
    pub const DATA_WITH_PATH_LEN: Field = 6..10;
}

const HEADER: &str = "DTA Postcard";
const HEADER_PATH_LEN: &str = "DTA Postcard with path length";

/// Length of the opcode 0x04 sub-header.
pub const HEADER_LEN: usize = field::DATA.end;
/// Length of the opcode 0x06 sub-header.
pub const HEADER_LEN_PATH_LEN: usize = field::DATA_WITH_PATH_LEN.end;
/// Longest path: a chunk has eight cells.
pub const MAX_HOPS: u8 = 8;

/// Fields of the opcode 0x04 sub-header.
pub const LAYOUT: &[FieldSpec] = &[f("key", 32), f("hop", 8), f("data", 32)];
/// Fields of the opcode 0x06 sub-header.
pub const LAYOUT_PATH_LEN: &[FieldSpec] =
    &[f("key", 32), f("hop", 8), f("path_len", 8), f("data", 32)];

/// Which of the two postcard sub-headers a view reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Variant {
    /// Opcode 0x04: no path length on the wire.
    Postcard,
    /// Opcode 0x06: the path length is carried.
    PathLen,
}

impl Variant {
    /// The opcode that carries this sub-header.
    pub const fn opcode(self) -> Opcode {
        match self {
            Variant::Postcard => Opcode::Postcard,
            Variant::PathLen => Opcode::PostcardPathLen,
        }
    }

    /// Length of the sub-header.
    pub const fn header_len(self) -> usize {
        match self {
            Variant::Postcard => HEADER_LEN,
            Variant::PathLen => HEADER_LEN_PATH_LEN,
        }
    }

    /// The variant's `LAYOUT` table.
    pub const fn layout(self) -> &'static [FieldSpec] {
        match self {
            Variant::Postcard => LAYOUT,
            Variant::PathLen => LAYOUT_PATH_LEN,
        }
    }

    /// The sub-header's name in errors.
    pub(crate) const fn name(self) -> &'static str {
        match self {
            Variant::Postcard => HEADER,
            Variant::PathLen => HEADER_PATH_LEN,
        }
    }

    const fn data_field(self) -> Field {
        match self {
            Variant::Postcard => field::DATA,
            Variant::PathLen => field::DATA_WITH_PATH_LEN,
        }
    }
}

/// A read/write view of a postcard sub-header of a given variant.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
    variant: Variant,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking its length; accessors may panic on a short buffer.
    pub const fn new_unchecked(buffer: T, variant: Variant) -> Self {
        Packet { buffer, variant }
    }

    /// Wraps a buffer that must hold at least the whole sub-header of `variant`.
    pub fn new_checked(buffer: T, variant: Variant) -> Result<Self> {
        check_len(variant.name(), buffer.as_ref(), variant.header_len())?;
        Ok(Packet { buffer, variant })
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The variant this view reads.
    pub fn variant(&self) -> Variant {
        self.variant
    }

    /// The flow key.
    pub fn key(&self) -> u32 {
        get_u32(&self.buffer.as_ref()[field::KEY])
    }
    /// The hop number, 1-based.
    pub fn hop(&self) -> u8 {
        self.buffer.as_ref()[field::HOP]
    }
    /// The path length; `None` for opcode 0x04, which does not carry it.
    pub fn path_len(&self) -> Option<u8> {
        match self.variant {
            Variant::Postcard => None,
            Variant::PathLen => Some(self.buffer.as_ref()[field::PATH_LEN]),
        }
    }
    /// The hop's value.
    pub fn data(&self) -> u32 {
        get_u32(&self.buffer.as_ref()[self.variant.data_field()])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the flow key.
    pub fn set_key(&mut self, v: u32) {
        set_u32(&mut self.buffer.as_mut()[field::KEY], v);
    }
    /// Sets the hop number.
    pub fn set_hop(&mut self, v: u8) {
        self.buffer.as_mut()[field::HOP] = v;
    }
    /// Sets the path length. Opcode 0x04 has no such field, so there this writes nothing.
    pub fn set_path_len(&mut self, v: u8) {
        if self.variant == Variant::PathLen {
            self.buffer.as_mut()[field::PATH_LEN] = v;
        }
    }
    /// Sets the hop's value.
    pub fn set_data(&mut self, v: u32) {
        let r = self.variant.data_field();
        set_u32(&mut self.buffer.as_mut()[r], v);
    }
}

/// A field the variant does not allow (the parse's error, shared with the report's one parse).
pub(crate) fn invalid(variant: Variant, field: &'static str, value: u8) -> Error {
    Error::InvalidField {
        header: variant.name(),
        field,
        value: value.into(),
    }
}

/// Hop in `1..=path_len`, path length in `1..=MAX_HOPS`.
fn check_hop(variant: Variant, hop: u8, path_len: u8) -> Result<()> {
    if path_len == 0 || path_len > MAX_HOPS {
        return Err(invalid(variant, "path_len", path_len));
    }
    if hop == 0 || hop > path_len {
        return Err(invalid(variant, "hop", hop));
    }
    Ok(())
}

/// A parsed opcode 0x04 sub-header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PostcardRepr {
    /// The flow key.
    pub key: u32,
    /// The hop number, `1..=MAX_HOPS`.
    pub hop: u8,
    /// The hop's value.
    pub data: u32,
}

impl PostcardRepr {
    /// Parses a sub-header that must be exactly [`HEADER_LEN`] bytes with a hop in `1..=MAX_HOPS`.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Self> {
        let v = Variant::Postcard;
        check_exact_len(v.name(), packet.buffer.as_ref(), v.header_len())?;
        // Read through a view of this variant whatever variant the caller's view was built for.
        let p = Packet::new_unchecked(packet.buffer.as_ref(), v);
        check_hop(v, p.hop(), MAX_HOPS)?;
        Ok(PostcardRepr {
            key: p.key(),
            hop: p.hop(),
            data: p.data(),
        })
    }

    /// Bytes [`emit`](Self::emit) writes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the sub-header into the first [`HEADER_LEN`] bytes of `buf`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        let v = Variant::Postcard;
        check_hop(v, self.hop, MAX_HOPS)?;
        check_room(buf, HEADER_LEN)?;
        let mut p = Packet::new_unchecked(&mut buf[..HEADER_LEN], v);
        p.set_key(self.key);
        p.set_hop(self.hop);
        p.set_data(self.data);
        Ok(())
    }
}

/// A parsed opcode 0x06 sub-header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PostcardPathLenRepr {
    /// The flow key.
    pub key: u32,
    /// The hop number, `1..=path_len`.
    pub hop: u8,
    /// The flow's path length, `1..=MAX_HOPS`.
    pub path_len: u8,
    /// The hop's value.
    pub data: u32,
}

impl PostcardPathLenRepr {
    /// Parses a sub-header that must be exactly [`HEADER_LEN_PATH_LEN`] bytes, with a path length in
    /// `1..=MAX_HOPS` and a hop in `1..=path_len`.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Self> {
        let v = Variant::PathLen;
        check_exact_len(v.name(), packet.buffer.as_ref(), v.header_len())?;
        // Read through a view of this variant whatever variant the caller's view was built for.
        let p = Packet::new_unchecked(packet.buffer.as_ref(), v);
        let path_len = p.buffer[field::PATH_LEN];
        check_hop(v, p.hop(), path_len)?;
        Ok(PostcardPathLenRepr {
            key: p.key(),
            hop: p.hop(),
            path_len,
            data: p.data(),
        })
    }

    /// Bytes [`emit`](Self::emit) writes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN_PATH_LEN
    }

    /// Writes the sub-header into the first [`HEADER_LEN_PATH_LEN`] bytes of `buf`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        let v = Variant::PathLen;
        check_hop(v, self.hop, self.path_len)?;
        check_room(buf, HEADER_LEN_PATH_LEN)?;
        let mut p = Packet::new_unchecked(&mut buf[..HEADER_LEN_PATH_LEN], v);
        p.set_key(self.key);
        p.set_hop(self.hop);
        p.set_path_len(self.path_len);
        p.set_data(self.data);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::layout_check::{case, check, Case};

    // Key 0xc0a80001, hop 3, data 0x0000002a.
    const VECTOR: [u8; 9] = [0xc0, 0xa8, 0x00, 0x01, 0x03, 0x00, 0x00, 0x00, 0x2a];
    // Key 0xc0a80001, hop 3, path length 4, data 0x0000002a.
    const VECTOR_PATH_LEN: [u8; 10] = [0xc0, 0xa8, 0x00, 0x01, 0x03, 0x04, 0x00, 0x00, 0x00, 0x2a];

    fn cases(v: Variant) -> Vec<Case> {
        let mut out = vec![
            case(
                "key",
                move |b| Packet::new_unchecked(b, v).set_key(u32::MAX),
                move |b| Packet::new_unchecked(b, v).key() == u32::MAX,
            ),
            case(
                "hop",
                move |b| Packet::new_unchecked(b, v).set_hop(0xFF),
                move |b| Packet::new_unchecked(b, v).hop() == 0xFF,
            ),
        ];
        if v == Variant::PathLen {
            out.push(case(
                "path_len",
                move |b| Packet::new_unchecked(b, v).set_path_len(0xFF),
                move |b| Packet::new_unchecked(b, v).path_len() == Some(0xFF),
            ));
        }
        out.push(case(
            "data",
            move |b| Packet::new_unchecked(b, v).set_data(u32::MAX),
            move |b| Packet::new_unchecked(b, v).data() == u32::MAX,
        ));
        out
    }

    #[test]
    fn layouts_match_accessors() {
        check(LAYOUT, HEADER_LEN, &cases(Variant::Postcard));
        check(
            LAYOUT_PATH_LEN,
            HEADER_LEN_PATH_LEN,
            &cases(Variant::PathLen),
        );
        assert_eq!(Variant::PathLen.layout(), LAYOUT_PATH_LEN);
    }

    #[test]
    fn parses_and_emits_vectors() {
        let p = Packet::new_checked(&VECTOR[..], Variant::Postcard).unwrap();
        let r = PostcardRepr::parse(&p).unwrap();
        assert_eq!(
            r,
            PostcardRepr {
                key: 0xc0a8_0001,
                hop: 3,
                data: 42
            }
        );
        let mut out = [0xEEu8; 9];
        r.emit(&mut out).unwrap();
        assert_eq!(out, VECTOR);

        let p = Packet::new_checked(&VECTOR_PATH_LEN[..], Variant::PathLen).unwrap();
        let r = PostcardPathLenRepr::parse(&p).unwrap();
        assert_eq!(
            r,
            PostcardPathLenRepr {
                key: 0xc0a8_0001,
                hop: 3,
                path_len: 4,
                data: 42
            }
        );
        let mut out = [0xEEu8; 10];
        r.emit(&mut out).unwrap();
        assert_eq!(out, VECTOR_PATH_LEN);
    }

    #[test]
    fn rejects_bad_hops() {
        for hop in [0u8, 9, 0xFF] {
            let mut v = VECTOR;
            v[4] = hop;
            let p = Packet::new_checked(&v[..], Variant::Postcard).unwrap();
            assert_eq!(
                PostcardRepr::parse(&p),
                Err(Error::InvalidField {
                    header: HEADER,
                    field: "hop",
                    value: hop.into()
                })
            );
        }
        let mut v = VECTOR;
        v[4] = 8;
        assert!(
            PostcardRepr::parse(&Packet::new_checked(&v[..], Variant::Postcard).unwrap()).is_ok()
        );

        // (hop, path_len, offending field)
        for (hop, len, field) in [
            (0u8, 4u8, "hop"),
            (5, 4, "hop"),
            (1, 0, "path_len"),
            (1, 9, "path_len"),
        ] {
            let mut v = VECTOR_PATH_LEN;
            v[4] = hop;
            v[5] = len;
            let value = if field == "hop" { hop } else { len };
            let p = Packet::new_checked(&v[..], Variant::PathLen).unwrap();
            assert_eq!(
                PostcardPathLenRepr::parse(&p),
                Err(Error::InvalidField {
                    header: HEADER_PATH_LEN,
                    field,
                    value: value.into()
                })
            );
        }
        let r = PostcardRepr {
            key: 1,
            hop: 0,
            data: 0,
        };
        assert!(matches!(
            r.emit(&mut [0u8; 9]),
            Err(Error::InvalidField { field: "hop", .. })
        ));
        let r = PostcardPathLenRepr {
            key: 1,
            hop: 3,
            path_len: 2,
            data: 0,
        };
        assert!(matches!(
            r.emit(&mut [0u8; 10]),
            Err(Error::InvalidField { field: "hop", .. })
        ));
    }

    #[test]
    fn rejects_bad_lengths() {
        assert_eq!(
            Packet::new_checked(&VECTOR[..8], Variant::Postcard).unwrap_err(),
            Error::Truncated {
                header: HEADER,
                needed: 9,
                available: 8
            }
        );
        assert_eq!(
            Packet::new_checked(&VECTOR[..], Variant::PathLen).unwrap_err(),
            Error::Truncated {
                header: HEADER_PATH_LEN,
                needed: 10,
                available: 9
            }
        );
        let p = Packet::new_checked(&VECTOR_PATH_LEN[..], Variant::PathLen).unwrap();
        assert_eq!(
            PostcardRepr::parse(&p),
            Err(Error::LengthMismatch {
                header: HEADER,
                expected: 9,
                actual: 10
            })
        );
        let r = PostcardRepr {
            key: 1,
            hop: 1,
            data: 0,
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
