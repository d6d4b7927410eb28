//! The INT front end (issue 17): standard In-band Network Telemetry reports (fabric-tna's v0.5, Telemetry
//! Report v2.0) in, DTA primitives out, so switches that already export INT need no DTA reporter.
//!
//! [`translate`] turns a report into [`Action`]s (pure: no QP, no collector); the engine routes each
//! action to a collector and a primitive like the DTA report it stands for. With several workers, what
//! touches another worker's flow goes to it as a [`handoff`] message. [`sequence`] counts reports
//! lost on the way from each (node, hardware id)'s sequence numbers, [`paths`] remembers the switches
//! each flow's per-hop reports named, [`topology`] places per-hop reports by the fabric's shape where the
//! TTL cannot, and [`counters`] counts the rest, including every report not translated, by reason;
//! [`per_node`] bounds the per switch and per reporter counts.

pub mod counters;
pub mod handoff;
pub mod paths;
pub mod per_node;
pub mod sequence;
pub mod topology;
pub mod translate;

// `translate`'s parts, one job each (it re-exports their public types): the actions, the workers'
// shares, one switch's report, the front end's state, and a report's lowering to actions.
mod action;
mod front;
mod hop;
mod lower;
mod shard;

pub use counters::{IntCounters, IntDrop};
pub use handoff::{FlowWork, Translated};
pub use per_node::{Bounded, NodeCounts, LABELLED};
pub use translate::{Action, Actions, IntFrontEnd, Shard};
