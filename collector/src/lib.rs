//! The DTA collector: memory regions, the software RoCEv2 responder, the ibverbs backend, the control
//! channel and the query engine.

pub mod backend;
pub mod config;
pub mod control;
pub mod engine;
pub mod error;
pub mod memory;
pub mod metrics;
pub mod query;
pub mod responder;

pub use error::{Error, Result};
