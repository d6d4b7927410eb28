//! What each report says and what the collector and the translator's counters must answer.

use std::net::Ipv4Addr;

use serde_json::{json, Value};

use crate::int_spec::{Flow, Local};

/// A hop record as `int-flow` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Record {
    pub(super) node: u32,
    pub(super) hop_latency: u32,
    pub(super) queue_id: u8,
    pub(super) queue_occupancy: u32,
}

impl Record {
    pub(super) fn json(&self) -> Value {
        json!({
            "node": self.node,
            "hop_latency": self.hop_latency,
            "queue_id": self.queue_id,
            "queue_occupancy": self.queue_occupancy,
        })
    }
}

/// One report to send: its switch's sequence stream, the report without its sequence number, and the
/// flow and hop it is about (`None`: a report the fabric cannot place).
pub(super) struct Pending {
    pub(super) stream: (u32, u8),
    pub(super) local: Local,
    pub(super) inner: Vec<u8>,
    pub(super) place: Option<(usize, usize)>,
}

/// What the collector must answer for one flow.
#[derive(Debug, Clone)]
pub(super) struct Expect {
    /// As the INT queries name it.
    pub(super) text: String,
    /// The path, when every switch of the route reported; else none.
    pub(super) path: Option<Vec<u32>>,
    /// Hop records, hop 1 first (the last report of each hop wins).
    pub(super) hops: Vec<Option<Record>>,
}

/// What the translator's counters read after [`fabric_with_expected`](super::fabric_with_expected)'s
/// reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FabricExpected {
    /// UDP payloads sent to the INT port, one report each.
    pub packets: u64,
    /// Reports placed and translated.
    pub translated: u64,
    /// Reports the fabric cannot place (`no_hop`), the only ones not translated.
    pub no_hop: u64,
    /// Reports sent after their switch's next one.
    pub late: u64,
    /// Flows with some switch's report lost for good (their paths must read as none).
    pub partial: u64,
    /// Flows whose whole path was reported.
    pub whole: u64,
    /// Flows whose route is one leaf.
    pub one_leaf: u64,
    /// Flows reported a second time.
    pub repeated: u64,
}

pub(super) fn flow_text(f: &Flow) -> String {
    let ip = |a: [u8; 4]| Ipv4Addr::from(a).to_string();
    format!("{},{},17,{},{}", ip(f.src), ip(f.dst), f.sport, f.dport)
}
