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
//! translates it whole: it counts the packet, tracks its (node, hardware id)'s sequence numbers (a
//! switch's reports share one outer 5-tuple, so RSS or a fanout hash keeps them on one worker), counts
//! the report, appends its drop and queue events. What touches a flow's state (its path in
//! Postcarding, the hops remembered for it, its hop records) is done by the flow's owner: the receiver
//! lists it as [`FlowWork`](super::handoff::FlowWork) for that owner ([`Translated::handed`]), which the engine carries to it in a
//! message ([`handoff`](super::handoff)) and the owner [`apply`](IntFrontEnd::apply)s. The report is
//! parsed once, by the receiver.
//!
//! This file reads the formats: the packet counted, its sequence tracked, each report of a v0.5 packet
//! or of a v2.0 group taken as one `Report` (`hop.rs`), which `lower.rs` turns into actions. The front
//! end's state is in `front.rs`, the actions in `action.rs`, the workers' shares in `shard.rs`.

use dta_protocol::int::{v05, v2};

use super::counters::{IntCounters, IntDrop};
use super::hop::{reason, Hop, Report};
use super::sequence::SeqVerdict;
use dta_protocol::int::inner::Start;

pub use super::action::{Action, Actions};
pub use super::front::IntFrontEnd;
use super::handoff::Translated;
pub use super::shard::Shard;
use super::shard::Stage;

impl IntFrontEnd {
    /// Translates one received UDP payload into `out`, counting in `c`: its actions, and the work of
    /// the flows other workers own (with one worker, none).
    pub fn translate(&mut self, payload: &[u8], c: &mut IntCounters, out: &mut Translated) {
        self.dispatch(payload, Stage::Received, c, out)
    }

    /// [`translate`](Self::translate) for a caller that cannot hand work to other workers: with one
    /// worker the same; on a sharded front end the reports of other workers' flows are counted as
    /// [`IntDrop::NotOwner`], never lost silently.
    pub fn translate_alone(&mut self, payload: &[u8], c: &mut IntCounters, out: &mut Translated) {
        self.dispatch(payload, Stage::Alone, c, out);
    }

    /// Both above: the format by the version nibble (fabric-tna writes 0, v2.0 writes 2).
    fn dispatch(
        &mut self,
        payload: &[u8],
        stage: Stage,
        c: &mut IntCounters,
        out: &mut Translated,
    ) {
        c.packets += 1;
        match payload.first().map(|b| b >> 4) {
            Some(0) => match v05::ReportRepr::parse(payload) {
                Ok(r) => self.v05(&r, stage, c, out),
                Err(e) => c.drop(reason(&e)),
            },
            Some(2) => self.v2(payload, stage, c, out),
            Some(_) => c.drop(IntDrop::UnknownType),
            None => c.drop(IntDrop::Malformed),
        }
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
        out: &mut Translated,
    ) {
        let (common, drop, hop) = match r.body {
            // No common header: nothing names the switch.
            v05::Body::Ethernet => return c.drop(IntDrop::NoNode),
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
        self.sequence(common.switch_id, r.hw_id, r.seq_no, 32, c);
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
        self.report(report, stage, c, out);
    }

    fn v2(&mut self, payload: &[u8], stage: Stage, c: &mut IntCounters, out: &mut Translated) {
        let (group, reports) = match v2::GroupRepr::parse(payload) {
            Ok(g) => g,
            Err(e) => return c.drop(reason(&e)),
        };
        self.sequence(group.node_id, group.hw_id, group.seq_no, 22, c);
        for r in reports {
            let r = match r {
                Ok(r) => r,
                // This report only: its Report Length still delimits it, and the walk goes on (it stops
                // by itself after a length that runs past the packet).
                Err(e) => {
                    c.drop(reason(&e));
                    continue;
                }
            };
            let start = match r.in_type {
                v2::InType::Ethernet => Start::Ethernet,
                v2::InType::Ipv4 | v2::InType::Ipv6 => Start::Ip,
                _ => {
                    c.drop(IntDrop::UnknownType);
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
            self.report(report, stage, c, out);
        }
    }
}
