//! The reports, as a fabric sends them, and what they must leave.

use std::collections::HashMap;

use anyhow::Result;

use crate::int_spec::{self as spec, Flow, Local};
use crate::workload::{Verify, Workload, PC_HOPS};

use super::check::verify;
use super::expect::{flow_text, Expect, FabricExpected, Pending, Record};
use super::topology::{hosts, route, uplink, Host, Step, LEAVES, OUTSIDE, SPINES};

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
