//! Key-Increment: every key's sum found.

use std::collections::HashMap;

use anyhow::{bail, ensure, Context, Result};
use dta_protocol::dta::{Body, KeyIncrementRepr};
use dta_protocol::layout::KeyIncrementGeometry;

use crate::http::get_json;

use super::common::{emit, mix, Verify, Workload};
use super::regions::{KI_N, KI_SLOTS};

/// Key-Increment: `reports` increments over `keys` keys; every key's estimate must be its exact sum.
pub fn key_increment(keys: u32, reports_n: u32, salt: u64) -> Result<Workload> {
    let g = KeyIncrementGeometry::new(KI_SLOTS, KI_N).context("Key-Increment geometry")?;
    let mut reports = Vec::with_capacity(reports_n as usize);
    let mut sums = vec![0u64; keys as usize];
    let mut counters: HashMap<u64, u64> = HashMap::new();
    for i in 0..reports_n {
        let key = i % keys;
        let counter = 1 + mix(salt ^ u64::from(i)) % 13;
        reports.push(emit(
            Body::KeyIncrement(KeyIncrementRepr {
                redundancy: KI_N,
                key,
                counter,
            }),
            i,
        ));
        sums[key as usize] += counter;
        // One FETCH_ADD per copy, even when two copies share a counter.
        for n in 0..KI_N {
            *counters.entry(g.offset(key, n)).or_default() += counter;
        }
    }
    for key in 0..keys {
        let est = (0..KI_N).map(|n| counters[&g.offset(key, n)]).min();
        ensure!(
            est == Some(sums[key as usize]),
            "Key-Increment layout overestimates key {key}; enlarge the region"
        );
    }
    let verify: Verify = Box::new(move |http| {
        for key in 0..keys {
            let a = get_json(http, &format!("/query/keyincrement?key={key}&n={KI_N}"))?;
            if a["estimate"].as_u64() != Some(sums[key as usize]) {
                bail!(
                    "Key-Increment key {key}: expected {}, collector says {a}",
                    sums[key as usize]
                );
            }
        }
        Ok(u64::from(keys))
    });
    Ok(Workload {
        name: "key-increment",
        reports,
        verify,
    })
}
