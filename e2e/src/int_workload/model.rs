//! What the collector must answer, and what the translator's counters and the history export must read.

use std::collections::HashMap;

use dta_protocol::int::mapping::{DropEvent, HopRecord, QueueEvent};

/// What the collector must answer.
#[derive(Default)]
pub(super) struct Model {
    pub(super) paths: Vec<(u32, Vec<u32>)>,
    /// Every flow as the INT queries name it (`SRC,DST,PROTO,SPORT,DPORT`), with its key.
    pub(super) flows: Vec<(String, u32)>,
    /// Hop records in send order (each key once).
    pub(super) hops: Vec<(u32, HopRecord)>,
    /// Hop records whose every copy's slot another key writes too: found exact, or empty (which writes
    /// last is the order the workers' QPs deliver in), never another record.
    pub(super) hops_contested: Vec<(u32, HopRecord)>,
    pub(super) drops: HashMap<(u32, u8), u64>,
    pub(super) drop_events: Vec<[u8; 16]>,
    pub(super) queue_events: Vec<[u8; 16]>,
    /// Flows (as the INT queries name them) that must have no path: forged by a tenant.
    pub(super) absent: Vec<String>,
}

/// What the translator's INT counters read after [`int_with_expected`](super::int_with_expected)'s
/// reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IntExpected {
    /// Reports translated (`dta_translator_int_reports_total`).
    pub translated: u64,
    /// IOAM reports between sink reports, each counted `unknown_type` (and the only reports not
    /// translated).
    pub unknown_type: u64,
    /// Sink reports (`dta_translator_int_whole_paths_total`).
    pub whole_paths: u64,
    /// Reports sent after the next one of their switch: late, and never counted lost.
    pub late: u64,
}

/// The events and drop counts [`int_with_history`](super::int_with_history)'s reports leave in the
/// collector: what its history exporter must export.
#[derive(Debug, Clone, Default)]
pub struct IntHistory {
    /// Drop events, in the order their reports are sent (each worker's list keeps this order).
    pub drop_events: Vec<DropEvent>,
    /// Congestion (queue) events, likewise.
    pub queue_events: Vec<QueueEvent>,
    /// Drops per (node, reason).
    pub drops: std::collections::BTreeMap<(u32, u8), u64>,
}
