//! The INT workload (issue 17): fabric-tna v0.5 per-hop and drop reports and Telemetry Report v2.0 sink
//! reports, built by the independent encoder [`int_spec`](crate::int_spec), sent to the translator's INT
//! port; then every flow's path, every hop record, every drop counter and every drop and queue event is
//! read back through the collector's HTTP API and compared with a model of the memory.
//!
//! The model follows `dta_protocol::int::mapping` (the contract) and the collector's layouts: it replays
//! where each write lands, so a key whose every copy another key overwrote is reported as a layout problem
//! (enlarge the region) instead of weakening the check.
//!
//! One job a file: `sections` (ports and the daemons' INT sections), `flows` (5-tuples and keys),
//! `model` (what must be found), `reports` (the reports and the model they leave) and `check` (the layouts
//! and the collector's answers against the model).

mod check;
mod flows;
mod model;
mod reports;
mod sections;

// The INT event lists live with the regions they are part of (workload builds the collector's regions
// for both kinds of run), so that this module depends on workload and never the other way round.
pub use crate::workload::{int_lists, INT_DROP_LISTS, INT_LIST_ENTRIES, INT_QUEUE_LISTS};
pub use flows::example_flow;
pub use model::{IntExpected, IntHistory};
pub use reports::{int, int_with_expected, int_with_history};
pub use sections::{COLLECTOR_INT, INT_MD_PORT, INT_N, INT_PORT, INT_SECTIONS};
