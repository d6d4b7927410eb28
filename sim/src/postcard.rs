//! Postcarding through the real engine (postcard cache, chunk writes), responder and path decoder. Each flow
//! sends all B postcards, so the translator writes its N chunk copies as the last one arrives; the flow is
//! queried when exactly `age` later flows have been written (α = age / C, appendix A.6's "α·C reports").

use anyhow::Result;
use dta_collector::query::{PathAnswer, PostcardDecoder};
use dta_protocol::dta::{Body, PostcardRepr};
use dta_protocol::layout::{Geometry, PostcardGeometry};
use dta_translator::Config;

use crate::rig::Rig;
use crate::rng::{self, mix64, Rng};
use crate::tally::Tally;

/// One Postcarding experiment.
#[derive(Debug, Clone)]
pub struct PostcardParams {
    /// Chunks C (a power of two).
    pub chunks: u64,
    /// Hops B per path (1..=8); every flow reports all B.
    pub hops: u8,
    /// Chunk copies N.
    pub n: u8,
    /// Value universe |V|: values are 0..|V|.
    pub universe: u32,
    /// Ages (later flows) at which to query.
    pub ages: Vec<u64>,
    /// Queries per age.
    pub queries: u64,
    /// Flow stream.
    pub seed: u64,
}

/// The path of flow `i`: B values drawn from the universe by a generator seeded from (seed, i), so the
/// query side recomputes it instead of storing millions of paths.
pub fn path(p: &PostcardParams, i: u64) -> Vec<u32> {
    let mut r = Rng::new(mix64(p.seed ^ i.wrapping_mul(0x9E37_79B9)));
    (0..p.hops)
        .map(|_| r.below(u64::from(p.universe)) as u32)
        .collect()
}

/// The decoding table for values 0..|V| (built once; 2^18 entries take a few milliseconds).
pub fn decoder(universe: u32) -> PostcardDecoder {
    let values: Vec<u32> = (0..universe).collect();
    PostcardDecoder::new(&values)
}

/// Runs `p` through the real translator and collector; one tally per age.
pub fn run(p: &PostcardParams, decoder: &PostcardDecoder) -> Result<Vec<Tally>> {
    let g = PostcardGeometry::new(p.chunks, p.hops, p.n)?;
    let mut cfg = Config::default();
    cfg.postcard.hops = p.hops;
    cfg.postcard.redundancy = p.n;
    let mut rig = Rig::new(cfg, &[Geometry::Postcarding(g)])?;
    let mut tallies: Vec<Tally> = p.ages.iter().map(|&a| Tally::new(a, p.chunks)).collect();
    let max_age = p.ages.iter().copied().max().unwrap_or(0);
    for t in 0..max_age + p.queries {
        let key = rng::key(p.seed, t as u32);
        for (h, &v) in path(p, t).iter().enumerate() {
            rig.report(Body::Postcard(PostcardRepr {
                key,
                hop: h as u8 + 1,
                data: v,
            }))?;
        }
        for tally in tallies.iter_mut() {
            let Some(j) = t.checked_sub(tally.age).filter(|&j| j < p.queries) else {
                continue;
            };
            let q = rng::key(p.seed, j as u32);
            tally.queries += 1;
            match decoder.query(rig.region(0), &g, q, p.n)? {
                PathAnswer::Found { path: got, .. } if got == path(p, j) => tally.found += 1,
                PathAnswer::Found { .. } => tally.wrong += 1,
                PathAnswer::Empty | PathAnswer::Conflict { .. } => tally.empty += 1,
            }
        }
    }
    Ok(tallies)
}
