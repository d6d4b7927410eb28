use super::*;
use crate::dta::base;
use crate::dta::keyincrement;
use crate::dta::postcard::{self, Variant};
use crate::dta::sketch::{self, SketchOp};
use crate::dta::{
    AppendRepr, KeyIncrementRepr, KeyWriteRepr, PostcardPathLenRepr, PostcardRepr, SketchRepr,
};
use proptest::prelude::*;

/// The model of [`ReportRepr::parse`]: the report read outside in through each header's checked view
/// and its `Repr::parse` (the base header, then the opcode's sub-header), each with its own checks
/// and errors. The one parse must give the same result, errors included, for every input.
fn model<'a>(udp_payload: &'a [u8], fmt: &ReportFormat) -> Result<ReportRepr<'a>> {
    let b = base::Packet::new_checked(udp_payload, fmt.form)?;
    let base = BaseRepr::parse(&b)?;
    let rest = b.payload();
    let body = match base.opcode {
        Opcode::KeyWrite => Body::KeyWrite(KeyWriteRepr::parse(
            &keywrite::Packet::new_checked(rest)?,
            fmt.keywrite_data_len,
        )?),
        Opcode::Append => Body::Append(AppendRepr::parse(
            &append::Packet::new_checked(rest)?,
            fmt.append_entry_len,
        )?),
        Opcode::KeyIncrement => Body::KeyIncrement(KeyIncrementRepr::parse(
            &keyincrement::Packet::new_checked(rest)?,
        )?),
        Opcode::Postcard => Body::Postcard(PostcardRepr::parse(&postcard::Packet::new_checked(
            rest,
            Variant::Postcard,
        )?)?),
        Opcode::SketchMerge => {
            Body::SketchMerge(SketchRepr::parse(&sketch::Packet::new_checked(rest)?)?)
        }
        Opcode::PostcardPathLen => Body::PostcardPathLen(PostcardPathLenRepr::parse(
            &postcard::Packet::new_checked(rest, Variant::PathLen)?,
        )?),
    };
    Ok(ReportRepr { base, body })
}

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

fn round_trip<'a>(bytes: &'a [u8], fmt: &ReportFormat) -> ReportRepr<'a> {
    let r = ReportRepr::parse(bytes, fmt).unwrap();
    assert_eq!(r.buffer_len(fmt), bytes.len());
    let mut out = [0xEEu8; 64];
    assert_eq!(r.emit(&mut out, fmt), Ok(bytes.len()));
    assert_eq!(&out[..bytes.len()], bytes);
    r
}

#[test]
fn key_write_seq() {
    // Seq base: opcode 01, seqnum 05, retransmit; redundancy 4, key 1, data 0000002a.
    let bytes = [
        0x01, 0x05, 0x40, 0x04, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x2a,
    ];
    let r = round_trip(&bytes, &SEQ);
    assert_eq!(
        r.base,
        BaseRepr {
            opcode: Opcode::KeyWrite,
            seqnum: Some(5),
            immediate: false,
            retransmit: true
        }
    );
    assert_eq!(
        r.body,
        Body::KeyWrite(KeyWriteRepr {
            redundancy: 4,
            key: 1,
            data: &[0, 0, 0, 0x2a]
        })
    );
}

#[test]
fn key_write_compact_twelve_bytes() {
    let mut bytes = [0u8; 2 + 5 + 12];
    bytes[..7].copy_from_slice(&[0x01, 0x00, 0x01, 0xde, 0xad, 0xbe, 0xef]);
    bytes[7..].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    let r = round_trip(&bytes, &COMPACT);
    assert_eq!(r.base.seqnum, None);
    match r.body {
        Body::KeyWrite(kw) => assert_eq!(
            (kw.redundancy, kw.key, kw.data),
            (1, 0xdead_beef, &bytes[7..])
        ),
        other => panic!("wrong body {other:?}"),
    }
    // The same report under a 4-byte configuration is 8 bytes too long.
    assert_eq!(
        ReportRepr::parse(
            &bytes,
            &ReportFormat {
                keywrite_data_len: 4,
                ..COMPACT
            }
        ),
        Err(Error::LengthMismatch {
            header: "DTA Key-Write",
            expected: 9,
            actual: 17
        })
    );
}

#[test]
fn append_both_forms() {
    // Seq: opcode 02, seqnum ff, immediate; list 3, entry 00000009.
    let bytes = [
        0x02, 0xff, 0x80, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x09,
    ];
    let r = round_trip(&bytes, &SEQ);
    assert_eq!(
        r.body,
        Body::Append(AppendRepr {
            list_id: 3,
            data: &[0, 0, 0, 9]
        })
    );
    assert!(r.base.immediate);
    // Compact with 8-byte entries: list 0x01000000, entry 01..08.
    let bytes = [0x02, 0x00, 0x01, 0x00, 0x00, 0x00, 1, 2, 3, 4, 5, 6, 7, 8];
    let r = round_trip(&bytes, &COMPACT);
    assert_eq!(
        r.body,
        Body::Append(AppendRepr {
            list_id: 0x0100_0000,
            data: &[1, 2, 3, 4, 5, 6, 7, 8]
        })
    );
}

#[test]
fn key_increment_postcards_and_sketch() {
    // Key-Increment: redundancy 8, key 2, counter 0x0102030405060708.
    let ki = [
        0x03, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x02, 1, 2, 3, 4, 5, 6, 7, 8,
    ];
    let r = round_trip(&ki, &SEQ);
    assert_eq!(
        r.body,
        Body::KeyIncrement(KeyIncrementRepr {
            redundancy: 8,
            key: 2,
            counter: 0x0102_0304_0506_0708
        })
    );
    // Postcard (compact): key 0x0a000001, hop 1, data 0x00000064.
    let pc = [
        0x04, 0x00, 0x0a, 0x00, 0x00, 0x01, 0x01, 0x00, 0x00, 0x00, 0x64,
    ];
    let r = round_trip(&pc, &COMPACT);
    assert_eq!(
        r.body,
        Body::Postcard(PostcardRepr {
            key: 0x0a00_0001,
            hop: 1,
            data: 100
        })
    );
    // Postcard with path length (seq 7): key 5, hop 2, path_len 2, data 0xffffffff.
    let pl = [
        0x06, 0x07, 0x00, 0x00, 0x00, 0x00, 0x05, 0x02, 0x02, 0xff, 0xff, 0xff, 0xff,
    ];
    let r = round_trip(&pl, &SEQ);
    assert_eq!(
        r.body,
        Body::PostcardPathLen(PostcardPathLenRepr {
            key: 5,
            hop: 2,
            path_len: 2,
            data: u32::MAX
        })
    );
    // Sketch (seq 0): sketch 1, sum, reporter 9, column 0x0100, 1 row, counter 0x00000003.
    let sk = [
        0x05, 0x00, 0x00, 0x01, 0x00, 0x00, 0x09, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x03,
    ];
    let r = round_trip(&sk, &SEQ);
    match r.body {
        Body::SketchMerge(s) => {
            assert_eq!(
                (s.sketch_id, s.op, s.reporter_id, s.column),
                (1, SketchOp::Sum, 9, 0x100)
            );
            assert_eq!((s.rows(), s.counter(0)), (1, Some(3)));
        }
        other => panic!("wrong body {other:?}"),
    }
}

#[test]
fn parse_errors() {
    let kw = [
        0x01, 0x05, 0x00, 0x04, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x2a,
    ];
    assert_eq!(
        ReportRepr::parse(&kw[..2], &SEQ),
        Err(Error::Truncated {
            header: "DTA base",
            needed: 3,
            available: 2
        })
    );
    assert_eq!(
        ReportRepr::parse(&kw[..6], &SEQ),
        Err(Error::Truncated {
            header: "DTA Key-Write",
            needed: 5,
            available: 3
        })
    );
    assert_eq!(
        ReportRepr::parse(&kw[..11], &SEQ),
        Err(Error::LengthMismatch {
            header: "DTA Key-Write",
            expected: 9,
            actual: 8
        })
    );
    let mut long = [0u8; 13];
    long[..12].copy_from_slice(&kw);
    assert_eq!(
        ReportRepr::parse(&long, &SEQ),
        Err(Error::LengthMismatch {
            header: "DTA Key-Write",
            expected: 9,
            actual: 10
        })
    );
    let mut v = kw;
    v[0] = 0x00;
    assert_eq!(ReportRepr::parse(&v, &SEQ), Err(Error::UnknownOpcode(0)));
    let mut v = kw;
    v[3] = 0x09;
    assert_eq!(
        ReportRepr::parse(&v, &SEQ),
        Err(Error::BadRedundancy { value: 9, max: 8 })
    );
    let mut v = kw;
    v[2] = 0x20;
    assert_eq!(
        ReportRepr::parse(&v, &SEQ),
        Err(Error::InvalidField {
            header: "DTA base",
            field: "reserved",
            value: 0x20
        })
    );
    // A sketch announcing 2 rows but carrying 1.
    let sk = [
        0x05, 0x00, 0x00, 0x01, 0x00, 0x00, 0x09, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x03,
    ];
    assert_eq!(
        ReportRepr::parse(&sk, &SEQ),
        Err(Error::LengthMismatch {
            header: "DTA Sketch-Merge",
            expected: 16,
            actual: 12
        })
    );
}

#[test]
fn emit_errors() {
    let body = Body::KeyWrite(KeyWriteRepr {
        redundancy: 1,
        key: 1,
        data: &[0; 4],
    });
    let r = ReportRepr::new(body, HeaderForm::Seq, 3);
    let mut buf = [0u8; 64];
    assert_eq!(
        r.emit(&mut buf, &COMPACT),
        Err(Error::InvalidField {
            header: HEADER,
            field: "seqnum",
            value: 3
        })
    );
    let compact = ReportRepr::new(body, HeaderForm::Compact, 3);
    assert_eq!(
        compact.emit(&mut buf, &COMPACT),
        Err(Error::LengthMismatch {
            header: "DTA Key-Write",
            expected: 17,
            actual: 9
        })
    );
    let mut wrong = r;
    wrong.base.opcode = Opcode::Append;
    assert_eq!(
        wrong.emit(&mut buf, &SEQ),
        Err(Error::InvalidField {
            header: HEADER,
            field: "opcode",
            value: 2
        })
    );
    assert_eq!(
        r.emit(&mut buf[..11], &SEQ),
        Err(Error::BufferTooSmall {
            needed: 12,
            available: 11
        })
    );
    let bad = ReportRepr::new(
        Body::KeyWrite(KeyWriteRepr {
            redundancy: 0,
            key: 1,
            data: &[0; 4],
        }),
        HeaderForm::Seq,
        0,
    );
    let mut untouched = [0xEEu8; 16];
    assert_eq!(
        bad.emit(&mut untouched, &SEQ),
        Err(Error::BadRedundancy { value: 0, max: 8 })
    );
    assert_eq!(untouched, [0xEE; 16]);
}

#[test]
fn formats() {
    assert_eq!(ReportFormat::default(), SEQ);
    assert_eq!(ReportFormat::new(HeaderForm::Compact, 12, 8), Ok(COMPACT));
    assert!(ReportFormat::new(HeaderForm::Seq, 28, MAX_APPEND_ENTRY_LEN).is_ok());
    assert!(matches!(
        ReportFormat::new(HeaderForm::Seq, 8, 4),
        Err(Error::InvalidField {
            field: "keywrite_data_len",
            value: 8,
            ..
        })
    ));
    assert!(matches!(
        ReportFormat::new(HeaderForm::Seq, 4, 0),
        Err(Error::InvalidField {
            field: "append_entry_len",
            value: 0,
            ..
        })
    ));
    assert!(ReportFormat::new(HeaderForm::Seq, 4, MAX_APPEND_ENTRY_LEN + 1).is_err());
}

/// What [`ReportRepr::parse_key_write`] must return: the model's Key-Write report, `None` otherwise.
fn key_write_of<'a>(bytes: &'a [u8], fmt: &ReportFormat) -> Option<(BaseRepr, KeyWriteRepr<'a>)> {
    match model(bytes, fmt) {
        Ok(ReportRepr {
            base,
            body: Body::KeyWrite(kw),
        }) => Some((base, kw)),
        _ => None,
    }
}

/// Reports of every opcode and both forms, mostly valid, with bytes bent and lengths cut or padded.
fn reports() -> impl Strategy<Value = (Vec<u8>, ReportFormat)> {
    (
        1u8..=7,
        any::<bool>(),
        prop::sample::select(vec![4usize, 12, 28]),
        prop::sample::select(vec![1usize, 4, 8, 13]),
        proptest::collection::vec(any::<u8>(), 0..48),
        proptest::collection::vec((0usize..48, any::<u8>()), 0..3),
        0u8..4,
        0usize..48,
    )
        .prop_map(|(op, compact, d, e, mut bytes, bends, shape, cut)| {
            let fmt = ReportFormat {
                form: if compact {
                    HeaderForm::Compact
                } else {
                    HeaderForm::Seq
                },
                keywrite_data_len: d,
                append_entry_len: e,
            };
            let hl = fmt.form.header_len();
            // A length that fits the opcode under this format (sketches: 1 to 4 rows).
            let rows = usize::from(bytes.first().copied().unwrap_or(0) % 4) + 1;
            let body = match op {
                1 => 5 + d,
                2 => 4 + e,
                3 => 13,
                4 => 9,
                5 => 8 + 4 * rows,
                6 => 10,
                _ => 6,
            };
            bytes.resize(hl + body, 0);
            bytes[0] = op;
            // Plausible values for the checked fields, so most reports pass.
            bytes[hl - 1] &= 0xC0;
            let b = &mut bytes[hl..];
            match op {
                1 | 3 => b[0] = b[0] % 8 + 1,
                4 => b[4] = b[4] % 8 + 1,
                5 => {
                    b[1] &= 1;
                    b[6] = rows as u8;
                    b[7] = 0;
                }
                6 => {
                    b[5] = b[5] % 8 + 1;
                    b[4] = b[4] % b[5] + 1;
                }
                _ => {}
            }
            for (at, v) in bends {
                if let Some(x) = bytes.get_mut(at) {
                    *x = v;
                }
            }
            match shape {
                0 => bytes.truncate(cut),
                1 => bytes.push(0),
                _ => {}
            }
            (bytes, fmt)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(8192))]
    #[test]
    fn parse_equals_the_model((bytes, fmt) in reports()) {
        let want = model(&bytes, &fmt);
        prop_assert_eq!(ReportRepr::parse(&bytes, &fmt), want);
        prop_assert_eq!(ReportRepr::parse_quick(&bytes, &fmt), want.ok());
        prop_assert_eq!(ReportRepr::parse_key_write(&bytes, &fmt), key_write_of(&bytes, &fmt));
    }

    #[test]
    fn parse_of_any_bytes_equals_the_model(bytes in proptest::collection::vec(any::<u8>(), 0..40), compact in any::<bool>()) {
        let fmt = ReportFormat {
            form: if compact { HeaderForm::Compact } else { HeaderForm::Seq },
            ..SEQ
        };
        let want = model(&bytes, &fmt);
        prop_assert_eq!(ReportRepr::parse(&bytes, &fmt), want);
        prop_assert_eq!(ReportRepr::parse_quick(&bytes, &fmt), want.ok());
        prop_assert_eq!(ReportRepr::parse_key_write(&bytes, &fmt), key_write_of(&bytes, &fmt));
    }
}

/// Every first error the layered reading can give, on one report each, so that a model and parse
/// that agreed by accident on a weak generator still meet fixed values.
#[test]
fn first_errors_in_layer_order() {
    // Unknown opcode 0x07 with reserved bits set too: the opcode is found first.
    assert_eq!(
        ReportRepr::parse(&[0x07, 0x00, 0x3F, 0, 0], &SEQ),
        Err(Error::UnknownOpcode(7))
    );
    // Key-Write with reserved bits set and a cut sub-header: the reserved bits first.
    assert_eq!(
        ReportRepr::parse(&[0x01, 0x00, 0x01, 0x04], &SEQ),
        Err(Error::InvalidField {
            header: "DTA base",
            field: "reserved",
            value: 1
        })
    );
    // Key-Write with a 1-byte sub-header: the sub-header is cut.
    assert_eq!(
        ReportRepr::parse(&[0x01, 0x00, 0x00, 0x04], &SEQ),
        Err(Error::Truncated {
            header: "DTA Key-Write",
            needed: 5,
            available: 1
        })
    );
    // Key-Increment one byte long: a mismatch, not a truncation.
    let mut ki = [0u8; 3 + 14];
    ki[0] = 0x03;
    ki[3] = 1;
    assert_eq!(
        ReportRepr::parse(&ki, &SEQ),
        Err(Error::LengthMismatch {
            header: "DTA Key-Increment",
            expected: 13,
            actual: 14
        })
    );
    // Postcard with path length: path length 0 before the hop.
    let pl = [0x06, 0x00, 0x00, 0, 0, 0, 5, 0, 0, 0, 0, 0, 1];
    assert_eq!(
        ReportRepr::parse(&pl, &SEQ),
        Err(Error::InvalidField {
            header: "DTA Postcard with path length",
            field: "path_len",
            value: 0
        })
    );
    // Sketch: op 2 with reserved 1: the op first.
    let sk = [0x05, 0x00, 0x00, 1, 2, 0, 9, 0, 0, 1, 1, 0, 0, 0, 3];
    assert_eq!(
        ReportRepr::parse(&sk, &SEQ),
        Err(Error::InvalidField {
            header: "DTA Sketch-Merge",
            field: "op",
            value: 2
        })
    );
}
