//! The query engine: the arena plus what queries need from the configuration (the Postcarding universe and
//! how each sketch was merged), with every query counted and timed for the metrics.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use dta_protocol::layout::Geometry;
use serde::Serialize;

use crate::config::{Config, SketchMerge};
use crate::error::{Error, Result};
use crate::memory::{Arena, RegionSlot};
use crate::metrics::{Metrics, QueryKind};
use crate::query::{
    append_read, count_min, hyperloglog, key_increment, key_write, AppendRead, KeyIncrementAnswer,
    KeyWriteAnswer, PathAnswer, PostcardDecoder,
};

/// The answer of a sketch query.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "estimator", rename_all = "snake_case")]
pub enum SketchAnswer {
    /// Count-min estimate for a key.
    CountMin {
        /// The estimate.
        estimate: u32,
    },
    /// HyperLogLog cardinality of a max-merged sketch.
    Hyperloglog {
        /// The estimate.
        cardinality: f64,
    },
}

/// Queries on a live arena.
#[derive(Debug)]
pub struct QueryEngine {
    arena: Arc<Arena>,
    decoder: PostcardDecoder,
    merges: HashMap<u32, SketchMerge>,
    metrics: Arc<Metrics>,
}

impl QueryEngine {
    /// An engine over `arena`, configured by `config`.
    pub fn new(arena: Arc<Arena>, config: &Config, metrics: Arc<Metrics>) -> Result<Self> {
        let decoder = PostcardDecoder::new(&config.postcarding.universe()?);
        let merges = config
            .regions
            .iter()
            .filter(|r| matches!(r.geometry, Geometry::Sketch(_)))
            .map(|r| (r.id, r.merge))
            .collect();
        Ok(QueryEngine {
            arena,
            decoder,
            merges,
            metrics,
        })
    }

    /// The arena.
    pub fn arena(&self) -> &Arc<Arena> {
        &self.arena
    }

    fn run<T>(
        &self,
        kind: QueryKind,
        region: &'static str,
        id: Option<u32>,
        f: impl FnOnce(&[u8], &RegionSlot) -> Result<T>,
    ) -> Result<T> {
        let start = Instant::now();
        let result = self.arena.find(region, id).and_then(|slot| {
            let mem = self.arena.read();
            f(&mem.as_slice()[slot.offset..slot.offset + slot.len()], slot)
        });
        self.metrics
            .record_query(kind, start.elapsed(), result.is_ok());
        result
    }

    /// Key-Write lookup with redundancy `n` (default: the region's N_max) and threshold `t`.
    pub fn key_write(&self, key: u32, n: Option<u8>, t: u32) -> Result<KeyWriteAnswer> {
        self.run(QueryKind::KeyWrite, "key_write", None, |mem, s| {
            match &s.region.geometry {
                Geometry::KeyWrite(g) => key_write(mem, g, key, n.unwrap_or(g.n_max()), t),
                _ => Err(Error::NoRegion {
                    kind: "key_write",
                    id: None,
                }),
            }
        })
    }

    /// Key-Increment estimate.
    pub fn key_increment(&self, key: u32, n: Option<u8>) -> Result<KeyIncrementAnswer> {
        self.run(
            QueryKind::KeyIncrement,
            "key_increment",
            None,
            |mem, s| match &s.region.geometry {
                Geometry::KeyIncrement(g) => key_increment(mem, g, key, n.unwrap_or(g.n_max())),
                _ => Err(Error::NoRegion {
                    kind: "key_increment",
                    id: None,
                }),
            },
        )
    }

    /// Postcarding path of flow `key`.
    pub fn postcard(&self, key: u32, n: Option<u8>) -> Result<PathAnswer> {
        self.run(
            QueryKind::Postcard,
            "postcarding",
            None,
            |mem, s| match &s.region.geometry {
                Geometry::Postcarding(g) => self.decoder.query(mem, g, key, n.unwrap_or(g.n_max())),
                _ => Err(Error::NoRegion {
                    kind: "postcarding",
                    id: None,
                }),
            },
        )
    }

    /// Entries of list `list` from `tail`, at most `max`.
    pub fn append(&self, list: u32, tail: u64, max: usize) -> Result<AppendRead> {
        self.run(QueryKind::Append, "append", Some(list), |mem, s| {
            match &s.region.geometry {
                Geometry::Append(g) => append_read(mem, g, tail, max),
                _ => Err(Error::NoRegion {
                    kind: "append",
                    id: Some(list),
                }),
            }
        })
    }

    /// Sketch `id`: count-min for `key` on a sum-merged sketch, HyperLogLog on a max-merged one.
    pub fn sketch(&self, id: u32, key: Option<u32>) -> Result<SketchAnswer> {
        let merge = self.merges.get(&id).copied().unwrap_or_default();
        self.run(QueryKind::Sketch, "sketch", Some(id), |mem, s| {
            let Geometry::Sketch(g) = &s.region.geometry else {
                return Err(Error::NoRegion {
                    kind: "sketch",
                    id: Some(id),
                });
            };
            match (merge, key) {
                (SketchMerge::Sum, Some(key)) => Ok(SketchAnswer::CountMin {
                    estimate: count_min(mem, g, key)?,
                }),
                (SketchMerge::Sum, None) => Err(Error::BadQuery(format!(
                    "sketch {id} is sum-merged (count-min): give a key"
                ))),
                (SketchMerge::Max, _) => Ok(SketchAnswer::Hyperloglog {
                    cardinality: hyperloglog(mem, g)?,
                }),
            }
        })
    }
}
