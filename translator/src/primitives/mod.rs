//! The DTA primitives: each turns reports into work requests on the collector's QP, per DESIGN.md
//! section 3. Stateful primitives (Key-Increment coalescing, Append, Postcarding, Sketch-Merge) also
//! flush on timers.

pub mod append;
pub mod keyincrement;
pub mod keywrite;
pub mod postcard;
pub mod sketch;

use dta_protocol::dta::Opcode;

use crate::frames::{Op, Payload};
use crate::requester::{Requester, WorkRequest};

/// Queues a WRITE of `payload` at `va`.
pub(crate) fn write(qp: &mut Requester, primitive: Opcode, va: u64, rkey: u32, payload: Payload) {
    qp.push(WorkRequest {
        op: Op::Write { va, rkey, payload },
        primitive,
    });
}
