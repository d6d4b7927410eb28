//! Sketch-Merge: every epoch's merged columns found.

use anyhow::{bail, Context, Result};
use dta_protocol::dta::{Body, SketchOp, SketchRepr};
use dta_protocol::hash::placement_hash;

use crate::http::get_json;

use super::common::{emit, mix, Verify, Workload};
use super::regions::{SKETCH_COLUMNS, SKETCH_ID, SKETCH_REPORTERS, SKETCH_ROWS};

/// Sketch-Merge: 4 reporters send `epochs` whole sketches column by column; the collector must hold the
/// last epoch's merged counters, checked through count-min estimates of `probe_keys` keys.
pub fn sketch(epochs: u32, probe_keys: u32, salt: u64) -> Result<Workload> {
    let (rows, cols) = (SKETCH_ROWS as usize, SKETCH_COLUMNS as usize);
    let value = |e: u32, r: u16, c: usize, row: usize| sketch_value(salt, e, r, c, row);
    let mut reports = Vec::with_capacity(epochs as usize * cols * usize::from(SKETCH_REPORTERS));
    let mut seq = 0u32;
    for e in 0..epochs {
        for c in 0..cols {
            for r in 0..SKETCH_REPORTERS {
                let counters: Vec<u8> = (0..rows)
                    .flat_map(|row| value(e, r, c, row).to_be_bytes())
                    .collect();
                reports.push(emit(
                    Body::SketchMerge(SketchRepr {
                        sketch_id: SKETCH_ID,
                        op: SketchOp::Sum,
                        reporter_id: r,
                        column: c as u16,
                        counters: &counters,
                    }),
                    seq,
                ));
                seq += 1;
            }
        }
    }
    let last = epochs.checked_sub(1).context("at least one epoch")?;
    let merged = sketch_merged(last, salt);
    let verify: Verify = Box::new(move |http| {
        for key in 0..probe_keys {
            let want = (0..rows)
                .map(|row| {
                    let c = (placement_hash(key, row as u8) % SKETCH_COLUMNS) as usize;
                    merged[c * rows + row]
                })
                .min()
                .unwrap_or(0);
            let a = get_json(http, &format!("/query/sketch?id={SKETCH_ID}&key={key}"))?;
            if a["estimate"].as_u64() != Some(u64::from(want)) {
                bail!("sketch key {key}: expected count-min {want}, collector says {a}");
            }
        }
        Ok(u64::from(probe_keys))
    });
    Ok(Workload {
        name: "sketch-merge",
        reports,
        verify,
    })
}

/// What reporter `r` counted in counter (`c`, `row`) in epoch `e` of [`sketch`].
fn sketch_value(salt: u64, e: u32, r: u16, c: usize, row: usize) -> u32 {
    (mix(salt ^ (u64::from(e) << 48) ^ (u64::from(r) << 32) ^ ((c as u64) << 8) ^ row as u64)
        % 1000) as u32
}

/// The merged (summed) counters of epoch `e` of [`sketch`], in the region's order (column by column,
/// `SKETCH_ROWS` counters each): what the collector holds after that epoch.
pub fn sketch_merged(e: u32, salt: u64) -> Vec<u32> {
    let rows = SKETCH_ROWS as usize;
    (0..SKETCH_COLUMNS as usize * rows)
        .map(|i| {
            (0..SKETCH_REPORTERS)
                .map(|r| sketch_value(salt, e, r, i / rows, i % rows))
                .sum()
        })
        .collect()
}
