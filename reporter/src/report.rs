//! Owned, typed DTA reports: one variant per opcode, emitted through `dta-protocol`'s reprs.
//!
//! The reprs of `dta-protocol` borrow their variable data; a reporter keeps reports around (the
//! retransmission buffer, a workload's templates), so this type owns it and lends it to a
//! [`ReportRepr`] only for the emit.

use dta_protocol::dta::{
    AppendRepr, Body, KeyIncrementRepr, KeyWriteRepr, Opcode, PostcardPathLenRepr, PostcardRepr,
    ReportFormat, ReportRepr, SketchOp, SketchRepr,
};

use crate::{Error, Result};

/// A DTA report's contents (everything but the base header's seqnum and flags).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Report {
    /// 0x01: store `data` under `key` in `redundancy` slots.
    KeyWrite {
        /// N, `1..=N_MAX`.
        redundancy: u8,
        /// The key.
        key: u32,
        /// Exactly the configured Key-Write data size (4, 12 or 28 bytes).
        data: Vec<u8>,
    },
    /// 0x02: add `data` to list `list_id`.
    Append {
        /// The list.
        list_id: u32,
        /// Exactly the configured entry size.
        data: Vec<u8>,
    },
    /// 0x03: add `counter` to the counters of `key`.
    KeyIncrement {
        /// N, `1..=N_MAX`.
        redundancy: u8,
        /// The key.
        key: u32,
        /// The addend.
        counter: u64,
    },
    /// 0x04: hop `hop` (1-based) of flow `key` saw `data`; the path length is the translator's B.
    Postcard {
        /// The flow.
        key: u32,
        /// 1-based hop.
        hop: u8,
        /// The hop's value (for example a switch ID).
        data: u32,
    },
    /// 0x06: a postcard that carries its path length.
    PostcardPathLen {
        /// The flow.
        key: u32,
        /// 1-based hop.
        hop: u8,
        /// Hops on this flow's path.
        path_len: u8,
        /// The hop's value.
        data: u32,
    },
    /// 0x05: one column of a reporter's sketch.
    Sketch {
        /// Which sketch.
        sketch_id: u8,
        /// Sum or max merge.
        op: SketchOp,
        /// Which reporter.
        reporter_id: u16,
        /// The column index.
        column: u16,
        /// One counter per row, 1 to 255 of them.
        counters: Vec<u32>,
    },
}

impl Report {
    /// The opcode this report is sent with.
    pub const fn opcode(&self) -> Opcode {
        match self {
            Report::KeyWrite { .. } => Opcode::KeyWrite,
            Report::Append { .. } => Opcode::Append,
            Report::KeyIncrement { .. } => Opcode::KeyIncrement,
            Report::Postcard { .. } => Opcode::Postcard,
            Report::PostcardPathLen { .. } => Opcode::PostcardPathLen,
            Report::Sketch { .. } => Opcode::SketchMerge,
        }
    }

    /// Emits the UDP payload of this report under `fmt`: base header with `seqnum` (dropped in the compact
    /// form) and the `retransmit` flag, then the sub-header.
    ///
    /// A retransmittable report in the compact form is refused: the translator could never NACK it.
    pub fn emit(&self, fmt: &ReportFormat, seqnum: u8, retransmit: bool) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.emit_into(fmt, seqnum, retransmit, &mut out)?;
        Ok(out)
    }

    /// As [`emit`](Self::emit), into `out` (cleared first), so a hot loop can reuse one buffer.
    pub fn emit_into(
        &self,
        fmt: &ReportFormat,
        seqnum: u8,
        retransmit: bool,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        if retransmit && fmt.form == dta_protocol::dta::HeaderForm::Compact {
            return Err(Error::RetransmitNeedsSeq(self.opcode()));
        }
        let mut sketch_bytes = Vec::new();
        let body = self.body(&mut sketch_bytes);
        let mut repr = ReportRepr::new(body, fmt.form, seqnum);
        repr.base.retransmit = retransmit;
        out.clear();
        out.resize(repr.buffer_len(fmt), 0);
        let n = repr.emit(out, fmt)?;
        out.truncate(n);
        Ok(())
    }

    /// The `dta-protocol` body; a sketch's counters are serialised into `scratch` (big-endian u32s).
    fn body<'a>(&'a self, scratch: &'a mut Vec<u8>) -> Body<'a> {
        match self {
            Report::KeyWrite {
                redundancy,
                key,
                data,
            } => Body::KeyWrite(KeyWriteRepr {
                redundancy: *redundancy,
                key: *key,
                data,
            }),
            Report::Append { list_id, data } => Body::Append(AppendRepr {
                list_id: *list_id,
                data,
            }),
            Report::KeyIncrement {
                redundancy,
                key,
                counter,
            } => Body::KeyIncrement(KeyIncrementRepr {
                redundancy: *redundancy,
                key: *key,
                counter: *counter,
            }),
            Report::Postcard { key, hop, data } => Body::Postcard(PostcardRepr {
                key: *key,
                hop: *hop,
                data: *data,
            }),
            Report::PostcardPathLen {
                key,
                hop,
                path_len,
                data,
            } => Body::PostcardPathLen(PostcardPathLenRepr {
                key: *key,
                hop: *hop,
                path_len: *path_len,
                data: *data,
            }),
            Report::Sketch {
                sketch_id,
                op,
                reporter_id,
                column,
                counters,
            } => {
                scratch.clear();
                for c in counters {
                    scratch.extend_from_slice(&c.to_be_bytes());
                }
                Body::SketchMerge(SketchRepr {
                    sketch_id: *sketch_id,
                    op: *op,
                    reporter_id: *reporter_id,
                    column: *column,
                    counters: scratch,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dta_protocol::dta::HeaderForm;

    const SEQ: ReportFormat = ReportFormat {
        form: HeaderForm::Seq,
        keywrite_data_len: 4,
        append_entry_len: 4,
    };
    const COMPACT: ReportFormat = ReportFormat {
        form: HeaderForm::Compact,
        keywrite_data_len: 12,
        append_entry_len: 8,
    };

    // The expected bytes below are written from DESIGN.md section 2's tables, field by field.

    #[test]
    fn key_write_both_forms() {
        let r = Report::KeyWrite {
            redundancy: 4,
            key: 0x0102_0304,
            data: vec![0xde, 0xad, 0xbe, 0xef],
        };
        // opcode 01, seqnum 07, flags 01000000 (retransmit), redundancy 04, key, data.
        assert_eq!(
            r.emit(&SEQ, 7, true).unwrap(),
            [0x01, 0x07, 0x40, 0x04, 0x01, 0x02, 0x03, 0x04, 0xde, 0xad, 0xbe, 0xef]
        );
        let r12 = Report::KeyWrite {
            redundancy: 2,
            key: 42,
            data: (1..=12).collect(),
        };
        // Compact: opcode 01, flags 00, then 5 + 12 bytes; the seqnum argument is dropped.
        assert_eq!(
            r12.emit(&COMPACT, 9, false).unwrap(),
            [0x01, 0x00, 0x02, 0x00, 0x00, 0x00, 0x2a, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
        );
        assert!(matches!(
            r12.emit(&COMPACT, 0, true),
            Err(Error::RetransmitNeedsSeq(Opcode::KeyWrite))
        ));
        // The 4-byte configuration refuses 12 bytes of data rather than truncating it.
        assert!(matches!(r12.emit(&SEQ, 0, false), Err(Error::Wire(_))));
    }

    #[test]
    fn append_both_forms() {
        let r = Report::Append {
            list_id: 3,
            data: vec![0, 0, 0, 9],
        };
        assert_eq!(
            r.emit(&SEQ, 0xff, false).unwrap(),
            [0x02, 0xff, 0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x09]
        );
        let r8 = Report::Append {
            list_id: 0x1000_0001,
            data: vec![1, 2, 3, 4, 5, 6, 7, 8],
        };
        assert_eq!(
            r8.emit(&COMPACT, 0, false).unwrap(),
            [0x02, 0x00, 0x10, 0x00, 0x00, 0x01, 1, 2, 3, 4, 5, 6, 7, 8]
        );
    }

    #[test]
    fn key_increment_both_forms() {
        let r = Report::KeyIncrement {
            redundancy: 2,
            key: 5,
            counter: 0x0102_0304_0506_0708,
        };
        assert_eq!(
            r.emit(&SEQ, 1, true).unwrap(),
            [
                0x03, 0x01, 0x40, 0x02, 0x00, 0x00, 0x00, 0x05, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06,
                0x07, 0x08
            ]
        );
        assert_eq!(
            r.emit(&COMPACT, 1, false).unwrap(),
            [
                0x03, 0x00, 0x02, 0x00, 0x00, 0x00, 0x05, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
                0x08
            ]
        );
        let bad = Report::KeyIncrement {
            redundancy: 9,
            key: 5,
            counter: 1,
        };
        assert!(matches!(
            bad.emit(&SEQ, 0, false),
            Err(Error::Wire(dta_protocol::Error::BadRedundancy {
                value: 9,
                max: 8
            }))
        ));
    }

    #[test]
    fn postcards_both_forms() {
        let p = Report::Postcard {
            key: 0xaabb_ccdd,
            hop: 3,
            data: 0x0000_0102,
        };
        assert_eq!(
            p.emit(&SEQ, 2, false).unwrap(),
            [0x04, 0x02, 0x00, 0xaa, 0xbb, 0xcc, 0xdd, 0x03, 0x00, 0x00, 0x01, 0x02]
        );
        assert_eq!(
            p.emit(&COMPACT, 2, false).unwrap(),
            [0x04, 0x00, 0xaa, 0xbb, 0xcc, 0xdd, 0x03, 0x00, 0x00, 0x01, 0x02]
        );
        let pl = Report::PostcardPathLen {
            key: 1,
            hop: 2,
            path_len: 4,
            data: 7,
        };
        assert_eq!(
            pl.emit(&SEQ, 0, false).unwrap(),
            [0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x04, 0x00, 0x00, 0x00, 0x07]
        );
        assert_eq!(
            pl.emit(&COMPACT, 0, false).unwrap(),
            [0x06, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x04, 0x00, 0x00, 0x00, 0x07]
        );
    }

    #[test]
    fn sketch_both_forms() {
        let s = Report::Sketch {
            sketch_id: 1,
            op: SketchOp::Max,
            reporter_id: 0x0203,
            column: 0x0405,
            counters: vec![1, 0xffff_ffff],
        };
        // sketch 1, op 1 (max), reporter 0x0203, column 0x0405, rows 2, reserved 0, two counters.
        assert_eq!(
            s.emit(&SEQ, 4, true).unwrap(),
            [
                0x05, 0x04, 0x40, 0x01, 0x01, 0x02, 0x03, 0x04, 0x05, 0x02, 0x00, 0x00, 0x00, 0x00,
                0x01, 0xff, 0xff, 0xff, 0xff
            ]
        );
        assert_eq!(
            s.emit(&COMPACT, 4, false).unwrap(),
            [
                0x05, 0x00, 0x01, 0x01, 0x02, 0x03, 0x04, 0x05, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01,
                0xff, 0xff, 0xff, 0xff
            ]
        );
        let empty = Report::Sketch {
            sketch_id: 1,
            op: SketchOp::Sum,
            reporter_id: 0,
            column: 0,
            counters: vec![],
        };
        assert!(empty.emit(&SEQ, 0, false).is_err());
    }
}
