//! INT reports to DTA actions (what to write where, per `dta_protocol::int::mapping`). No primitive and
//! no QP here: the engine routes each [`Action`] to a collector and hands it to the primitive.
//!
//! * **A sink report** (its inner packet carries the INT-MD stack) has the whole path: hop i is the i-th
//!   oldest stack entry, and the reporting node is the last hop unless it already is the newest entry. Its
//!   postcards carry the path length, so the chunk is written at once.
//! * **A per-hop report** (fabric-tna's switch-local report, a v2.0 INT report without a stack) names one
//!   switch; its hop comes from the inner packet's TTL (see `IntConfig::initial_ttls`), and its postcard
//!   goes through the flow cache with the configured path length as a bound, as a DTA postcard does; or,
//!   with `hop_mode = "topology"`, its hop and its path's length come from the switch's place in the
//!   fabric and the report's ports ([`topology`](super::topology)). A hop-1
//!   report carries the hops the flow's earlier reports named ([`paths`](super::paths)), since the entry
//!   holding hop 1 is the one that writes the path's end.
//! * **A drop report** (v0.5 drop header, v2.0 D flag or drop metadata) counts a drop per (node, reason)
//!   and appends a drop event; it writes no path.
//! * **A congested-queue report** (Q flag, per-hop or sink) appends a queue event of the reporting
//!   switch's queue, besides its path and hop state.
//! * **A v2.0 group** is translated report by report: one that cannot be translated is counted by its
//!   reason and the next one is still read.
//!
//! **Several workers** ([`Shard`]) split a report's work in two: the worker that received the frame
//! counts the packet, tracks its (node, hardware id)'s sequence numbers (a switch's reports share one outer
//! 5-tuple, so RSS or a fanout hash keeps them on one worker) and translates what needs no flow's state
//! (drops, reports that cannot be translated); each report that touches a flow's state (its path in
//! Postcarding, the hops remembered for it) is translated by the flow's owner, to which the receiver hands
//! the frame ([`translate`](IntFrontEnd::translate) says to whom, [`translate_handed`]
//! (IntFrontEnd::translate_handed) is the owner's part). Each report is counted once, by the worker that
//! translates it.
//!
//! (Over 500 lines: one state machine, `IntFrontEnd`: sequence tracking, flow state and the lowering
//! of each report kind share its tables.)

use smallvec::SmallVec;

use dta_protocol::int::inner::{InnerRepr, IntDetect, Start};
use dta_protocol::int::mapping::{flow_key, DropEvent, HopRecord, QueueEvent};
use dta_protocol::int::metadata::{Metadata, NOT_AVAILABLE};
use dta_protocol::int::{v05, v2};
use dta_protocol::Error as WireError;

use super::counters::{IntCounters, IntDrop};
use super::paths::PathMemory;
use super::sequence::{SeqVerdict, SequenceGaps};
use super::topology::{Placement, Topology};
use crate::config::{HopMode, IntConfig};

/// INT allows at most this many hops in a stack.
const INT_MAX_HOPS: usize = 8;

/// One write an INT report asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Hop `hop` of flow `flow` is switch `node`.
    Postcard {
        /// The flow's key.
        flow: u32,
        /// 1-based hop.
        hop: u8,
        /// Path length: the stack's for a sink report, the fabric's for a per-hop report placed by the
        /// topology, else the configured one (a bound).
        path_len: u8,
        /// Whether `path_len` is the path's length (a sink report, a topology placement), not a bound.
        length_known: bool,
        /// The switch's node id.
        node: u32,
    },
    /// Hop `hop` of flow `flow` saw `record`.
    Hop {
        /// The flow's key.
        flow: u32,
        /// 1-based hop.
        hop: u8,
        /// What the switch measured.
        record: HopRecord,
    },
    /// One drop at `node` for `reason`.
    DropCount {
        /// The switch.
        node: u32,
        /// Its reason code.
        reason: u8,
    },
    /// A drop event for the drop list.
    DropEvent(DropEvent),
    /// A queue event for the queue list.
    QueueEvent(QueueEvent),
}

/// The actions of one UDP payload (a sink report of 8 hops needs 16, plus events).
pub type Actions = SmallVec<[Action; 20]>;

/// Which of a daemon's workers this front end is (one, alone, by default): who owns a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// This worker's index.
    pub index: usize,
    /// Workers (at most 64: the hand-over set is a bit mask).
    pub count: usize,
}

impl Default for Shard {
    fn default() -> Self {
        Shard { index: 0, count: 1 }
    }
}

impl Shard {
    /// The worker that owns flow `flow`'s state (its Postcarding line, its remembered hops). Hashed
    /// again, so that the worker does not follow the collector shard the flow key picks.
    #[inline]
    pub fn owner(&self, flow: u32) -> usize {
        if self.count <= 1 {
            return 0;
        }
        dta_protocol::hash::key_checksum(flow) as usize % self.count
    }
}

/// Whose part of a report's work a call does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// The worker that received the frame: the packet, the sequence, what needs no flow state, and the
    /// reports of its own flows.
    Received,
    /// A flow owner given the frame by the receiver: its own flows' reports only.
    HandedOver,
    /// The receiver on a path that cannot hand frames over (`Engine::handle_frame(s)`): as
    /// [`Received`](Self::Received), but the reports of other workers' flows are counted as
    /// [`IntDrop::NotOwner`] instead of being left to a handoff that will not happen.
    Alone,
}

/// Workers a received frame must also go to (bit `k`: worker `k`).
pub type HandOver = u64;

/// The INT front end of one engine: configuration and sequence state.
#[derive(Debug)]
pub struct IntFrontEnd {
    cfg: IntConfig,
    shard: Shard,
    detect: IntDetect,
    /// Path length of per-hop reports and the most hops a path may have (`postcard.hops`).
    hops: u8,
    seq: SequenceGaps,
    /// The switches each flow's per-hop reports named (see [`paths`](super::paths)).
    paths: PathMemory,
    /// The fabric, with `hop_mode = "topology"`.
    topology: Option<Topology>,
}

/// What one switch said about one packet, whichever format it came in.
#[derive(Debug, Clone, Copy, Default)]
struct Hop {
    node: Option<u32>,
    latency: u32,
    queue: Option<(u8, u32)>,
    port: u16,
    /// Ingress and egress ports, where the report names both.
    ports: Option<(u16, u16)>,
    timestamp: u32,
}

impl Hop {
    fn record(&self, node: u32) -> HopRecord {
        let (queue_id, queue_occupancy) = self.queue.unwrap_or((0, 0));
        HopRecord {
            node,
            hop_latency: self.latency,
            queue_id,
            queue_occupancy,
        }
    }

    fn from_metadata(m: &Metadata) -> Self {
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

impl IntFrontEnd {
    /// A front end for `cfg`, with per-hop paths of `hops` hops (`postcard.hops`).
    pub fn new(cfg: &IntConfig, hops: u8) -> Self {
        IntFrontEnd {
            detect: IntDetect {
                udp_port: cfg.md_udp_port,
                dscp: cfg.md_dscp.map(|d| (d, cfg.md_dscp_mask)),
            },
            cfg: cfg.clone(),
            shard: Shard::default(),
            hops,
            seq: SequenceGaps::new(cfg.max_sequences),
            paths: PathMemory::default(),
            topology: (cfg.hop_mode == HopMode::Topology).then(|| Topology::new(&cfg.switches)),
        }
    }

    /// Makes this front end worker `shard.index` of `shard.count`, which translates its own flows' reports.
    pub fn set_shard(&mut self, shard: Shard) {
        self.shard = shard;
    }

    /// Which worker this is.
    pub fn shard(&self) -> Shard {
        self.shard
    }

    /// The UDP port INT reports arrive on.
    pub fn udp_port(&self) -> u16 {
        self.cfg.udp_port
    }

    /// Copies (N) of records and counters.
    pub fn redundancy(&self) -> u8 {
        self.cfg.redundancy
    }

    /// Append list of drop events (this engine's).
    pub fn drop_list(&self) -> Option<u32> {
        self.cfg.drop_list.first()
    }

    /// Append list of queue events (this engine's).
    pub fn queue_list(&self) -> Option<u32> {
        self.cfg.queue_list.first()
    }

    /// Translates one received UDP payload into `out`, counting in `c`: all of it when this is the only
    /// worker; otherwise the receiver's part, and the workers whose flows' reports it left are returned.
    pub fn translate(
        &mut self,
        payload: &[u8],
        c: &mut IntCounters,
        out: &mut Actions,
    ) -> HandOver {
        self.dispatch(payload, Stage::Received, c, out)
    }

    /// [`translate`](Self::translate) for a caller that cannot hand frames to other workers: with one
    /// worker the same; on a sharded front end the reports of other workers' flows are counted as
    /// [`IntDrop::NotOwner`], never lost silently.
    pub fn translate_alone(&mut self, payload: &[u8], c: &mut IntCounters, out: &mut Actions) {
        self.dispatch(payload, Stage::Alone, c, out);
    }

    /// The owner's part of a payload another worker received and [`translate`](Self::translate)d: the
    /// reports of this worker's flows (the receiver counted the packet, its sequence and the rest).
    pub fn translate_handed(&mut self, payload: &[u8], c: &mut IntCounters, out: &mut Actions) {
        self.dispatch(payload, Stage::HandedOver, c, out);
    }

    /// The three above: the format by the version nibble (fabric-tna writes 0, v2.0 writes 2); the
    /// packet and what cannot be parsed are counted by the worker that received it, never by an owner.
    fn dispatch(
        &mut self,
        payload: &[u8],
        stage: Stage,
        c: &mut IntCounters,
        out: &mut Actions,
    ) -> HandOver {
        let received = stage != Stage::HandedOver;
        if received {
            c.packets += 1;
        }
        let mut others = 0;
        match payload.first().map(|b| b >> 4) {
            Some(0) => match v05::ReportRepr::parse(payload) {
                Ok(r) => self.v05(&r, stage, c, out, &mut others),
                Err(e) if received => c.drop(reason(&e)),
                Err(_) => {}
            },
            Some(2) => self.v2(payload, stage, c, out, &mut others),
            Some(_) if received => c.drop(IntDrop::UnknownType),
            None if received => c.drop(IntDrop::Malformed),
            _ => {}
        }
        others
    }

    fn sequence(&mut self, node: u32, hw_id: u8, seq: u32, bits: u32, c: &mut IntCounters) {
        // Made at the reporter's first report, so its metric series starts at 0 before any loss.
        let mine = c.reporters_lost.get_mut((node, hw_id));
        match self.seq.check(node, hw_id, seq, bits) {
            SeqVerdict::InOrder { lost } => {
                c.lost += lost;
                *mine += lost;
            }
            SeqVerdict::Late { filled_gap } => {
                c.late += 1;
                // Its gap was counted as lost when a later report arrived: it was late, not lost.
                if filled_gap {
                    c.lost = c.lost.saturating_sub(1);
                    *mine = mine.saturating_sub(1);
                }
            }
            SeqVerdict::Untracked => c.untracked += 1,
            SeqVerdict::Reset => c.resets += 1,
        }
    }

    fn v05(
        &mut self,
        r: &v05::ReportRepr<'_>,
        stage: Stage,
        c: &mut IntCounters,
        out: &mut Actions,
        others: &mut HandOver,
    ) {
        let (common, drop, hop) = match r.body {
            // No common header: nothing names the switch.
            v05::Body::Ethernet if stage != Stage::HandedOver => return c.drop(IntDrop::NoNode),
            v05::Body::Ethernet => return,
            // A drop report has no egress timestamp: its event carries the ingress one.
            v05::Body::Drop { common, reason } => (
                common,
                Some((common.queue_id, reason)),
                Hop {
                    timestamp: r.ig_tstamp,
                    ..Hop::default()
                },
            ),
            v05::Body::Local {
                common,
                queue_occupancy,
                eg_tstamp,
            } => (
                common,
                None,
                Hop {
                    latency: eg_tstamp.wrapping_sub(r.ig_tstamp),
                    queue: Some((common.queue_id, queue_occupancy)),
                    timestamp: eg_tstamp,
                    ..Hop::default()
                },
            ),
        };
        if stage != Stage::HandedOver {
            self.sequence(common.switch_id, r.hw_id, r.seq_no, 32, c);
        }
        // The egress port where there is one (a packet dropped in ingress has none).
        let port = if common.eg_port != 0 {
            common.eg_port
        } else {
            common.ig_port
        };
        let hop = Hop {
            node: Some(common.switch_id),
            port,
            ports: Some((common.ig_port, common.eg_port)),
            ..hop
        };
        let report = Report {
            start: Start::Ethernet,
            inner: r.inner,
            hop,
            drop,
            congested: r.congested,
        };
        self.report(report, stage, c, out, others);
    }

    fn v2(
        &mut self,
        payload: &[u8],
        stage: Stage,
        c: &mut IntCounters,
        out: &mut Actions,
        others: &mut HandOver,
    ) {
        let received = stage != Stage::HandedOver;
        let (group, reports) = match v2::GroupRepr::parse(payload) {
            Ok(g) => g,
            Err(e) if received => return c.drop(reason(&e)),
            Err(_) => return,
        };
        if received {
            self.sequence(group.node_id, group.hw_id, group.seq_no, 22, c);
        }
        for r in reports {
            let r = match r {
                Ok(r) => r,
                // This report only: its Report Length still delimits it, and the walk goes on (it stops
                // by itself after a length that runs past the packet).
                Err(e) => {
                    if received {
                        c.drop(reason(&e));
                    }
                    continue;
                }
            };
            let start = match r.in_type {
                v2::InType::Ethernet => Start::Ethernet,
                v2::InType::Ipv4 | v2::InType::Ipv6 => Start::Ip,
                _ => {
                    if received {
                        c.drop(IntDrop::UnknownType);
                    }
                    continue;
                }
            };
            // This node's view from the main contents' metadata; the group header names the node when
            // the metadata does not.
            let md = r.int.as_ref().map(|m| &m.metadata);
            let mut hop = md.map_or_else(Hop::default, Hop::from_metadata);
            hop.node = hop.node.or(Some(group.node_id));
            // Drop metadata, else the D flag alone: reason unknown (0).
            let drop = md
                .and_then(|m| m.drop)
                .or_else(|| r.dropped.then(|| (hop.queue.map_or(0, |q| q.0), 0)));
            let report = Report {
                start,
                inner: r.inner,
                hop,
                drop,
                congested: r.congested,
            };
            self.report(report, stage, c, out, others);
        }
    }

    /// One report of one switch (`hop`) about the packet `inner`: translated here when it needs no flow
    /// state and this is the receiver, or when its flow is this worker's; otherwise left to the flow's
    /// owner (added to `others` by the receiver).
    fn report(
        &mut self,
        r: Report<'_>,
        stage: Stage,
        c: &mut IntCounters,
        out: &mut Actions,
        others: &mut HandOver,
    ) {
        let received = stage != Stage::HandedOver;
        let Report {
            start,
            inner,
            hop,
            drop,
            congested,
        } = r;
        let Some(node) = hop.node else {
            if received {
                c.drop(IntDrop::NoNode);
            }
            return;
        };
        let parsed = InnerRepr::parse(start, inner, self.detect);
        // A drop, or a report that cannot be translated, touches no flow's state: the receiver's.
        let flow_report = drop.is_none() && parsed.is_ok();
        if !flow_report && !received {
            return;
        }
        if let Some((queue_id, reason)) = drop {
            // A drop is counted even when its packet cannot be parsed: the switch and reason are known.
            let flow = parsed.as_ref().map_or(0, |p| flow_key(&p.flow));
            c.nodes.get_mut(node).drops += 1;
            if self.cfg.drop_counts {
                out.push(Action::DropCount { node, reason });
            }
            if !self.cfg.drop_list.is_empty() {
                out.push(Action::DropEvent(DropEvent {
                    flow,
                    node,
                    port: hop.port,
                    reason,
                    queue_id,
                    timestamp: hop.timestamp,
                }));
            }
            c.reports += 1;
            return;
        }
        let p = match parsed {
            Ok(p) => p,
            Err(e) => {
                return c.drop(match reason(&e) {
                    IntDrop::Malformed if inner.is_empty() => IntDrop::NoFlow,
                    r => r,
                })
            }
        };
        let flow = flow_key(&p.flow);
        let owner = self.shard.owner(flow);
        if owner != self.shard.index {
            match stage {
                Stage::Received => *others |= 1 << (owner % 64),
                Stage::Alone => c.drop(IntDrop::NotOwner),
                Stage::HandedOver => {}
            }
            return;
        }
        if let Some(md) = p.int_md {
            // A sink's report: the Q flag is about the sink's own queue, as on a per-hop report.
            if self.whole_path(flow, node, hop, md.hops(), md.hop_count(), c, out) && congested {
                self.queue_event(node, &hop, c, out);
            }
            return;
        }
        let Some(place) = self.place(node, &hop, p.ttl) else {
            return c.drop(IntDrop::NoHop);
        };
        let length_known = self.topology.is_some();
        if place.path_len > self.hops {
            return c.drop(IntDrop::TooManyHops);
        }
        let h = place.hop;
        if congested {
            self.queue_event(node, &hop, c, out);
        }
        if self.cfg.path {
            if length_known {
                // The length is known: the cache composes entries in any order (no blanks inside).
                out.push(Action::Postcard {
                    flow,
                    hop: h,
                    path_len: place.path_len,
                    length_known,
                    node,
                });
            } else {
                // Hop 1 with the hops already known of the flow, so its cache entry cannot blank them.
                for (hop, node) in self.paths.record(flow, h, node).hops() {
                    out.push(Action::Postcard {
                        flow,
                        hop,
                        path_len: place.path_len,
                        length_known,
                        node,
                    });
                }
            }
        }
        if self.cfg.flow_state {
            out.push(Action::Hop {
                flow,
                hop: h,
                record: hop.record(node),
            });
        }
        c.reports += 1;
    }

    /// A congested-queue event of `node`: counted per switch, and appended where the queue list is
    /// configured.
    fn queue_event(&self, node: u32, hop: &Hop, c: &mut IntCounters, out: &mut Actions) {
        c.nodes.get_mut(node).congested += 1;
        if self.cfg.queue_list.is_empty() {
            return;
        }
        let (queue_id, occupancy) = hop.queue.unwrap_or((0, 0));
        out.push(Action::QueueEvent(QueueEvent {
            node,
            port: hop.port,
            queue_id,
            occupancy,
            timestamp: hop.timestamp,
        }));
    }

    /// A sink report: the stack's hops (newest first) and the reporting node. Whether it was translated
    /// (else it is counted as dropped).
    #[allow(clippy::too_many_arguments)]
    fn whole_path(
        &mut self,
        flow: u32,
        node: u32,
        sink: Hop,
        stack: impl Iterator<Item = Metadata>,
        count: usize,
        c: &mut IntCounters,
        out: &mut Actions,
    ) -> bool {
        if count > INT_MAX_HOPS {
            c.drop(IntDrop::TooManyHops);
            return false;
        }
        let mut path: SmallVec<[Hop; INT_MAX_HOPS + 1]> = SmallVec::new();
        for m in stack {
            let h = Hop::from_metadata(&m);
            if h.node.is_none() {
                c.drop(IntDrop::NoNode);
                return false;
            }
            path.push(h);
        }
        path.reverse();
        // The sink's own view ends the path, unless it already pushed itself onto the stack.
        if path.last().and_then(|h| h.node) != Some(node) {
            path.push(Hop {
                node: Some(node),
                ..sink
            });
        }
        if path.len() > usize::from(self.hops) {
            c.drop(IntDrop::TooManyHops);
            return false;
        }
        let len = path.len() as u8;
        for (i, h) in path.iter().enumerate() {
            let (hop, node) = (i as u8 + 1, h.node.unwrap_or(node));
            if self.cfg.path {
                out.push(Action::Postcard {
                    flow,
                    hop,
                    path_len: len,
                    length_known: true,
                    node,
                });
            }
            if self.cfg.flow_state {
                out.push(Action::Hop {
                    flow,
                    hop,
                    record: h.record(node),
                });
            }
        }
        c.whole_paths += 1;
        c.reports += 1;
        true
    }

    /// Where a per-hop report of `node` puts it: by the fabric's topology where one is configured, else
    /// by the inner packet's TTL, on a path of at most `hops`.
    fn place(&self, node: u32, hop: &Hop, ttl: u8) -> Option<Placement> {
        match &self.topology {
            Some(t) => t.place(node, hop.ports),
            None => self.hop_from_ttl(ttl).map(|hop| Placement {
                hop,
                path_len: self.hops,
            }),
        }
    }

    /// `initial - ttl + hop_offset` for the smallest configured initial TTL at or above `ttl`, when that
    /// is a hop of the path (1..=hops).
    fn hop_from_ttl(&self, ttl: u8) -> Option<u8> {
        let initial = self
            .cfg
            .initial_ttls
            .iter()
            .copied()
            .filter(|&i| i >= ttl)
            .min()?;
        let hop = u32::from(initial - ttl) + u32::from(self.cfg.hop_offset);
        (1..=u32::from(self.hops))
            .contains(&hop)
            .then_some(hop as u8)
    }
}

/// One report as both formats give it.
struct Report<'a> {
    /// Where the reported packet starts.
    start: Start,
    /// The reported packet.
    inner: &'a [u8],
    /// What the switch said.
    hop: Hop,
    /// (queue id, reason) of a drop.
    drop: Option<(u8, u8)>,
    /// The Q flag.
    congested: bool,
}

/// The drop reason of a parse error.
fn reason(e: &WireError) -> IntDrop {
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

#[cfg(test)]
mod shard_tests;
