//! The JSON summary printed at the end of a run.

use std::collections::BTreeMap;

use dta_protocol::dta::Opcode;
use serde::Serialize;

/// What a run did.
#[derive(Debug, Serialize)]
pub struct Summary {
    /// The workload.
    pub workload: &'static str,
    /// Where frames went.
    pub output: &'static str,
    /// Frames generated and handed to the output.
    pub sent: u64,
    /// Frames the output refused (full socket buffer).
    pub dropped: u64,
    /// Wall-clock seconds.
    pub elapsed_s: f64,
    /// Achieved frames per second.
    pub pps: f64,
    /// The target rate, if paced.
    pub target_pps: Option<f64>,
    /// Frames per opcode (the mix workload's split); for INT workloads, per report kind.
    pub per_opcode: BTreeMap<&'static str, u64>,
}

/// A stable name for the summary.
pub fn opcode_name(op: Opcode) -> &'static str {
    op.summary_name()
}
