//! The reports, in the shapes real fabrics send, and the model of the memory they leave.

use std::collections::HashMap;

use anyhow::Result;
use dta_protocol::int::mapping::{flow_hop_key, DropEvent, HopRecord, QueueEvent};

use crate::int_spec::{self as spec, Flow, Local, MdHop};
use crate::workload::{mix, Verify, Workload, PC_HOPS, PC_UNIVERSE};

use super::check::{check_layouts, verify};
use super::flows::{flow_text, key_of, spec_flow};
use super::model::{IntExpected, IntHistory, Model};
use super::sections::INT_MD_PORT;

/// [`int_with_expected`]'s workload alone.
pub fn int(per_hop: u32, sinks: u32, drops: u32, salt: u64) -> Result<Workload> {
    int_with_expected(per_hop, sinks, drops, salt).map(|(w, _)| w)
}

/// `per_hop` flows reported hop by hop (fabric-tna v0.5, 5 hops, every 7th flow congested at hop 3),
/// `sinks` flows reported whole by a v2.0 sink (3 stacked hops and the sink), and `drops` drop reports,
/// in shapes real fabrics send (issue 27):
///
/// * some switches' reports leave out of order (one report sent after its switch's next one), so the
///   translator sees a sequence gap that the late report then fills; a flow's hop-1 report may then
///   come after its other hops were written;
/// * every 9th per-hop flow's hop-1 report is sent again after all the others (a switch reporting the
///   flow again), which must not cut its written path to one hop;
/// * sink reports go two to a v2.0 group with an IOAM report (RepType 2) between them, which is counted
///   and skipped; every 10th sink report flags a congested queue (a queue event of the sink); every
///   100th goes alone with Report Length 0xFF and a tenant payload holding a forged report where a
///   255-word report would end, whose flow must have no path.
pub fn int_with_expected(
    per_hop: u32,
    sinks: u32,
    drops: u32,
    salt: u64,
) -> Result<(Workload, IntExpected)> {
    int_with_history(per_hop, sinks, drops, salt).map(|(w, x, _)| (w, x))
}

/// [`int_with_expected`], with the events and drop counts the reports leave (for the history export).
pub fn int_with_history(
    per_hop: u32,
    sinks: u32,
    drops: u32,
    salt: u64,
) -> Result<(Workload, IntExpected, IntHistory)> {
    let mut reports = Vec::new();
    let mut m = Model::default();
    let mut x = IntExpected::default();
    let node = |f: u32, h: u32| {
        1 + (mix(salt ^ (u64::from(f) << 8) ^ u64::from(h)) % u64::from(PC_UNIVERSE)) as u32
    };
    // Each (node, hardware id) numbers its own reports, as switches do; the translator counts gaps.
    let mut seq: HashMap<(u32, u8), u32> = HashMap::new();
    let mut next_seq = |node: u32, hw_id: u8| {
        let s = seq.entry((node, hw_id)).or_insert(0);
        *s += 1;
        *s
    };
    // Per report of the per-hop part: its switch, whether it is congested, and its switch-local header.
    let mut sent: Vec<(u32, bool, Local)> = Vec::new();
    for f in 0..per_hop {
        let flow = spec_flow(f);
        let key = key_of(&flow);
        let path: Vec<u32> = (1..=u32::from(PC_HOPS)).map(|h| node(f, h)).collect();
        for (i, &switch) in path.iter().enumerate() {
            let hop = i as u32 + 1;
            let congested = f % 7 == 0 && hop == 3;
            let l = Local {
                switch,
                hw_id: 1,
                seq: next_seq(switch, 1),
                congested,
                ig_ts: 1_000 * f + 10 * hop,
                eg_ts: 1_000 * f + 10 * hop + 100 + hop,
                queue: ((hop % 4) as u8, 17 * hop + f % 100),
                ig_port: 1,
                eg_port: 2 + hop as u16,
            };
            reports.push(spec::v05_local(&l, &spec::inner(&flow, 64 - hop as u8)));
            sent.push((switch, congested, l));
            m.hops.push((
                flow_hop_key(key, hop as u8),
                HopRecord {
                    node: switch,
                    hop_latency: 100 + hop,
                    queue_id: l.queue.0,
                    queue_occupancy: l.queue.1,
                },
            ));
            if congested {
                m.queue_events.push(
                    QueueEvent {
                        node: switch,
                        port: l.eg_port,
                        queue_id: l.queue.0,
                        occupancy: l.queue.1,
                        timestamp: l.eg_ts,
                    }
                    .encode(),
                );
            }
        }
        m.paths.push((key, path));
        m.flows.push((flow_text(&flow), key));
    }
    // Out of order: a switch's 11th, 31st, 51st, ... report swaps places with its next one (neither
    // congested, so the queue list keeps its order). Reports and hop records are one to one here.
    let mut by_switch: HashMap<u32, Vec<usize>> = HashMap::new();
    for (i, &(switch, ..)) in sent.iter().enumerate() {
        by_switch.entry(switch).or_default().push(i);
    }
    let mut switches: Vec<_> = by_switch.into_iter().collect();
    switches.sort_unstable();
    for (_, at) in switches {
        for k in (10..at.len().saturating_sub(1)).step_by(20) {
            let (i, j) = (at[k], at[k + 1]);
            if sent[i].1 || sent[j].1 {
                continue;
            }
            reports.swap(i, j);
            m.hops.swap(i, j);
            x.late += 1;
        }
    }
    // A hop-1 report sent again, after every other per-hop report; its record is rewritten then.
    for f in (4..per_hop).step_by(9) {
        let mut l = sent[5 * f as usize].2;
        l.seq = next_seq(l.switch, 1);
        reports.push(spec::v05_local(&l, &spec::inner(&spec_flow(f), 63)));
        let key = flow_hop_key(key_of(&spec_flow(f)), 1);
        if let Some(i) = m.hops.iter().position(|(k, _)| *k == key) {
            let rec = m.hops.remove(i);
            m.hops.push(rec);
        }
        x.translated += 1;
    }
    x.translated += u64::from(per_hop) * u64::from(PC_HOPS);
    let mut s = 0;
    while s < sinks {
        // Every 100th alone, to the end of the packet; else two to a group where there are two.
        let alone = s % 100 == 99 || s + 1 == sinks || (s + 1) % 100 == 99;
        let group: Vec<u32> = if alone { vec![s] } else { vec![s, s + 1] };
        let stacks: Vec<Vec<MdHop>> = group
            .iter()
            .map(|&s| {
                let f = per_hop + s;
                (1..=3)
                    .map(|h| MdHop {
                        node: node(f, h),
                        latency: 50 * h,
                        queue: (1, h + s % 50),
                    })
                    .collect()
            })
            .collect();
        // The sink: a node of the universe (so it decodes) that is not a stack's last (which would
        // merge with it).
        let mut sink = node(per_hop + s, 9);
        while stacks.iter().any(|st| st[2].node == sink) {
            sink = sink % PC_UNIVERSE + 1;
        }
        let mut individual = Vec::new();
        for (&s, stack) in group.iter().zip(&stacks) {
            let flow = spec_flow(per_hop + s);
            let key = key_of(&flow);
            let congested = s % 10 == 3;
            // The sink's own hop latency and queue (RepMdBits 2 and 3).
            let md = spec::pack(&[(77, 32), (2, 8), (u64::from(s), 24)]);
            let to_end = s % 100 == 99;
            let packet = if to_end {
                forged_tenant(&flow, stack, spec_flow(per_hop + sinks + drops + s), &mut m)
            } else {
                spec::int_md_packet(&flow, INT_MD_PORT, 60, stack)
            };
            let r = spec::Individual {
                bits: 0b0011 << 12,
                md,
                congested,
                inner: packet,
                ..Default::default()
            };
            let h = spec::Header {
                report_length: to_end.then_some(0xFF),
                ..spec::Header::default()
            };
            individual.push(spec::v2_individual(&r, h));
            if congested {
                m.queue_events.push(
                    QueueEvent {
                        node: sink,
                        port: 0,
                        queue_id: 2,
                        occupancy: s,
                        timestamp: 0,
                    }
                    .encode(),
                );
            }
            let mut path: Vec<u32> = stack.iter().map(|h| h.node).collect();
            path.push(sink);
            for (i, h) in stack.iter().enumerate() {
                m.hops.push((
                    flow_hop_key(key, i as u8 + 1),
                    HopRecord {
                        node: h.node,
                        hop_latency: h.latency,
                        queue_id: h.queue.0,
                        queue_occupancy: h.queue.1,
                    },
                ));
            }
            m.hops.push((
                flow_hop_key(key, 4),
                HopRecord {
                    node: sink,
                    hop_latency: 77,
                    queue_id: 2,
                    queue_occupancy: s,
                },
            ));
            m.paths.push((key, path));
            m.flows.push((flow_text(&flow), key));
            x.translated += 1;
            x.whole_paths += 1;
        }
        if let [a, b] = &individual[..] {
            // An IOAM report (RepType 2, its contents not defined yet) between the two: skipped by its
            // length.
            let ioam = spec::Individual {
                md: vec![0x04; 8],
                inner: vec![0x45; 20],
                ..Default::default()
            };
            let h = spec::Header {
                rep_type: 2,
                in_type: 4,
                report_length: None,
            };
            individual = vec![a.clone(), spec::v2_individual(&ioam, h), b.clone()];
            x.unknown_type += 1;
        }
        reports.push(spec::v2_group_of(sink, next_seq(sink, 5), &individual));
        s += group.len() as u32;
    }
    x.translated += u64::from(drops);
    for d in 0..drops {
        let flow = spec_flow(per_hop + sinks + d);
        let switch = 1 + d % 5;
        let reason = [71u8, 80, 89][(d % 3) as usize];
        let r = spec::Drop {
            switch,
            hw_id: 2,
            seq: next_seq(switch, 2),
            ig_ts: 5_000 + d,
            reason,
            queue: (d % 8) as u8,
            ig_port: 7,
            eg_port: 9,
        };
        reports.push(spec::v05_drop(&r, &spec::inner(&flow, 62)));
        *m.drops.entry((switch, reason)).or_insert(0) += 1;
        m.drop_events.push(
            DropEvent {
                flow: key_of(&flow),
                node: switch,
                port: 9,
                reason,
                queue_id: r.queue,
                timestamp: r.ig_ts,
            }
            .encode(),
        );
    }
    check_layouts(&mut m)?;
    let history = IntHistory {
        drop_events: m
            .drop_events
            .iter()
            .filter_map(|e| DropEvent::decode(e))
            .collect(),
        queue_events: m
            .queue_events
            .iter()
            .filter_map(|e| QueueEvent::decode(e))
            .collect(),
        drops: m.drops.iter().map(|(k, v)| (*k, *v)).collect(),
    };
    let checks = 2 * m.paths.len()
        + m.flows.len()
        + m.hops.len()
        + m.hops_contested.len()
        + 2 * m.drops.len();
    let checks = checks + m.absent.len();
    let verify: Verify = Box::new(move |http| verify(http, &m).map(|()| checks as u64));
    let w = Workload {
        name: "int",
        reports,
        verify,
    };
    Ok((w, x, history))
}

/// Flow `flow`'s packet carrying `stack`, whose tenant put in its own payload, where a Report Length of
/// 255 words would end the sink's report, a per-hop report of flow `forged` (recorded as a flow that
/// must have no path).
fn forged_tenant(flow: &Flow, stack: &[MdHop], forged: Flow, m: &mut Model) -> Vec<u8> {
    let report = spec::v2_individual(
        &spec::Individual {
            inner: spec::inner(&forged, 63),
            ..Default::default()
        },
        spec::Header::default(),
    );
    let prefix = spec::int_md_packet(flow, INT_MD_PORT, 60, stack).len();
    // The sink's report: its first word, 8 bytes of INT main contents, 8 of metadata, then this packet.
    let at = (4 + 4 * 255usize).saturating_sub(4 + 8 + 8 + prefix);
    let mut payload = vec![0x5A; at];
    payload.extend(&report);
    m.absent.push(flow_text(&forged));
    spec::int_md_packet_with(flow, INT_MD_PORT, 60, stack, &payload)
}
