//! A cheap look at a report: its opcode, retransmit flag and the field its translator state hangs on.
//!
//! The translator's I/O thread must pick the worker that owns a report's state before any worker parses
//! it, for every frame, so this reads only the bytes it needs (no length checks beyond them, no reserved
//! bits, no allocation). It judges nothing: a report it can read here may still be refused by the full
//! parse in [`super::report`], on the worker that then counts it.

use super::subheader::SubHeader;
use super::{base, HeaderForm, Opcode};

pub use super::subheader::StateKey;

/// What [`peek`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Peek {
    /// The opcode.
    pub opcode: Opcode,
    /// The base header's retransmit flag.
    pub retransmit: bool,
    /// The state the report touches; `None` when the report ends before that field.
    pub state: Option<StateKey>,
}

/// Peeks at a report (a UDP payload) whose base header has `form`. `None` when the base header is
/// incomplete or the opcode unknown.
#[inline]
pub fn peek(report: &[u8], form: HeaderForm) -> Option<Peek> {
    let b = base::Packet::new_checked(report, form).ok()?;
    let opcode = Opcode::from_code(b.opcode()).ok()?;
    Some(peek_as(opcode, b.payload(), b.retransmit()))
}

/// The [`Peek`] of each opcode's report, from the primitives' list (`with_primitives!` in `mod.rs`): its
/// state is its sub-header's [`SubHeader::state`]. Each arm builds the whole `Peek`: the translator
/// daemon's steering runs this per frame, and a match that returned only the state, merged before the
/// rest was built, cost it 3 instructions a frame more than the hand-written match this replaced;
/// built per arm it costs 8 to 12 fewer (callgrind, 2 workers: Steering::target 94.2 -> 86.2 per frame
/// of Key-Increment, 120.5 -> 108.7 of Postcarding).
macro_rules! states {
    ($(
        $(#[$doc:meta])*
        $variant:ident = $code:literal, $constant:ident, body $body:ty,
        label $label:literal, contract $contract:literal, summary $summary:literal;
    )*) => {
        #[inline(always)]
        // `'a` is the lifetime the list's borrowing sub-header types name; only `sub` is read.
        #[allow(clippy::extra_unused_lifetimes)]
        fn peek_as<'a>(opcode: Opcode, sub: &[u8], retransmit: bool) -> Peek {
            match opcode {
                $(Opcode::$variant => Peek {
                    opcode: Opcode::$variant,
                    retransmit,
                    state: <$body as SubHeader>::state(sub),
                },)*
            }
        }
    };
}

with_primitives!(states);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_owner_fields_of_each_opcode() {
        // Seq form: opcode, seqnum, flags; then the sub-header.
        let kw = [0x01, 9, 0x40, 1, 0, 0, 0, 7, 0xAA, 0xBB, 0xCC, 0xDD];
        assert_eq!(
            peek(&kw, HeaderForm::Seq),
            Some(Peek {
                opcode: Opcode::KeyWrite,
                retransmit: true,
                state: Some(StateKey::Key(7)),
            })
        );
        // Compact form: opcode, flags.
        let ki = [0x03, 0x00, 2, 0, 0, 1, 0];
        let p = peek(&ki, HeaderForm::Compact).unwrap();
        assert_eq!((p.opcode, p.retransmit), (Opcode::KeyIncrement, false));
        assert_eq!(p.state, Some(StateKey::Key(0x100)));
        let append = [0x02, 0, 0, 0, 0, 0, 5, 1, 2, 3, 4];
        assert_eq!(
            peek(&append, HeaderForm::Seq).unwrap().state,
            Some(StateKey::List(5))
        );
        for op in [0x04, 0x06] {
            let pc = [op, 0, 0, 0, 0, 1, 2, 1, 0, 0, 0, 0];
            assert_eq!(
                peek(&pc, HeaderForm::Seq).unwrap().state,
                Some(StateKey::Flow(0x102))
            );
        }
        let sk = [0x05, 0, 0, 9, 0, 0, 1];
        assert_eq!(
            peek(&sk, HeaderForm::Seq).unwrap().state,
            Some(StateKey::Sketch(9))
        );
        assert_eq!(StateKey::Sketch(9).value(), 9);
    }

    #[test]
    fn short_or_unknown_reports() {
        assert_eq!(peek(&[], HeaderForm::Compact), None);
        assert_eq!(peek(&[0x02, 0], HeaderForm::Seq), None, "no flags byte");
        assert_eq!(peek(&[0x07, 0, 0, 1, 2, 3, 4], HeaderForm::Seq), None);
        // A whole base header but a cut key: the flag is read, the state is not.
        let p = peek(&[0x01, 0, 0x40, 1, 0, 0], HeaderForm::Seq).unwrap();
        assert!(p.retransmit);
        assert_eq!(p.state, None);
    }
}
