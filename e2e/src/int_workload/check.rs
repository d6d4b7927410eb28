//! The model's checks: the layouts keep every key findable, and the collector answers what the model says.

use std::collections::HashMap;

use anyhow::{bail, ensure, Context, Result};
use dta_protocol::int::mapping::{drop_counter_key, flow_hop_key, HopRecord};
use dta_protocol::layout::{KeyIncrementGeometry, KeyWriteGeometry, PostcardGeometry};

use crate::http::get_json;
use crate::workload::{
    INT_DROP_LISTS, INT_LIST_ENTRIES, INT_QUEUE_LISTS, KI_N, KI_SLOTS, KW_N, KW_SLOTS, PC_CHUNKS,
    PC_HOPS, PC_N,
};

use super::model::Model;
use super::sections::INT_N;

/// Every path keeps a chunk copy of its own and every drop counter its own counters (else the check would
/// depend on luck, or on the order in which several workers' writes land); the few hop records whose every
/// copy shares its slot with another key (a Key-Write region is last-writer-wins) may be found or empty,
/// at most 1 %.
pub(super) fn check_layouts(m: &mut Model) -> Result<()> {
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

pub(super) fn verify(http: std::net::SocketAddr, m: &Model) -> Result<()> {
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
