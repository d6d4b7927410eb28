//! One switch's report about one packet as both INT formats give it ([`Report`], its switch's view a
//! [`Hop`]), and the drop reason of a report that does not parse.

use dta_protocol::int::inner::Start;
use dta_protocol::int::mapping::HopRecord;
use dta_protocol::int::metadata::{Metadata, NOT_AVAILABLE};
use dta_protocol::Error as WireError;

use super::counters::IntDrop;

/// What one switch said about one packet, whichever format it came in.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Hop {
    pub(super) node: Option<u32>,
    pub(super) latency: u32,
    pub(super) queue: Option<(u8, u32)>,
    pub(super) port: u16,
    /// Ingress and egress ports, where the report names both.
    pub(super) ports: Option<(u16, u16)>,
    pub(super) timestamp: u32,
}

impl Hop {
    pub(super) fn record(&self, node: u32) -> HopRecord {
        let (queue_id, queue_occupancy) = self.queue.unwrap_or((0, 0));
        HopRecord {
            node,
            hop_latency: self.latency,
            queue_id,
            queue_occupancy,
        }
    }

    pub(super) fn from_metadata(m: &Metadata) -> Self {
        // All ones is "not available" (both specifications): fall back to the timestamps, else 0.
        let latency = m
            .hop_latency
            .filter(|&l| l != NOT_AVAILABLE)
            .unwrap_or_else(|| match (m.ingress_timestamp, m.egress_timestamp) {
                (Some(i), Some(e)) => e.wrapping_sub(i) as u32,
                _ => 0,
            });
        Hop {
            node: m.node_id,
            latency,
            queue: m.queue,
            port: m.l1_ports.map_or(0, |(_, eg)| eg),
            ports: m.l1_ports,
            timestamp: m.egress_timestamp.or(m.ingress_timestamp).unwrap_or(0) as u32,
        }
    }
}

/// One report as both formats give it.
pub(super) struct Report<'a> {
    /// Where the reported packet starts.
    pub(super) start: Start,
    /// The reported packet.
    pub(super) inner: &'a [u8],
    /// What the switch said.
    pub(super) hop: Hop,
    /// (queue id, reason) of a drop.
    pub(super) drop: Option<(u8, u8)>,
    /// The Q flag.
    pub(super) congested: bool,
}

/// The drop reason of a parse error.
pub(super) fn reason(e: &WireError) -> IntDrop {
    match e {
        // An Ethernet frame that carries no IP packet (ARP, LLDP, ...): a well-formed report of a packet
        // that has no 5-tuple.
        WireError::InvalidField {
            field: "network layer",
            ..
        } => IntDrop::NoFlow,
        WireError::InvalidField {
            field:
                "ver" | "nproto" | "rep_type" | "in_type" | "IP header" | "shim type" | "shim NPT",
            ..
        } => IntDrop::UnknownType,
        _ => IntDrop::Malformed,
    }
}
