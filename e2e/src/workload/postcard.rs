//! Postcarding: every flow's path found.

use std::collections::HashMap;

use anyhow::{bail, ensure, Context, Result};
use dta_protocol::dta::{Body, PostcardRepr};
use dta_protocol::layout::PostcardGeometry;

use crate::http::get_json;

use super::common::{emit, mix, Verify, Workload};
use super::regions::{PC_CHUNKS, PC_HOPS, PC_N, PC_UNIVERSE};

/// Postcarding: `flows` flows of 5 hops, reported `rounds` times with changing paths; every flow's last
/// path must come back.
pub fn postcard(flows: u32, rounds: u32, salt: u64) -> Result<Workload> {
    let g = PostcardGeometry::new(PC_CHUNKS, PC_HOPS, PC_N).context("Postcarding geometry")?;
    let mut reports = Vec::with_capacity((flows * rounds * u32::from(PC_HOPS)) as usize);
    let mut chunks: HashMap<u64, u32> = HashMap::new();
    let mut last: Vec<Vec<u32>> = vec![Vec::new(); flows as usize];
    let mut seq = 0u32;
    for round in 0..rounds {
        for f in 0..flows {
            let key = f + 1;
            let path: Vec<u32> = (0..PC_HOPS)
                .map(|h| {
                    1 + (mix(salt ^ (u64::from(round) << 40) ^ (u64::from(f) << 8) ^ u64::from(h))
                        % u64::from(PC_UNIVERSE)) as u32
                })
                .collect();
            for (h, &v) in path.iter().enumerate() {
                reports.push(emit(
                    Body::Postcard(PostcardRepr {
                        key,
                        hop: h as u8 + 1,
                        data: v,
                    }),
                    seq,
                ));
                seq += 1;
            }
            for n in 0..PC_N {
                chunks.insert(g.offset(key, n), key);
            }
            last[f as usize] = path;
        }
    }
    for f in 0..flows {
        let key = f + 1;
        ensure!(
            (0..PC_N).any(|n| chunks[&g.offset(key, n)] == key),
            "Postcarding layout loses flow {key}; enlarge the region"
        );
    }
    let verify: Verify = Box::new(move |http| {
        for f in 0..flows {
            let a = get_json(http, &format!("/query/postcard?key={}&n={PC_N}", f + 1))?;
            let want = serde_json::json!(last[f as usize]);
            if a["outcome"] != "found" || a["path"] != want {
                bail!(
                    "Postcarding flow {}: expected {want}, collector says {a}",
                    f + 1
                );
            }
        }
        Ok(u64::from(flows))
    });
    Ok(Workload {
        name: "postcarding",
        reports,
        verify,
    })
}
