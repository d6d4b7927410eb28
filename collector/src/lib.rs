//! The DTA collector: memory regions, the software RoCEv2 responder, the ibverbs backend, the control
//! channel and the query engine.

pub mod afpacket;
pub mod backend;
pub mod client;
pub mod config;
pub mod control;
pub mod engine;
pub mod error;
pub mod http;
pub mod memory;
pub mod metrics;
pub mod query;
pub mod responder;
pub mod server;

pub use error::{Error, Result};
