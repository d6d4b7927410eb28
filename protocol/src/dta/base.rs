//! The DTA base header, in its two forms.
//!
//! ```text
//! compact: 0: opcode:8 | 1: immediate:1 retransmit:1 reserved:6                  (2 bytes)
//! seq:     0: opcode:8 | 1: seqnum:8 | 2: immediate:1 retransmit:1 reserved:6    (3 bytes)
//! ```
//!
//! Both exist because the reference's P4 reporter sends the compact form and its TRex profiles the seq form.
//! Nothing on the wire tells them apart, so the form is configuration and a view is built for one form.

use serde::{Deserialize, Serialize};

use super::Opcode;
use crate::error::{check_len, check_room};
use crate::field::{f, FieldSpec};
use crate::{Error, Result};

/// Byte offsets and bit masks of the base header's fields: the one statement of where each lies, which the
/// view reads and the report's fast path uses.
pub mod field {
    /// The DTA opcode.
    pub const OPCODE: usize = 0;
    /// Seq form only.
    pub const SEQNUM: usize = 1;
    /// The flags byte follows the opcode in the compact form and the seqnum in the seq form.
    pub const COMPACT_FLAGS: usize = 1;
    /// The flags byte of the seq form.
    pub const SEQ_FLAGS: usize = 2;
    /// Immediate, in the flags byte.
    pub const IMMEDIATE: u8 = 0x80;
    /// Retransmit, in the flags byte.
    pub const RETRANSMIT: u8 = 0x40;
    /// The six reserved bits of the flags byte, which must be zero.
    pub const RESERVED: u8 = 0x3F;
}

pub(crate) const HEADER: &str = "DTA base";

/// Length of the compact form.
pub const COMPACT_LEN: usize = field::COMPACT_FLAGS + 1;
/// Length of the seq form.
pub const SEQ_LEN: usize = field::SEQ_FLAGS + 1;

/// Fields of the compact form.
pub const LAYOUT_COMPACT: &[FieldSpec] = &[
    f("opcode", 8),
    f("immediate", 1),
    f("retransmit", 1),
    f("reserved", 6),
];
/// Fields of the seq form.
pub const LAYOUT_SEQ: &[FieldSpec] = &[
    f("opcode", 8),
    f("seqnum", 8),
    f("immediate", 1),
    f("retransmit", 1),
    f("reserved", 6),
];
/// Fields of the default (seq) form.
pub const LAYOUT: &[FieldSpec] = LAYOUT_SEQ;

/// Which base header the reporters send (`dta_header = "seq"` or `"compact"` in configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HeaderForm {
    /// `opcode, immediate, retransmit, reserved`: the reference's P4 reporter.
    Compact,
    /// `opcode, seqnum, immediate, retransmit, reserved`: the reference's TRex profiles; needed for NACKs.
    #[default]
    Seq,
}

impl HeaderForm {
    /// Length of the base header in this form.
    pub const fn header_len(self) -> usize {
        match self {
            HeaderForm::Compact => COMPACT_LEN,
            HeaderForm::Seq => SEQ_LEN,
        }
    }

    /// The form's `LAYOUT` table.
    pub const fn layout(self) -> &'static [FieldSpec] {
        match self {
            HeaderForm::Compact => LAYOUT_COMPACT,
            HeaderForm::Seq => LAYOUT_SEQ,
        }
    }

    /// Offset of the flags byte (immediate, retransmit, reserved): the form's last byte.
    pub const fn flags_offset(self) -> usize {
        match self {
            HeaderForm::Compact => field::COMPACT_FLAGS,
            HeaderForm::Seq => field::SEQ_FLAGS,
        }
    }
}

/// A read/write view of a base header of a given form at the start of a buffer.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
    form: HeaderForm,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking its length; accessors may panic on a short buffer.
    pub const fn new_unchecked(buffer: T, form: HeaderForm) -> Self {
        Packet { buffer, form }
    }

    /// Wraps a buffer that must hold at least a whole base header of `form`.
    pub fn new_checked(buffer: T, form: HeaderForm) -> Result<Self> {
        check_len(HEADER, buffer.as_ref(), form.header_len())?;
        Ok(Packet { buffer, form })
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The form this view reads.
    pub fn form(&self) -> HeaderForm {
        self.form
    }

    /// Length of the base header in this view's form.
    pub fn header_len(&self) -> usize {
        self.form.header_len()
    }

    /// The raw opcode.
    pub fn opcode(&self) -> u8 {
        self.buffer.as_ref()[field::OPCODE]
    }
    /// The sequence number; `None` in the compact form, which has none.
    pub fn seqnum(&self) -> Option<u8> {
        match self.form {
            HeaderForm::Compact => None,
            HeaderForm::Seq => Some(self.buffer.as_ref()[field::SEQNUM]),
        }
    }
    fn flags(&self) -> u8 {
        self.buffer.as_ref()[self.form.flags_offset()]
    }
    /// The report should reach the collector's CPU at once.
    pub fn immediate(&self) -> bool {
        self.flags() & field::IMMEDIATE != 0
    }
    /// The report may be retransmitted: the translator tracks its seqnum and NACKs gaps.
    pub fn retransmit(&self) -> bool {
        self.flags() & field::RETRANSMIT != 0
    }
    /// The six reserved bits.
    pub fn reserved(&self) -> u8 {
        self.flags() & field::RESERVED
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Packet<&'a T> {
    /// The bytes after the base header: the sub-header.
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[self.form.header_len()..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the opcode.
    pub fn set_opcode(&mut self, v: u8) {
        self.buffer.as_mut()[field::OPCODE] = v;
    }
    /// Sets the sequence number. The compact form has no seqnum field, so there this writes nothing.
    pub fn set_seqnum(&mut self, v: u8) {
        if self.form == HeaderForm::Seq {
            self.buffer.as_mut()[field::SEQNUM] = v;
        }
    }
    fn update_flags(&mut self, mask: u8, bits: u8) {
        let i = self.form.flags_offset();
        let b = &mut self.buffer.as_mut()[i];
        *b = (*b & !mask) | (bits & mask);
    }
    /// Sets the immediate flag, leaving the other bits.
    pub fn set_immediate(&mut self, v: bool) {
        self.update_flags(field::IMMEDIATE, if v { 0xFF } else { 0 });
    }
    /// Sets the retransmit flag, leaving the other bits.
    pub fn set_retransmit(&mut self, v: bool) {
        self.update_flags(field::RETRANSMIT, if v { 0xFF } else { 0 });
    }
    /// Sets the reserved bits (low six bits of `v`), leaving the flags.
    pub fn set_reserved(&mut self, v: u8) {
        self.update_flags(field::RESERVED, v);
    }
}

/// A parsed base header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BaseRepr {
    /// Opcode, which selects the sub-header.
    pub opcode: Opcode,
    /// Sequence number: `Some` exactly in the seq form, `None` in the compact form.
    pub seqnum: Option<u8>,
    /// Immediate flag.
    pub immediate: bool,
    /// Retransmit flag.
    pub retransmit: bool,
}

impl BaseRepr {
    /// A base header of `form` with both flags clear; `seqnum` is dropped in the compact form.
    pub const fn new(opcode: Opcode, form: HeaderForm, seqnum: u8) -> Self {
        let seqnum = match form {
            HeaderForm::Compact => None,
            HeaderForm::Seq => Some(seqnum),
        };
        BaseRepr {
            opcode,
            seqnum,
            immediate: false,
            retransmit: false,
        }
    }

    /// The form this header is emitted in, which its `seqnum` decides.
    pub const fn form(&self) -> HeaderForm {
        match self.seqnum {
            Some(_) => HeaderForm::Seq,
            None => HeaderForm::Compact,
        }
    }

    /// Parses a base header: the opcode must be known and the reserved bits zero.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Self> {
        let opcode = Opcode::from_code(packet.opcode())?;
        if packet.reserved() != 0 {
            return Err(Error::InvalidField {
                header: HEADER,
                field: "reserved",
                value: packet.reserved().into(),
            });
        }
        Ok(BaseRepr {
            opcode,
            seqnum: packet.seqnum(),
            immediate: packet.immediate(),
            retransmit: packet.retransmit(),
        })
    }

    /// Bytes [`emit`](Self::emit) writes.
    pub const fn buffer_len(&self) -> usize {
        self.form().header_len()
    }

    /// Writes the header, in the form its `seqnum` selects, into the first [`buffer_len`](Self::buffer_len)
    /// bytes of `buf`; the reserved bits are written as zero.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        let len = self.buffer_len();
        check_room(buf, len)?;
        let mut p = Packet::new_unchecked(&mut buf[..len], self.form());
        p.set_opcode(self.opcode.code());
        if let Some(s) = self.seqnum {
            p.set_seqnum(s);
        }
        p.set_immediate(self.immediate);
        p.set_retransmit(self.retransmit);
        p.set_reserved(0);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::layout_check::{case, check, Case};

    fn cases(form: HeaderForm) -> Vec<Case> {
        let set = move |b: &mut [u8], f: fn(&mut Packet<&mut [u8]>)| {
            f(&mut Packet::new_unchecked(b, form))
        };
        let get = move |b: &[u8], f: fn(&Packet<&[u8]>) -> bool| f(&Packet::new_unchecked(b, form));
        let mut v = vec![case(
            "opcode",
            move |b| set(b, |p| p.set_opcode(0xFF)),
            move |b| get(b, |p| p.opcode() == 0xFF),
        )];
        if form == HeaderForm::Seq {
            v.push(case(
                "seqnum",
                move |b| set(b, |p| p.set_seqnum(0xFF)),
                move |b| get(b, |p| p.seqnum() == Some(0xFF)),
            ));
        }
        v.push(case(
            "immediate",
            move |b| set(b, |p| p.set_immediate(true)),
            move |b| get(b, |p| p.immediate()),
        ));
        v.push(case(
            "retransmit",
            move |b| set(b, |p| p.set_retransmit(true)),
            move |b| get(b, |p| p.retransmit()),
        ));
        v.push(case(
            "reserved",
            move |b| set(b, |p| p.set_reserved(0xFF)),
            move |b| get(b, |p| p.reserved() == 0x3F),
        ));
        v
    }

    #[test]
    fn layouts_match_accessors() {
        check(LAYOUT_COMPACT, COMPACT_LEN, &cases(HeaderForm::Compact));
        check(LAYOUT_SEQ, SEQ_LEN, &cases(HeaderForm::Seq));
        assert_eq!(HeaderForm::default().layout(), LAYOUT);
    }

    #[test]
    fn parses_and_emits_seq() {
        // Key-Increment, seqnum 0x2a, immediate clear, retransmit set.
        let bytes = [0x03, 0x2a, 0x40];
        let p = Packet::new_checked(&bytes[..], HeaderForm::Seq).unwrap();
        let r = BaseRepr::parse(&p).unwrap();
        assert_eq!(
            r,
            BaseRepr {
                opcode: Opcode::KeyIncrement,
                seqnum: Some(0x2a),
                immediate: false,
                retransmit: true
            }
        );
        let mut out = [0xEEu8; 3];
        r.emit(&mut out).unwrap();
        assert_eq!(out, bytes);
    }

    #[test]
    fn parses_and_emits_compact() {
        // Key-Write, immediate set, retransmit clear.
        let bytes = [0x01, 0x80];
        let p = Packet::new_checked(&bytes[..], HeaderForm::Compact).unwrap();
        let r = BaseRepr::parse(&p).unwrap();
        assert_eq!(
            r,
            BaseRepr {
                opcode: Opcode::KeyWrite,
                seqnum: None,
                immediate: true,
                retransmit: false
            }
        );
        assert_eq!(r.buffer_len(), 2);
        let mut out = [0xEEu8; 2];
        r.emit(&mut out).unwrap();
        assert_eq!(out, bytes);
        assert_eq!(
            BaseRepr::new(Opcode::Append, HeaderForm::Compact, 7).seqnum,
            None
        );
        assert_eq!(
            BaseRepr::new(Opcode::Append, HeaderForm::Seq, 7).seqnum,
            Some(7)
        );
    }

    #[test]
    fn rejects_bad_input() {
        assert_eq!(
            Packet::new_checked(&[0x01, 0x00][..], HeaderForm::Seq).unwrap_err(),
            Error::Truncated {
                header: "DTA base",
                needed: 3,
                available: 2
            }
        );
        let p = Packet::new_checked(&[0x07, 0x00][..], HeaderForm::Compact).unwrap();
        assert_eq!(BaseRepr::parse(&p), Err(Error::UnknownOpcode(0x07)));
        let p = Packet::new_checked(&[0x01, 0x00, 0x01][..], HeaderForm::Seq).unwrap();
        assert_eq!(
            BaseRepr::parse(&p),
            Err(Error::InvalidField {
                header: "DTA base",
                field: "reserved",
                value: 1
            })
        );
        let r = BaseRepr::new(Opcode::KeyWrite, HeaderForm::Seq, 0);
        assert_eq!(
            r.emit(&mut [0u8; 2]),
            Err(Error::BufferTooSmall {
                needed: 3,
                available: 2
            })
        );
    }

    #[test]
    fn form_is_configured_in_lowercase() {
        // serde's value deserializer checks the names without a format crate.
        use serde::de::value::{Error as DeError, StrDeserializer};
        use serde::de::IntoDeserializer;
        let seq: StrDeserializer<'_, DeError> = "seq".into_deserializer();
        assert_eq!(HeaderForm::deserialize(seq).unwrap(), HeaderForm::Seq);
        let compact: StrDeserializer<'_, DeError> = "compact".into_deserializer();
        assert_eq!(
            HeaderForm::deserialize(compact).unwrap(),
            HeaderForm::Compact
        );
    }
}
