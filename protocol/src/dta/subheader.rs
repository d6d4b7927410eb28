//! What every sub-header gives the report that carries it: its parse from the bytes after the base header
//! (the one parse's arm for its opcode) and the field its translator state hangs on ([`StateKey`], what
//! [`peek`](super::peek) reads). The report's body, its parse dispatch and `peek` are generated from the
//! primitives' list in `mod.rs`, each naming its sub-header's type, so a primitive whose sub-header does not
//! implement [`SubHeader`] does not compile.

use super::format::ReportFormat;
use super::N_MAX;
use crate::refusal::Refusal;
use crate::Error;

/// The field that names the translator state a report touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StateKey {
    /// Key-Write or Key-Increment: the key.
    Key(u32),
    /// Append: the list ID.
    List(u32),
    /// Postcarding (either opcode): the flow key.
    Flow(u32),
    /// Sketch-Merge: the sketch ID.
    Sketch(u8),
}

impl StateKey {
    /// The key's value, widened to 32 bits.
    pub const fn value(self) -> u32 {
        match self {
            StateKey::Key(v) | StateKey::List(v) | StateKey::Flow(v) => v,
            StateKey::Sketch(id) => id as u32,
        }
    }
}

/// A sub-header as a report carries it.
pub(crate) trait SubHeader<'a>: Sized {
    /// The sub-header from `rest`, the report's bytes after a base header already checked (length and
    /// reserved bits), under `fmt`; the checks in the order its fields lie (see `parse.rs`).
    fn parse_body<M: Refusal>(rest: &'a [u8], fmt: &ReportFormat) -> Result<Self, M::Err>;

    /// The state the report touches, read from `sub` (the bytes after the base header, unchecked: a
    /// short one gives `None`).
    fn state(sub: &[u8]) -> Option<StateKey>;
}

/// Whether a redundancy is in `1..=N_MAX` (what `check_redundancy` accepts).
#[inline(always)]
pub(crate) fn redundancy_ok(n: u8) -> bool {
    n.wrapping_sub(1) < N_MAX
}

/// The refusal of a redundancy outside `1..=N_MAX`.
#[inline(always)]
pub(crate) fn redundancy<M: Refusal>(n: u8) -> Result<(), M::Err> {
    crate::refusal::ensure::<M>(redundancy_ok(n), || Error::BadRedundancy {
        value: n,
        max: N_MAX,
    })
}

/// A sub-header that must be exactly `N` bytes: too short is truncated, otherwise the wrong length.
#[inline(always)]
pub(crate) fn exact<'a, M: Refusal, const N: usize>(
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

/// A fixed header of `N` bytes followed by data: too short for the header is truncated.
#[inline(always)]
pub(crate) fn split<'a, M: Refusal, const N: usize>(
    rest: &'a [u8],
    header: &'static str,
) -> Result<(&'a [u8; N], &'a [u8]), M::Err> {
    let Some(parts) = rest.split_first_chunk::<N>() else {
        return Err(M::refuse(|| Error::truncated(header, N, rest.len())));
    };
    Ok(parts)
}

/// The big-endian `u32` at `r` of `sub`, if `sub` reaches that far (peek's read).
#[inline(always)]
pub(crate) fn u32_at(sub: &[u8], r: core::ops::Range<usize>) -> Option<u32> {
    sub.get(r).map(crate::field::get_u32)
}
