//! The software RoCEv2 responder (DESIGN.md section 5), modelled on Linux rxe's responder.
//!
//! [`Responder`] is sans-IO: a frame and the arena's bytes go in, at most one response frame comes out,
//! and it never reads a clock or a socket. The I/O loops (`io_loop`: frame batches on AF_PACKET, mbufs on
//! DPDK) and tests feed it. [`FaultInjector`] sits in front of it to drop, reorder and corrupt frames
//! reproducibly.

mod bounds;
mod core;
mod fast;
mod faults;
mod qp;
mod qp_table;
mod reply;
mod request;
mod stats;
mod template;

pub use self::core::{
    Outcome, Responder, ResponderConfig, FIRST_QPN, MIN_RNR_TIMER, RESPONSE_MAX,
    ROCEV2_SOURCE_PORTS,
};
pub use faults::{FaultConfig, FaultCounts, FaultInjector};
pub use qp::QpStatus;
pub use stats::{DropReason, NakKind, Stats};
