//! Sketch-Merge (DTA arXiv paper, sections 3.1 and 4.2): every reporter sends its sketch column by
//! column, in order; the translator merges column c of all `reporters` (sum or max) and writes completed
//! columns in batches of contiguous columns, so the collector holds the network-wide sketch.
//!
//! Sums saturate at `u32::MAX` instead of wrapping: a count-min estimate may then overestimate but never
//! underestimates, which is the guarantee its queries rely on.

use std::time::Duration;

use dta_protocol::dta::{Opcode, SketchOp, SketchRepr};
use dta_protocol::layout::{Geometry, Region, SketchGeometry};

use super::{FlushMode, IdMap, Outcome, Primitive, Sink, Timed};
use crate::collector::Regions;
use crate::counters::DropReason;
use crate::time::Instant;
use dta_rc::frames::Payload;
use dta_rc::requester::Requester;

#[derive(Debug, Clone)]
struct Merge {
    region: Region,
    g: SketchGeometry,
    op: SketchOp,
    acc: Vec<u32>,
    contrib: Vec<u16>,
    /// Next column each reporter must send.
    expected: Vec<u32>,
    /// First column not yet written.
    next_write: u32,
    /// When the oldest complete-but-unwritten column completed.
    complete_since: Option<Instant>,
    /// Columns from `next_write` on known complete (the last scan's), so a scan resumes there instead of
    /// recounting them: a column stays complete until it is written, which moves `next_write` past it.
    run: u32,
}

/// Every sketch of one collector.
#[derive(Debug, Default)]
pub struct SketchMerger {
    /// Sketch id to its place in `slab`. Timers visit the sketches in this map's order, as when the map
    /// held the merges themselves, so flushes go out in the same order.
    sketches: IdMap<usize>,
    slab: Vec<Merge>,
    /// The collector's sketch region at index k (in `Regions::sketch`) to 1 + its place in `slab`, 0
    /// before its first report: the per-report lookup for a caller that found the region by index.
    by_region: Vec<usize>,
    reporters: u16,
    batch: u32,
    idle: Duration,
}

impl SketchMerger {
    /// Merges `reporters` reporters, writing up to `batch` columns per WRITE.
    pub fn new(reporters: u16, batch: u32, idle: Duration) -> Self {
        SketchMerger {
            sketches: IdMap::default(),
            slab: Vec::new(),
            by_region: Vec::new(),
            reporters,
            batch,
            idle,
        }
    }

    /// Work requests a report may add at most: one batch, or two when a column's completion also lets
    /// the batch behind a wrap go.
    pub const MAX_WRS: usize = 2;

    /// [`Primitive::handle`] of a report whose region is `region`, the collector's sketch region at index
    /// `k` of `Regions::sketch`: the same checks and the same merge (found by its id either way), without
    /// hashing the id per report. A test compares both paths.
    #[inline]
    pub fn handle_at(
        &mut self,
        now: Instant,
        k: usize,
        r: &SketchRepr<'_>,
        region: &Region,
        out: &mut Sink<'_>,
    ) -> Result<Outcome, DropReason> {
        let g = self.check(r, region)?;
        let slot = match self.by_region.get(k) {
            Some(&s) if s > 0 => s - 1,
            _ => self.place(k, r, region, g),
        };
        self.merge(slot, g, now, r, out)
    }

    /// The sketch geometry of `region`, if the report fits it.
    #[inline]
    fn check(&self, r: &SketchRepr<'_>, region: &Region) -> Result<SketchGeometry, DropReason> {
        let Geometry::Sketch(g) = region.geometry else {
            return Err(DropReason::NoRegion);
        };
        if r.reporter_id >= self.reporters
            || r.rows() != g.rows() as usize
            || u32::from(r.column) >= g.columns()
        {
            return Err(DropReason::BadSketch);
        }
        Ok(g)
    }

    /// The slab place of the report's sketch (region index `k`), made on its first report.
    #[cold]
    fn place(&mut self, k: usize, r: &SketchRepr<'_>, region: &Region, g: SketchGeometry) -> usize {
        let slot = self.slot(r, region, g);
        if self.by_region.len() <= k {
            self.by_region.resize(k + 1, 0);
        }
        self.by_region[k] = slot + 1;
        slot
    }

    /// The slab place of the report's sketch, made (with the report's op) on its first report.
    fn slot(&mut self, r: &SketchRepr<'_>, region: &Region, g: SketchGeometry) -> usize {
        let (slab, reporters) = (&mut self.slab, self.reporters);
        *self
            .sketches
            .entry(u32::from(r.sketch_id))
            .or_insert_with(|| {
                slab.push(Merge {
                    region: *region,
                    g,
                    op: r.op,
                    acc: vec![0; (g.rows() * g.columns()) as usize],
                    contrib: vec![0; g.columns() as usize],
                    expected: vec![0; usize::from(reporters)],
                    next_write: 0,
                    complete_since: None,
                    run: 0,
                });
                slab.len() - 1
            })
    }

    /// Merges a report checked against geometry `g` into the sketch at `slot`.
    #[inline]
    fn merge(
        &mut self,
        slot: usize,
        g: SketchGeometry,
        now: Instant,
        r: &SketchRepr<'_>,
        out: &mut Sink<'_>,
    ) -> Result<Outcome, DropReason> {
        let reporters = self.reporters;
        let Some(m) = self.slab.get_mut(slot) else {
            return Err(DropReason::NoRegion);
        };
        if r.op != m.op {
            return Err(DropReason::BadSketch);
        }
        let col = u32::from(r.column);
        // Each slot looked up once (`check` bounded the reporter and the column, and the rows).
        let rows = g.rows() as usize;
        let at = col as usize * rows;
        let (Some(exp), Some(cells), Some(n)) = (
            m.expected.get_mut(usize::from(r.reporter_id)),
            m.acc.get_mut(at..at + rows),
            m.contrib.get_mut(col as usize),
        ) else {
            return Err(DropReason::BadSketch);
        };
        if col != *exp {
            return Ok(if col < *exp {
                Outcome::Duplicate
            } else {
                Outcome::Gap {
                    last_in_order: (exp.wrapping_sub(1) & 0xFF) as u8,
                }
            });
        }
        // `r.iter_counters()`, read here so that it inlines (the counters are `rows` big-endian u32s).
        let counters = r
            .counters
            .chunks_exact(4)
            .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]));
        match m.op {
            SketchOp::Sum => {
                for (cell, v) in cells.iter_mut().zip(counters) {
                    *cell = cell.saturating_add(v);
                }
            }
            SketchOp::Max => {
                for (cell, v) in cells.iter_mut().zip(counters) {
                    *cell = (*cell).max(v);
                }
            }
        }
        *n += 1;
        // `(col + 1) % columns` without the division (`col < columns`, checked).
        *exp = if col + 1 == g.columns() { 0 } else { col + 1 };
        let complete = *n >= reporters;
        if complete {
            if m.complete_since.is_none() {
                m.complete_since = Some(now);
            }
            // Only a column that just completed can lengthen the complete run from `next_write`; while it
            // is incomplete, write_complete would find what the last call found (nothing to write) and
            // leave its state as it is, so it is not called (it scans from the known-complete run on).
            write_complete(m, reporters, self.batch, out.mtu, false, out.qp);
        }
        Ok(Outcome::Accepted)
    }
}

impl SketchMerger {
    /// Reports merged into columns not written yet (incomplete columns included: a flush writes only
    /// complete ones).
    pub fn held_reports(&self) -> u64 {
        self.slab
            .iter()
            .flat_map(|m| m.contrib.iter())
            .map(|&n| u64::from(n))
            .sum()
    }
}

impl Primitive for SketchMerger {
    type Report<'r> = SketchRepr<'r>;

    fn region<'g>(&self, regions: &'g Regions, r: &SketchRepr<'_>) -> Option<&'g Region> {
        regions.sketch(u32::from(r.sketch_id))
    }

    fn max_wrs(&self, _: &SketchRepr<'_>) -> usize {
        Self::MAX_WRS
    }

    /// Merges one column report: a column ahead of the reporter's next is a [`Outcome::Gap`] (NACKed
    /// with the low byte of its last in-order column), one behind it a [`Outcome::Duplicate`].
    fn handle(
        &mut self,
        now: Instant,
        r: &SketchRepr<'_>,
        region: &Region,
        out: &mut Sink<'_>,
    ) -> Result<Outcome, DropReason> {
        let g = self.check(r, region)?;
        let slot = self.slot(r, region, g);
        self.merge(slot, g, now, r, out)
    }
}

impl Timed for SketchMerger {
    fn held_reports(&self) -> u64 {
        SketchMerger::held_reports(self)
    }

    /// Writes complete columns that waited `idle` for a full batch (all complete ones with
    /// [`FlushMode::All`]).
    fn flush(&mut self, now: Instant, mode: FlushMode, _: &Regions, out: &mut Sink<'_>) {
        for &slot in self.sketches.values() {
            let Some(m) = self.slab.get_mut(slot) else {
                continue;
            };
            if m.complete_since
                .is_some_and(|t| mode == FlushMode::All || t + self.idle <= now)
            {
                write_complete(m, self.reporters, self.batch, out.mtu, true, out.qp);
            }
        }
    }

    /// The next idle flush.
    fn poll_timeout(&self) -> Option<Instant> {
        self.sketches
            .values()
            .filter_map(|&slot| self.slab.get(slot))
            .filter_map(|m| m.complete_since)
            .map(|t| t + self.idle)
            .min()
    }
}

/// Writes runs of complete columns from `next_write`: full batches, a run that ends the sketch, and with
/// `partial` whatever complete run there is.
///
/// The common case, a column completed with nothing to write yet, is decided here inline: it is the
/// first pass of [`write_runs`]'s loop when that pass breaks, and leaves the same state as it.
#[inline(always)]
fn write_complete(
    m: &mut Merge,
    reporters: u16,
    batch: u32,
    mtu: usize,
    partial: bool,
    qp: &mut Requester,
) {
    let cap = batch_cap(m, batch, mtu);
    let start = m.next_write;
    let columns = m.g.columns();
    let mut k = m.run.min(cap);
    while k < cap && start + k < columns && m.contrib[(start + k) as usize] >= reporters {
        k += 1;
    }
    if k == 0 || !(k == cap || start + k == columns || partial) {
        m.run = k;
        // With k > 0 the column at `next_write` is complete (the scan saw it, or an earlier scan did and
        // it is not written yet), so `settle` would leave `complete_since` as it is.
        if k == 0 {
            settle(m, reporters);
        }
        return;
    }
    write_runs(m, reporters, batch, mtu, partial, qp);
}

/// Columns a WRITE may carry: the batch, within the path MTU.
#[inline]
fn batch_cap(m: &Merge, batch: u32, mtu: usize) -> u32 {
    let col_len = m.g.column_len() as usize;
    batch.min((mtu / col_len).max(1) as u32)
}

/// Clears `complete_since` unless the column at `next_write` is complete.
#[inline]
fn settle(m: &mut Merge, reporters: u16) {
    let pending = m
        .contrib
        .get(m.next_write as usize)
        .is_some_and(|&n| n >= reporters);
    if !pending {
        m.complete_since = None;
    }
}

/// Writes the `k` complete columns from `start` in one WRITE and clears their accumulators and counts.
fn write_run(m: &mut Merge, start: u32, k: u32, qp: &mut Requester) {
    let rows = m.g.rows() as usize;
    let cells = &mut m.acc[start as usize * rows..(start + k) as usize * rows];
    let payload = Payload::filled(cells.len() * 4, |bytes| {
        for (b, v) in bytes.chunks_exact_mut(4).zip(cells.iter_mut()) {
            b.copy_from_slice(&v.to_be_bytes());
            *v = 0;
        }
    });
    let cols = &mut m.contrib[start as usize..(start + k) as usize];
    // Each column's contributions are reports this WRITE completes.
    let reports: u32 = cols.iter().map(|&n| u32::from(n)).sum();
    cols.fill(0);
    let va = m.region.va + m.g.column_offset(start);
    super::write(qp, Opcode::SketchMerge, va, m.region.rkey, payload);
    qp.add_reports(reports);
}

/// [`write_complete`]'s loop: writes while a pass finds a run to write.
fn write_runs(
    m: &mut Merge,
    reporters: u16,
    batch: u32,
    mtu: usize,
    partial: bool,
    qp: &mut Requester,
) {
    let cap = batch_cap(m, batch, mtu);
    loop {
        let start = m.next_write;
        // Resume after the columns the last scan found complete (within the sketch: a scan stops at its
        // end; and at most `cap` of them, which the scan would stop at too).
        let mut k = m.run.min(cap);
        while k < cap && start + k < m.g.columns() && m.contrib[(start + k) as usize] >= reporters {
            k += 1;
        }
        let ends_sketch = start + k == m.g.columns();
        if k == 0 || !(k == cap || ends_sketch || partial) {
            m.run = k;
            break;
        }
        m.run = 0;
        write_run(m, start, k, qp);
        m.next_write = (start + k) % m.g.columns();
    }
    settle(m, reporters);
}

#[cfg(test)]
mod tests;
