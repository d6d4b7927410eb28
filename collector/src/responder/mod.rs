//! The software RoCEv2 responder (DESIGN.md section 5), modelled on Linux rxe's responder.
//!
//! [`Responder`] is sans-IO: a frame and the arena's bytes go in, at most one response frame comes out,
//! and it never reads a clock or a socket. The I/O loops (`io_loop`: frame batches on AF_PACKET, mbufs on
//! DPDK) and tests feed it. [`FaultInjector`] sits in front of it to drop, reorder and corrupt frames
//! reproducibly.

mod bounds;
mod checks;
mod core;
mod fast;
mod faults;
mod qp;
mod qp_table;
mod reply;
mod request;
mod state;
mod stats;
mod template;

pub use self::core::MIN_RNR_TIMER;
pub use faults::{FaultConfig, FaultCounts, FaultInjector};
pub use qp::QpStatus;
pub use qp_table::FIRST_QPN;
pub use reply::{Outcome, RESPONSE_MAX};
pub use state::{Responder, ResponderConfig, ROCEV2_SOURCE_PORTS};
pub use stats::{DropReason, NakKind, Stats};
