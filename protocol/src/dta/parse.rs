//! The one parse of a DTA report: every check of every opcode, at fixed offsets, in one body.
//!
//! It is generic over how a refusal is reported ([`Refusal`]): `Explain` builds the exact [`Error`]
//! (what `ReportRepr::parse` returns), `Quiet` returns a unit error that costs nothing (what the
//! translator's per-report path takes, as an `Option`). Each check names its error in a closure that only
//! the explaining specialisation calls, so the quiet one compiles to the compares alone. The checks run in
//! the order the headers are layered (base length, opcode, reserved bits, sub-header length, its fields),
//! so the first error found is the one an outside-in reading of the report finds first; a test compares
//! both specialisations with a layered model built from the headers' views.

use super::base::{self, BaseRepr, HeaderForm};
use super::keywrite::{self, KeyWriteRepr};
use super::report::{Body, ReportFormat, ReportRepr};
use super::subheader::{self, SubHeader};
use super::{opcode as op, Opcode};
use crate::field::get_u32;
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
    // Key-Write was taken above: its arm is left out here, as the hand-written match this replaced left it
    // out. Kept in, the compiler could not prove it dead behind the translator's own Key-Write test, and
    // the second path to Key-Write's handler cost INT reports 46 instructions each (callgrind, int-v05:
    // the handler was no longer inlined into INT's three callers).
    layered::<M, { op::KEY_WRITE }>(p, fmt)
}

/// A report read header by header: the base header, then the sub-header of its opcode (except opcode
/// `TAKEN`'s, see `body`).
#[inline(always)]
fn layered<'a, M: Refusal, const TAKEN: u8>(
    p: &'a [u8],
    fmt: &ReportFormat,
) -> Result<ReportRepr<'a>, M::Err> {
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
    let body = body::<M, TAKEN>(code, rest, fmt)?;
    Ok(ReportRepr {
        base: base_repr(body.opcode(), seqnum, flags),
        body,
    })
}

/// The dispatch on the opcode byte from the primitives' list (`with_primitives!` in `mod.rs`): each
/// opcode's arm is its sub-header's [`SubHeader::parse_body`]; an opcode not in the list is unknown.
macro_rules! bodies {
    ($(
        $(#[$doc:meta])*
        $variant:ident = $code:literal, $constant:ident, body $body:ty,
        label $label:literal, contract $contract:literal, summary $summary:literal;
    )*) => {
        /// The sub-header of opcode byte `code` from `rest`, the bytes after the base header (whose
        /// length and reserved bits are checked). The arm of opcode `TAKEN`, which the caller has taken
        /// through a path of its own, is left out (that opcode is then unknown here); 0, no opcode, keeps
        /// every arm.
        #[inline(always)]
        fn body<'a, M: Refusal, const TAKEN: u8>(
            code: u8,
            rest: &'a [u8],
            fmt: &ReportFormat,
        ) -> Result<Body<'a>, M::Err> {
            Ok(match code {
                $(op::$constant if op::$constant != TAKEN => {
                    Body::$variant(<$body as SubHeader>::parse_body::<M>(rest, fmt)?)
                })*
                other => return Err(M::refuse(|| Error::UnknownOpcode(other))),
            })
        }
    };
}

with_primitives!(bodies);

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
    subheader::redundancy::<M>(redundancy)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::refusal::Explain;

    /// Key-Write's general arm (its `SubHeader::parse_body`, which `report` leaves out for its
    /// fixed-size read) gives what that read gives, errors included: every cut of a report, each data
    /// size, both forms, redundancies 0, 1, 8 and 9, the reserved bits and the wrong data size.
    #[test]
    fn key_write_general_arm_equals_the_fixed_size_read() {
        let mut compared = 0;
        for form in [HeaderForm::Seq, HeaderForm::Compact] {
            for d in keywrite::DATA_LENS {
                let fmt = ReportFormat {
                    form,
                    keywrite_data_len: d,
                    append_entry_len: 4,
                };
                for (redundancy, flags, extra) in [
                    (1, 0x40, 0),
                    (8, 0x80, 0),
                    (0, 0, 0),
                    (9, 0, 0),
                    (2, 0x01, 0),
                    (2, 0, 4),
                ] {
                    let mut p = vec![op::KEY_WRITE];
                    if form == HeaderForm::Seq {
                        p.push(7);
                    }
                    p.push(flags);
                    p.extend([redundancy, 0xDE, 0xAD, 0xBE, 0xEF]);
                    p.extend((0..d + extra).map(|i| i as u8));
                    for cut in 0..=p.len() {
                        let p = &p[..cut];
                        assert_eq!(
                            layered::<Explain, 0>(p, &fmt),
                            report::<Explain>(p, &fmt),
                            "{form:?} D={d} {p:02x?}"
                        );
                        compared += 1;
                    }
                }
            }
        }
        // Per form and size, six reports of (base + 5 + D) bytes, one of them 4 bytes longer, each cut
        // at every length from 0 to whole: 438 in the seq form, 420 in the compact.
        assert_eq!(compared, 858);
        // With the arm left out, as `report` calls it, the opcode is unknown there.
        let p = [op::KEY_WRITE, 0, 0, 1, 0, 0, 0, 1, 1, 2, 3, 4];
        assert_eq!(
            layered::<Explain, { op::KEY_WRITE }>(&p, &ReportFormat::default()),
            Err(Error::UnknownOpcode(op::KEY_WRITE))
        );
        assert!(report::<Explain>(&p, &ReportFormat::default()).is_ok());
    }
}
