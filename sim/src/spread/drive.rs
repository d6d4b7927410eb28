//! One run through the real engine and responder in virtual time, and the path query of every flow.

use anyhow::{bail, Result};
use dta_collector::query::{PathAnswer, PostcardDecoder};
use dta_protocol::dta::{Body, PostcardRepr};
use dta_protocol::layout::{Geometry, PostcardGeometry};
use dta_translator::{Config, Instant};

use super::int_report::IntReporter;
use super::schedule::Flow;
use super::{Kind, SpreadParams, Verdict};
use crate::rig::Rig;

/// What one run measured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Measured {
    /// Each flow's verdict, in flow order.
    pub verdicts: Vec<Verdict>,
    /// Cache entries written because another flow took their slot.
    pub evictions: u64,
    /// Cache entries written by their idle timeout.
    pub timeouts: u64,
    /// Entries written without hop 1 (only their own cells).
    pub continuations: u64,
    /// Postcards the engine took (DTA reports, or INT reports translated to postcards).
    pub postcards: u64,
}

/// The decoding table for switch ids 1..=universe, the hop values of [`super::schedule`].
pub fn decoder(universe: u32) -> PostcardDecoder {
    let ids: Vec<u32> = (1..=universe).collect();
    PostcardDecoder::new(&ids)
}

/// The translator configuration of a run.
pub fn config(p: &SpreadParams, kind: Kind) -> Config {
    let mut cfg = Config::default();
    cfg.postcard.hops = p.hops;
    cfg.postcard.redundancy = p.n;
    cfg.postcard.cache_size = p.cache;
    cfg.postcard.idle_timeout_us = p.idle_us;
    if kind == Kind::Int {
        cfg.int.enabled = true;
        // Paths only: no Key-Write region for per-hop records, no drop reports here.
        cfg.int.flow_state = false;
        cfg.int.drop_counts = false;
    }
    cfg
}

/// Sends every flow's hop reports in time order (timers due by a report's instant fire first), lets the last
/// idle timeouts fire, flushes, and queries every flow's path.
pub fn run(
    p: &SpreadParams,
    kind: Kind,
    flows: &[Flow],
    decoder: &PostcardDecoder,
) -> Result<Measured> {
    let g = PostcardGeometry::new(p.chunks, p.hops, p.n)?;
    let b = usize::from(p.hops);
    if flows.iter().any(|f| f.at.len() != b || f.path.len() != b) {
        bail!("every flow needs {b} arrival times and {b} hop values");
    }
    let mut rig = Rig::new(config(p, kind), &[Geometry::Postcarding(g)])?;
    let mut events: Vec<(u64, usize, u8)> = flows
        .iter()
        .enumerate()
        .flat_map(|(i, f)| (0..p.hops).map(move |h| (f.at[usize::from(h)], i, h + 1)))
        .collect();
    events.sort_unstable();
    let mut int = IntReporter::new();
    for &(t, i, hop) in &events {
        rig.advance_to(Instant(t))?;
        let f = &flows[i];
        let data = f.path[usize::from(hop - 1)];
        match kind {
            Kind::Dta => rig.report_now(Body::Postcard(PostcardRepr {
                key: f.key,
                hop,
                data,
            }))?,
            Kind::Int => {
                let r = int.report(&f.tuple, hop, data, t)?;
                rig.int_report(r)?;
            }
        }
    }
    let last = events.last().map_or(0, |e| e.0);
    rig.advance_to(Instant(last + 1_000 * p.idle_us + 1))?;
    let before_flush = rig.counters().postcard_timeouts;
    rig.flush()?;
    let c = rig.counters();
    if c.postcard_timeouts != before_flush {
        bail!("entries were still cached after every idle timeout passed");
    }
    let postcards = match kind {
        Kind::Dta => c.reports_in.iter().sum(),
        Kind::Int => c.int.reports,
    };
    let mut verdicts = Vec::with_capacity(flows.len());
    for f in flows {
        verdicts.push(match decoder.query(rig.region(0), &g, f.key, p.n)? {
            PathAnswer::Found { path, .. } if path == f.path => Verdict::Exact,
            PathAnswer::Found { path, .. } if f.path.starts_with(&path) => Verdict::Prefix,
            PathAnswer::Found { .. } => Verdict::Wrong,
            PathAnswer::Empty => Verdict::Empty,
            PathAnswer::Conflict { .. } => Verdict::Conflict,
        });
    }
    let c = rig.counters();
    Ok(Measured {
        verdicts,
        evictions: c.postcard_evictions,
        timeouts: c.postcard_timeouts,
        continuations: c.postcard_continuations,
        postcards,
    })
}
