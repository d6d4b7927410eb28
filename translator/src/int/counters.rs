//! Counters of the INT front end, summed across workers like the engine's [`Counters`](crate::Counters).

use std::ops::AddAssign;

use super::per_node::{Bounded, NodeCounts};
use crate::reasons::reasons;

reasons! {
    /// Why an INT report (or one individual report of a v2.0 group) was not translated.
    IntDrop {
        /// A length that lies (report, metadata, shim), a truncated header, or reserved values.
        Malformed => "malformed",
        /// A version, report type, inner type or next protocol this front end does not know.
        UnknownType => "unknown_type",
        /// An INT-MD stack of more hops than INT allows (8) or than the Postcarding region holds.
        TooManyHops => "too_many_hops",
        /// A per-hop report whose hop the inner TTL cannot give (TTL above every configured initial TTL,
        /// or a hop of 0 or beyond the path length).
        NoHop => "no_hop",
        /// No switch identity: a v0.5 report without a common header, an INT-MD hop without a node id.
        NoNode => "no_node",
        /// No flow: the inner packet is missing, or is an Ethernet frame carrying no IPv4/IPv6 packet
        /// (ARP, LLDP, ...); drops are still counted.
        NoFlow => "no_flow",
        /// A report of another worker's flow given to an engine path that cannot hand it over
        /// (`Engine::handle_frame(s)` on a sharded engine; the daemon steers INT to
        /// `handle_int_frames`, which does).
        NotOwner => "not_owner",
    }
}

/// Every INT counter of one engine.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IntCounters {
    /// UDP payloads taken on the INT port (v0.5 reports and v2.0 groups).
    pub packets: u64,
    /// Reports translated (each individual report of a v2.0 group counts).
    pub reports: u64,
    /// Reports lost before the translator, by the gaps in each (node, hardware id)'s sequence numbers.
    /// A gap's report that arrives later takes its count back (see [`late`](Self::late)), so this can go
    /// down: it says how many are missing now.
    pub lost: u64,
    /// Reports behind their sequence (reordered or repeated); still translated. One that fills a gap
    /// counted in [`lost`](Self::lost) is moved from there to here, never counted in both.
    pub late: u64,
    /// Sources beyond `int.max_sequences`, whose loss is not tracked.
    pub untracked: u64,
    /// Sequence numbers farther than `int::sequence::MAX_JUMP` from their source's newest: the reporter
    /// restarted its numbering (or the number is wild). Tracking starts again from them; nothing is
    /// counted lost or late for them.
    pub resets: u64,
    /// Reports carrying a whole path (INT-MD sink reports).
    pub whole_paths: u64,
    /// Reports not translated, by reason (index: the order of [`IntDrop::ALL`]).
    pub drops: [u64; IntDrop::ALL.len()],
    /// Per switch (node id): drops and congested queues its reports told of (bounded: the first
    /// [`LABELLED`](super::per_node::LABELLED) switches, then one bucket for the rest).
    pub nodes: Bounded<u32, NodeCounts>,
    /// Per reporter, (node id, hardware id): its reports lost now, as [`lost`](Self::lost) counts them
    /// (bounded like `nodes`).
    pub reporters_lost: Bounded<(u32, u8), u64>,
}

impl IntCounters {
    /// Counts a report not translated.
    pub fn drop(&mut self, why: IntDrop) {
        self.drops[why as usize] += 1;
    }

    /// Reports not translated for `why`.
    pub fn dropped(&self, why: IntDrop) -> u64 {
        self.drops[why as usize]
    }
}

impl AddAssign<&IntCounters> for IntCounters {
    fn add_assign(&mut self, o: &IntCounters) {
        // Destructured, so a new field does not compile until it is summed here.
        let IntCounters {
            packets,
            reports,
            lost,
            late,
            untracked,
            resets,
            whole_paths,
            drops,
            nodes,
            reporters_lost,
        } = self;
        *packets += o.packets;
        *reports += o.reports;
        *lost += o.lost;
        *late += o.late;
        *untracked += o.untracked;
        *resets += o.resets;
        *whole_paths += o.whole_paths;
        for (d, s) in drops.iter_mut().zip(o.drops) {
            *d += s;
        }
        *nodes += &o.nodes;
        *reporters_lost += &o.reporters_lost;
    }
}
