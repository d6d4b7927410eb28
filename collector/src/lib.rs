//! The DTA collector: memory regions, the software RoCEv2 responder, the ibverbs backend, the control
//! channel and the query engine.

pub mod backend;
pub mod client;
pub mod config;
pub mod control;
pub mod engine;
pub mod error;
pub mod http;
pub mod io_loop;
pub mod memory;
pub mod metrics;
pub mod port;
pub mod query;
pub mod responder;
pub mod server;
pub mod signals;

pub use error::{Error, Result};
