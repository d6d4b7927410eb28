//! The DTA collector: memory regions, the software RoCEv2 responder, the ibverbs backend, the control
//! channel and the query engine. Without the `server` feature: the memory layouts, the queries and the
//! responder's state machine only (no packet I/O, no HTTP).

#[cfg(feature = "server")]
pub mod backend;
#[cfg(feature = "server")]
pub mod client;
#[cfg(feature = "server")]
pub mod config;
#[cfg(feature = "server")]
pub mod control;
#[cfg(feature = "server")]
pub mod engine;
pub mod error;
#[cfg(feature = "export")]
pub mod export;
#[cfg(feature = "server")]
pub mod http;
#[cfg(feature = "server")]
pub mod io_loop;
pub mod memory;
#[cfg(feature = "server")]
pub mod metrics;
#[cfg(feature = "server")]
pub mod port;
pub mod query;
pub mod responder;
#[cfg(feature = "server")]
pub mod server;
#[cfg(feature = "server")]
pub mod signals;

pub use error::{Error, Result};
