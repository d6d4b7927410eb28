//! Key-Increment through the real engine (FETCH_ADD frames, atomic ACKs), responder and count-min query:
//! K keys add their counts into M shared counters, then every key is queried and its overestimate
//! recorded, beside the same workload under independent placement.

use anyhow::{bail, Result};
use dta_collector::query::key_increment;
use dta_protocol::dta::{Body, KeyIncrementRepr};
use dta_protocol::layout::{Geometry, KeyIncrementGeometry};
use dta_translator::Config;

use crate::bounds::count_min;
use crate::rig::Rig;
use crate::rng::{self, mix64, Rng};

/// One Key-Increment experiment.
#[derive(Debug, Clone)]
pub struct KeyIncrementParams {
    /// Counters M (a power of two).
    pub counters: u64,
    /// Counters per key N.
    pub n: u8,
    /// Keys K.
    pub keys: u64,
    /// Each key's count is uniform in 1..=max_count.
    pub max_count: u64,
    /// Key stream.
    pub seed: u64,
}

/// The overestimates of every key, and how the tail compares with the count-min bound.
#[derive(Debug, Clone)]
pub struct Overestimates {
    /// estimate - true count, one per key, ascending.
    pub excess: Vec<u64>,
    /// Fraction of keys whose excess reaches e·N·(total - own)/M.
    pub tail: f64,
    /// The count-min bound on that fraction, e^{-N}.
    pub bound: f64,
}

impl Overestimates {
    fn new(mut excess: Vec<u64>, over: u64, bound: f64) -> Self {
        excess.sort_unstable();
        let tail = over as f64 / excess.len().max(1) as f64;
        Overestimates {
            excess,
            tail,
            bound,
        }
    }

    /// The `q`-quantile of the excess (0 ≤ q ≤ 1).
    pub fn quantile(&self, q: f64) -> u64 {
        let i = ((self.excess.len() as f64 - 1.0) * q).round() as usize;
        self.excess.get(i).copied().unwrap_or(0)
    }

    /// Mean excess.
    pub fn mean(&self) -> f64 {
        self.excess.iter().sum::<u64>() as f64 / self.excess.len().max(1) as f64
    }
}

fn counts(p: &KeyIncrementParams) -> Vec<u64> {
    let mut r = Rng::new(p.seed ^ 0xC0FFEE);
    (0..p.keys).map(|_| 1 + r.below(p.max_count)).collect()
}

fn threshold(p: &KeyIncrementParams, total: u64, own: u64) -> f64 {
    count_min(u32::from(p.n), p.counters).0 * (total - own) as f64
}

/// The real system: reports through the engine, queries with the collector's `key_increment`.
pub fn run(p: &KeyIncrementParams) -> Result<Overestimates> {
    let g = KeyIncrementGeometry::new(p.counters, p.n)?;
    let mut rig = Rig::new(Config::default(), &[Geometry::KeyIncrement(g)])?;
    let counts = counts(p);
    for (i, &c) in counts.iter().enumerate() {
        rig.report(Body::KeyIncrement(KeyIncrementRepr {
            redundancy: p.n,
            key: rng::key(p.seed, i as u32),
            counter: c,
        }))?;
    }
    rig.flush()?;
    let total: u64 = counts.iter().sum();
    let mut excess = Vec::with_capacity(counts.len());
    let mut over = 0;
    for (i, &c) in counts.iter().enumerate() {
        let a = key_increment(rig.region(0), &g, rng::key(p.seed, i as u32), p.n)?;
        if a.estimate < c {
            bail!("count-min undercounted key {i}: {} < {c}", a.estimate);
        }
        let e = a.estimate - c;
        over += u64::from(e as f64 >= threshold(p, total, c));
        excess.push(e);
    }
    Ok(Overestimates::new(
        excess,
        over,
        count_min(u32::from(p.n), p.counters).1,
    ))
}

/// The same workload with independently placed counters (the bound's assumption).
pub fn ideal(p: &KeyIncrementParams) -> Overestimates {
    let mask = p.counters - 1;
    let hseed = mix64(p.seed ^ 0x1D1D);
    let place =
        |key: u32, c: u8| (mix64(hseed ^ (u64::from(key) << 8 | u64::from(c))) & mask) as usize;
    let counts = counts(p);
    let mut mem = vec![0u64; p.counters as usize];
    for (i, &c) in counts.iter().enumerate() {
        let key = rng::key(p.seed, i as u32);
        for j in 0..p.n {
            mem[place(key, j)] += c;
        }
    }
    let total: u64 = counts.iter().sum();
    let mut over = 0;
    let excess = counts
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let key = rng::key(p.seed, i as u32);
            let est = (0..p.n).map(|j| mem[place(key, j)]).min().unwrap_or(0);
            let e = est - c;
            over += u64::from(e as f64 >= threshold(p, total, c));
            e
        })
        .collect();
    Overestimates::new(excess, over, count_min(u32::from(p.n), p.counters).1)
}
