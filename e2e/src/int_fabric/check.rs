//! The collector's answers checked against the expectation, and the wait for partial paths.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::json;

use crate::http::{get_json, metric};
use crate::send::Metrics;

use super::expect::{Expect, Record};
use super::topology::INT_N;

pub(super) fn verify(http: std::net::SocketAddr, expect: &[Expect]) -> Result<()> {
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
