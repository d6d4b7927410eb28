//! A leaf-spine fabric's INT reports end to end (issue 27, item 7): fabric-tna v0.5 switch-local reports
//! of a two-tier fabric, built by the independent encoder [`int_spec`](crate::int_spec), sent to a
//! translator with `[int] hop_mode = "topology"` and the fabric's `[[int.switches]]`; every flow's path
//! and every hop record read back through the collector's `int-path` and `int-flow` queries.
//!
//! The fabric, numbered as Tofino device ports (9 bits, the pipe in the top two): leaves 1 and 2 with
//! hosts on ports 1..=8 and uplinks 132 (spine 21) and 140 (spine 22); leaves 3 and 4 with hosts on
//! ports 260..=267 and uplinks 1 and 2 (so a port that faces a host on one leaf faces a spine on
//! another: only the per-switch lists tell them apart); spines 21 and 22 reach leaf L on their port L.
//! A report's hardware id is its ingress pipe, as fabric-tna's. Four hosts hang off each leaf, two subnets of two hosts per leaf; most
//! send with initial TTL 64, one with 32, one with 128, and one sits behind routers outside the fabric
//! (TTL 58 when it enters).
//!
//! What each switch's report carries is what fabric-tna's `next.p4` leaves in the mirrored packet:
//!
//! * between leaves (routed over MPLS): the first leaf and the spine report the host's TTL untouched,
//!   the last leaf (which pops the label and routes) one less: 64, 64, 63 for most hosts;
//! * on one leaf: bridged within a subnet, the TTL untouched; routed between its subnets, one less.
//!
//! The reports come as a fabric sends them: a flow's switches report in any order (last hop first,
//! spine first, ...) and flows interleave; each (switch, hardware id) numbers its own reports (one
//! switch's numbers wrap) and some leave after their switch's next one (late, never lost); some flows are reported again later with
//! new latencies (the newer record wins); some flows lose one switch's report for good (never sent, no
//! sequence number taken): the last hop, the spine, or the first hop. Timestamps are a 32-bit clock
//! that wraps during the run. Reports the fabric cannot place: a leaf's report between its two uplinks
//! (on leaves 3 and 4 those are ports 1 and 2, host ports on leaves 1 and 2), and a switch outside the
//! fabric (node 40, inside the collector's node universe, so a wrong placement would decode).
//!
//! The expected answers come from the route of each flow (which switches, which ports, in which hop)
//! and from what each report said, replayed in send order: nothing here computes a key, a checksum or
//! a placement with the code under test. A flow with every switch of its route reported has that path;
//! any other flow has none (`int-path` empty, never a shorter path), and its reported hops' records are
//! still found by `int-flow`. The workload is small (under 2,000 hop records in 2^20 Key-Write slots,
//! under 500 paths in 2^18 chunks with 4 copies) and deterministic: a key whose every copy another key
//! overwrote would fail every run, not some.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use crate::http::{get_json, metric};
use crate::int_spec::{self as spec, Flow, Local};
use crate::send::Metrics;
use crate::workload::{Verify, Workload, PC_HOPS};

/// The leaves' node ids.
pub const LEAVES: [u32; 4] = [1, 2, 3, 4];
/// The spines' node ids.
pub const SPINES: [u32; 2] = [21, 22];
/// A switch that reports but is not in the fabric's configuration.
pub const OUTSIDE: u32 = 40;
/// Hop records are read with this redundancy (the INT run's `int.redundancy`).
const INT_N: u8 = crate::int_workload::INT_N;

/// A leaf's host-facing ports.
fn host_ports(leaf: u32) -> std::ops::RangeInclusive<u16> {
    if leaf <= 2 {
        1..=8
    } else {
        260..=267
    }
}

/// A leaf's port toward `spine`.
fn uplink(leaf: u32, spine: u32) -> u16 {
    let i = u16::from(spine == SPINES[1]);
    if leaf <= 2 {
        132 + 8 * i
    } else {
        1 + i
    }
}

/// A spine's port toward `leaf`.
fn downlink(leaf: u32) -> u16 {
    leaf as u16
}

/// The translator lines that describe the fabric (they continue the INT run's `[int]` table).
pub fn translator_sections() -> String {
    let mut s = String::from("hop_mode = \"topology\"\n");
    for leaf in LEAVES {
        let ports: Vec<String> = host_ports(leaf).map(|p| p.to_string()).collect();
        s += &format!(
            "\n[[int.switches]]\nnode = {leaf}\nrole = \"leaf\"\nhost_ports = [{}]\n",
            ports.join(", ")
        );
    }
    for spine in SPINES {
        s += &format!("\n[[int.switches]]\nnode = {spine}\nrole = \"spine\"\n");
    }
    s
}

#[derive(Debug, Clone, Copy)]
struct Host {
    leaf: u32,
    port: u16,
    ip: [u8; 4],
    /// Subnet on its leaf.
    subnet: u8,
    /// The TTL its packets have when they enter the fabric.
    ttl: u8,
}

fn hosts() -> Vec<Host> {
    let mut out = Vec::new();
    for leaf in LEAVES {
        for i in 0..4u8 {
            let n = out.len();
            out.push(Host {
                leaf,
                port: host_ports(leaf).start() + u16::from(i),
                ip: [10, leaf as u8, i / 2, 10 + i],
                subnet: i / 2,
                ttl: match n {
                    5 => 32,
                    10 => 128,
                    15 => 58,
                    _ => 64,
                },
            });
        }
    }
    out
}

/// One switch's view of a packet: where it came in and left, and the inner TTL it mirrors.
#[derive(Debug, Clone, Copy)]
struct Step {
    switch: u32,
    ig_port: u16,
    eg_port: u16,
    ttl: u8,
}

/// The switches a packet from `src` to `dst` crosses, in path order (spine `spine` between leaves).
fn route(src: &Host, dst: &Host, spine: u32) -> Vec<Step> {
    let step = |switch, ig_port, eg_port, ttl| Step {
        switch,
        ig_port,
        eg_port,
        ttl,
    };
    if src.leaf == dst.leaf {
        // Bridged within a subnet (TTL untouched), routed between subnets (decremented once).
        let ttl = src.ttl - u8::from(src.subnet != dst.subnet);
        return vec![step(src.leaf, src.port, dst.port, ttl)];
    }
    vec![
        step(src.leaf, src.port, uplink(src.leaf, spine), src.ttl),
        step(spine, downlink(src.leaf), downlink(dst.leaf), src.ttl),
        step(dst.leaf, uplink(dst.leaf, spine), dst.port, src.ttl - 1),
    ]
}

/// A hop record as `int-flow` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Record {
    node: u32,
    hop_latency: u32,
    queue_id: u8,
    queue_occupancy: u32,
}

impl Record {
    fn json(&self) -> Value {
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
struct Pending {
    stream: (u32, u8),
    local: Local,
    inner: Vec<u8>,
    place: Option<(usize, usize)>,
}

/// What the collector must answer for one flow.
#[derive(Debug, Clone)]
struct Expect {
    /// As the INT queries name it.
    text: String,
    /// The path, when every switch of the route reported; else none.
    path: Option<Vec<u32>>,
    /// Hop records, hop 1 first (the last report of each hop wins).
    hops: Vec<Option<Record>>,
}

/// What the translator's counters read after [`fabric_with_expected`]'s reports.
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

fn flow_text(f: &Flow) -> String {
    let ip = |a: [u8; 4]| Ipv4Addr::from(a).to_string();
    format!("{},{},17,{},{}", ip(f.src), ip(f.dst), f.sport, f.dport)
}

/// `sports` flows between every ordered pair of the fabric's 16 hosts (240 pairs; 48 on one leaf,
/// 192 across the spines), reported as the module docs say, and the 8 unplaceable reports.
pub fn fabric_with_expected(sports: u16) -> Result<(Workload, FabricExpected)> {
    let hosts = hosts();
    let mut x = FabricExpected::default();
    let mut flows: Vec<Flow> = Vec::new();
    let mut routes: Vec<Vec<Step>> = Vec::new();
    // Per flow: the hops whose switches report it, in the order they send (a lost hop left out).
    let mut sends: Vec<Vec<usize>> = Vec::new();
    let mut repeat: Vec<usize> = Vec::new();
    let mut across = 0u32;
    for (i, src) in hosts.iter().enumerate() {
        for (j, dst) in hosts.iter().enumerate() {
            if i == j {
                continue;
            }
            for k in 0..sports {
                let f = flows.len();
                let flow = Flow {
                    src: src.ip,
                    dst: dst.ip,
                    sport: 30_000 + f as u16,
                    dport: [443, 53, 8080][usize::from(k % 3)],
                };
                // ECMP: the spine by the flow.
                let spine = SPINES[(i + j + usize::from(k)) % 2];
                let r = route(src, dst, spine);
                let mut order: Vec<usize> = (0..r.len()).collect();
                if r.len() == 3 {
                    order = match across % 4 {
                        0 => vec![0, 1, 2],
                        1 => vec![2, 1, 0],
                        2 => vec![1, 2, 0],
                        _ => vec![0, 2, 1],
                    };
                    // One switch's report lost for good: the last hop, the spine, the first hop.
                    let lost = match across % 41 {
                        7 => Some(2),
                        20 => Some(1),
                        33 => Some(0),
                        _ => None,
                    };
                    if let Some(h) = lost {
                        order.retain(|&o| o != h);
                        x.partial += 1;
                    } else {
                        x.whole += 1;
                        if across % 11 == 4 {
                            repeat.push(f);
                        }
                    }
                    across += 1;
                } else {
                    x.whole += 1;
                    x.one_leaf += 1;
                    if f % 9 == 2 {
                        repeat.push(f);
                    }
                }
                flows.push(flow);
                routes.push(r);
                sends.push(order);
            }
        }
    }
    x.repeated = repeat.len() as u64;

    // The switch's report of flow `f`'s hop `h` in reporting round `round`: latencies and queues differ
    // per flow, hop and round; ingress timestamps run on a 32-bit nanosecond clock that wraps.
    let report = |f: usize, h: usize, round: u32| -> Pending {
        let s = routes[f][h];
        let (fu, hu) = (f as u32, h as u32);
        let ig_ts = (u32::MAX - 400_000)
            .wrapping_add(round * 50_000_000)
            .wrapping_add(1_000 * fu + 300 * hu);
        let latency = 200 + 37 * hu + fu % 50 + 1_000 * round;
        let local = Local {
            switch: s.switch,
            hw_id: (s.ig_port >> 7) as u8,
            seq: 0,
            congested: false,
            ig_ts,
            eg_ts: ig_ts.wrapping_add(latency),
            queue: (
                ((fu + hu + round) % 8) as u8,
                (fu * 131 + hu * 7 + round) % (1 << 19),
            ),
            ig_port: s.ig_port,
            eg_port: s.eg_port,
        };
        Pending {
            stream: (local.switch, local.hw_id),
            local,
            inner: spec::inner(&flows[f], s.ttl),
            place: Some((f, h)),
        }
    };

    // Flows four at a time, their reports interleaved round-robin; the unplaceable ones amid them.
    let (mut odd, odd_flows) = unplaceable(&hosts);
    let mut list: Vec<Pending> = Vec::new();
    for (g, group) in (0..flows.len()).collect::<Vec<_>>().chunks(4).enumerate() {
        for at in 0..3 {
            for &f in group {
                if let Some(&h) = sends[f].get(at) {
                    list.push(report(f, h, 0));
                }
            }
        }
        if g == 30 {
            list.append(&mut odd);
        }
    }
    for &f in &repeat {
        for &h in &sends[f] {
            list.push(report(f, h, 1));
        }
    }
    flows.extend(odd_flows);
    x.packets = list.len() as u64;
    x.no_hop = list.iter().filter(|p| p.place.is_none()).count() as u64;
    x.translated = x.packets - x.no_hop;

    // Each stream numbers its reports in the order the switch emits them, from where a switch that has
    // been up a while is (spine 21's numbers wrap through 0 during the run); then a stream's 6th, 16th,
    // 26th, ... report leaves after its next one.
    let mut streams: HashMap<(u32, u8), Vec<usize>> = HashMap::new();
    for (i, p) in list.iter_mut().enumerate() {
        let at = streams.entry(p.stream).or_default();
        at.push(i);
        let first = if p.stream.0 == SPINES[0] {
            u32::MAX - 30
        } else {
            1_000 * p.stream.0
        };
        p.local.seq = first.wrapping_add(at.len() as u32);
    }
    let mut streams: Vec<_> = streams.into_iter().collect();
    streams.sort_unstable_by_key(|(s, _)| *s);
    for (_, at) in &streams {
        for k in (5..at.len().saturating_sub(1)).step_by(10) {
            list.swap(at[k], at[k + 1]);
            x.late += 1;
        }
    }

    // The answers: hop records replayed in send order (the last report of a hop wins), paths where
    // every switch of the route reported.
    let mut expect: Vec<Expect> = flows
        .iter()
        .map(|f| Expect {
            text: flow_text(f),
            path: None,
            hops: vec![None; usize::from(PC_HOPS)],
        })
        .collect();
    for p in &list {
        let Some((f, h)) = p.place else { continue };
        expect[f].hops[h] = Some(Record {
            node: p.local.switch,
            hop_latency: p.local.eg_ts.wrapping_sub(p.local.ig_ts),
            queue_id: p.local.queue.0,
            queue_occupancy: p.local.queue.1,
        });
    }
    for (f, r) in routes.iter().enumerate() {
        if expect[f].hops[..r.len()].iter().all(Option::is_some) {
            expect[f].path = Some(r.iter().map(|s| s.switch).collect());
        }
    }
    let reports = list
        .iter()
        .map(|p| spec::v05_local(&p.local, &p.inner))
        .collect();
    let checks = expect.len() as u64 * (2 + u64::from(PC_HOPS));
    let verify: Verify = Box::new(move |http| verify(http, &expect).map(|()| checks));
    let w = Workload {
        name: "int-fabric",
        reports,
        verify,
    };
    Ok((w, x))
}

/// Reports no topology places, each of its own flow (source ports 60,000 and up, which no routed flow
/// has): each leaf's packet between its two uplinks, and a switch outside the fabric between two ports.
fn unplaceable(hosts: &[Host]) -> (Vec<Pending>, Vec<Flow>) {
    let (mut out, mut flows) = (Vec::new(), Vec::new());
    let mut add = |switch: u32, ig_port: u16, eg_port: u16| {
        let flow = Flow {
            src: hosts[out.len()].ip,
            dst: hosts[15 - out.len()].ip,
            sport: 60_000 + out.len() as u16,
            dport: 443,
        };
        let local = Local {
            switch,
            hw_id: (ig_port >> 7) as u8,
            seq: 0,
            congested: false,
            ig_ts: 7,
            eg_ts: 9,
            queue: (1, 5),
            ig_port,
            eg_port,
        };
        out.push(Pending {
            stream: (switch, local.hw_id),
            local,
            inner: spec::inner(&flow, 64),
            place: None,
        });
        flows.push(flow);
    };
    for leaf in LEAVES {
        add(leaf, uplink(leaf, SPINES[0]), uplink(leaf, SPINES[1]));
    }
    for (ig, eg) in [(1, 2), (3, 4), (132, 1), (260, 261)] {
        add(OUTSIDE, ig, eg);
    }
    (out, flows)
}

fn verify(http: std::net::SocketAddr, expect: &[Expect]) -> Result<()> {
    for e in expect {
        let text = &e.text;
        let a = get_json(http, &format!("/query/int-path?flow={text}"))?;
        match &e.path {
            Some(path) => {
                let chunks = a["chunks"].as_u64().unwrap_or(0);
                if a["outcome"] != "found" || a["path"] != json!(path) || chunks == 0 {
                    bail!("int-path {text}: expected {path:?}, collector says {a}");
                }
            }
            None => {
                if a["outcome"] != "empty" {
                    bail!("int-path {text}: a switch of its route never reported, so no path; collector says {a}");
                }
            }
        }
        let b = get_json(http, &format!("/query/int-flow?flow={text}&n={INT_N}"))?;
        if b["flow_key"] != a["flow_key"] || a["flow_key"].as_u64().is_none() {
            bail!("int-path and int-flow name {text} by different keys: {a} and {b}");
        }
        let hops = b["hops"].as_array().context("int-flow hops")?;
        if hops.len() != e.hops.len() {
            bail!(
                "int-flow {text}: expected {} hops read, collector says {b}",
                e.hops.len()
            );
        }
        for (i, (got, want)) in hops.iter().zip(&e.hops).enumerate() {
            let ok = got["hop"] == i + 1
                && match want {
                    Some(r) => got["outcome"] == "found" && got["record"] == r.json(),
                    None => got["outcome"] == "empty",
                };
            if !ok {
                bail!(
                    "int-flow {text} hop {}: expected {want:?}, collector says {got}",
                    i + 1
                );
            }
        }
        let found: Vec<&Record> = e.hops.iter().flatten().collect();
        let latency: u64 = found.iter().map(|r| u64::from(r.hop_latency)).sum();
        let t = &b["totals"];
        if t["hops_found"].as_u64() != Some(found.len() as u64)
            || t["latency_sum"].as_u64() != Some(latency)
        {
            bail!(
                "int-flow {text}: expected {} hops and latency {latency}, collector says {b}",
                found.len()
            );
        }
    }
    Ok(())
}

/// Waits until the translator has written at least `partial` flows' incomplete postcard entries (on
/// their idle timeout, or evicted by a flow that took their cache slot), so that the paths whose hop
/// never reported are in the collector's memory when they are read, then until it settles again.
pub fn wait_partial_written(metrics: &Metrics, partial: u64, timeout: Duration) -> Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        let m = metrics.scrape()?;
        let written = metric(&m, "dta_translator_postcard_timeouts_total", "")
            + metric(&m, "dta_translator_postcard_evictions_total", "");
        if written >= partial {
            break;
        }
        if Instant::now() > deadline {
            bail!("{written} of {partial} incomplete postcard entries written in {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let taken = metrics.value(crate::send::INT_PACKETS, "")?;
    metrics.wait_settled_on(crate::send::INT_PACKETS, taken, Duration::from_secs(30))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The routes are what the fabric's wiring says: three switches between leaves with the TTLs
    /// fabric-tna mirrors, one on a leaf.
    #[test]
    fn routes_follow_the_wiring() {
        let h = hosts();
        let r = route(&h[0], &h[12], 22);
        let got: Vec<_> = r
            .iter()
            .map(|s| (s.switch, s.ig_port, s.eg_port, s.ttl))
            .collect();
        assert_eq!(got, [(1, 1, 140, 64), (22, 1, 4, 64), (4, 2, 260, 63)]);
        // Host 5 (leaf 2, port 2) sends with TTL 32; bridged to host 4 on its subnet, routed to host 6.
        assert_eq!(route(&h[5], &h[4], 21)[0].ttl, 32);
        assert_eq!(route(&h[5], &h[6], 21)[0].ttl, 31);
        assert_eq!(route(&h[5], &h[6], 21).len(), 1);
    }

    #[test]
    fn the_workload_has_every_shape() {
        let (w, x) = fabric_with_expected(2).unwrap();
        assert_eq!(x.packets, w.reports.len() as u64);
        assert_eq!(x.whole + x.partial, 480);
        assert_eq!(x.one_leaf, 96);
        assert_eq!(x.no_hop, 8);
        assert!(x.partial >= 3 && x.late > 0 && x.repeated > 0, "{x:?}");
    }

    #[test]
    fn the_fabric_configuration_lists_every_switch() {
        let s = translator_sections();
        assert_eq!(s.matches("[[int.switches]]").count(), 6);
        assert!(s.contains(
            "node = 3\nrole = \"leaf\"\nhost_ports = [260, 261, 262, 263, 264, 265, 266, 267]"
        ));
    }
}
