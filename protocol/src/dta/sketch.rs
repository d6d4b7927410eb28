//! Sketch-Merge sub-header (opcode 0x05): one column of one reporter's sketch.
//!
//! ```text
//! 0: sketch_id:8 | 1: op:8 | 2: reporter_id:16 | 4: column:16 | 6: rows:8 | 7: reserved:8
//! 8: rows × counter:32
//! ```
//!
//! The counters stay raw big-endian bytes in [`SketchRepr`] so that parsing borrows instead of copying;
//! [`SketchRepr::counter`] and [`SketchRepr::iter_counters`] decode them.

use super::check_exact_len;
use super::format::ReportFormat;
use super::subheader::{self, StateKey, SubHeader};
use crate::error::{check_len, check_room};
use crate::field::{f, FieldSpec};
use crate::field::{get_u16, get_u32, set_u16, Field, Rest};
use crate::refusal::{ensure, Refusal};
use crate::{Error, Result};

/// Byte offsets of the fields, relative to the start of this header: the one statement of where each
/// lies, which the view reads and the fast paths shift to report offsets.
pub mod field {
    use super::{Field, Rest};
    /// Sketch ID.
    pub const SKETCH_ID: usize = 0;
    /// Merge operation (0 sum, 1 max).
    pub const OP: usize = 1;
    /// Reporter ID.
    pub const REPORTER_ID: Field = 2..4;
    /// Column.
    pub const COLUMN: Field = 4..6;
    /// Number of rows (counters).
    pub const ROWS: usize = 6;
    /// Reserved, zero.
    pub const RESERVED: usize = 7;
    /// The counters, the rest of the report.
    pub const COUNTERS: Rest = 8..;
}

pub(crate) const HEADER: &str = "DTA Sketch-Merge";

/// Length of the fixed fields, before the counters.
pub const HEADER_LEN: usize = field::COUNTERS.start;
/// Bytes per counter.
pub const COUNTER_LEN: usize = 4;
/// The fixed fields; the counters that follow are variable and not listed.
pub const LAYOUT: &[FieldSpec] = &[
    f("sketch_id", 8),
    f("op", 8),
    f("reporter_id", 16),
    f("column", 16),
    f("rows", 8),
    f("reserved", 8),
];

/// How the translator merges a column across reporters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SketchOp {
    /// Add the counters (count-min and other linear sketches).
    Sum,
    /// Keep the largest counter (HyperLogLog registers).
    Max,
}

impl SketchOp {
    /// The op's wire value.
    pub const fn code(self) -> u8 {
        match self {
            SketchOp::Sum => 0,
            SketchOp::Max => 1,
        }
    }

    /// The op for a wire value.
    pub const fn from_code(code: u8) -> Result<Self> {
        match code {
            0 => Ok(SketchOp::Sum),
            1 => Ok(SketchOp::Max),
            other => Err(Error::InvalidField {
                header: HEADER,
                field: "op",
                value: other as u64,
            }),
        }
    }
}

/// A read/write view of a Sketch-Merge sub-header; the counters are everything after the fixed fields.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking its length; accessors may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Self {
        Packet { buffer }
    }

    /// Wraps a buffer that must hold at least the fixed fields. The counters are not checked against
    /// `rows` here: [`SketchRepr::parse`] does that.
    pub fn new_checked(buffer: T) -> Result<Self> {
        check_len(HEADER, buffer.as_ref(), HEADER_LEN)?;
        Ok(Packet { buffer })
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Which sketch the column belongs to.
    pub fn sketch_id(&self) -> u8 {
        self.buffer.as_ref()[field::SKETCH_ID]
    }
    /// The raw merge op.
    pub fn op(&self) -> u8 {
        self.buffer.as_ref()[field::OP]
    }
    /// The reporter whose sketch this is.
    pub fn reporter_id(&self) -> u16 {
        get_u16(&self.buffer.as_ref()[field::REPORTER_ID])
    }
    /// The column index.
    pub fn column(&self) -> u16 {
        get_u16(&self.buffer.as_ref()[field::COLUMN])
    }
    /// Number of counters in the column.
    pub fn rows(&self) -> u8 {
        self.buffer.as_ref()[field::ROWS]
    }
    /// The reserved byte.
    pub fn reserved(&self) -> u8 {
        self.buffer.as_ref()[field::RESERVED]
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Packet<&'a T> {
    /// The counters: every byte after the fixed fields, big-endian u32s.
    pub fn counters(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::COUNTERS]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the sketch ID.
    pub fn set_sketch_id(&mut self, v: u8) {
        self.buffer.as_mut()[field::SKETCH_ID] = v;
    }
    /// Sets the raw merge op.
    pub fn set_op(&mut self, v: u8) {
        self.buffer.as_mut()[field::OP] = v;
    }
    /// Sets the reporter ID.
    pub fn set_reporter_id(&mut self, v: u16) {
        set_u16(&mut self.buffer.as_mut()[field::REPORTER_ID], v);
    }
    /// Sets the column index.
    pub fn set_column(&mut self, v: u16) {
        set_u16(&mut self.buffer.as_mut()[field::COLUMN], v);
    }
    /// Sets the number of rows.
    pub fn set_rows(&mut self, v: u8) {
        self.buffer.as_mut()[field::ROWS] = v;
    }
    /// Sets the reserved byte.
    pub fn set_reserved(&mut self, v: u8) {
        self.buffer.as_mut()[field::RESERVED] = v;
    }
    /// The counters, for writing in place.
    pub fn counters_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::COUNTERS]
    }
}

/// A parsed Sketch-Merge sub-header; `counters` borrows the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SketchRepr<'a> {
    /// Which sketch the column belongs to.
    pub sketch_id: u8,
    /// How to merge the column across reporters.
    pub op: SketchOp,
    /// The reporter whose sketch this is.
    pub reporter_id: u16,
    /// The column index.
    pub column: u16,
    /// The column's counters as big-endian u32s: `4 · rows` bytes, rows in `1..=255`.
    pub counters: &'a [u8],
}

impl<'a> SketchRepr<'a> {
    /// Number of counters (`counters.len() / 4`).
    pub const fn rows(&self) -> usize {
        self.counters.len() / COUNTER_LEN
    }

    /// Counter `i`, if the column has that many rows.
    pub fn counter(&self, i: usize) -> Option<u32> {
        let start = i.checked_mul(COUNTER_LEN)?;
        self.counters
            .get(start..start.checked_add(COUNTER_LEN)?)
            .map(get_u32)
    }

    /// The counters in row order.
    pub fn iter_counters(&self) -> impl ExactSizeIterator<Item = u32> + 'a {
        self.counters.chunks_exact(COUNTER_LEN).map(get_u32)
    }

    /// Parses a sub-header that must be exactly the fixed fields and `rows` counters, with rows at least 1, a
    /// known op and a zero reserved byte.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&'a T>) -> Result<Self> {
        let rows = packet.rows();
        if rows == 0 {
            return Err(Error::InvalidField {
                header: HEADER,
                field: "rows",
                value: 0,
            });
        }
        check_exact_len(
            HEADER,
            packet.buffer.as_ref(),
            HEADER_LEN + COUNTER_LEN * usize::from(rows),
        )?;
        let op = SketchOp::from_code(packet.op())?;
        if packet.reserved() != 0 {
            return Err(Error::InvalidField {
                header: HEADER,
                field: "reserved",
                value: packet.reserved().into(),
            });
        }
        Ok(SketchRepr {
            sketch_id: packet.sketch_id(),
            op,
            reporter_id: packet.reporter_id(),
            column: packet.column(),
            counters: packet.counters(),
        })
    }

    /// Bytes [`emit`](Self::emit) writes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN + self.counters.len()
    }

    /// Writes the sub-header and counters into the first [`buffer_len`](Self::buffer_len) bytes of `buf`.
    /// The counters must be a whole number of u32s, 1 to 255 of them.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        let rows = match u8::try_from(self.rows()) {
            Ok(r) if r > 0 && self.counters.len() % COUNTER_LEN == 0 => r,
            _ => {
                return Err(Error::InvalidField {
                    header: HEADER,
                    field: "rows",
                    value: self.counters.len() as u64,
                })
            }
        };
        let len = self.buffer_len();
        check_room(buf, len)?;
        let mut p = Packet::new_unchecked(&mut buf[..len]);
        p.set_sketch_id(self.sketch_id);
        p.set_op(self.op.code());
        p.set_reporter_id(self.reporter_id);
        p.set_column(self.column);
        p.set_rows(rows);
        p.set_reserved(0);
        p.counters_mut().copy_from_slice(self.counters);
        Ok(())
    }
}

impl<'a> SubHeader<'a> for SketchRepr<'a> {
    /// The fixed fields; rows at least 1; exactly that many counters; a known op; a zero reserved byte.
    #[inline(always)]
    fn parse_body<M: Refusal>(
        rest: &'a [u8],
        _: &ReportFormat,
    ) -> core::result::Result<Self, M::Err> {
        let (h, counters) = subheader::split::<M, HEADER_LEN>(rest, HEADER)?;
        let invalid = |field, value: u8| Error::InvalidField {
            header: HEADER,
            field,
            value: value.into(),
        };
        let rows = h[field::ROWS];
        ensure::<M>(rows != 0, || invalid("rows", 0))?;
        let len = COUNTER_LEN * usize::from(rows);
        ensure::<M>(counters.len() == len, || {
            Error::mismatch(HEADER, HEADER_LEN + len, rest.len())
        })?;
        let op = SketchOp::from_code(h[field::OP]).map_err(|e| M::refuse(|| e))?;
        let reserved = h[field::RESERVED];
        ensure::<M>(reserved == 0, || invalid("reserved", reserved))?;
        Ok(SketchRepr {
            sketch_id: h[field::SKETCH_ID],
            op,
            reporter_id: get_u16(&h[field::REPORTER_ID]),
            column: get_u16(&h[field::COLUMN]),
            counters,
        })
    }

    #[inline(always)]
    fn state(sub: &[u8]) -> Option<StateKey> {
        sub.get(field::SKETCH_ID).map(|&id| StateKey::Sketch(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::layout_check::{case, check};

    // Sketch 2, op max, reporter 0x0102, column 0x0304, 2 rows: 0x00000005, 0xfffffffe.
    const VECTOR: [u8; 16] = [
        0x02, 0x01, 0x01, 0x02, 0x03, 0x04, 0x02, 0x00, 0x00, 0x00, 0x00, 0x05, 0xff, 0xff, 0xff,
        0xfe,
    ];

    #[test]
    fn layout_matches_accessors() {
        check(
            LAYOUT,
            HEADER_LEN,
            &[
                case(
                    "sketch_id",
                    |b| Packet::new_unchecked(b).set_sketch_id(0xFF),
                    |b| Packet::new_unchecked(b).sketch_id() == 0xFF,
                ),
                case(
                    "op",
                    |b| Packet::new_unchecked(b).set_op(0xFF),
                    |b| Packet::new_unchecked(b).op() == 0xFF,
                ),
                case(
                    "reporter_id",
                    |b| Packet::new_unchecked(b).set_reporter_id(u16::MAX),
                    |b| Packet::new_unchecked(b).reporter_id() == u16::MAX,
                ),
                case(
                    "column",
                    |b| Packet::new_unchecked(b).set_column(u16::MAX),
                    |b| Packet::new_unchecked(b).column() == u16::MAX,
                ),
                case(
                    "rows",
                    |b| Packet::new_unchecked(b).set_rows(0xFF),
                    |b| Packet::new_unchecked(b).rows() == 0xFF,
                ),
                case(
                    "reserved",
                    |b| Packet::new_unchecked(b).set_reserved(0xFF),
                    |b| Packet::new_unchecked(b).reserved() == 0xFF,
                ),
            ],
        );
    }

    #[test]
    fn parses_and_emits_vector() {
        let r = SketchRepr::parse(&Packet::new_checked(&VECTOR[..]).unwrap()).unwrap();
        assert_eq!(
            r,
            SketchRepr {
                sketch_id: 2,
                op: SketchOp::Max,
                reporter_id: 0x0102,
                column: 0x0304,
                counters: &VECTOR[8..],
            }
        );
        assert_eq!(r.rows(), 2);
        assert_eq!(
            (r.counter(0), r.counter(1), r.counter(2)),
            (Some(5), Some(0xffff_fffe), None)
        );
        assert_eq!(r.counter(usize::MAX), None);
        assert_eq!(r.iter_counters().collect::<Vec<_>>(), [5, 0xffff_fffe]);
        let mut out = [0xEEu8; 16];
        r.emit(&mut out).unwrap();
        assert_eq!(out, VECTOR);
    }

    fn parse(v: &[u8]) -> Result<SketchRepr<'_>> {
        SketchRepr::parse(&Packet::new_checked(v)?)
    }

    #[test]
    fn rejects_bad_input() {
        assert_eq!(
            Packet::new_checked(&VECTOR[..7]).unwrap_err(),
            Error::Truncated {
                header: HEADER,
                needed: 8,
                available: 7
            }
        );
        assert_eq!(
            parse(&VECTOR[..15]),
            Err(Error::LengthMismatch {
                header: HEADER,
                expected: 16,
                actual: 15
            })
        );
        let mut long = [0u8; 20];
        long[..16].copy_from_slice(&VECTOR);
        assert_eq!(
            parse(&long),
            Err(Error::LengthMismatch {
                header: HEADER,
                expected: 16,
                actual: 20
            })
        );
        let mut v = VECTOR;
        v[6] = 0;
        assert_eq!(
            parse(&v[..8]),
            Err(Error::InvalidField {
                header: HEADER,
                field: "rows",
                value: 0
            })
        );
        let mut v = VECTOR;
        v[1] = 2;
        assert_eq!(
            parse(&v),
            Err(Error::InvalidField {
                header: HEADER,
                field: "op",
                value: 2
            })
        );
        let mut v = VECTOR;
        v[7] = 0x10;
        assert_eq!(
            parse(&v),
            Err(Error::InvalidField {
                header: HEADER,
                field: "reserved",
                value: 0x10
            })
        );

        let base = SketchRepr {
            sketch_id: 0,
            op: SketchOp::Sum,
            reporter_id: 0,
            column: 0,
            counters: &[],
        };
        assert!(matches!(
            base.emit(&mut [0u8; 64]),
            Err(Error::InvalidField { field: "rows", .. })
        ));
        let odd = SketchRepr {
            counters: &[0; 6],
            ..base
        };
        assert!(matches!(
            odd.emit(&mut [0u8; 64]),
            Err(Error::InvalidField { field: "rows", .. })
        ));
        let big = [0u8; 4 * 256];
        let huge = SketchRepr {
            counters: &big,
            ..base
        };
        assert!(matches!(
            huge.emit(&mut [0u8; 2048]),
            Err(Error::InvalidField { field: "rows", .. })
        ));
        let one = SketchRepr {
            counters: &[0; 4],
            ..base
        };
        assert_eq!(
            one.emit(&mut [0u8; 11]),
            Err(Error::BufferTooSmall {
                needed: 12,
                available: 11
            })
        );
    }
}
