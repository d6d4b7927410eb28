//! DTA reports (reporter → translator) and DTA NACKs (translator → reporter), DESIGN.md section 2.
//!
//! A report is the whole UDP payload: a base header ([`base`], compact or seq form, chosen by configuration)
//! followed by exactly one sub-header chosen by the opcode ([`keywrite`], [`append`], [`keyincrement`],
//! [`postcard`], [`sketch`]). Nothing follows the sub-header, so every parser here insists on the exact length:
//! a report with stray bytes is as suspect as a short one. [`report`] ties the pieces together with the
//! configured data sizes ([`ReportFormat`]); [`nack`] is the NACK that goes back to the reporter; [`peek`]
//! reads just enough of a report to route it.
//!
//! Every header has a zero-copy `Packet` view, a `Repr` and a `LAYOUT` table (see [`crate::contract`]).
//! Reserved bits must be zero: a report that sets one is rejected as [`Error::InvalidField`] rather than
//! silently reinterpreted, so a future use of those bits can never be misread by this parser, and every
//! accepted report re-emits to the very same bytes.

pub mod append;
pub mod base;
pub mod keyincrement;
pub mod keywrite;
pub mod nack;
pub mod peek;
pub mod postcard;
pub mod report;
pub mod sketch;

pub use append::AppendRepr;
pub use base::{BaseRepr, HeaderForm};
pub use keyincrement::KeyIncrementRepr;
pub use keywrite::KeyWriteRepr;
pub use nack::NackRepr;
pub use peek::{peek, Peek, StateKey};
pub use postcard::{PostcardPathLenRepr, PostcardRepr};
pub use report::{Body, ReportFormat, ReportRepr};
pub use sketch::{SketchOp, SketchRepr};

use crate::{Error, Result};

/// UDP destination port of DTA reports (the reference's; the translator may be configured otherwise).
pub const DTA_UDP_PORT: u16 = 40040;
/// UDP destination port of DTA NACKs sent back to a reporter.
pub const DTA_NACK_UDP_PORT: u16 = 40044;
/// Largest Key-Write / Key-Increment redundancy accepted (the reference stops at 4).
pub const N_MAX: u8 = 8;

/// The DTA opcodes' wire values, for code that matches on the raw byte (the report's fast path); [`Opcode`]
/// is the typed form and maps to and from exactly these.
pub mod opcode {
    /// Key-Write.
    pub const KEY_WRITE: u8 = 0x01;
    /// Append.
    pub const APPEND: u8 = 0x02;
    /// Key-Increment.
    pub const KEY_INCREMENT: u8 = 0x03;
    /// Postcarding.
    pub const POSTCARD: u8 = 0x04;
    /// Sketch-Merge.
    pub const SKETCH_MERGE: u8 = 0x05;
    /// Postcarding with the path length carried in the report.
    pub const POSTCARD_PATH_LEN: u8 = 0x06;
}

/// The DTA opcodes: 0x01–0x04 as in the reference, 0x05–0x06 are this project's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Opcode {
    /// Key-Write: store data under a key, N copies.
    KeyWrite,
    /// Append: add an entry to a list.
    Append,
    /// Key-Increment: add to a counter under a key, N copies.
    KeyIncrement,
    /// Postcarding: one hop's value of a flow's path; path length is the configured B.
    Postcard,
    /// Sketch-Merge: one column of a reporter's sketch.
    SketchMerge,
    /// Postcarding with the path length carried in the report.
    PostcardPathLen,
}

impl Opcode {
    /// The opcode's wire value.
    pub const fn code(self) -> u8 {
        match self {
            Opcode::KeyWrite => opcode::KEY_WRITE,
            Opcode::Append => opcode::APPEND,
            Opcode::KeyIncrement => opcode::KEY_INCREMENT,
            Opcode::Postcard => opcode::POSTCARD,
            Opcode::SketchMerge => opcode::SKETCH_MERGE,
            Opcode::PostcardPathLen => opcode::POSTCARD_PATH_LEN,
        }
    }

    /// The opcode for a wire value.
    pub const fn from_code(code: u8) -> Result<Self> {
        Ok(match code {
            opcode::KEY_WRITE => Opcode::KeyWrite,
            opcode::APPEND => Opcode::Append,
            opcode::KEY_INCREMENT => Opcode::KeyIncrement,
            opcode::POSTCARD => Opcode::Postcard,
            opcode::SKETCH_MERGE => Opcode::SketchMerge,
            opcode::POSTCARD_PATH_LEN => Opcode::PostcardPathLen,
            other => return Err(Error::UnknownOpcode(other)),
        })
    }
}

/// Rejects a redundancy outside `1..=N_MAX`; it is never clamped, because a clamped report would land in
/// fewer slots than its reporter and its queries assume.
pub(crate) fn check_redundancy(value: u8) -> Result<()> {
    if value == 0 || value > N_MAX {
        Err(Error::BadRedundancy { value, max: N_MAX })
    } else {
        Ok(())
    }
}

/// Requires a sub-header buffer to be exactly `expected` bytes: the sub-header is the end of the UDP payload.
pub(crate) fn check_exact_len(header: &'static str, buf: &[u8], expected: usize) -> Result<()> {
    if buf.len() != expected {
        Err(Error::LengthMismatch {
            header,
            expected,
            actual: buf.len(),
        })
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opcodes_round_trip() {
        for code in 0..=u8::MAX {
            match Opcode::from_code(code) {
                Ok(op) => assert_eq!(op.code(), code),
                Err(e) => {
                    assert!(code == 0 || code > 6);
                    assert_eq!(e, Error::UnknownOpcode(code));
                }
            }
        }
        assert_eq!(Opcode::from_code(0x05), Ok(Opcode::SketchMerge));
        assert_eq!(Opcode::PostcardPathLen.code(), 0x06);
    }

    #[test]
    fn redundancy_bounds() {
        assert_eq!(
            check_redundancy(0),
            Err(Error::BadRedundancy { value: 0, max: 8 })
        );
        assert_eq!(check_redundancy(1), Ok(()));
        assert_eq!(check_redundancy(8), Ok(()));
        assert_eq!(
            check_redundancy(9),
            Err(Error::BadRedundancy { value: 9, max: 8 })
        );
    }
}
