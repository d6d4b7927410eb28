//! The one parse of a DTA report: every check of every opcode, at fixed offsets, in one body.
//!
//! It is generic over how a refusal is reported ([`Refusal`]): `Explain` builds the exact [`Error`]
//! (what `ReportRepr::parse` returns), `Quiet` returns a unit error that costs nothing (what the
//! translator's per-report path takes, as an `Option`). Each check names its error in a closure that only
//! the explaining specialisation calls, so the quiet one compiles to the compares alone. The checks run in
//! the order the headers are layered (base length, opcode, reserved bits, sub-header length, its fields),
//! so the first error found is the one an outside-in reading of the report finds first; a test compares
//! both specialisations with a layered model built from the headers' views.

use super::append::{self, AppendRepr};
use super::base::{self, BaseRepr, HeaderForm};
use super::keyincrement::{self, KeyIncrementRepr};
use super::keywrite::{self, KeyWriteRepr};
use super::postcard::{self, PostcardPathLenRepr, PostcardRepr, Variant};
use super::report::{Body, ReportFormat, ReportRepr};
use super::sketch::{self, SketchOp, SketchRepr};
use super::{opcode as op, Opcode, N_MAX};
use crate::field::{get_u16, get_u32, get_u64};
use crate::refusal::{ensure, Explain, Quiet, Refusal};
use crate::Error;

/// The report's parse entry points, beside the one parse they call (here rather than in `report.rs`, so
/// that the report's types do not depend back on their parser).
impl<'a> ReportRepr<'a> {
    /// Parses a whole UDP payload (exactly the bytes the UDP length covers).
    ///
    /// Errors: [`Error::Truncated`] if the payload ends inside the base header or the sub-header's fixed
    /// fields; [`Error::LengthMismatch`] if it is longer or shorter than the sub-header and its configured (or,
    /// for Sketch-Merge, announced) data; [`Error::UnknownOpcode`], [`Error::BadRedundancy`] and
    /// [`Error::InvalidField`] for values the format does not allow. The first of these in the order the
    /// headers are layered (base header, then sub-header) is the one returned.
    pub fn parse(udp_payload: &'a [u8], fmt: &ReportFormat) -> crate::Result<Self> {
        report::<Explain>(udp_payload, fmt)
    }

    /// [`parse`](Self::parse) without the reason, for the translator's per-report path: the same parse
    /// specialised so that a refusal costs nothing to build (`Some` exactly when `parse` is `Ok`, with
    /// the same value). An `Option` is smaller than a `Result` of this type, so a caller that handles
    /// refusals apart (calling `parse` for the reason) moves less per report.
    #[inline]
    pub fn parse_quick(udp_payload: &'a [u8], fmt: &ReportFormat) -> Option<Self> {
        report::<Quiet>(udp_payload, fmt).ok()
    }

    /// [`parse_quick`](Self::parse_quick) of a Key-Write report, for a caller that has seen opcode byte
    /// 0x01 and wants the report's values without the [`Body`] to match again: `Some` exactly when
    /// `parse` accepts the report and it is a Key-Write, with its base header and body; `None` for any
    /// other report or an error (`parse` gives it).
    #[inline(always)]
    pub fn parse_key_write(
        udp_payload: &'a [u8],
        fmt: &ReportFormat,
    ) -> Option<(BaseRepr, KeyWriteRepr<'a>)> {
        Self::parse_key_write_as(udp_payload, fmt.form, fmt.keywrite_data_len)
    }

    /// [`parse_key_write`](Self::parse_key_write) under a format of base form `form` and Key-Write data
    /// size `data_len`, for a caller that has the data size as a constant (the translator's run of
    /// Key-Write reports, specialised per size): its length check is then against an immediate, and the
    /// data's length known after it. It is the Key-Write arm of `parse` itself, with the opcode tested.
    #[inline(always)]
    pub fn parse_key_write_as(
        udp_payload: &'a [u8],
        form: HeaderForm,
        data_len: usize,
    ) -> Option<(BaseRepr, KeyWriteRepr<'a>)> {
        key_write::<Quiet, true>(udp_payload, form, data_len).ok()
    }
}

/// Whether a redundancy is in `1..=N_MAX` (what `check_redundancy` accepts).
#[inline(always)]
fn redundancy_ok(n: u8) -> bool {
    n.wrapping_sub(1) < N_MAX
}

/// The error of a base header whose reserved bits are set: an unknown opcode comes first.
fn reserved(code: u8, flags: u8) -> Error {
    match Opcode::from_code(code) {
        Err(e) => e,
        Ok(_) => Error::InvalidField {
            header: base::HEADER,
            field: "reserved",
            value: (flags & base::field::RESERVED).into(),
        },
    }
}

/// A sub-header that must be exactly `N` bytes: too short is truncated, otherwise the wrong length.
#[inline(always)]
fn exact<'a, M: Refusal, const N: usize>(
    rest: &'a [u8],
    header: &'static str,
) -> Result<&'a [u8; N], M::Err> {
    rest.try_into().map_err(|_| {
        M::refuse(|| match rest.len() < N {
            true => Error::truncated(header, N, rest.len()),
            false => Error::mismatch(header, N, rest.len()),
        })
    })
}

/// The base header built from its flags byte and seqnum.
#[inline(always)]
fn base_repr(opcode: Opcode, seqnum: Option<u8>, flags: u8) -> BaseRepr {
    BaseRepr {
        opcode,
        seqnum,
        immediate: flags & base::field::IMMEDIATE != 0,
        retransmit: flags & base::field::RETRANSMIT != 0,
    }
}

/// A whole report under `fmt` (the one parse; see the module's comment).
#[inline(always)]
pub(crate) fn report<'a, M: Refusal>(
    p: &'a [u8],
    fmt: &ReportFormat,
) -> Result<ReportRepr<'a>, M::Err> {
    // Key-Write, the common report, through its own fixed-size read of base and sub-header together.
    if p.first() == Some(&op::KEY_WRITE) {
        let (base, kw) = key_write::<M, false>(p, fmt.form, fmt.keywrite_data_len)?;
        return Ok(ReportRepr {
            base,
            body: Body::KeyWrite(kw),
        });
    }
    let hl = fmt.form.header_len();
    let Some((head, rest)) = p.split_at_checked(hl) else {
        return Err(M::refuse(|| Error::truncated(base::HEADER, hl, p.len())));
    };
    // The flags byte is the base header's last in both forms.
    let (Some(&code), Some(&flags)) = (head.first(), head.last()) else {
        return Err(M::refuse(|| Error::truncated(base::HEADER, hl, p.len())));
    };
    ensure::<M>(flags & base::field::RESERVED == 0, || reserved(code, flags))?;
    let seqnum = match fmt.form {
        HeaderForm::Compact => None,
        HeaderForm::Seq => Some(head[base::field::SEQNUM]),
    };
    let body = match code {
        op::APPEND => {
            let header = append::HEADER;
            let Some((h, data)) = rest.split_first_chunk::<{ append::HEADER_LEN }>() else {
                return Err(M::refuse(|| {
                    Error::truncated(header, append::HEADER_LEN, rest.len())
                }));
            };
            let e = fmt.append_entry_len;
            ensure::<M>(data.len() == e, || {
                Error::mismatch(header, append::HEADER_LEN + e, rest.len())
            })?;
            Body::Append(AppendRepr {
                list_id: get_u32(&h[append::field::LIST_ID]),
                data,
            })
        }
        op::KEY_INCREMENT => {
            use keyincrement::field as f;
            let b = exact::<M, { keyincrement::HEADER_LEN }>(rest, keyincrement::HEADER)?;
            let redundancy = b[f::REDUNDANCY];
            ensure::<M>(redundancy_ok(redundancy), || Error::BadRedundancy {
                value: redundancy,
                max: N_MAX,
            })?;
            Body::KeyIncrement(KeyIncrementRepr {
                redundancy,
                key: get_u32(&b[f::KEY]),
                counter: get_u64(&b[f::COUNTER]),
            })
        }
        op::POSTCARD => {
            use postcard::field as f;
            let v = Variant::Postcard;
            let b = exact::<M, { postcard::HEADER_LEN }>(rest, v.name())?;
            let hop = b[f::HOP];
            ensure::<M>(hop != 0 && hop <= postcard::MAX_HOPS, || {
                postcard::invalid(v, "hop", hop)
            })?;
            Body::Postcard(PostcardRepr {
                key: get_u32(&b[f::KEY]),
                hop,
                data: get_u32(&b[f::DATA]),
            })
        }
        op::SKETCH_MERGE => {
            use sketch::field as f;
            let header = sketch::HEADER;
            let Some((h, counters)) = rest.split_first_chunk::<{ sketch::HEADER_LEN }>() else {
                return Err(M::refuse(|| {
                    Error::truncated(header, sketch::HEADER_LEN, rest.len())
                }));
            };
            let invalid = |field, value: u8| Error::InvalidField {
                header,
                field,
                value: value.into(),
            };
            let rows = h[f::ROWS];
            ensure::<M>(rows != 0, || invalid("rows", 0))?;
            let len = sketch::COUNTER_LEN * usize::from(rows);
            ensure::<M>(counters.len() == len, || {
                Error::mismatch(header, sketch::HEADER_LEN + len, rest.len())
            })?;
            let op = SketchOp::from_code(h[f::OP]).map_err(|e| M::refuse(|| e))?;
            let reserved = h[f::RESERVED];
            ensure::<M>(reserved == 0, || invalid("reserved", reserved))?;
            Body::SketchMerge(SketchRepr {
                sketch_id: h[f::SKETCH_ID],
                op,
                reporter_id: get_u16(&h[f::REPORTER_ID]),
                column: get_u16(&h[f::COLUMN]),
                counters,
            })
        }
        op::POSTCARD_PATH_LEN => {
            use postcard::field as f;
            let v = Variant::PathLen;
            let b = exact::<M, { postcard::HEADER_LEN_PATH_LEN }>(rest, v.name())?;
            let (hop, path_len) = (b[f::HOP], b[f::PATH_LEN]);
            ensure::<M>(path_len != 0 && path_len <= postcard::MAX_HOPS, || {
                postcard::invalid(v, "path_len", path_len)
            })?;
            ensure::<M>(hop != 0 && hop <= path_len, || {
                postcard::invalid(v, "hop", hop)
            })?;
            Body::PostcardPathLen(PostcardPathLenRepr {
                key: get_u32(&b[f::KEY]),
                hop,
                path_len,
                data: get_u32(&b[f::DATA_WITH_PATH_LEN]),
            })
        }
        // Key-Write was taken above.
        other => return Err(M::refuse(|| Error::UnknownOpcode(other))),
    };
    Ok(ReportRepr {
        base: base_repr(body.opcode(), seqnum, flags),
        body,
    })
}

/// A Key-Write report of base form `form` and data size `data_len`: the base header and the Key-Write
/// header as one fixed-size array per form, so that every field is read at a fixed offset with no bounds
/// check of its own, and the data is the rest. With `CHECK_OPCODE`, a report of another opcode is refused
/// (for callers that have not dispatched on the opcode byte); without, the caller has seen byte 0x01.
#[inline(always)]
pub(crate) fn key_write<'a, M: Refusal, const CHECK_OPCODE: bool>(
    p: &'a [u8],
    form: HeaderForm,
    data_len: usize,
) -> Result<(BaseRepr, KeyWriteRepr<'a>), M::Err> {
    let short = || short_key_write(p, form);
    let (h, data, seqnum) = match form {
        HeaderForm::Seq => {
            let Some((h, data)) = p.split_first_chunk::<{ base::SEQ_LEN + keywrite::HEADER_LEN }>()
            else {
                return Err(M::refuse(short));
            };
            (
                &h[base::field::SEQ_FLAGS..],
                data,
                Some(h[base::field::SEQNUM]),
            )
        }
        HeaderForm::Compact => {
            let Some((h, data)) =
                p.split_first_chunk::<{ base::COMPACT_LEN + keywrite::HEADER_LEN }>()
            else {
                return Err(M::refuse(short));
            };
            (&h[base::field::COMPACT_FLAGS..], data, None)
        }
    };
    // `h`: the flags byte (the base header's last), then the Key-Write header; both lengths are known, so
    // neither test below can fail.
    let Some((&flags, kw)) = h.split_first() else {
        return Err(M::refuse(short));
    };
    let Ok(kw) = <&[u8; keywrite::HEADER_LEN]>::try_from(kw) else {
        return Err(M::refuse(short));
    };
    let code = p[base::field::OPCODE];
    if CHECK_OPCODE {
        ensure::<M>(code == op::KEY_WRITE, || Error::InvalidField {
            header: base::HEADER,
            field: "opcode (not Key-Write)",
            value: code.into(),
        })?;
    }
    ensure::<M>(flags & base::field::RESERVED == 0, || reserved(code, flags))?;
    let rest = keywrite::HEADER_LEN + data.len();
    ensure::<M>(data.len() == data_len, || {
        Error::mismatch(keywrite::HEADER, keywrite::HEADER_LEN + data_len, rest)
    })?;
    let redundancy = kw[keywrite::field::REDUNDANCY];
    ensure::<M>(redundancy_ok(redundancy), || Error::BadRedundancy {
        value: redundancy,
        max: N_MAX,
    })?;
    Ok((
        base_repr(Opcode::KeyWrite, seqnum, flags),
        KeyWriteRepr {
            redundancy,
            key: get_u32(&kw[keywrite::field::KEY]),
            data,
        },
    ))
}

/// Why a Key-Write report is shorter than its base header and Key-Write header: the base header is cut,
/// or its reserved bits are set (found before the sub-header's length), or the Key-Write header is cut.
#[cold]
fn short_key_write(p: &[u8], form: HeaderForm) -> Error {
    let hl = form.header_len();
    match p.get(hl - 1) {
        None => Error::truncated(base::HEADER, hl, p.len()),
        Some(&flags) if flags & base::field::RESERVED != 0 => reserved(p[0], flags),
        Some(_) => Error::truncated(keywrite::HEADER, keywrite::HEADER_LEN, p.len() - hl),
    }
}
