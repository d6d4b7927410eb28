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
use crate::frames::Payload;
use crate::requester::Requester;
use crate::time::Instant;

#[derive(Debug)]
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
}

/// Every sketch of one collector.
#[derive(Debug, Default)]
pub struct SketchMerger {
    sketches: IdMap<Merge>,
    reporters: u16,
    batch: u32,
    idle: Duration,
}

impl SketchMerger {
    /// Merges `reporters` reporters, writing up to `batch` columns per WRITE.
    pub fn new(reporters: u16, batch: u32, idle: Duration) -> Self {
        SketchMerger {
            sketches: IdMap::default(),
            reporters,
            batch,
            idle,
        }
    }

    /// Work requests a report may add at most: one batch, or two when a column's completion also lets
    /// the batch behind a wrap go.
    pub const MAX_WRS: usize = 2;
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
        let Geometry::Sketch(g) = region.geometry else {
            return Err(DropReason::NoRegion);
        };
        if r.reporter_id >= self.reporters
            || r.rows() != g.rows() as usize
            || u32::from(r.column) >= g.columns()
        {
            return Err(DropReason::BadSketch);
        }
        let reporters = self.reporters;
        let m = self
            .sketches
            .entry(u32::from(r.sketch_id))
            .or_insert_with(|| Merge {
                region: *region,
                g,
                op: r.op,
                acc: vec![0; (g.rows() * g.columns()) as usize],
                contrib: vec![0; g.columns() as usize],
                expected: vec![0; usize::from(reporters)],
                next_write: 0,
                complete_since: None,
            });
        if r.op != m.op {
            return Err(DropReason::BadSketch);
        }
        let col = u32::from(r.column);
        let exp = m.expected[usize::from(r.reporter_id)];
        if col != exp {
            return Ok(if col < exp {
                Outcome::Duplicate
            } else {
                Outcome::Gap {
                    last_in_order: (exp.wrapping_sub(1) & 0xFF) as u8,
                }
            });
        }
        let rows = g.rows() as usize;
        let at = col as usize * rows;
        for (cell, v) in m.acc[at..at + rows].iter_mut().zip(r.iter_counters()) {
            *cell = match m.op {
                SketchOp::Sum => cell.saturating_add(v),
                SketchOp::Max => (*cell).max(v),
            };
        }
        m.contrib[col as usize] += 1;
        m.expected[usize::from(r.reporter_id)] = (col + 1) % g.columns();
        if m.contrib[col as usize] >= reporters {
            if m.complete_since.is_none() {
                m.complete_since = Some(now);
            }
            // Only a column that just completed can lengthen the complete run from `next_write`; while it
            // is incomplete, write_complete would find what the last call found (nothing to write) and
            // leave its state as it is, so it is not called (it scans up to a batch of columns).
            write_complete(m, reporters, self.batch, out.mtu, false, out.qp);
        }
        Ok(Outcome::Accepted)
    }
}

impl Timed for SketchMerger {
    /// Writes complete columns that waited `idle` for a full batch (all complete ones with
    /// [`FlushMode::All`]).
    fn flush(&mut self, now: Instant, mode: FlushMode, _: &Regions, out: &mut Sink<'_>) {
        for m in self.sketches.values_mut() {
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
            .filter_map(|m| m.complete_since)
            .map(|t| t + self.idle)
            .min()
    }
}

/// Writes runs of complete columns from `next_write`: full batches, a run that ends the sketch, and with
/// `partial` whatever complete run there is.
fn write_complete(
    m: &mut Merge,
    reporters: u16,
    batch: u32,
    mtu: usize,
    partial: bool,
    qp: &mut Requester,
) {
    let col_len = m.g.column_len() as usize;
    let cap = batch.min((mtu / col_len).max(1) as u32);
    loop {
        let start = m.next_write;
        let mut k = 0;
        while k < cap && start + k < m.g.columns() && m.contrib[(start + k) as usize] >= reporters {
            k += 1;
        }
        let ends_sketch = start + k == m.g.columns();
        if k == 0 || !(k == cap || ends_sketch || partial) {
            break;
        }
        let rows = m.g.rows() as usize;
        let cells = &mut m.acc[start as usize * rows..(start + k) as usize * rows];
        let payload = Payload::filled(cells.len() * 4, |bytes| {
            for (b, v) in bytes.chunks_exact_mut(4).zip(cells.iter_mut()) {
                b.copy_from_slice(&v.to_be_bytes());
                *v = 0;
            }
        });
        m.contrib[start as usize..(start + k) as usize].fill(0);
        let va = m.region.va + m.g.column_offset(start);
        super::write(qp, Opcode::SketchMerge, va, m.region.rkey, payload);
        m.next_write = (start + k) % m.g.columns();
    }
    let pending = m
        .contrib
        .get(m.next_write as usize)
        .is_some_and(|&n| n >= reporters);
    if !pending {
        m.complete_since = None;
    }
}
