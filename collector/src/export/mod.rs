//! The history exporter (issue 28): what lands in the regions leaves the collector for Parquet files
//! and/or a ClickHouse server, read from the regions the way the queries read them, never on the RDMA
//! data path.
//!
//! - Every Append list is tailed from its head word ([`tail`]): each entry exported once, with its list
//!   and absolute index, decoded where the collector knows the list's layout ([`rows`]: the INT drop and
//!   queue events), hex otherwise; what the ring overwrote before it was read is a gap row and a count
//!   (`dta_collector_export_overruns_total{list,sink}`).
//! - Every epoch ([`epoch`]): the INT drop counters per (node, reason) as deltas, the answers of the
//!   operator's key set ([`keys`]), and the counters of every sketch that changed ([`sketch`]).
//! - Sinks ([`sink`]): Parquet files ([`parquet`]) and ClickHouse over HTTP ([`clickhouse`]), each fed
//!   by its own thread ([`worker`]) through a bounded, retrying buffer ([`pipeline`]).
//!
//! `serve` starts it when the configuration has `[export]`; the tables are described once ([`table`]).

pub mod clickhouse;
pub mod epoch;
mod http;
pub mod keys;
pub mod parquet;
pub mod pipeline;
mod regions;
pub mod rows;
pub mod sink;
pub mod sketch;
pub mod table;
pub mod tail;
pub mod time;
pub mod worker;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use dta_protocol::layout::{Geometry, RegionKind};

use crate::config::{Config, ExportSection};
use crate::error::{Error, Result};
use crate::memory::Arena;
use crate::metrics::ExportMetrics;
use crate::query::int::Shard;
use epoch::{EpochReader, Redundancy};
use keys::KeySet;
use pipeline::{Pipeline, Policy};
use rows::ListSchema;
use sink::Sink;
use sketch::SketchSpec;
use tail::ListTail;
use worker::{ListSpec, Worker};

/// The running exporter: one thread per sink. Dropping it stops them, after they drained the lists,
/// read a last epoch and closed their sinks.
pub struct Exporter {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Exporter {
    /// Starts the sinks of `config`'s `[export]` (an error if it has none) over `arena`.
    pub fn start(arena: Arc<Arena>, config: &Config, metrics: ExportMetrics) -> Result<Self> {
        let section = config
            .export
            .as_ref()
            .ok_or_else(|| Error::Config("no [export] section".into()))?;
        let mut sinks: Vec<(Box<dyn Sink>, Policy)> = Vec::new();
        if let Some(p) = &section.parquet {
            // Files take every batch at once (the writer gathers row groups itself); the buffer only
            // holds rows while the disk refuses them.
            let policy = Policy {
                batch_rows: 1,
                flush: Duration::ZERO,
                buffer_rows: 1 << 20,
            };
            sinks.push((Box::new(parquet::ParquetSink::new(p)?), policy));
        }
        if let Some(c) = &section.clickhouse {
            let policy = Policy {
                batch_rows: c.batch_rows,
                flush: Duration::from_millis(c.flush_ms),
                buffer_rows: c.buffer_rows,
            };
            sinks.push((Box::new(clickhouse::ClickHouseSink::new(c)?), policy));
        }
        let lists = lists(config);
        let sketches = sketches(config);
        let keys = match &section.keys {
            Some(path) => KeySet::load(path)?,
            None => KeySet::default(),
        };
        let shard = Shard::parse(&section.shard)
            .map_err(|e| Error::Config(format!("[export] shard: {e}")))?;
        let n = redundancy(config, section, &keys);
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        for (sink, policy) in sinks {
            let name = sink.name();
            let worker = Worker {
                arena: arena.clone(),
                lists: lists.iter().map(|l| (*l, ListTail::new(l.id))).collect(),
                pipeline: Pipeline::new(sink, policy, metrics.clone()),
                epoch: EpochReader::new(shard, n, keys.clone(), &section.drop_nodes)
                    .with_sketches(sketches.clone()),
                epoch_every: Duration::from_secs(section.epoch_secs),
                poll: Duration::from_millis(section.poll_ms),
                metrics: metrics.clone(),
            };
            let s = stop.clone();
            let t = std::thread::Builder::new()
                .name(format!("dta-export-{name}"))
                .spawn(move || worker.run(&s))
                .map_err(|e| Error::io("spawning an export thread", e))?;
            threads.push(t);
            log::info!(
                "export to {name}: {} lists, {} sketches, an epoch every {} s",
                lists.len(),
                sketches.len(),
                section.epoch_secs
            );
        }
        Ok(Exporter { stop, threads })
    }

    /// Stops the sinks' threads and waits for them to close their sinks.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in &self.threads {
            t.thread().unpark();
        }
        for t in self.threads.drain(..) {
            if t.join().is_err() {
                log::error!("export: a sink's thread panicked");
            }
        }
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Every Append list of the configuration, with the schema `[int]` gives it.
fn lists(config: &Config) -> Vec<ListSpec> {
    let int = config.int.clone().unwrap_or_default();
    config
        .regions
        .iter()
        .filter_map(|r| match r.geometry {
            Geometry::Append(g) => Some(ListSpec {
                id: r.id,
                schema: if int.drop_list.ids().contains(&r.id) {
                    ListSchema::Drops
                } else if int.queue_list.ids().contains(&r.id) {
                    ListSchema::Queues
                } else {
                    ListSchema::Raw
                },
                geometry: g,
            }),
            _ => None,
        })
        .collect()
}

/// Every sketch of the configuration, with how it is merged.
fn sketches(config: &Config) -> Vec<SketchSpec> {
    config
        .regions
        .iter()
        .filter(|r| matches!(r.geometry, Geometry::Sketch(_)))
        .map(|r| SketchSpec {
            id: r.id,
            merge: r.merge,
        })
        .collect()
}

/// The redundancy of the epoch reads, from the regions; says once what cannot be exported and why.
fn redundancy(config: &Config, section: &ExportSection, keys: &KeySet) -> Redundancy {
    let find = |kind: RegionKind| config.regions.iter().find(|r| r.geometry.kind() == kind);
    let keyincrement = find(RegionKind::KeyIncrement).and_then(|r| match r.geometry {
        Geometry::KeyIncrement(g) if g.n_max() == 1 => Some(r.redundancy.unwrap_or(1)),
        _ => r.redundancy,
    });
    let wants = !keys.keyincrement.is_empty()
        || !section.drop_nodes.is_empty()
        || config.int.as_ref().is_some_and(|i| !i.drop_list.is_empty());
    if wants && keyincrement.is_none() && find(RegionKind::KeyIncrement).is_some() {
        log::warn!(
            "export: the key_increment region has n_max > 1 and no `redundancy`: drop counts and \
             Key-Increment keys are not exported (a minimum over copies never written reads 0)"
        );
    }
    Redundancy {
        keywrite: find(RegionKind::KeyWrite).and_then(|r| r.redundancy),
        keyincrement,
    }
}
