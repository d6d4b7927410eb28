//! The INT workload (issue 17): fabric-tna v0.5 per-hop and drop reports and Telemetry Report v2.0 sink
//! reports, built by the independent encoder [`int_spec`](crate::int_spec), sent to the translator's INT
//! port; then every flow's path, every hop record, every drop counter and every drop and queue event is
//! read back through the collector's HTTP API and compared with a model of the memory.
//!
//! The model follows `dta_protocol::int::mapping` (the contract) and the collector's layouts: it replays
//! where each write lands, so a key whose every copy another key overwrote is reported as a layout problem
//! (enlarge the region) instead of weakening the check.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};

use anyhow::{bail, ensure, Context, Result};
use dta_protocol::int::inner::FlowKey;
use dta_protocol::int::mapping::{
    drop_counter_key, flow_hop_key, flow_key, DropEvent, HopRecord, QueueEvent,
};
use dta_protocol::layout::{KeyIncrementGeometry, KeyWriteGeometry, PostcardGeometry};

use crate::http::get_json;
use crate::int_spec::{self as spec, Flow, Local, MdHop};
// The INT event lists live with the regions they are part of (workload.rs builds the collector's regions
// for both kinds of run), so that this module depends on workload.rs and never the other way round.
pub use crate::workload::{int_lists, INT_DROP_LISTS, INT_LIST_ENTRIES, INT_QUEUE_LISTS};
use crate::workload::{
    mix, Verify, Workload, KI_N, KI_SLOTS, KW_N, KW_SLOTS, PC_CHUNKS, PC_HOPS, PC_N, PC_UNIVERSE,
};

/// The translator's INT port (fabric-tna's default).
pub const INT_PORT: u16 = 32766;
/// INT-MD over UDP in reported packets.
pub const INT_MD_PORT: u16 = 5000;
/// Copies of hop records and drop counters (`int.redundancy`).
pub const INT_N: u8 = 2;

/// The translator sections of an INT run (appended to the engine sections).
pub const INT_SECTIONS: &str = r#"
[report]
keywrite_data_len = 12

[int]
enabled = true
md_udp_port = 5000
drop_list = [10, 12]
queue_list = [11, 13]
redundancy = 2
"#;

/// The collector's `[int]` section of an INT run (the node universe is the Postcarding one).
pub const COLLECTOR_INT: &str = "\n[int]\ndrop_list = [10, 12]\nqueue_list = [11, 13]\n";

fn spec_flow(f: u32) -> Flow {
    let b = f.to_be_bytes();
    Flow {
        src: [10, 1, b[2], b[3]],
        dst: [10, 2, 0, 1 + (f % 200) as u8],
        sport: 20_000 + (f % 30_000) as u16,
        dport: 443,
    }
}

/// The first per-hop flow of [`int`], as the INT queries name it (for the demo's example query).
pub fn example_flow() -> String {
    flow_text(&spec_flow(0))
}

fn flow_text(f: &Flow) -> String {
    let ip = |a: [u8; 4]| Ipv4Addr::from(a).to_string();
    format!("{},{},17,{},{}", ip(f.src), ip(f.dst), f.sport, f.dport)
}

fn key_of(f: &Flow) -> u32 {
    flow_key(&FlowKey {
        src: IpAddr::V4(Ipv4Addr::from(f.src)),
        dst: IpAddr::V4(Ipv4Addr::from(f.dst)),
        protocol: 17,
        src_port: f.sport,
        dst_port: f.dport,
    })
}

/// What the collector must answer.
#[derive(Default)]
struct Model {
    paths: Vec<(u32, Vec<u32>)>,
    /// Every flow as the INT queries name it (`SRC,DST,PROTO,SPORT,DPORT`), with its key.
    flows: Vec<(String, u32)>,
    /// Hop records in send order (each key once).
    hops: Vec<(u32, HopRecord)>,
    /// Hop records whose every copy's slot another key writes too: found exact, or empty (which writes
    /// last is the order the workers' QPs deliver in), never another record.
    hops_contested: Vec<(u32, HopRecord)>,
    drops: HashMap<(u32, u8), u64>,
    drop_events: Vec<[u8; 16]>,
    queue_events: Vec<[u8; 16]>,
    /// Flows (as the INT queries name them) that must have no path: forged by a tenant.
    absent: Vec<String>,
}

/// What the translator's INT counters read after [`int_with_expected`]'s reports.
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

/// The events and drop counts [`int_with_history`]'s reports leave in the collector: what its history
/// exporter must export.
#[derive(Debug, Clone, Default)]
pub struct IntHistory {
    /// Drop events, in the order their reports are sent (each worker's list keeps this order).
    pub drop_events: Vec<DropEvent>,
    /// Congestion (queue) events, likewise.
    pub queue_events: Vec<QueueEvent>,
    /// Drops per (node, reason).
    pub drops: std::collections::BTreeMap<(u32, u8), u64>,
}

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

/// Every path keeps a chunk copy of its own and every drop counter its own counters (else the check would
/// depend on luck, or on the order in which several workers' writes land); the few hop records whose every
/// copy shares its slot with another key (a Key-Write region is last-writer-wins) may be found or empty,
/// at most 1 %.
fn check_layouts(m: &mut Model) -> Result<()> {
    let pc = PostcardGeometry::new(PC_CHUNKS, PC_HOPS, PC_N).context("Postcarding geometry")?;
    // A chunk copy of its own, whatever order the workers write in.
    let mut chunks: HashMap<u64, std::collections::HashSet<u32>> = HashMap::new();
    for (key, _) in &m.paths {
        for n in 0..PC_N {
            chunks.entry(pc.offset(*key, n)).or_default().insert(*key);
        }
    }
    for (key, _) in &m.paths {
        ensure!(
            (0..PC_N).any(|n| chunks[&pc.offset(*key, n)].len() == 1),
            "INT path {key:#x} shares every chunk copy with another flow; enlarge the region"
        );
    }
    let kw = KeyWriteGeometry::new(KW_SLOTS, 16, KW_N).context("Key-Write geometry")?;
    // Which keys write each slot: a key with a slot of its own keeps that copy whatever the order of the
    // writes; one whose every slot another key writes too keeps a copy or not depending on which writes
    // last, and with several workers (each writing its own flows' records on its own QP) that order is
    // not the send order.
    let mut writers: HashMap<u64, std::collections::HashSet<u32>> = HashMap::new();
    for (key, _) in &m.hops {
        for n in 0..INT_N {
            writers.entry(kw.slot(*key, n)).or_default().insert(*key);
        }
    }
    let (kept, contested): (Vec<_>, Vec<_>) = m
        .hops
        .iter()
        .partition(|(key, _)| (0..INT_N).any(|n| writers[&kw.slot(*key, n)].len() == 1));
    ensure!(
        contested.len() * 100 <= m.hops.len(),
        "{} of {} INT hop records share every copy's slot; enlarge the region",
        contested.len(),
        m.hops.len()
    );
    m.hops_contested = contested;
    m.hops = kept;
    let ki = KeyIncrementGeometry::new(KI_SLOTS, KI_N).context("Key-Increment geometry")?;
    let mut counters: HashMap<u64, u32> = HashMap::new();
    for &(node, reason) in m.drops.keys() {
        let key = drop_counter_key(node, reason);
        for n in 0..INT_N {
            if let Some(other) = counters.insert(ki.offset(key, n), key) {
                ensure!(other == key, "two drop counters share a counter; enlarge");
            }
        }
    }
    ensure!(m.drop_events.len() as u64 <= INT_LIST_ENTRIES);
    ensure!(m.queue_events.len() as u64 <= INT_LIST_ENTRIES);
    Ok(())
}

fn verify(http: std::net::SocketAddr, m: &Model) -> Result<()> {
    for (key, path) in &m.paths {
        let a = get_json(http, &format!("/query/postcard?key={key}&n={PC_N}"))?;
        if a["outcome"] != "found" || a["path"] != serde_json::json!(path) {
            bail!("INT path of flow {key:#x}: expected {path:?}, collector says {a}");
        }
    }
    for (key, rec) in &m.hops {
        let a = get_json(http, &format!("/query/keywrite?key={key}&n={INT_N}"))?;
        let want = hex(&rec.encode());
        if a["outcome"] != "found" || a["data"].as_str() != Some(want.as_str()) {
            bail!("INT hop record {key:#x}: expected {rec:?} ({want}), collector says {a}");
        }
    }
    for (key, rec) in &m.hops_contested {
        let a = get_json(http, &format!("/query/keywrite?key={key}&n={INT_N}"))?;
        let want = hex(&rec.encode());
        let exact = a["outcome"] == "found" && a["data"].as_str() == Some(want.as_str());
        if !exact && a["outcome"] != "empty" {
            bail!("INT hop record {key:#x} shares its slots: expected it or nothing, collector says {a}");
        }
    }
    for (&(node, reason), &count) in &m.drops {
        let key = drop_counter_key(node, reason);
        let a = get_json(http, &format!("/query/keyincrement?key={key}&n={INT_N}"))?;
        if a["estimate"].as_u64() != Some(count) {
            bail!("INT drops at node {node} for reason {reason}: expected {count}, collector says {a}");
        }
    }
    verify_int_queries(http, m)?;
    for (lists, want) in [
        (INT_DROP_LISTS, &m.drop_events),
        (INT_QUEUE_LISTS, &m.queue_events),
    ] {
        let want: Vec<String> = want.iter().map(|e| hex(e)).collect();
        let mut all = Vec::new();
        for list in lists {
            let a = get_json(http, &format!("/query/append?list={list}&max=65536"))?;
            let got: Vec<String> = a["entries"]
                .as_array()
                .context("entries")?
                .iter()
                .filter_map(|e| e.as_str().map(str::to_owned))
                .collect();
            // Each worker appends the events of the reports it translates in the order it takes them.
            if !in_order_of(&got, &want) {
                bail!("INT list {list}: entries out of the order sent; collector says {a}");
            }
            all.extend(got);
        }
        // Together, every event exactly once.
        let (mut all, mut sorted) = (all, want.clone());
        all.sort();
        sorted.sort();
        if all != sorted {
            bail!(
                "INT lists {lists:?}: expected {} entries {:?}..., the collector has {}",
                want.len(),
                want.first(),
                all.len()
            );
        }
    }
    Ok(())
}

/// Whether `part` is a subsequence of `whole` (in the same order, gaps allowed).
fn in_order_of(part: &[String], whole: &[String]) -> bool {
    let mut rest = whole.iter();
    part.iter().all(|p| rest.any(|w| w == p))
}

/// The same state through the collector's INT queries (`int-path`, `int-flow`, `int-drops`), which name
/// flows by their 5-tuple and compute the keys themselves.
fn verify_int_queries(http: std::net::SocketAddr, m: &Model) -> Result<()> {
    let paths: HashMap<u32, &Vec<u32>> = m.paths.iter().map(|(k, p)| (*k, p)).collect();
    let records: HashMap<u32, &HopRecord> = m.hops.iter().map(|(k, r)| (*k, r)).collect();
    let contested: HashMap<u32, &HopRecord> =
        m.hops_contested.iter().map(|(k, r)| (*k, r)).collect();
    for (text, key) in &m.flows {
        let a = get_json(http, &format!("/query/int-path?flow={text}"))?;
        let want = serde_json::json!(paths[key]);
        if a["outcome"] != "found" || a["path"] != want || a["flow_key"] != *key {
            bail!("int-path {text}: expected {want}, collector says {a}");
        }
        let a = get_json(http, &format!("/query/int-flow?flow={text}&n={INT_N}"))?;
        let found: Vec<&HopRecord> = (1..=PC_HOPS)
            .filter_map(|h| records.get(&flow_hop_key(*key, h)).copied())
            .collect();
        let latency: u64 = found.iter().map(|r| u64::from(r.hop_latency)).sum();
        // Records that share their slots may be there or not.
        let maybe: Vec<&HopRecord> = (1..=PC_HOPS)
            .filter_map(|h| contested.get(&flow_hop_key(*key, h)).copied())
            .collect();
        let maybe_latency: u64 = maybe.iter().map(|r| u64::from(r.hop_latency)).sum();
        let t = &a["totals"];
        let (hops, lat) = (
            t["hops_found"].as_u64().unwrap_or(u64::MAX),
            t["latency_sum"].as_u64().unwrap_or(u64::MAX),
        );
        let in_range = |v: u64, lo: u64, extra: u64| (lo..=lo + extra).contains(&v);
        if !in_range(hops, found.len() as u64, maybe.len() as u64)
            || !in_range(lat, latency, maybe_latency)
            || (maybe.is_empty() && (hops, lat) != (found.len() as u64, latency))
        {
            bail!(
                "int-flow {text}: expected {} hops and latency {latency}, collector says {a}",
                found.len()
            );
        }
    }
    for text in &m.absent {
        let a = get_json(http, &format!("/query/int-path?flow={text}"))?;
        if a["outcome"] != "empty" {
            bail!("int-path {text}: a tenant's forged report made a path; collector says {a}");
        }
    }
    let mut per_node: HashMap<u32, u64> = HashMap::new();
    for (&(node, _), &count) in &m.drops {
        *per_node.entry(node).or_default() += count;
    }
    for (node, total) in per_node {
        let a = get_json(
            http,
            &format!("/query/int-drops?node={node}&n={INT_N}&max=65536"),
        )?;
        // One window per drop list (per translator worker).
        let events: u64 = a["events"]
            .as_array()
            .context("int-drops events")?
            .iter()
            .map(|w| w["events"].as_array().map_or(0, Vec::len) as u64)
            .sum();
        if a["total"].as_u64() != Some(total) || events != total {
            bail!("int-drops node {node}: expected {total} drops and events, collector says {a}");
        }
    }
    Ok(())
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
