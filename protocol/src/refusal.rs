//! How a parse reports a refusal, so that one parse body serves callers that want the reason and callers
//! that do not: each check names its error in a closure, which only [`Explain`] calls; under [`Quiet`] the
//! closure is dropped unbuilt and the check compiles to its compare alone.

use crate::Error;

/// How a refusal is reported.
pub(crate) trait Refusal {
    /// The error a refusal returns.
    type Err;
    /// Whether a refusal carries its reason. Without, a parse may test first a condition that implies
    /// several later ones (an exact length, say), so that those fold away.
    const REASONS: bool;
    /// The refusal whose reason `why` gives (called only when it is reported).
    fn refuse(why: impl FnOnce() -> Error) -> Self::Err;
}

/// Refusals without a reason: the reason's closure is never called, so it compiles away.
pub(crate) struct Quiet;

impl Refusal for Quiet {
    type Err = ();
    const REASONS: bool = false;
    #[inline(always)]
    fn refuse(_: impl FnOnce() -> Error) {}
}

/// Refusals with their exact reason.
pub(crate) struct Explain;

impl Refusal for Explain {
    type Err = Error;
    const REASONS: bool = true;
    #[inline(always)]
    fn refuse(why: impl FnOnce() -> Error) -> Error {
        why()
    }
}

/// `Ok` when `ok`, else the refusal `why` gives.
#[inline(always)]
pub(crate) fn ensure<M: Refusal>(ok: bool, why: impl FnOnce() -> Error) -> Result<(), M::Err> {
    match ok {
        true => Ok(()),
        false => Err(M::refuse(why)),
    }
}
