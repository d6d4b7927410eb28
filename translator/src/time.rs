//! The engine's notion of time: a caller-supplied monotonic instant in nanoseconds, the requester's
//! ([`dta_rc::time`]), so that the engine hands its `now` to its QPs as it is.

#[cfg(test)]
pub(crate) use dta_rc::time::earliest;
pub use dta_rc::time::Instant;
pub(crate) use dta_rc::time::{nanos, Earliest};
