//! Append: entries batched per list and written with one WRITE per batch at `entries + head·size`.
//!
//! A batch never crosses the end of the ring (it is cut there, so the next one starts at slot 0: the
//! reference instead writes twice to slot 0 after a wrap), never exceeds the path MTU, and a partial batch
//! is written after an idle timeout. The head word (`total_entries_written`, u64 LE at offset 0) follows
//! at least every `head_every` batches and after every idle flush, on the same QP, so RC ordering puts it
//! after the entries it counts.

use std::time::Duration;

use dta_protocol::dta::{AppendRepr, Opcode};
use dta_protocol::layout::{AppendGeometry, Geometry, Region};

use super::{FlushMode, IdMap, Outcome, Primitive, Sink, Timed};
use crate::collector::Regions;
use crate::counters::{Counters, DropReason};
use crate::frames::Payload;
use crate::requester::Requester;
use crate::time::Instant;

#[derive(Debug)]
struct List {
    region: Region,
    g: AppendGeometry,
    /// Entries written so far (flushed batches); the ring slot is `head mod entries`.
    head: u64,
    /// The batch being filled; copied into the WRITE's payload at a flush and kept for the next batch.
    buf: Vec<u8>,
    count: u32,
    batches_since_head: u32,
    first_at: Instant,
    /// Last entry added: a list idle since then with batches written after its last head word gets the
    /// head word on its own, or a stream that ends on a full batch would leave readers short forever.
    last_at: Instant,
}

impl List {
    /// Entries the batch starting at `head` may hold.
    fn cap(&self, mtu: usize) -> u64 {
        let by_mtu = (mtu / self.g.entry_size() as usize).max(1) as u64;
        let to_end = self.g.entries() - self.head % self.g.entries();
        u64::from(self.g.batch_size()).min(by_mtu).min(to_end)
    }
}

/// Every list of one collector.
#[derive(Debug, Default)]
pub struct AppendLists {
    lists: IdMap<List>,
    idle: Duration,
    head_every: u32,
}

impl AppendLists {
    /// Lists flush a partial batch after `idle` and write the head every `head_every` batches.
    pub fn new(idle: Duration, head_every: u32) -> Self {
        AppendLists {
            lists: IdMap::default(),
            idle,
            head_every,
        }
    }

    /// Work requests a report may add at most: a batch and a head word.
    pub const MAX_WRS: usize = 2;
}

impl Primitive for AppendLists {
    type Report<'r> = AppendRepr<'r>;

    fn region<'g>(&self, regions: &'g Regions, r: &AppendRepr<'_>) -> Option<&'g Region> {
        regions.append_list(r.list_id)
    }

    fn max_wrs(&self, _: &AppendRepr<'_>) -> usize {
        Self::MAX_WRS
    }

    /// Adds an entry to its list.
    fn handle(
        &mut self,
        now: Instant,
        r: &AppendRepr<'_>,
        region: &Region,
        out: &mut Sink<'_>,
    ) -> Result<Outcome, DropReason> {
        let Geometry::Append(g) = region.geometry else {
            return Err(DropReason::NoRegion);
        };
        if r.data.len() != g.entry_size() as usize {
            return Err(DropReason::GeometryMismatch);
        }
        let l = self.lists.entry(r.list_id).or_insert_with(|| List {
            region: *region,
            g,
            head: 0,
            buf: Vec::new(),
            count: 0,
            batches_since_head: 0,
            first_at: now,
            last_at: now,
        });
        l.last_at = now;
        if l.count == 0 {
            l.first_at = now;
        }
        l.buf.extend_from_slice(r.data);
        l.count += 1;
        if u64::from(l.count) >= l.cap(out.mtu) {
            flush(l, false, self.head_every, out.qp, out.counters);
        }
        Ok(Outcome::Accepted)
    }
}

impl Timed for AppendLists {
    /// Writes partial batches idle for `idle` by `now` (all of them with [`FlushMode::All`]), and the
    /// head word of lists idle since batches went without it.
    fn flush(&mut self, now: Instant, mode: FlushMode, _: &Regions, out: &mut Sink<'_>) {
        let all = mode == FlushMode::All;
        for l in self.lists.values_mut() {
            if l.count > 0 && (all || l.first_at + self.idle <= now) {
                out.counters.append_idle_flushes += 1;
                flush(l, true, self.head_every, out.qp, out.counters);
            } else if l.count == 0
                && l.batches_since_head > 0
                && (all || l.last_at + self.idle <= now)
            {
                write_head(l, out.qp, out.counters);
            }
        }
    }

    /// The next idle flush.
    fn poll_timeout(&self) -> Option<Instant> {
        self.lists
            .values()
            .filter_map(|l| {
                if l.count > 0 {
                    Some(l.first_at + self.idle)
                } else if l.batches_since_head > 0 {
                    Some(l.last_at + self.idle)
                } else {
                    None
                }
            })
            .min()
    }
}

fn flush(l: &mut List, idle: bool, head_every: u32, qp: &mut Requester, c: &mut Counters) {
    let va = l.region.va + l.g.entry_offset(l.head);
    let payload = Payload::from_slice(&l.buf);
    l.buf.clear();
    super::write(qp, Opcode::Append, va, l.region.rkey, payload);
    l.head += u64::from(l.count);
    l.count = 0;
    l.batches_since_head += 1;
    if idle || l.batches_since_head >= head_every {
        write_head(l, qp, c);
    }
}

fn write_head(l: &mut List, qp: &mut Requester, c: &mut Counters) {
    l.batches_since_head = 0;
    c.append_head_writes += 1;
    let head = Payload::from_slice(&AppendGeometry::encode_head(l.head));
    super::write(qp, Opcode::Append, l.region.va, l.region.rkey, head);
}
