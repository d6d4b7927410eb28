//! INT workloads (issue 17): the telemetry reports switches already send, for the translator's INT front
//! end, as Ethernet/IPv4/UDP frames to the INT port (32766).
//!
//! * [`IntKind::V05`]: fabric-tna v0.5 reports hop by hop. Flows follow 5-hop fat-tree paths; each hop's
//!   switch sends a switch-local report of the flow's packet (inner TTL 64 - hop, as after its own
//!   decrement), with a queue occupancy and the congested (Q) flag above a threshold. With probability
//!   `drop_per_mille` a hop drops the packet instead: a drop report, and the flow's later hops send
//!   nothing.
//! * [`IntKind::V2`]: Telemetry Report v2.0 sink reports: one per flow, from the path's last switch, with
//!   the INT-MD stack of the four hops before it (INT 2.1 over UDP, node id, hop latency and queue per
//!   hop) in the reported packet, and the sink's own hop latency and queue as the report's metadata.
//!
//! Every random choice comes from one [`SplitMix64`] in a fixed order, documented on [`IntGenerator`], so
//! `pktgen/trex/dta_int.py` can rebuild the same frames. Switches number their reports per (switch,
//! hardware id), as fabric-tna does per pipe.

use std::collections::HashMap;

use dta_protocol::int::v05;
use dta_protocol::int::v2::{self, GroupRepr, InType};
use dta_protocol::int::FABRIC_TNA_REPORT_PORT;
use dta_protocol::udp::{UdpEndpoints, HEADERS_LEN};
use serde::Serialize;

use crate::fattree::{FatTree, HOPS};
use crate::keys::KeyDist;
use crate::rng::SplitMix64;

/// UDP port announcing INT-MD over UDP in the reported packets (the translator's `int.md_udp_port`).
pub const INT_MD_PORT: u16 = 5000;
/// Drop reasons drawn for drop reports (fabric-tna's: no route, ACL deny, next hop miss).
pub const DROP_REASONS: [u8; 3] = [71, 80, 89];
/// Queue occupancy above which a hop flags its queue as congested (Q).
pub const CONGESTED: u32 = 40_000;
/// Bytes of the reported (truncated) packet's UDP payload.
const INNER_PAYLOAD: usize = 8;

/// Which INT report format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, clap::ValueEnum)]
pub enum IntKind {
    /// fabric-tna v0.5 per-hop switch-local reports, and drop reports.
    #[value(name = "int-v05")]
    #[serde(rename = "int-v05")]
    V05,
    /// Telemetry Report v2.0 sink reports carrying the whole path.
    #[value(name = "int-v2")]
    #[serde(rename = "int-v2")]
    V2,
}

/// Parameters of an INT workload.
#[derive(Debug, Clone)]
pub struct IntParams {
    /// Format.
    pub kind: IntKind,
    /// Flow distribution (a flow index; its 5-tuple is derived from it).
    pub flows: KeyDist,
    /// The fat tree paths run through.
    pub tree: FatTree,
    /// Drops per thousand hops (v0.5).
    pub drop_per_mille: u32,
    /// Seed.
    pub seed: u64,
}

/// A flow's 5-tuple from its index: 10.x.y.z:sport -> 10.200.a.b:dport, UDP.
pub fn flow_tuple(flow: u32) -> ([u8; 4], [u8; 4], u16, u16) {
    let f = flow.to_be_bytes();
    (
        [10, f[1], f[2], f[3]],
        [10, 200, f[3], f[2]],
        10_000 + (flow % 50_000) as u16,
        if flow % 2 == 0 { 443 } else { 80 },
    )
}

/// Generates INT report frames. Draws per flow: the flow (1, from the distribution), then its path (6,
/// [`FatTree::path`]). v0.5, per hop in path order: occupancy (1, `below(50_000)`), then drop (1,
/// `below(1000) < drop_per_mille`), and for a drop its reason (1, `below(3)`). v2, per hop of the four
/// stacked ones and then the sink: occupancy (1, `below(50_000)`).
#[derive(Debug, Clone)]
pub struct IntGenerator {
    p: IntParams,
    envelope: UdpEndpoints,
    rng: SplitMix64,
    index: u64,
    /// The v0.5 flow in progress: its index, path and next hop (0-based).
    flow: Option<(u32, [u32; HOPS], usize)>,
    seq: HashMap<(u32, u8), u32>,
    drops: u64,
    payload: Vec<u8>,
    inner: Vec<u8>,
}

impl IntGenerator {
    /// A generator of `p` in frames with `envelope` (its destination port is set to the INT port).
    pub fn new(p: IntParams, envelope: UdpEndpoints) -> Self {
        IntGenerator {
            rng: SplitMix64::new(p.seed),
            envelope: UdpEndpoints {
                dst_port: FABRIC_TNA_REPORT_PORT,
                ecn: 0,
                ..envelope
            },
            p,
            index: 0,
            flow: None,
            seq: HashMap::new(),
            drops: 0,
            payload: Vec::with_capacity(256),
            inner: Vec::with_capacity(128),
        }
    }

    /// Frames generated so far.
    pub fn index(&self) -> u64 {
        self.index
    }

    /// Drop reports generated so far.
    pub fn drops(&self) -> u64 {
        self.drops
    }

    fn next_seq(&mut self, node: u32, hw_id: u8) -> u32 {
        let s = self.seq.entry((node, hw_id)).or_insert(0);
        *s = s.wrapping_add(1);
        *s
    }

    /// The longest frame: a v2.0 report of a 4-hop stack is 174 bytes, a v0.5 one 112.
    pub const MAX_FRAME_LEN: usize = 256;

    /// Writes the next frame at the start of `out` and returns its length; `None`, drawing nothing, when
    /// `out` is shorter than [`MAX_FRAME_LEN`](Self::MAX_FRAME_LEN).
    pub fn next_frame(&mut self, out: &mut [u8]) -> Option<usize> {
        if out.len() < Self::MAX_FRAME_LEN {
            return None;
        }
        self.payload.clear();
        match self.p.kind {
            IntKind::V05 => self.v05(),
            IntKind::V2 => self.v2(),
        }
        let len = HEADERS_LEN + self.payload.len();
        // Bounded sizes (asserted by a test against MAX_FRAME_LEN): emitting cannot fail.
        self.envelope
            .emit_frame(&mut out[..len], &self.payload)
            .ok()?;
        self.index += 1;
        Some(len)
    }

    fn new_flow(&mut self) -> (u32, [u32; HOPS]) {
        let flow = self.p.flows.sample(&mut self.rng);
        let path = self.p.tree.path(&mut self.rng);
        (flow, path)
    }

    /// The flow's packet at `ttl`, Ethernet/IPv4/UDP to `dport` carrying `l4_payload`.
    fn inner_packet(&mut self, flow: u32, ttl: u8, dport: u16, l4_payload: &[u8]) {
        let (src, dst, sport, _) = flow_tuple(flow);
        let mut ep = UdpEndpoints::new(
            [2, 0, 0, 0, 0, 0x0A],
            [2, 0, 0, 0, 0, 0x0B],
            src,
            dst,
            sport,
            dport,
        );
        ep.ttl = ttl;
        // A user's packet, not RoCE: no ECN capability (UdpEndpoints defaults to ECT(0)).
        ep.ecn = 0;
        self.inner.clear();
        self.inner.resize(HEADERS_LEN + l4_payload.len(), 0);
        let _ = ep.emit_frame(&mut self.inner, l4_payload);
    }

    fn v05(&mut self) {
        let (flow, path, hop) = match self.flow {
            Some(f) => f,
            None => {
                let (flow, path) = self.new_flow();
                (flow, path, 0)
            }
        };
        let switch = path[hop];
        let occupancy = self.rng.below(50_000) as u32;
        let dropped = self.rng.below(1000) < u64::from(self.p.drop_per_mille);
        let ts = (self.index as u32).wrapping_mul(1000);
        let dport = flow_tuple(flow).3;
        self.inner_packet(flow, 64 - (hop as u8 + 1), dport, &[0u8; INNER_PAYLOAD]);
        let common = v05::CommonRepr {
            switch_id: switch,
            ig_port: 1 + hop as u16,
            eg_port: 2 + hop as u16,
            queue_id: (hop % 4) as u8,
        };
        let body = if dropped {
            let reason = DROP_REASONS[self.rng.below(DROP_REASONS.len() as u64) as usize];
            self.drops += 1;
            v05::Body::Drop { common, reason }
        } else {
            v05::Body::Local {
                common,
                queue_occupancy: occupancy,
                eg_tstamp: ts.wrapping_add(100 + occupancy / 100),
            }
        };
        let hw_id = if dropped { 2 } else { 1 };
        let r = v05::ReportRepr {
            dropped,
            congested: !dropped && occupancy > CONGESTED,
            tracked_flow: !dropped,
            hw_id,
            seq_no: self.next_seq(switch, hw_id),
            ig_tstamp: ts,
            body,
            inner: &self.inner,
        };
        self.payload.resize(r.buffer_len(), 0);
        let _ = r.emit(&mut self.payload);
        // A drop ends the flow: its later hops never see the packet.
        self.flow = (!dropped && hop + 1 < HOPS).then_some((flow, path, hop + 1));
    }

    fn v2(&mut self) {
        let (flow, path) = self.new_flow();
        // The stack, newest (hop 4) first: node id, hop latency, queue id and occupancy per hop.
        let stacked = HOPS - 1;
        let mut hops = [(0u32, 0u32, 0u32); HOPS];
        for (h, slot) in hops.iter_mut().enumerate() {
            let occupancy = self.rng.below(50_000) as u32;
            *slot = (path[h], 200 + occupancy / 50, occupancy);
        }
        let (_, _, _, dport) = flow_tuple(flow);
        let mut md = Vec::with_capacity(16 + 12 * stacked);
        // INT 2.1 shim: type 1 (INT-MD) and NPT 1 (the original UDP destination port follows) in the
        // first byte, then the words after the shim (the 3-word MD header and 3 words per hop).
        md.extend_from_slice(&[1 << 4 | 1 << 2, (3 + 3 * stacked) as u8]);
        md.extend_from_slice(&dport.to_be_bytes());
        // MD header: version 2, D E M and reserved 0, HopML 3, remaining hop count; the instruction
        // bitmap (node id, hop latency, queue: bits 0, 2, 3) and domain-specific id; DS instruction, flags.
        let word1: u32 = 2 << 28 | 3 << 8 | (8 - stacked as u32);
        md.extend_from_slice(&word1.to_be_bytes());
        md.extend_from_slice(&[0xB0, 0x00, 0, 0, 0, 0, 0, 0]);
        for &(node, latency, occupancy) in hops[..stacked].iter().rev() {
            md.extend_from_slice(&node.to_be_bytes());
            md.extend_from_slice(&latency.to_be_bytes());
            md.extend_from_slice(&((1u32 << 24) | (occupancy & 0xFF_FFFF)).to_be_bytes());
        }
        md.extend_from_slice(&[0u8; INNER_PAYLOAD]);
        self.inner_packet(flow, 64 - HOPS as u8, INT_MD_PORT, &md);
        let (sink, latency, occupancy) = hops[stacked];
        let seq = self.next_seq(sink, 5);
        let mut meta = latency.to_be_bytes().to_vec();
        meta.extend_from_slice(&((2u32 << 24) | (occupancy & 0xFF_FFFF)).to_be_bytes());
        self.payload.resize(v2::GROUP_LEN + 256, 0);
        let g = GroupRepr {
            hw_id: 5,
            seq_no: seq,
            node_id: sink,
        };
        let _ = g.emit(&mut self.payload);
        let n = v2::emit_int_report(
            &mut self.payload[v2::GROUP_LEN..],
            InType::Ethernet,
            (false, occupancy > CONGESTED, true, false),
            0b0011 << 12,
            0,
            &meta,
            &self.inner,
        )
        .unwrap_or(0);
        self.payload.truncate(v2::GROUP_LEN + n);
    }
}
