//! The Sketch-Merge regions per epoch: one `sketch_counters` row per counter that changed since the
//! previous epoch (its value and the value it replaced), and one `sketch_summaries` row per sketch that
//! changed (how many counters changed, how many are non-zero, the total of row 0 and, for a max-merged
//! sketch, the HyperLogLog cardinality).
//!
//! A sketch's columns are overwritten whole by the translator (each merge window writes the merged
//! column, which may be smaller than the one before), so a changed counter is exported with what it
//! held before rather than as a difference. The rows an epoch adds are bounded by the sketch's
//! `rows × columns` plus one, and an idle sketch adds none.

use std::collections::HashMap;

use dta_protocol::layout::{SketchGeometry, SKETCH_COUNTER_LEN};

use super::table::{Batch, Table, Value};
use crate::config::SketchMerge;
use crate::error::{Error, Result};
use crate::memory::Arena;
use crate::query::hyperloglog;

/// A sketch the exporter reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SketchSpec {
    /// Its id.
    pub id: u32,
    /// How its columns are merged (what its summary estimates).
    pub merge: SketchMerge,
}

/// The sketches' counters as the previous epoch read them.
#[derive(Debug, Default)]
pub struct SketchReader {
    sketches: Vec<SketchSpec>,
    /// Per sketch, its counters in memory order (column by column, `rows` counters each); absent
    /// before the first read, when every counter counts as having been 0.
    last: HashMap<u32, Vec<u32>>,
}

/// One read of a sketch: its counters in memory order, and its HyperLogLog estimate if max-merged.
struct Read {
    rows: u32,
    counters: Vec<u32>,
    cardinality: u64,
}

impl SketchReader {
    /// A reader of `sketches`.
    pub fn new(sketches: Vec<SketchSpec>) -> Self {
        SketchReader {
            sketches,
            last: HashMap::new(),
        }
    }

    /// The epoch's rows at `epoch_ms`: the changed counters of every sketch, then the summaries.
    pub fn read(&mut self, arena: &Arena, epoch_ms: u64) -> Result<Vec<Batch>> {
        let mut counters = Batch::new(Table::SketchCounters, None, epoch_ms, 0);
        let mut summaries = Batch::new(Table::SketchSummaries, None, epoch_ms, 0);
        for (spec, read) in self
            .sketches
            .clone()
            .into_iter()
            .zip(read_all(arena, &self.sketches)?)
        {
            let changed = self.diff(spec.id, &read, epoch_ms, &mut counters)?;
            if changed == 0 {
                continue;
            }
            let rows = read.rows as usize;
            let total: u64 = read
                .counters
                .iter()
                .step_by(rows)
                .map(|&c| u64::from(c))
                .sum();
            let nonzero = read.counters.iter().filter(|&&c| c != 0).count() as u64;
            summaries.push(vec![
                Value::U64(epoch_ms),
                Value::U32(spec.id),
                Value::Str(merge_name(spec.merge).into()),
                Value::U64(changed),
                Value::U64(nonzero),
                Value::U64(total),
                Value::U64(read.cardinality),
            ])?;
            self.last.insert(spec.id, read.counters);
        }
        Ok([counters, summaries]
            .into_iter()
            .filter(|b| !b.is_empty())
            .collect())
    }

    /// Adds a row to `out` per counter of `read` that differs from the last read; how many did.
    fn diff(&self, id: u32, read: &Read, epoch_ms: u64, out: &mut Batch) -> Result<u64> {
        let last = self.last.get(&id);
        let rows = read.rows as usize;
        let mut changed = 0;
        for (i, &value) in read.counters.iter().enumerate() {
            let previous = last.and_then(|l| l.get(i).copied()).unwrap_or(0);
            if value == previous {
                continue;
            }
            changed += 1;
            // Geometry bounds rows to 255 and columns to 65536, so these fit.
            let (column, row) = (i / rows, i % rows);
            out.push(vec![
                Value::U64(epoch_ms),
                Value::U32(id),
                Value::U8(u8::try_from(row).map_err(|_| bad(id))?),
                Value::U16(u16::try_from(column).map_err(|_| bad(id))?),
                Value::U32(value),
                Value::U32(previous),
            ])?;
        }
        Ok(changed)
    }
}

fn bad(id: u32) -> Error {
    Error::Export {
        sink: "exporter",
        message: format!("sketch {id}'s geometry is beyond 255 rows or 65536 columns"),
    }
}

/// The name the summaries give `merge`, as the configuration spells it.
pub fn merge_name(merge: SketchMerge) -> &'static str {
    match merge {
        SketchMerge::Sum => "sum",
        SketchMerge::Max => "max",
    }
}

/// Every sketch of `specs`, copied out under one hold of the arena's read lock: an epoch sees all the
/// sketches as they stood at one moment (where the software responder writes them, under the write
/// lock), the way it sees one sketch's columns.
fn read_all(arena: &Arena, specs: &[SketchSpec]) -> Result<Vec<Read>> {
    let mem = arena.read();
    specs
        .iter()
        .map(|spec| {
            let (slot, g) = arena.find_geometry::<SketchGeometry>(Some(spec.id))?;
            let bytes = mem
                .as_slice()
                .get(slot.offset..slot.offset + slot.len())
                .ok_or_else(|| {
                    Error::BadQuery(format!("sketch {} lies beyond the arena", spec.id))
                })?;
            read_counters(bytes, g, spec.merge)
        })
        .collect()
}

/// Copies the counters out (big-endian u32, column-major) under the caller's lock, with the estimate.
fn read_counters(mem: &[u8], g: &SketchGeometry, merge: SketchMerge) -> Result<Read> {
    let len = u64::from(g.rows()) * u64::from(g.columns()) * SKETCH_COUNTER_LEN;
    let bytes = usize::try_from(len)
        .ok()
        .and_then(|len| mem.get(..len))
        .ok_or_else(|| Error::BadQuery("a sketch region shorter than its geometry".into()))?;
    let counters = bytes
        .chunks_exact(SKETCH_COUNTER_LEN as usize)
        .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let cardinality = match merge {
        // An estimate is a count: rounded to the nearest (never negative, far below u64::MAX).
        SketchMerge::Max => hyperloglog(mem, g)?.round() as u64,
        SketchMerge::Sum => 0,
    };
    Ok(Read {
        rows: g.rows(),
        counters,
        cardinality,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::table::Column;

    fn read(rows: u32, counters: Vec<u32>) -> Read {
        Read {
            rows,
            counters,
            cardinality: 0,
        }
    }

    #[test]
    fn only_changed_counters_are_rows_with_what_they_replaced() {
        let mut r = SketchReader::new(vec![]);
        let mut b = Batch::new(Table::SketchCounters, None, 5, 0);
        // 2 rows × 3 columns: memory order is (c0 r0, c0 r1, c1 r0, ...).
        let first = read(2, vec![0, 4, 0, 0, 9, 0]);
        assert_eq!(r.diff(1, &first, 5, &mut b).unwrap(), 2);
        assert_eq!(b.columns[2], Column::U8(vec![1, 0]));
        assert_eq!(b.columns[3], Column::U16(vec![0, 2]));
        assert_eq!(b.columns[4], Column::U32(vec![4, 9]));
        assert_eq!(b.columns[5], Column::U32(vec![0, 0]));
        r.last.insert(1, first.counters);
        let mut b = Batch::new(Table::SketchCounters, None, 6, 0);
        // Counter (c0, r1) went down (a new merge window), (c1, r1) came up, (c2, r0) stayed.
        let second = read(2, vec![0, 1, 0, 7, 9, 0]);
        assert_eq!(r.diff(1, &second, 6, &mut b).unwrap(), 2);
        assert_eq!(b.columns[3], Column::U16(vec![0, 1]));
        assert_eq!(b.columns[4], Column::U32(vec![1, 7]));
        assert_eq!(b.columns[5], Column::U32(vec![4, 0]));
    }
}
