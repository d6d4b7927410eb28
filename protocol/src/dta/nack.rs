//! DTA NACK (translator → reporter, UDP destination [`DTA_NACK_UDP_PORT`](super::DTA_NACK_UDP_PORT)).
//!
//! ```text
//! base header (the reporter's form, the reporter's opcode, flags clear)
//! 0: seqnum:8 (last in-order seqnum) | 1: nack:1 reserved:7
//! ```
//!
//! In the seq form the base header has a seqnum field too; a NACK puts the same last-in-order seqnum there,
//! so a reporter that reads only the base header (as it does for reports) still sees where to resume. A NACK
//! whose two seqnums differ is rejected. A NACK carries no flags: they are sent clear, and a NACK with either
//! set is rejected rather than silently normalised, so every accepted NACK re-emits to the same bytes.
//!
//! The reference puts its ack header before the base header and only with `DO_NACK_TRACKING`; we follow
//! DESIGN.md section 2 (base header first), which is also what a reporter's report parser expects.

use super::base::{self, BaseRepr, HeaderForm};
use super::{check_exact_len, Opcode};
use crate::error::{check_len, check_room};
use crate::field::{f, FieldSpec};
use crate::{Error, Result};

mod field {
    pub const SEQNUM: usize = 0;
    pub const FLAGS: usize = 1;
    pub const NACK: u8 = 0x80;
    pub const RESERVED: u8 = 0x7F;
}

const HEADER: &str = "DTA NACK";

/// Length of the NACK sub-header (after the base header).
pub const HEADER_LEN: usize = field::FLAGS + 1;
/// Fields of the NACK sub-header.
pub const LAYOUT: &[FieldSpec] = &[f("seqnum", 8), f("nack", 1), f("reserved", 7)];

/// A read/write view of the NACK sub-header (the two bytes after the base header).
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking its length; accessors may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Self {
        Packet { buffer }
    }

    /// Wraps a buffer that must hold at least the NACK sub-header.
    pub fn new_checked(buffer: T) -> Result<Self> {
        check_len(HEADER, buffer.as_ref(), HEADER_LEN)?;
        Ok(Packet { buffer })
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The last seqnum the translator received in order from this reporter.
    pub fn seqnum(&self) -> u8 {
        self.buffer.as_ref()[field::SEQNUM]
    }
    /// The NACK flag: reports after `seqnum` were lost.
    pub fn nack(&self) -> bool {
        self.buffer.as_ref()[field::FLAGS] & field::NACK != 0
    }
    /// The seven reserved bits.
    pub fn reserved(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS] & field::RESERVED
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the last in-order seqnum.
    pub fn set_seqnum(&mut self, v: u8) {
        self.buffer.as_mut()[field::SEQNUM] = v;
    }
    /// Sets the NACK flag, leaving the reserved bits.
    pub fn set_nack(&mut self, v: bool) {
        let b = &mut self.buffer.as_mut()[field::FLAGS];
        *b = (*b & !field::NACK) | if v { field::NACK } else { 0 };
    }
    /// Sets the reserved bits (low seven bits of `v`), leaving the NACK flag.
    pub fn set_reserved(&mut self, v: u8) {
        let b = &mut self.buffer.as_mut()[field::FLAGS];
        *b = (*b & !field::RESERVED) | (v & field::RESERVED);
    }
}

/// A parsed DTA NACK (base header and NACK sub-header).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NackRepr {
    /// The opcode of the reports being NACKed.
    pub opcode: Opcode,
    /// The last seqnum received in order; the reporter resends from the one after.
    pub seqnum: u8,
    /// The NACK flag; the translator always sets it (a clear flag would be a positive acknowledgement).
    pub nack: bool,
}

impl NackRepr {
    /// Parses a whole UDP payload holding a NACK with a base header of `form`.
    pub fn parse(udp_payload: &[u8], form: HeaderForm) -> Result<Self> {
        let b = base::Packet::new_checked(udp_payload, form)?;
        let base = BaseRepr::parse(&b)?;
        let p = Packet::new_checked(b.payload())?;
        check_exact_len(HEADER, b.payload(), HEADER_LEN)?;
        if base.immediate || base.retransmit {
            let flags = u64::from(base.immediate) << 1 | u64::from(base.retransmit);
            return Err(Error::InvalidField {
                header: HEADER,
                field: "flags",
                value: flags,
            });
        }
        if let Some(s) = base.seqnum.filter(|&s| s != p.seqnum()) {
            return Err(Error::InvalidField {
                header: HEADER,
                field: "seqnum",
                value: s.into(),
            });
        }
        if p.reserved() != 0 {
            return Err(Error::InvalidField {
                header: HEADER,
                field: "reserved",
                value: p.reserved().into(),
            });
        }
        Ok(NackRepr {
            opcode: base.opcode,
            seqnum: p.seqnum(),
            nack: p.nack(),
        })
    }

    /// Bytes [`emit`](Self::emit) writes in `form`.
    pub const fn buffer_len(&self, form: HeaderForm) -> usize {
        form.header_len() + HEADER_LEN
    }

    /// Writes the NACK with a base header of `form` at the start of `buf`; returns the bytes written.
    pub fn emit(&self, buf: &mut [u8], form: HeaderForm) -> Result<usize> {
        let len = self.buffer_len(form);
        check_room(buf, len)?;
        let base = BaseRepr::new(self.opcode, form, self.seqnum);
        let (head, rest) = buf.split_at_mut(base.buffer_len());
        base.emit(head)?;
        let mut p = Packet::new_unchecked(&mut rest[..HEADER_LEN]);
        p.set_seqnum(self.seqnum);
        p.set_nack(self.nack);
        p.set_reserved(0);
        Ok(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::layout_check::{case, check};

    // Seq form: Key-Write, base seqnum 0x11, flags 0; NACK seqnum 0x11, nack set.
    const SEQ: [u8; 5] = [0x01, 0x11, 0x00, 0x11, 0x80];
    // Compact form: Append, flags 0; NACK seqnum 0xfe, nack set.
    const COMPACT: [u8; 4] = [0x02, 0x00, 0xfe, 0x80];

    #[test]
    fn layout_matches_accessors() {
        check(
            LAYOUT,
            HEADER_LEN,
            &[
                case(
                    "seqnum",
                    |b| Packet::new_unchecked(b).set_seqnum(0xFF),
                    |b| Packet::new_unchecked(b).seqnum() == 0xFF,
                ),
                case(
                    "nack",
                    |b| Packet::new_unchecked(b).set_nack(true),
                    |b| Packet::new_unchecked(b).nack(),
                ),
                case(
                    "reserved",
                    |b| Packet::new_unchecked(b).set_reserved(0xFF),
                    |b| Packet::new_unchecked(b).reserved() == 0x7F,
                ),
            ],
        );
    }

    #[test]
    fn parses_and_emits_both_forms() {
        let r = NackRepr::parse(&SEQ, HeaderForm::Seq).unwrap();
        assert_eq!(
            r,
            NackRepr {
                opcode: Opcode::KeyWrite,
                seqnum: 0x11,
                nack: true
            }
        );
        let mut out = [0xEEu8; 8];
        assert_eq!(r.emit(&mut out, HeaderForm::Seq), Ok(5));
        assert_eq!(out[..5], SEQ);

        let r = NackRepr::parse(&COMPACT, HeaderForm::Compact).unwrap();
        assert_eq!(
            r,
            NackRepr {
                opcode: Opcode::Append,
                seqnum: 0xfe,
                nack: true
            }
        );
        assert_eq!(r.buffer_len(HeaderForm::Compact), 4);
        let mut out = [0xEEu8; 4];
        assert_eq!(r.emit(&mut out, HeaderForm::Compact), Ok(4));
        assert_eq!(out, COMPACT);
    }

    #[test]
    fn rejects_bad_input() {
        assert!(matches!(
            NackRepr::parse(&SEQ[..2], HeaderForm::Seq),
            Err(Error::Truncated {
                header: "DTA base",
                ..
            })
        ));
        assert_eq!(
            NackRepr::parse(&SEQ[..4], HeaderForm::Seq),
            Err(Error::Truncated {
                header: HEADER,
                needed: 2,
                available: 1
            })
        );
        assert_eq!(
            NackRepr::parse(&[0x02, 0x00, 0xfe, 0x80, 0x00], HeaderForm::Compact),
            Err(Error::LengthMismatch {
                header: HEADER,
                expected: 2,
                actual: 3
            })
        );
        assert_eq!(
            NackRepr::parse(&[0x09, 0x11, 0x00, 0x11, 0x80], HeaderForm::Seq),
            Err(Error::UnknownOpcode(9))
        );
        assert_eq!(
            NackRepr::parse(&[0x01, 0x10, 0x00, 0x11, 0x80], HeaderForm::Seq),
            Err(Error::InvalidField {
                header: HEADER,
                field: "seqnum",
                value: 0x10
            })
        );
        assert_eq!(
            NackRepr::parse(&[0x01, 0x11, 0x40, 0x11, 0x80], HeaderForm::Seq),
            Err(Error::InvalidField {
                header: HEADER,
                field: "flags",
                value: 1
            })
        );
        assert_eq!(
            NackRepr::parse(&[0x02, 0x00, 0xfe, 0x81], HeaderForm::Compact),
            Err(Error::InvalidField {
                header: HEADER,
                field: "reserved",
                value: 1
            })
        );
        let r = NackRepr {
            opcode: Opcode::KeyWrite,
            seqnum: 0,
            nack: true,
        };
        assert_eq!(
            r.emit(&mut [0u8; 4], HeaderForm::Seq),
            Err(Error::BufferTooSmall {
                needed: 5,
                available: 4
            })
        );
    }
}
