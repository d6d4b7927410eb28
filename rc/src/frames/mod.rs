//! RoCEv2 frames of one QP, built from per-shape templates.
//!
//! Every frame of a QP with the same opcode and payload length shares its bytes up to the BTH's
//! AckReq/PSN word, so each shape is emitted once through [`FrameRepr`] (the general, checked path), its
//! iCRC prefix is hashed once, and every later frame is a copy of the template with the PSN, the RETH or
//! AtomicETH and the payload patched in, plus an iCRC over only those bytes.
//!
//! One job a file: [`Payload`] (a WRITE's bytes, inline or pooled), [`Op`] (the operations),
//! `builder` ([`FrameBuilder`], which finds or makes each op's shape), `shape` (a template and the
//! writers that copy and patch it), `patch` (the per-frame fields at their fixed offsets), `copy` (short
//! copies without a libc call) and [`FrameOut`] (where a frame is written).

mod builder;
mod copy;
mod op;
mod out;
mod patch;
mod payload;
mod shape;

pub use builder::FrameBuilder;
pub use op::Op;
pub use out::FrameOut;
pub use payload::{Payload, INLINE_PAYLOAD};
pub(crate) use shape::Shape;

#[cfg(test)]
mod tests;
