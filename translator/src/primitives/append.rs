//! Append: entries batched per list and written with one WRITE per batch at `entries + head·size`.
//!
//! A batch never crosses the end of the ring (it is cut there, so the next one starts at slot 0: the
//! reference instead writes twice to slot 0 after a wrap), never exceeds the path MTU, and a partial batch
//! is written after an idle timeout. The head word (`total_entries_written`, u64 LE at offset 0) follows
//! at least every `head_every` batches and after every idle flush, on the same QP, so RC ordering puts it
//! after the entries it counts.

use std::time::Duration;

use dta_protocol::control::AppendHead;
use dta_protocol::dta::{AppendRepr, Opcode};
use dta_protocol::layout::{AppendGeometry, Geometry, Region};

use super::{FlushMode, IdMap, Outcome, Primitive, Sink, Timed};
use crate::collector::Regions;
use crate::counters::{Counters, DropReason};
use crate::time::Instant;
use dta_rc::frames::Payload;
use dta_rc::requester::Requester;

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
    /// Entries of the batches written since the last head word: the head word that covers them completes
    /// them (a reader reaches an entry through the head), so it carries them (`WorkRequest::reports`).
    unheaded: u32,
    first_at: Instant,
    /// Last entry added: a list idle since then with batches written after its last head word gets the
    /// head word on its own, or a stream that ends on a full batch would leave readers short forever.
    last_at: Instant,
    /// [`cap`](Self::cap) for `head` and the path MTU `cap_mtu`, computed once per batch rather than per
    /// entry (it divides twice); 0 when `head` moved since.
    cap: u64,
    cap_mtu: usize,
}

impl List {
    /// A list whose next entry has absolute index `head` (0 for a new list; the collector's head word
    /// for one that already holds entries).
    fn new(region: &Region, g: AppendGeometry, head: u64, now: Instant) -> Self {
        List {
            region: *region,
            g,
            head,
            buf: Vec::new(),
            count: 0,
            batches_since_head: 0,
            unheaded: 0,
            first_at: now,
            last_at: now,
            cap: 0,
            cap_mtu: 0,
        }
    }

    /// Entries the batch starting at `head` may hold.
    fn cap(&self, mtu: usize) -> u64 {
        let by_mtu = (mtu / self.g.entry_size() as usize).max(1) as u64;
        let to_end = self.g.entries() - self.head % self.g.entries();
        u64::from(self.g.batch_size()).min(by_mtu).min(to_end)
    }

    /// [`cap`](Self::cap), from the value kept for this batch when it is still good.
    #[inline]
    fn batch_cap(&mut self, mtu: usize) -> u64 {
        if self.cap == 0 || self.cap_mtu != mtu {
            self.cap = self.cap(mtu);
            self.cap_mtu = mtu;
        }
        self.cap
    }

    /// Adds an entry (its size checked by the caller); writes the batch when it is full.
    #[inline]
    fn add(&mut self, now: Instant, data: &[u8], head_every: u32, out: &mut Sink<'_>) {
        self.last_at = now;
        if self.count == 0 {
            self.first_at = now;
        }
        extend(&mut self.buf, data);
        self.count += 1;
        if u64::from(self.count) >= self.batch_cap(out.mtu) {
            flush(self, false, head_every, out.qp, out.counters);
        }
    }
}

/// `buf.extend_from_slice(data)`, with the common entry sizes copied as fixed-size arrays: a copy of a
/// known length is a move or two inline, where one of a run-time length calls `memcpy`.
#[inline]
fn extend(buf: &mut Vec<u8>, data: &[u8]) {
    if let Ok(a) = <&[u8; 4]>::try_from(data) {
        buf.extend_from_slice(a);
    } else if let Ok(a) = <&[u8; 8]>::try_from(data) {
        buf.extend_from_slice(a);
    } else {
        buf.extend_from_slice(data);
    }
}

/// Every list of one collector.
#[derive(Debug, Default)]
pub struct AppendLists {
    /// List id to its place in `slab`. Timers visit the lists in this map's order, as when the map held
    /// the lists themselves, so flushes go out in the same order.
    lists: IdMap<usize>,
    slab: Vec<List>,
    /// The collector's Append region at index k (in `Regions::append`) to 1 + its place in `slab`, 0
    /// before its first entry: the per-report lookup for a caller that found the region by index.
    by_region: Vec<usize>,
    idle: Duration,
    head_every: u32,
    /// Where each list stood in the collector's memory when it welcomed us (its head word): a list
    /// starts there on its first entry, so that a translator restart continues the list instead of
    /// rewinding it to entry 0. Lists not named start at 0.
    start_heads: IdMap<u64>,
}

impl AppendLists {
    /// Lists flush a partial batch after `idle` and write the head every `head_every` batches.
    pub fn new(idle: Duration, head_every: u32) -> Self {
        AppendLists {
            lists: IdMap::default(),
            slab: Vec::new(),
            by_region: Vec::new(),
            idle,
            head_every,
            start_heads: IdMap::default(),
        }
    }

    /// Lists start where the collector's head words say (`Welcome::append_heads`) rather than at 0.
    /// Lists already written to keep their own head, which is at least as recent.
    pub fn continue_from(&mut self, heads: &[AppendHead]) {
        for h in heads {
            self.start_heads.insert(h.list, h.head);
        }
    }

    /// Work requests a report may add at most: a batch and a head word.
    pub const MAX_WRS: usize = 2;

    /// [`Primitive::handle`] of a report whose region is `region`, the collector's Append region at
    /// index `k` of `Regions::append`: the same checks and the same list (a list is found by its id either
    /// way), without hashing the id per report. A test compares both paths.
    #[inline]
    pub fn handle_at(
        &mut self,
        now: Instant,
        k: usize,
        r: &AppendRepr<'_>,
        region: &Region,
        out: &mut Sink<'_>,
    ) -> Result<Outcome, DropReason> {
        let g = entry_geometry(r, region)?;
        let slot = match self.by_region.get(k) {
            Some(&s) if s > 0 => s - 1,
            _ => self.place(now, k, r.list_id, region, g),
        };
        self.add_to(slot, now, r.data, out)
    }

    /// The slab place of list `id` (region index `k`), made on its first entry.
    #[cold]
    fn place(
        &mut self,
        now: Instant,
        k: usize,
        id: u32,
        region: &Region,
        g: AppendGeometry,
    ) -> usize {
        let slot = self.slot(now, id, region, g);
        if self.by_region.len() <= k {
            self.by_region.resize(k + 1, 0);
        }
        self.by_region[k] = slot + 1;
        slot
    }

    /// The slab place of list `id`, made on its first entry.
    fn slot(&mut self, now: Instant, id: u32, region: &Region, g: AppendGeometry) -> usize {
        let slab = &mut self.slab;
        let head = self.start_heads.get(&id).copied().unwrap_or(0);
        *self.lists.entry(id).or_insert_with(|| {
            slab.push(List::new(region, g, head, now));
            slab.len() - 1
        })
    }
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
        let g = entry_geometry(r, region)?;
        let slot = self.slot(now, r.list_id, region, g);
        self.add_to(slot, now, r.data, out)
    }
}

/// The region's Append geometry, if `r`'s entry has its entry size (the checks both ways in share).
#[inline]
fn entry_geometry(r: &AppendRepr<'_>, region: &Region) -> Result<AppendGeometry, DropReason> {
    let Geometry::Append(g) = region.geometry else {
        return Err(DropReason::NoRegion);
    };
    if r.data.len() != g.entry_size() as usize {
        return Err(DropReason::GeometryMismatch);
    }
    Ok(g)
}

impl AppendLists {
    /// Adds `data` to the list at slab place `slot`.
    #[inline]
    fn add_to(
        &mut self,
        slot: usize,
        now: Instant,
        data: &[u8],
        out: &mut Sink<'_>,
    ) -> Result<Outcome, DropReason> {
        // `slot` names a list of the slab (made there when it was placed).
        let Some(l) = self.slab.get_mut(slot) else {
            return Err(DropReason::NoRegion);
        };
        l.add(now, data, self.head_every, out);
        Ok(Outcome::Accepted)
    }
}

impl AppendLists {
    /// Reports held: entries of partial batches, and of batches whose head word is not queued yet.
    pub fn held_reports(&self) -> u64 {
        self.slab
            .iter()
            .map(|l| u64::from(l.count) + u64::from(l.unheaded))
            .sum()
    }
}

impl Timed for AppendLists {
    fn held_reports(&self) -> u64 {
        AppendLists::held_reports(self)
    }

    /// Writes partial batches idle for `idle` by `now` (all of them with [`FlushMode::All`]), and the
    /// head word of lists idle since batches went without it.
    fn flush(&mut self, now: Instant, mode: FlushMode, _: &Regions, out: &mut Sink<'_>) {
        let all = mode == FlushMode::All;
        for &slot in self.lists.values() {
            let Some(l) = self.slab.get_mut(slot) else {
                continue;
            };
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
            .filter_map(|&slot| self.slab.get(slot))
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
    // Wrapping: the start head comes from the collector's memory, which a test or a fault may set anywhere.
    l.head = l.head.wrapping_add(u64::from(l.count));
    l.unheaded = l.unheaded.saturating_add(l.count);
    l.count = 0;
    // The next batch's cap depends on the new head.
    l.cap = 0;
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
    qp.add_reports(std::mem::take(&mut l.unheaded));
}
