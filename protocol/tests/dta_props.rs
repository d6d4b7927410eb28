//! Property tests of the DTA report and NACK wire formats: round trips in both base-header forms, strict
//! prefixes and arbitrary bytes rejected without panicking.

use dta_protocol::dta::{
    peek, AppendRepr, BaseRepr, Body, HeaderForm, KeyIncrementRepr, KeyWriteRepr, NackRepr, Opcode,
    PostcardPathLenRepr, PostcardRepr, ReportFormat, ReportRepr, SketchOp, SketchRepr, StateKey,
    N_MAX,
};
use proptest::collection::vec;
use proptest::prelude::*;

/// A report body that owns its variable data, so that strategies can generate it.
#[derive(Debug, Clone)]
enum OwnedBody {
    KeyWrite {
        redundancy: u8,
        key: u32,
        data: Vec<u8>,
    },
    Append {
        list_id: u32,
        data: Vec<u8>,
    },
    KeyIncrement(KeyIncrementRepr),
    Postcard(PostcardRepr),
    PostcardPathLen(PostcardPathLenRepr),
    Sketch {
        sketch_id: u8,
        op: SketchOp,
        reporter_id: u16,
        column: u16,
        counters: Vec<u8>,
    },
}

impl OwnedBody {
    fn borrow(&self) -> Body<'_> {
        match self {
            OwnedBody::KeyWrite {
                redundancy,
                key,
                data,
            } => Body::KeyWrite(KeyWriteRepr {
                redundancy: *redundancy,
                key: *key,
                data,
            }),
            OwnedBody::Append { list_id, data } => Body::Append(AppendRepr {
                list_id: *list_id,
                data,
            }),
            OwnedBody::KeyIncrement(r) => Body::KeyIncrement(*r),
            OwnedBody::Postcard(r) => Body::Postcard(*r),
            OwnedBody::PostcardPathLen(r) => Body::PostcardPathLen(*r),
            OwnedBody::Sketch {
                sketch_id,
                op,
                reporter_id,
                column,
                counters,
            } => Body::SketchMerge(SketchRepr {
                sketch_id: *sketch_id,
                op: *op,
                reporter_id: *reporter_id,
                column: *column,
                counters,
            }),
        }
    }
}

fn form() -> impl Strategy<Value = HeaderForm> {
    prop_oneof![Just(HeaderForm::Compact), Just(HeaderForm::Seq)]
}

fn format() -> impl Strategy<Value = ReportFormat> {
    (
        form(),
        prop_oneof![Just(4usize), Just(12), Just(28)],
        prop_oneof![1usize..=64, Just(1024)],
    )
        .prop_map(|(form, kw, ap)| {
            ReportFormat::new(form, kw, ap).expect("strategy builds valid formats")
        })
}

fn redundancy() -> impl Strategy<Value = u8> {
    1..=N_MAX
}

fn body(fmt: ReportFormat) -> impl Strategy<Value = OwnedBody> {
    let key_write = (
        redundancy(),
        any::<u32>(),
        vec(any::<u8>(), fmt.keywrite_data_len),
    )
        .prop_map(|(redundancy, key, data)| OwnedBody::KeyWrite {
            redundancy,
            key,
            data,
        });
    let append = (any::<u32>(), vec(any::<u8>(), fmt.append_entry_len))
        .prop_map(|(list_id, data)| OwnedBody::Append { list_id, data });
    let key_increment =
        (redundancy(), any::<u32>(), any::<u64>()).prop_map(|(redundancy, key, counter)| {
            OwnedBody::KeyIncrement(KeyIncrementRepr {
                redundancy,
                key,
                counter,
            })
        });
    let postcard = (any::<u32>(), 1u8..=8, any::<u32>())
        .prop_map(|(key, hop, data)| OwnedBody::Postcard(PostcardRepr { key, hop, data }));
    let postcard_path_len =
        (any::<u32>(), 1u8..=8, any::<u32>()).prop_flat_map(|(key, path_len, data)| {
            (1..=path_len).prop_map(move |hop| {
                OwnedBody::PostcardPathLen(PostcardPathLenRepr {
                    key,
                    hop,
                    path_len,
                    data,
                })
            })
        });
    let sketch = (
        any::<u8>(),
        prop_oneof![Just(SketchOp::Sum), Just(SketchOp::Max)],
        any::<u16>(),
        any::<u16>(),
        (1usize..=255).prop_flat_map(|rows| vec(any::<u8>(), 4 * rows)),
    )
        .prop_map(
            |(sketch_id, op, reporter_id, column, counters)| OwnedBody::Sketch {
                sketch_id,
                op,
                reporter_id,
                column,
                counters,
            },
        );
    prop_oneof![
        key_write,
        append,
        key_increment,
        postcard,
        postcard_path_len,
        sketch
    ]
}

/// A format, a body valid under it, and the base header's seqnum and flags.
fn report() -> impl Strategy<Value = (ReportFormat, OwnedBody, u8, bool, bool)> {
    format().prop_flat_map(|fmt| {
        (
            Just(fmt),
            body(fmt),
            any::<u8>(),
            any::<bool>(),
            any::<bool>(),
        )
    })
}

fn build<'a>(
    fmt: &ReportFormat,
    body: &'a OwnedBody,
    seqnum: u8,
    immediate: bool,
    retransmit: bool,
) -> ReportRepr<'a> {
    let mut r = ReportRepr::new(body.borrow(), fmt.form, seqnum);
    r.base.immediate = immediate;
    r.base.retransmit = retransmit;
    r
}

fn emit(r: &ReportRepr<'_>, fmt: &ReportFormat) -> Vec<u8> {
    let mut buf = vec![0u8; r.buffer_len(fmt)];
    let n = r.emit(&mut buf, fmt).expect("a valid report emits");
    assert_eq!(n, buf.len());
    buf
}

fn formats_to_try() -> [ReportFormat; 6] {
    let mut out = [ReportFormat::default(); 6];
    let mut i = 0;
    for form in [HeaderForm::Compact, HeaderForm::Seq] {
        for (kw, ap) in [(4, 4), (12, 8), (28, 1)] {
            out[i] = ReportFormat::new(form, kw, ap).expect("valid format");
            i += 1;
        }
    }
    out
}

fn nack() -> impl Strategy<Value = (HeaderForm, NackRepr)> {
    let opcode = (1u8..=6).prop_map(|c| Opcode::from_code(c).expect("known opcode"));
    (form(), opcode, any::<u8>(), any::<bool>()).prop_map(|(form, opcode, seqnum, nack)| {
        (
            form,
            NackRepr {
                opcode,
                seqnum,
                nack,
            },
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn report_round_trips((fmt, body, seqnum, imm, rtx) in report()) {
        let r = build(&fmt, &body, seqnum, imm, rtx);
        let bytes = emit(&r, &fmt);
        let parsed = ReportRepr::parse(&bytes, &fmt);
        prop_assert_eq!(parsed, Ok(r));
        prop_assert_eq!(emit(&parsed.unwrap(), &fmt), bytes.clone());
        // The base header is where DESIGN.md puts it.
        prop_assert_eq!(bytes[0], r.body.opcode().code());
        if fmt.form == HeaderForm::Seq {
            prop_assert_eq!(bytes[1], seqnum);
        }
    }

    #[test]
    fn peek_agrees_with_the_full_parse((fmt, body, seqnum, imm, rtx) in report(), cut in any::<usize>()) {
        let r = build(&fmt, &body, seqnum, imm, rtx);
        let bytes = emit(&r, &fmt);
        let want = match r.body {
            Body::KeyWrite(b) => StateKey::Key(b.key),
            Body::KeyIncrement(b) => StateKey::Key(b.key),
            Body::Append(b) => StateKey::List(b.list_id),
            Body::Postcard(b) => StateKey::Flow(b.key),
            Body::PostcardPathLen(b) => StateKey::Flow(b.key),
            Body::SketchMerge(b) => StateKey::Sketch(b.sketch_id),
        };
        let p = peek(&bytes, fmt.form).expect("a valid report peeks");
        prop_assert_eq!((p.opcode, p.retransmit, p.state), (r.body.opcode(), rtx, Some(want)));
        // A cut report peeks to a prefix of that: nothing, or the header without the state.
        let cut = &bytes[..cut % (bytes.len() + 1)];
        if let Some(q) = peek(cut, fmt.form) {
            prop_assert_eq!((q.opcode, q.retransmit), (p.opcode, p.retransmit));
            prop_assert!(q.state.is_none() || q.state == p.state);
        } else {
            prop_assert!(cut.len() < fmt.form.header_len());
        }
    }

    #[test]
    fn strict_prefixes_and_extensions_are_rejected((fmt, body, seqnum, imm, rtx) in report()) {
        let r = build(&fmt, &body, seqnum, imm, rtx);
        let mut bytes = emit(&r, &fmt);
        for n in 0..bytes.len() {
            prop_assert!(ReportRepr::parse(&bytes[..n], &fmt).is_err(), "prefix of {} bytes accepted", n);
        }
        bytes.push(0);
        prop_assert!(ReportRepr::parse(&bytes, &fmt).is_err(), "stray trailing byte accepted");
    }

    #[test]
    fn mutated_reports_round_trip_or_fail((fmt, body, seqnum, imm, rtx) in report(), at in any::<usize>(), x in 1u8..) {
        let r = build(&fmt, &body, seqnum, imm, rtx);
        let mut bytes = emit(&r, &fmt);
        let i = at % bytes.len();
        bytes[i] ^= x;
        if let Ok(p) = ReportRepr::parse(&bytes, &fmt) {
            prop_assert_eq!(emit(&p, &fmt), bytes.clone());
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in vec(any::<u8>(), 0..64)) {
        for fmt in formats_to_try() {
            if let Ok(r) = ReportRepr::parse(&bytes, &fmt) {
                prop_assert_eq!(emit(&r, &fmt), bytes.clone());
            }
        }
        for form in [HeaderForm::Compact, HeaderForm::Seq] {
            if let Ok(n) = NackRepr::parse(&bytes, form) {
                let mut out = vec![0u8; n.buffer_len(form)];
                prop_assert_eq!(n.emit(&mut out, form), Ok(bytes.len()));
                prop_assert_eq!(out, bytes.clone());
            }
        }
    }

    #[test]
    fn arbitrary_bodies_after_a_valid_base_never_panic(fmt in format(), op in 0u8..=7, seq in any::<u8>(), tail in vec(any::<u8>(), 0..40)) {
        // Most random buffers die in the base header; this reaches every sub-header parser.
        let mut bytes = vec![op];
        if fmt.form == HeaderForm::Seq {
            bytes.push(seq);
        }
        bytes.push(0);
        bytes.extend_from_slice(&tail);
        if let Ok(r) = ReportRepr::parse(&bytes, &fmt) {
            prop_assert_eq!(emit(&r, &fmt), bytes.clone());
        }
    }

    #[test]
    fn nack_round_trips((form, n) in nack()) {
        let mut buf = vec![0u8; n.buffer_len(form)];
        prop_assert_eq!(n.emit(&mut buf, form), Ok(buf.len()));
        prop_assert_eq!(NackRepr::parse(&buf, form), Ok(n));
        // Base header: the reporter's opcode, and in the seq form the same seqnum as the NACK's.
        let base = BaseRepr::new(n.opcode, form, n.seqnum);
        prop_assert_eq!(buf[0], n.opcode.code());
        prop_assert_eq!(buf[base.buffer_len()], n.seqnum);
        if form == HeaderForm::Seq {
            prop_assert_eq!(buf[1], n.seqnum);
        }
        for k in 0..buf.len() {
            prop_assert!(NackRepr::parse(&buf[..k], form).is_err());
        }
        buf.push(0);
        prop_assert!(NackRepr::parse(&buf, form).is_err());
    }
}
