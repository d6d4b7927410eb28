//! One sink's thread: it tails every Append list with tails of its own, reads the epochs, and feeds its
//! pipeline. Sinks never wait for each other: a ClickHouse that hangs for its timeout does not hold up
//! the Parquet files, and each sink's tails resume from the rings at their own pace.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dta_protocol::layout::AppendGeometry;

use super::epoch::EpochReader;
use super::pipeline::Pipeline;
use super::regions::region;
use super::rows::{rows, ListSchema};
use super::table::{Column, Table};
use super::tail::ListTail;
use super::time::now_ms;
use crate::error::Result;
use crate::memory::Arena;
use crate::metrics::ExportMetrics;

/// Entries one read of a list takes at most: large enough to keep up with a ring filling at line rate,
/// small enough that one read holds the arena's lock briefly.
const CHUNK: usize = 64 * 1024;

/// A list the worker tails.
#[derive(Debug, Clone, Copy)]
pub struct ListSpec {
    /// The list's id.
    pub id: u32,
    /// How its entries are decoded.
    pub schema: ListSchema,
    /// Its geometry.
    pub geometry: AppendGeometry,
}

/// A sink's thread state.
pub struct Worker {
    /// The regions.
    pub arena: Arc<Arena>,
    /// The lists, each with this sink's tail.
    pub lists: Vec<(ListSpec, ListTail)>,
    /// The sink and its buffer.
    pub pipeline: Pipeline,
    /// The per-epoch reads.
    pub epoch: EpochReader,
    /// Time between epochs.
    pub epoch_every: Duration,
    /// Sleep when nothing was new.
    pub poll: Duration,
    /// The counters.
    pub metrics: ExportMetrics,
}

impl Worker {
    /// Runs until `stop`, then drains the lists, reads a last epoch and closes the sink.
    pub fn run(mut self, stop: &AtomicBool) {
        for (l, _) in &self.lists {
            // Every list shows up in the metrics from the start, at zero.
            self.metrics.overruns(l.id, self.pipeline.name(), 0);
        }
        let mut next_epoch = Instant::now() + self.epoch_every;
        let mut complained = false;
        loop {
            let stopping = stop.load(Ordering::Relaxed);
            let read = match self.pull() {
                Ok(n) => {
                    complained = false;
                    n
                }
                Err(e) => {
                    if !complained {
                        log::warn!(
                            "export: reading the lists for {}: {e}",
                            self.pipeline.name()
                        );
                        complained = true;
                    }
                    0
                }
            };
            let now = Instant::now();
            // On the way out the lists are drained before the last epoch, so that its drop counts
            // cover the events exported.
            if now >= next_epoch || (stopping && read == 0) {
                self.epoch_rows(now);
                next_epoch = now + self.epoch_every;
            }
            self.pipeline.flush(now, false);
            self.pipeline.tick(now_ms());
            if stopping && read == 0 {
                self.pipeline.close(Instant::now());
                return;
            }
            if read == 0 {
                // Parked rather than asleep: a stop (which unparks) ends the wait at once instead of
                // after up to `poll_ms`.
                std::thread::park_timeout(self.poll);
            }
        }
    }

    /// One read of every list, as far as the buffer has room; the entries read.
    pub fn pull(&mut self) -> Result<u64> {
        let mut total = 0;
        let sink = self.pipeline.name();
        for (spec, tail) in &mut self.lists {
            let max = CHUNK.min(self.pipeline.room());
            if max == 0 {
                // Backed up: the entries wait in the ring (counted as overruns if it wraps first).
                break;
            }
            let read = region(&self.arena, Some(spec.id), |mem, g: &AppendGeometry| {
                tail.read(mem, g, max)
            })?;
            if read.overrun > 0 {
                log::warn!(
                    "export: list {} overran for {sink}: {} entries overwritten before they were read",
                    spec.id,
                    read.overrun
                );
                self.metrics.overruns(spec.id, sink, read.overrun);
            }
            let size = spec.geometry.entry_size() as usize;
            total += read.count(size);
            let now = Instant::now();
            for b in rows(spec.id, spec.schema, size, &read, now_ms())? {
                if b.table == Table::DropEvents {
                    if let Some(Column::U32(nodes)) = b.columns.get(4) {
                        for &n in nodes {
                            self.epoch.saw_node(n);
                        }
                    }
                }
                self.pipeline.push(b, now);
            }
        }
        Ok(total)
    }

    fn epoch_rows(&mut self, now: Instant) {
        match self.epoch.read(&self.arena, now_ms()) {
            Ok(batches) => {
                for b in batches {
                    self.pipeline.push_or_drop(b, now);
                }
            }
            Err(e) => log::warn!("export: epoch for {}: {e}", self.pipeline.name()),
        }
    }
}
