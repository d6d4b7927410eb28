//! `dta-sim`: the DTA paper's mathematics (section 4, equations 1-8; appendix A.5-A.6; figures 12 and 13)
//! against this project's real code.
//!
//! Reports go through the real translator engine, its RoCEv2 frames through the real software responder
//! core into in-memory regions ([`rig`]), and queries use the real collector query functions. [`bounds`]
//! evaluates the paper's formulas, which the real engine is tested against (its placement gives every copy
//! its own CRC polynomial, so copies land independently, as the paper assumes; [`placement`] checks it),
//! and, for comparison only, the loss under the reference placement with one shared polynomial; [`ideal`]
//! runs the paper's own model (copies placed by independent random hashes) as a second opinion;
//! [`figures`] regenerates the figures. [`spread`] measures issue 17's paths recovered when a flow's
//! per-hop reports (DTA postcards or INT v0.5 reports) arrive spread over milliseconds.
//!
//! Scale: every rate here depends on α = age / M and on N (and b, T), not on M itself once M is large
//! (the Poisson approximation's error is O(α·N²/M)), so tests use M = 2^16 slots and the figures scale the
//! paper's gigabytes down by a stated factor.

pub mod bounds;
pub mod figures;
pub mod ideal;
pub mod keyincrement;
pub mod keywrite;
pub mod lens;
pub mod placement;
pub mod plot;
pub mod postcard;
pub mod rig;
pub mod rng;
pub mod spread;
pub mod tally;
