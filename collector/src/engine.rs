//! The query engine: the arena plus what queries need from the configuration (the Postcarding universe and
//! how each sketch was merged), with every query counted and timed for the metrics.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use dta_protocol::layout::{
    AppendGeometry, Geometry, KeyIncrementGeometry, KeyWriteGeometry, PostcardGeometry, RegionKind,
    SketchGeometry,
};
use serde::Serialize;

use crate::config::{Config, SketchMerge};
use crate::error::{Error, Result};
use crate::memory::{Arena, KindGeometry};
use crate::metrics::Metrics;
use crate::query::int::{
    drop_counts, drop_events, flow_hops, queue_events, FlowText, IntDropsAnswer, IntFlowAnswer,
    IntPathAnswer, IntQueuesAnswer, Shard, Window,
};
use crate::query::{
    append_read, count_min, hyperloglog, key_increment, key_write, AppendRead, KeyIncrementAnswer,
    KeyWriteAnswer, PathAnswer, PostcardDecoder,
};
use dta_protocol::int::inner::FlowKey;
use dta_protocol::int::mapping::{flow_key, EventLists};

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

/// An `int-drops` question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DropsQuery {
    /// The switch.
    pub node: u32,
    /// One reason, or every reason.
    pub reason: Option<u8>,
    /// The reporters' redundancy for the drop counters (default as [`QueryEngine::key_increment`]).
    pub n: Option<u8>,
    /// The part of the drop list to scan.
    pub window: Window,
    /// The keys this collector answers for.
    pub shard: Shard,
}

/// What the INT queries take from `[int]` and the regions.
#[derive(Debug)]
struct IntSettings {
    /// The path decoder over `[int] nodes`; none: the Postcarding decoder's universe.
    decoder: Option<PostcardDecoder>,
    /// Hops `int-flow` reads.
    hops: Option<u8>,
    /// The drop event lists.
    drop_list: EventLists,
    /// The queue event lists.
    queue_list: EventLists,
}

/// Queries on a live arena.
#[derive(Debug)]
pub struct QueryEngine {
    arena: Arc<Arena>,
    decoder: PostcardDecoder,
    int: IntSettings,
    merges: HashMap<u32, SketchMerge>,
    /// The reporters' redundancy per single-instance region kind, where the configuration gives it.
    redundancy: HashMap<RegionKind, u8>,
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
        let redundancy = config
            .regions
            .iter()
            .filter_map(|r| Some((r.geometry.kind(), r.redundancy?)))
            .collect();
        let int_section = config.int.clone().unwrap_or_default();
        let int = IntSettings {
            decoder: int_section
                .node_universe()?
                .map(|nodes| PostcardDecoder::new(&nodes)),
            hops: config.int_hops(),
            drop_list: int_section.drop_list,
            queue_list: int_section.queue_list,
        };
        Ok(QueryEngine {
            arena,
            decoder,
            int,
            merges,
            redundancy,
            metrics,
        })
    }

    /// The arena.
    pub fn arena(&self) -> &Arc<Arena> {
        &self.arena
    }

    /// Runs `f` on the bytes and geometry of the region of geometry `G` with `id`, counted and timed
    /// (under `G`'s kind).
    fn run<G: KindGeometry, T>(
        &self,
        id: Option<u32>,
        f: impl FnOnce(&[u8], &G) -> Result<T>,
    ) -> Result<T> {
        let start = Instant::now();
        let result = self.arena.find_geometry::<G>(id).and_then(|(slot, g)| {
            let mem = self.arena.read();
            f(&mem.as_slice()[slot.offset..slot.offset + slot.len()], g)
        });
        self.metrics
            .record_query(G::KIND, start.elapsed(), result.is_ok());
        result
    }

    /// The reporters' redundancy for a single-instance kind, where the configuration gives it.
    fn redundancy(&self, kind: RegionKind) -> Option<u8> {
        self.redundancy.get(&kind).copied()
    }

    /// Key-Write lookup with redundancy `n` (default: the region's configured redundancy, else its N_max:
    /// copies never written hold other keys' checksums and do not vote) and threshold `t`.
    pub fn key_write(&self, key: u32, n: Option<u8>, t: u32) -> Result<KeyWriteAnswer> {
        let n = n.or_else(|| self.redundancy(RegionKind::KeyWrite));
        self.run(None, |mem, g: &KeyWriteGeometry| {
            key_write(mem, g, key, n.unwrap_or(g.n_max()), t)
        })
    }

    /// Key-Increment estimate with redundancy `n` (default: the region's configured redundancy). Without
    /// either the answer would be a guess: the minimum over copies never incremented is 0, an
    /// undercount the paper's estimator never makes, so the query is refused instead.
    pub fn key_increment(&self, key: u32, n: Option<u8>) -> Result<KeyIncrementAnswer> {
        self.run(None, |mem, g: &KeyIncrementGeometry| {
            key_increment(
                mem,
                g,
                key,
                self.increment_n(n, g, &format!("key {key}'s"))?,
            )
        })
    }

    /// The redundancy of a Key-Increment query: `n`, else the region's configured one, else 1 where the
    /// region has one copy per key; `whose` names the counters in the refusal.
    fn increment_n(&self, n: Option<u8>, g: &KeyIncrementGeometry, whose: &str) -> Result<u8> {
        match n.or_else(|| self.redundancy(RegionKind::KeyIncrement)) {
            Some(n) => Ok(n),
            // One copy per key is unambiguous.
            None if g.n_max() == 1 => Ok(1),
            None => Err(Error::BadQuery(format!(
                "cannot tell which of the region's {} copies {whose} reporters \
                 incremented: give n (the reporters' redundancy, --n), or set \
                 `redundancy` in the key_increment region's configuration",
                g.n_max()
            ))),
        }
    }

    /// Postcarding path of flow `key`.
    pub fn postcard(&self, key: u32, n: Option<u8>) -> Result<PathAnswer> {
        let n = n.or_else(|| self.redundancy(RegionKind::Postcarding));
        self.run(None, |mem, g: &PostcardGeometry| {
            self.decoder.query(mem, g, key, n.unwrap_or(g.n_max()))
        })
    }

    /// The path of `flow` (`int-path`): its Postcarding chunks decoded over the INT node universe.
    pub fn int_path(&self, flow: &FlowKey, n: Option<u8>) -> Result<IntPathAnswer> {
        let key = flow_key(flow);
        let n = n.or_else(|| self.redundancy(RegionKind::Postcarding));
        let decoder = self.int.decoder.as_ref().unwrap_or(&self.decoder);
        let path = self.run(None, |mem, g: &PostcardGeometry| {
            decoder.query(mem, g, key, n.unwrap_or(g.n_max()))
        })?;
        Ok(IntPathAnswer {
            flow: FlowText(flow).to_string(),
            flow_key: key,
            path,
        })
    }

    /// The hop records of `flow` that `shard` holds (`int-flow`), with redundancy `n` (default as
    /// [`QueryEngine::key_write`]) and threshold `t`; all hops read under one lock, so the totals come
    /// from one moment's memory.
    pub fn int_flow(
        &self,
        flow: &FlowKey,
        n: Option<u8>,
        t: u32,
        shard: Shard,
    ) -> Result<IntFlowAnswer> {
        let hops = self.int.hops.ok_or_else(|| {
            Error::BadQuery(
                "int-flow: how many hops to read is not configured: set [int] hops \
                 (there is no postcarding region to take it from)"
                    .into(),
            )
        })?;
        let n = n.or_else(|| self.redundancy(RegionKind::KeyWrite));
        let key = flow_key(flow);
        let found = self.run(None, |mem, g: &KeyWriteGeometry| {
            flow_hops(mem, g, key, hops, n.unwrap_or(g.n_max()), t, shard)
        })?;
        Ok(IntFlowAnswer::new(flow, found))
    }

    /// The drops of a node (`int-drops`): its counters that `q.shard` holds, and its events in the drop
    /// list where this collector has `[int] drop_list`.
    pub fn int_drops(&self, q: &DropsQuery) -> Result<IntDropsAnswer> {
        let whose = format!("node {}'s drop-counter", q.node);
        let counts = self.run(None, |mem, g: &KeyIncrementGeometry| {
            let n = self.increment_n(q.n, g, &whose)?;
            drop_counts(mem, g, q.node, q.reason, n, q.shard)
        })?;
        let events = self
            .int
            .drop_list
            .ids()
            .iter()
            .map(|&list| {
                self.run(Some(list), |mem, g: &AppendGeometry| {
                    drop_events(mem, g, list, q.node, q.reason, q.window)
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(IntDropsAnswer::new(q.node, q.reason, counts, events))
    }

    /// The congestion events of `node` (of queue `queue` when given) in a `window` of the queue list
    /// (`int-queues`), where this collector has `[int] queue_list`.
    pub fn int_queues(
        &self,
        node: u32,
        queue: Option<u8>,
        window: Window,
    ) -> Result<IntQueuesAnswer> {
        let events = self
            .int
            .queue_list
            .ids()
            .iter()
            .map(|&list| {
                self.run(Some(list), |mem, g: &AppendGeometry| {
                    queue_events(mem, g, list, node, queue, window)
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(IntQueuesAnswer::new(node, queue, events))
    }

    /// Entries of list `list` from `tail`, at most `max`.
    pub fn append(&self, list: u32, tail: u64, max: usize) -> Result<AppendRead> {
        self.run(Some(list), |mem, g: &AppendGeometry| {
            append_read(mem, g, tail, max)
        })
    }

    /// Sketch `id`: count-min for `key` on a sum-merged sketch, HyperLogLog on a max-merged one.
    pub fn sketch(&self, id: u32, key: Option<u32>) -> Result<SketchAnswer> {
        let merge = self.merges.get(&id).copied().unwrap_or_default();
        self.run(Some(id), |mem, g: &SketchGeometry| match (merge, key) {
            (SketchMerge::Sum, Some(key)) => Ok(SketchAnswer::CountMin {
                estimate: count_min(mem, g, key)?,
            }),
            (SketchMerge::Sum, None) => Err(Error::BadQuery(format!(
                "sketch {id} is sum-merged (count-min): give a key"
            ))),
            (SketchMerge::Max, _) => Ok(SketchAnswer::Hyperloglog {
                cardinality: hyperloglog(mem, g)?,
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine(region: &str) -> QueryEngine {
        let config = Config::parse(region).unwrap();
        let arena = Arc::new(Arena::new_normal(&config.region_layout()).unwrap());
        QueryEngine::new(arena, &config, Arc::new(Metrics::default())).unwrap()
    }

    /// Key 1's first copy in a 256-counter region (slot 173, the design vector) holds `v`; the second
    /// copy (slot 100) was never incremented because its reporters use N = 1.
    fn increment_copy_0(e: &QueryEngine, v: u64) {
        let g = KeyIncrementGeometry::new(256, 2).unwrap();
        let at = e.arena().slots()[0].offset + g.offset(1, 0) as usize;
        assert_eq!(g.offset(1, 0), 173 * 8);
        e.arena().write().as_mut_slice()[at..at + 8].copy_from_slice(&v.to_ne_bytes());
    }

    #[test]
    fn key_increment_without_n_uses_the_configured_redundancy_or_refuses() {
        let region = "[[region]]\nkind = \"key_increment\"\nslots = 256\nn_max = 2\n";
        let unknown = engine(region);
        increment_copy_0(&unknown, 40);
        // n_max = 2 and nothing says how many copies were written: min(40, 0) = 0 would be an undercount.
        let e = unknown.key_increment(1, None).unwrap_err().to_string();
        assert!(
            e.contains("cannot tell which of the region's 2 copies"),
            "{e}"
        );
        assert_eq!(unknown.key_increment(1, Some(1)).unwrap().estimate, 40);
        assert_eq!(unknown.key_increment(1, Some(2)).unwrap().estimate, 0);

        let known = engine(&format!("{region}redundancy = 1\n"));
        increment_copy_0(&known, 40);
        let a = known.key_increment(1, None).unwrap();
        assert_eq!((a.estimate, a.counters), (40, vec![40]));
    }
}
