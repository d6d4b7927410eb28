//! Postcarding: a direct-mapped cache of flows per collector. A flow's cells are written to its N chunk
//! copies when its path is complete, when a newer flow takes its cache slot (to the evicted flow's chunks,
//! not the newcomer's as in the reference), or after an idle timeout counted from its first postcard.
//!
//! Two partial writes of one flow compose. A flow's postcards come from different switches, milliseconds
//! apart, so one flow may be written twice: an entry flushed by its timeout, then a new entry of its late
//! hops. Only an entry that holds hop 1 writes the whole chunk (blanks for the hops it lacks, which also
//! marks where a short path ends); an entry without hop 1 is a *continuation* and writes only the cells
//! it holds, one WRITE per run of consecutive held hops. So hops 1-2 flushed early and hops 3-5 written
//! later read back as the whole path, where rewriting the whole chunk each time put blanks over the early
//! hops. Cells no write reached keep what was there, which never decodes for this flow (every cell is
//! keyed by the flow's hop checksum), so a lost hop still reads as no path, never as a wrong one. What
//! still loses: a continuation written *before* the entry with hop 1, whose blanks then cover it.

use std::collections::VecDeque;
use std::time::Duration;

use dta_protocol::dta::Opcode;
use dta_protocol::hash::{key_checksum, POSTCARD_BLANK};
use dta_protocol::layout::{Geometry, PostcardGeometry, Region, CELL_LEN, MAX_HOPS};

use super::{FlushMode, Outcome, Primitive, Sink, Timed};
use crate::collector::Regions;
use crate::counters::DropReason;
use crate::frames::Payload;
use crate::time::Instant;

/// One postcard, from either opcode.
#[derive(Debug, Clone, Copy)]
pub struct Postcard {
    /// Flow key.
    pub key: u32,
    /// Hop, 1-based.
    pub hop: u8,
    /// Path length (the configured B for opcode 0x04).
    pub path_len: u8,
    /// The hop's value.
    pub data: u32,
    /// Which opcode carried it.
    pub opcode: Opcode,
}

#[derive(Debug, Clone, Copy)]
struct Flow {
    key: u32,
    values: [u32; MAX_HOPS as usize],
    have: u8,
    path_len: u8,
    gen: u64,
}

/// The flow cache of one collector.
#[derive(Debug)]
pub struct PostcardCache {
    slots: Vec<Option<Flow>>,
    idle: Duration,
    redundancy: u8,
    gen: u64,
    expiry: VecDeque<(Instant, usize, u64)>,
}

impl PostcardCache {
    /// A cache of `size` flows writing `redundancy` chunk copies.
    pub fn new(size: usize, idle: Duration, redundancy: u8) -> Self {
        PostcardCache {
            slots: vec![None; size],
            idle,
            redundancy,
            gen: 0,
            expiry: VecDeque::new(),
        }
    }
}

impl Primitive for PostcardCache {
    type Report<'r> = Postcard;

    fn region<'g>(&self, regions: &'g Regions, _: &Postcard) -> Option<&'g Region> {
        regions.postcard.as_ref()
    }

    /// An eviction (a continuation: up to [`MAX_RUNS`] runs of cells per copy) and a completion.
    fn max_wrs(&self, _: &Postcard) -> usize {
        (MAX_RUNS + 1) * usize::from(self.redundancy)
    }

    fn handle(
        &mut self,
        now: Instant,
        p: &Postcard,
        region: &Region,
        out: &mut Sink<'_>,
    ) -> Result<Outcome, DropReason> {
        let Geometry::Postcarding(g) = region.geometry else {
            return Err(DropReason::NoRegion);
        };
        if self.redundancy > g.n_max() {
            return Err(DropReason::GeometryMismatch);
        }
        if p.path_len == 0 || p.path_len > g.hops() || p.hop == 0 || p.hop > p.path_len {
            return Err(DropReason::BadHop);
        }
        let len = self.slots.len();
        let i = (key_checksum(p.key) as usize) % len;
        let slot = &mut self.slots[i];
        if let Some(old) = slot.filter(|f| f.key != p.key) {
            out.counters.postcard_evictions += 1;
            write_flow(&old, region, &g, self.redundancy, out);
            *slot = None;
        }
        let flow = match slot {
            Some(f) => f,
            None => {
                self.gen += 1;
                self.expiry.push_back((now + self.idle, i, self.gen));
                slot.insert(Flow {
                    key: p.key,
                    values: [POSTCARD_BLANK; MAX_HOPS as usize],
                    have: 0,
                    path_len: p.path_len,
                    gen: self.gen,
                })
            }
        };
        flow.values[usize::from(p.hop - 1)] = p.data;
        flow.have |= 1 << (p.hop - 1);
        if flow.have.count_ones() >= u32::from(flow.path_len) {
            let f = *flow;
            *slot = None;
            write_flow(&f, region, &g, self.redundancy, out);
        }
        Ok(Outcome::Accepted)
    }
}

impl Timed for PostcardCache {
    /// Writes flows whose idle timeout passed by `now` (all cached flows with [`FlushMode::All`]).
    fn flush(&mut self, now: Instant, mode: FlushMode, regions: &Regions, out: &mut Sink<'_>) {
        let Some(region) = regions.postcard.as_ref() else {
            return;
        };
        let Geometry::Postcarding(g) = region.geometry else {
            return;
        };
        while let Some(&(at, i, gen)) = self.expiry.front() {
            if mode == FlushMode::Due && at > now {
                break;
            }
            self.expiry.pop_front();
            if let Some(slot) = self.slots.get_mut(i) {
                if let Some(f) = slot.filter(|f| f.gen == gen) {
                    *slot = None;
                    out.counters.postcard_timeouts += 1;
                    write_flow(&f, region, &g, self.redundancy, out);
                }
            }
        }
    }

    /// The next idle timeout.
    fn poll_timeout(&self) -> Option<Instant> {
        self.expiry.front().map(|e| e.0)
    }
}

/// Most runs of consecutive hops a flow's held cells can form (hops 1, 3, 5, 7 of 8; an entry holding
/// hop 1 writes one whole chunk instead).
const MAX_RUNS: usize = (MAX_HOPS as usize).div_ceil(2);

/// Writes a flow's cells to its N chunk copies: the whole chunk when it holds hop 1, else only the runs of
/// consecutive cells it holds (see the module docs).
fn write_flow(f: &Flow, region: &Region, g: &PostcardGeometry, n: u8, out: &mut Sink<'_>) {
    let hops = usize::from(g.hops());
    let chunk = g.encode_chunk(f.key, &f.values[..hops]);
    let runs = if f.have & 1 != 0 {
        // The whole 32-byte stride, zero padding after the last hop included, as one WRITE.
        whole_chunk()
    } else {
        out.counters.postcard_continuations += 1;
        held_runs(f.have, hops)
    };
    for copy in 0..n {
        let va = region.va + g.offset(f.key, copy);
        for &(start, end) in runs.iter().flatten() {
            super::write(
                out.qp,
                Opcode::Postcard,
                va + (start * CELL_LEN) as u64,
                region.rkey,
                Payload::from_slice(&chunk[start * CELL_LEN..end * CELL_LEN]),
            );
        }
    }
}

/// The runs `[start, end)` of cells, as a fixed array (no allocation per flush).
type Runs = [Option<(usize, usize)>; MAX_RUNS];

fn whole_chunk() -> Runs {
    let mut out = [None; MAX_RUNS];
    out[0] = Some((0, usize::from(MAX_HOPS)));
    out
}

/// The runs of set bits of `have` among the first `hops` cells.
fn held_runs(have: u8, hops: usize) -> Runs {
    let mut out = [None; MAX_RUNS];
    let (mut k, mut i) = (0, 0);
    while i < hops {
        if have & (1 << i) == 0 {
            i += 1;
            continue;
        }
        let start = i;
        while i < hops && have & (1 << i) != 0 {
            i += 1;
        }
        out[k] = Some((start, i));
        k += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_of_held_cells() {
        let r = |have, hops| {
            held_runs(have, hops)
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
        };
        assert_eq!(r(0b0001_1100, 5), vec![(2, 5)]);
        assert_eq!(r(0b1010_1010, 8), vec![(1, 2), (3, 4), (5, 6), (7, 8)]);
        assert_eq!(r(0b0101_0101, 8), vec![(0, 1), (2, 3), (4, 5), (6, 7)]);
        assert_eq!(r(0b1111_0000, 5), vec![(4, 5)]);
        assert_eq!(r(0, 5), vec![]);
    }
}
