//! Key-Write through the real engine, responder and query: each key is queried when exactly `age` distinct
//! keys have been written after it, so every query of one age has the same α = age / M (no averaging
//! over ages, unlike a fill-then-query-all run).

use anyhow::{bail, Result};
use dta_collector::query::{key_write, to_hex, KeyWriteAnswer};
use dta_protocol::dta::{Body, KeyWriteRepr};
use dta_protocol::layout::{Geometry, KeyWriteGeometry};
use dta_translator::Config;

use crate::lens::ChecksumLens;
use crate::rig::Rig;
use crate::rng;
use crate::tally::Tally;

/// One Key-Write experiment.
#[derive(Debug, Clone)]
pub struct KeyWriteParams {
    /// Slots M (a power of two).
    pub slots: u64,
    /// Copies per key N.
    pub n: u8,
    /// Checksum bits b (1..=32); below 32 the lens narrows the comparison.
    pub b: u32,
    /// Consensus threshold T.
    pub threshold: u32,
    /// Ages (distinct later keys) at which to query.
    pub ages: Vec<u64>,
    /// Queries per age.
    pub queries: u64,
    /// Data bytes per entry: 4, 12 or 28 (entries of 8, 16 or 32 bytes).
    pub data_len: usize,
    /// Key stream.
    pub seed: u64,
}

/// The data written for the key with stream index `i`: the index itself, so every key's value is unique
/// and a wrong answer is always detectable.
pub fn value(i: u32, data_len: usize) -> Vec<u8> {
    let mut d = vec![0u8; data_len];
    d[..4].copy_from_slice(&i.to_le_bytes());
    d
}

/// Runs `p` through the real translator and collector; one tally per age.
pub fn run(p: &KeyWriteParams) -> Result<Vec<Tally>> {
    let g = KeyWriteGeometry::new(p.slots, p.data_len as u32 + 4, p.n.max(1))?;
    let mut cfg = Config::default();
    cfg.report.keywrite_data_len = p.data_len;
    let mut rig = Rig::new(cfg, &[Geometry::KeyWrite(g)])?;
    let lens = ChecksumLens::new(p.b);
    let mut tallies: Vec<Tally> = p.ages.iter().map(|&a| Tally::new(a, p.slots)).collect();
    let max_age = p.ages.iter().copied().max().unwrap_or(0);
    let total = max_age + p.queries;
    if total > u64::from(u32::MAX) {
        bail!("{total} keys exceed the 32-bit key space");
    }
    for t in 0..total {
        let data = value(t as u32, p.data_len);
        rig.report(Body::KeyWrite(KeyWriteRepr {
            redundancy: p.n,
            key: rng::key(p.seed, t as u32),
            data: &data,
        }))?;
        for tally in tallies.iter_mut() {
            let Some(j) = t.checked_sub(tally.age).filter(|&j| j < p.queries) else {
                continue;
            };
            let key = rng::key(p.seed, j as u32);
            let want = to_hex(&value(j as u32, p.data_len));
            let answer = lens.query(rig.region_mut(0), &g, key, p.n, |mem| {
                key_write(mem, &g, key, p.n, p.threshold)
            })?;
            tally.queries += 1;
            match answer {
                KeyWriteAnswer::Found { data, .. } if data == want => tally.found += 1,
                KeyWriteAnswer::Found { .. } => tally.wrong += 1,
                KeyWriteAnswer::Empty { .. } | KeyWriteAnswer::Conflict { .. } => tally.empty += 1,
            }
        }
    }
    Ok(tallies)
}

/// Fill-then-query-all (figure 12's setting): for each load factor L, after round(L·M) keys are written,
/// every one of them is queried; returns the success rate per load.
pub fn load_sweep(slots: u64, n: u8, loads: &[f64], seed: u64) -> Result<Vec<f64>> {
    let g = KeyWriteGeometry::new(slots, 8, n.max(1))?;
    let mut rig = Rig::new(Config::default(), &[Geometry::KeyWrite(g)])?;
    let mut out = Vec::with_capacity(loads.len());
    let mut written = 0u64;
    for &load in loads {
        let target = (load * slots as f64).round() as u64;
        while written < target {
            let data = value(written as u32, 4);
            rig.report(Body::KeyWrite(KeyWriteRepr {
                redundancy: n,
                key: rng::key(seed, written as u32),
                data: &data,
            }))?;
            written += 1;
        }
        let mem = rig.region(0);
        let mut ok = 0u64;
        for j in 0..written {
            let want = to_hex(&value(j as u32, 4));
            if let KeyWriteAnswer::Found { data, .. } =
                key_write(mem, &g, rng::key(seed, j as u32), n, 1)?
            {
                ok += u64::from(data == want);
            }
        }
        out.push(ok as f64 / written.max(1) as f64);
    }
    Ok(out)
}
