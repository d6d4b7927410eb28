//! The DTA translator engine: frames and a clock in, frames and timer deadlines out (no I/O).
//!
//! Start at [`Engine`]. One engine runs per worker core with its own QP to every collector. The daemon that
//! runs engines on ports (workers, control channel, metrics) is the `dta-translator-daemon` crate.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod collector;
pub mod config;
pub mod counters;
pub mod engine;
pub mod error;
pub mod int;
pub mod primitives;
mod reasons;
pub mod sequence;
pub mod time;

pub use collector::RegionsFile;
pub use config::Config;
pub use counters::{Counters, DropReason};
pub use dta_rc::QpError;
pub use engine::{Engine, Event, Handled, QpStats};
pub use error::ConfigError;
pub use time::Instant;
