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

/// The primitives, declared once: each line is a primitive's wire code, the name of its constant in
/// [`opcode`], its sub-header's type (the report body's variant, which implements `SubHeader`: its parse
/// arm and the state `peek` reads), its metric label, its name in the P4 contract and in pktgen's summary.
/// Everything per primitive in this crate is generated from it: [`Opcode`] and its tables (below), the
/// report's [`Body`] and its methods (`report.rs`), the parse's dispatch (`parse.rs`) and [`peek`]'s
/// (`peek.rs`), so a primitive is one line here (and its `pub mod` and `pub use`) plus its sub-header's
/// module; every match on [`Opcode`] or [`Body`] elsewhere is exhaustive and fails to compile until it
/// handles the new one. `with_primitives!(m)` calls the macro `m` with the list.
macro_rules! with_primitives {
    ($then:ident) => {
        $then! {
            /// Key-Write: store data under a key, N copies.
            KeyWrite = 0x01, KEY_WRITE, body $crate::dta::KeyWriteRepr<'a>,
                label "key_write", contract "key_write", summary "keywrite";
            /// Append: add an entry to a list.
            Append = 0x02, APPEND, body $crate::dta::AppendRepr<'a>,
                label "append", contract "append", summary "append";
            /// Key-Increment: add to a counter under a key, N copies.
            KeyIncrement = 0x03, KEY_INCREMENT, body $crate::dta::KeyIncrementRepr,
                label "key_increment", contract "key_increment", summary "keyincrement";
            /// Postcarding: one hop's value of a flow's path; path length is the configured B.
            Postcard = 0x04, POSTCARD, body $crate::dta::PostcardRepr,
                label "postcard", contract "postcard", summary "postcard";
            /// Sketch-Merge: one column of a reporter's sketch.
            SketchMerge = 0x05, SKETCH_MERGE, body $crate::dta::SketchRepr<'a>,
                label "sketch_merge", contract "sketch_merge", summary "sketch";
            /// Postcarding with the path length carried in the report.
            PostcardPathLen = 0x06, POSTCARD_PATH_LEN, body $crate::dta::PostcardPathLenRepr,
                label "postcard_path_len", contract "postcard_pathlen", summary "postcard_pathlen";
        }
    };
}

pub mod append;
pub mod base;
mod format;
pub mod keyincrement;
pub mod keywrite;
pub mod nack;
mod parse;
pub mod peek;
pub mod postcard;
pub mod report;
pub mod sketch;
mod subheader;

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

/// From the primitives' list: the [`opcode`] constants, [`Opcode`] with its code, index and names,
/// [`Opcode::ALL`] and [`Opcode::COUNT`] (the size of every per-primitive counter array); the translator's
/// counters, its metric labels, pktgen's summary and the P4 contract all read them.
macro_rules! primitives {
    ($(
        $(#[$doc:meta])*
        $variant:ident = $code:literal, $constant:ident, body $body:ty,
        label $label:literal, contract $contract:literal, summary $summary:literal;
    )*) => {
        /// The DTA opcodes' wire values, for code that matches on the raw byte (the report's fast path);
        /// [`Opcode`] is the typed form and maps to and from exactly these.
        pub mod opcode {
            $(
                $(#[$doc])*
                pub const $constant: u8 = $code;
            )*
        }

        /// The DTA opcodes: 0x01–0x04 as in the reference, 0x05–0x06 are this project's.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Opcode {
            $(
                $(#[$doc])*
                $variant,
            )*
        }

        impl Opcode {
            /// Every primitive, in declaration order (the order of [`index`](Self::index)).
            pub const ALL: [Opcode; [$(Opcode::$variant),*].len()] = [$(Opcode::$variant),*];
            /// How many primitives there are: the length of every per-primitive array.
            pub const COUNT: usize = Self::ALL.len();

            /// The opcode's wire value.
            pub const fn code(self) -> u8 {
                match self {
                    $(Opcode::$variant => opcode::$constant,)*
                }
            }

            /// The opcode for a wire value.
            pub const fn from_code(code: u8) -> Result<Self> {
                Ok(match code {
                    $(opcode::$constant => Opcode::$variant,)*
                    other => return Err(Error::UnknownOpcode(other)),
                })
            }

            /// Its position in [`ALL`](Self::ALL): the index of per-primitive arrays.
            pub const fn index(self) -> usize {
                self as usize
            }

            /// Its label in metrics (`primitive="key_write"`).
            pub const fn label(self) -> &'static str {
                match self {
                    $(Opcode::$variant => $label,)*
                }
            }

            /// Its name in the P4 contract (`contract.rs`).
            pub const fn contract_name(self) -> &'static str {
                match self {
                    $(Opcode::$variant => $contract,)*
                }
            }

            /// Its name in pktgen's JSON summary.
            pub const fn summary_name(self) -> &'static str {
                match self {
                    $(Opcode::$variant => $summary,)*
                }
            }
        }
    };
}

with_primitives!(primitives);

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
