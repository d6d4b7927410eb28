//! A RoCEv2 reliable-connection requester, sans-IO: work requests and a clock in, frames and timer
//! deadlines out, responses (ACKNOWLEDGE, ATOMIC ACKNOWLEDGE, NAKs, CNPs) in.
//!
//! Start at [`Requester`]. It knows RoCE and nothing of what it carries: a work request's [`Tag`] is the
//! caller's, handed back when the request is first sent, and every count goes to the caller's [`Tally`]
//! (or the requester's own [`RcStats`]). The DTA translator's engine runs one per collector; the DART
//! reporter runs one of its own.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod config;
pub mod dcqcn;
pub mod frames;
pub mod psn;
pub mod rate;
pub mod requester;
pub mod rtt;
pub mod stats;
// The seeded stream of this crate's randomised tests, and of the translator's (one copy of it).
#[doc(hidden)]
pub mod test_rng;
pub mod time;

pub use config::{RateConfig, RequesterConfig};
pub use requester::{QpError, Requester, RequesterParams, Response, WorkRequest};
pub use stats::{RcStats, Tag, Tally};
pub use time::Instant;
