//! One sink's buffer: rows wait per table until a batch is full or old enough, a failed write is retried
//! with a growing back-off, and the buffer is bounded. The lists are read only while the buffer has room
//! (so a sink that is down leaves the entries in the rings, and its tails resume from there); epoch rows
//! that find it full are dropped and counted.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::sink::Sink;
use super::table::{Batch, Table};
use crate::metrics::ExportMetrics;

/// When a table's rows are written, and how many may wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// A table is written once this many rows wait ...
    pub batch_rows: usize,
    /// ... or once its oldest waited this long.
    pub flush: Duration,
    /// Rows that may wait in all.
    pub buffer_rows: usize,
}

/// Back-off after a failed write: doubled at each failure up to the cap.
const FIRST_RETRY: Duration = Duration::from_millis(500);
const MAX_RETRY: Duration = Duration::from_secs(30);

#[derive(Debug)]
struct Pending {
    batches: Vec<Batch>,
    rows: usize,
    since: Instant,
}

/// A sink and what waits for it.
pub struct Pipeline {
    sink: Box<dyn Sink>,
    policy: Policy,
    pending: BTreeMap<Table, Pending>,
    buffered: usize,
    retry_at: Option<Instant>,
    backoff: Duration,
    metrics: ExportMetrics,
}

impl Pipeline {
    /// A pipeline into `sink`.
    pub fn new(sink: Box<dyn Sink>, policy: Policy, metrics: ExportMetrics) -> Self {
        Pipeline {
            sink,
            policy,
            pending: BTreeMap::new(),
            buffered: 0,
            retry_at: None,
            backoff: FIRST_RETRY,
            metrics,
        }
    }

    /// The sink's name.
    pub fn name(&self) -> &'static str {
        self.sink.name()
    }

    /// Rows the buffer can still take.
    pub fn room(&self) -> usize {
        self.policy.buffer_rows.saturating_sub(self.buffered)
    }

    /// Rows waiting.
    pub fn buffered(&self) -> usize {
        self.buffered
    }

    /// Queues `b`; the caller sized it to [`room`](Self::room) (list reads), or it is a gap row, which is
    /// never turned away: it is what says rows are missing.
    pub fn push(&mut self, b: Batch, now: Instant) {
        if b.is_empty() {
            return;
        }
        self.buffered += b.len();
        let p = self.pending.entry(b.table).or_insert_with(|| Pending {
            batches: Vec::new(),
            rows: 0,
            since: now,
        });
        p.rows += b.len();
        p.batches.push(b);
    }

    /// Queues `b` if it fits, else drops it and counts its rows.
    pub fn push_or_drop(&mut self, b: Batch, now: Instant) {
        if b.len() > self.room() {
            log::warn!(
                "export: {} is backed up ({} rows wait): {} rows of {} dropped",
                self.name(),
                self.buffered,
                b.len(),
                b.table.name()
            );
            self.metrics.dropped(self.name(), b.len() as u64);
            return;
        }
        self.push(b, now);
    }

    /// Writes the tables that are due (all of them when `force`), unless a failed write's back-off
    /// has not run out (ignored when `force`). Stops at the first failure.
    pub fn flush(&mut self, now: Instant, force: bool) {
        if !force && self.retry_at.is_some_and(|t| now < t) {
            return;
        }
        let due: Vec<Table> = self
            .pending
            .iter()
            .filter(|(_, p)| {
                force
                    || p.rows >= self.policy.batch_rows
                    || now.duration_since(p.since) >= self.policy.flush
            })
            .map(|(t, _)| *t)
            .collect();
        for table in due {
            let Some(mut p) = self.pending.remove(&table) else {
                continue;
            };
            match self.sink.write(table, &p.batches) {
                Ok(()) => {
                    self.metrics.rows(self.name(), table.name(), p.rows as u64);
                    self.buffered -= p.rows;
                    if self.retry_at.take().is_some() {
                        log::info!("export: {} writes again", self.name());
                    }
                    self.backoff = FIRST_RETRY;
                }
                Err(e) => {
                    let written: usize = p.batches.drain(..e.written).map(|b| b.len()).sum();
                    self.metrics.rows(self.name(), table.name(), written as u64);
                    self.buffered -= written;
                    p.rows -= written;
                    if e.lost > 0 {
                        self.metrics.dropped(self.name(), e.lost);
                    }
                    self.metrics.error(self.name());
                    // Said once per outage, not at every retry.
                    if self.retry_at.is_none() {
                        log::warn!(
                            "export: {} failed, retrying (holding at most {} rows): {}",
                            self.name(),
                            self.policy.buffer_rows,
                            e.error
                        );
                    } else {
                        log::debug!("export: {} still failing: {}", self.name(), e.error);
                    }
                    self.retry_at = Some(now + self.backoff);
                    self.backoff = (self.backoff * 2).min(MAX_RETRY);
                    if !p.batches.is_empty() {
                        self.pending.insert(table, p);
                    }
                    return;
                }
            }
        }
    }

    /// Tells the sink the time (file rotation).
    pub fn tick(&mut self, now_ms: u64) {
        if let Err(e) = self.sink.tick(now_ms) {
            self.metrics.error(self.name());
            log::warn!("export: {}: {e}", self.name());
        }
    }

    /// Last write and close: what still cannot be written is dropped and counted.
    pub fn close(&mut self, now: Instant) {
        self.flush(now, true);
        if self.buffered > 0 {
            log::warn!(
                "export: {} stops with {} rows it could not write",
                self.name(),
                self.buffered
            );
            self.metrics.dropped(self.name(), self.buffered as u64);
            self.pending.clear();
            self.buffered = 0;
        }
        if let Err(e) = self.sink.close() {
            self.metrics.error(self.name());
            log::warn!("export: closing {}: {e}", self.name());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::error::Error;
    use crate::export::sink::WriteError;
    use crate::export::table::Value;

    /// A sink that is up or down at the test's word, and remembers what it took.
    #[derive(Clone, Default)]
    struct Fake {
        down: Arc<Mutex<bool>>,
        got: Arc<Mutex<Vec<(Table, usize)>>>,
    }

    impl Sink for Fake {
        fn name(&self) -> &'static str {
            "fake"
        }
        fn write(
            &mut self,
            table: Table,
            batches: &[Batch],
        ) -> std::result::Result<(), WriteError> {
            if *self.down.lock().unwrap() {
                return Err(Error::BadQuery("down".into()).into());
            }
            let rows = batches.iter().map(Batch::len).sum();
            self.got.lock().unwrap().push((table, rows));
            Ok(())
        }
        fn tick(&mut self, _: u64) -> crate::error::Result<()> {
            Ok(())
        }
        fn close(&mut self) -> crate::error::Result<()> {
            Ok(())
        }
    }

    fn gaps(n: usize) -> Batch {
        let mut b = Batch::new(Table::AppendGaps, Some(1), 0, n);
        for i in 0..n {
            b.push(vec![
                Value::U64(0),
                Value::U32(1),
                Value::U64(i as u64),
                Value::U64(1),
            ])
            .unwrap();
        }
        b
    }

    #[test]
    fn batches_wait_for_size_or_age_and_a_down_sink_is_retried_within_its_buffer() {
        let fake = Fake::default();
        let metrics = ExportMetrics::default();
        let policy = Policy {
            batch_rows: 10,
            flush: Duration::from_secs(1),
            buffer_rows: 25,
        };
        let mut p = Pipeline::new(Box::new(fake.clone()), policy, metrics.clone());
        let t0 = Instant::now();
        p.push(gaps(4), t0);
        p.flush(t0, false);
        assert!(fake.got.lock().unwrap().is_empty(), "neither full nor old");
        p.push(gaps(6), t0);
        p.flush(t0, false);
        assert_eq!(*fake.got.lock().unwrap(), [(Table::AppendGaps, 10)]);
        p.push(gaps(3), t0);
        p.flush(t0 + Duration::from_secs(1), false);
        assert_eq!(fake.got.lock().unwrap().len(), 2, "old enough");

        // Down: rows wait, up to the buffer; epoch rows beyond it are dropped and counted.
        *fake.down.lock().unwrap() = true;
        p.push(gaps(20), t0);
        p.flush(t0, false);
        assert_eq!((p.buffered(), p.room()), (20, 5));
        p.push_or_drop(gaps(6), t0);
        assert_eq!(metrics.dropped_of("fake"), 6);
        p.push_or_drop(gaps(5), t0);
        assert_eq!(p.room(), 0);
        // The back-off holds the next try; once it ran out and the sink is up, all of it is written.
        *fake.down.lock().unwrap() = false;
        p.flush(t0, false);
        assert_eq!(p.buffered(), 25, "still backing off");
        p.flush(t0 + MAX_RETRY, false);
        assert_eq!(p.buffered(), 0);
        assert_eq!(
            fake.got.lock().unwrap().last(),
            Some(&(Table::AppendGaps, 25))
        );
        assert_eq!(metrics.rows_of("fake", "append_gaps"), 10 + 3 + 25);

        // Closing while down drops what waits, counted.
        *fake.down.lock().unwrap() = true;
        p.push(gaps(2), t0);
        p.close(t0);
        assert_eq!(metrics.dropped_of("fake"), 6 + 2);
        assert_eq!(p.buffered(), 0);
    }
}
