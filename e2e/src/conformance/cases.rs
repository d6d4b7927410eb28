//! The script: every case is a fresh QP (its own hello, so an rxe QP that a case moves to the error state
//! does not leak into the next) and a few requests, each answered by one response or by silence.
//!
//! `steps` holds the vocabulary (requests, keys, QPs, a case) and `script` the cases themselves.

mod script;
mod steps;

pub use script::all;
pub use steps::{Addr, Case, Key, Op, QpRef, Step, WINDOW};
