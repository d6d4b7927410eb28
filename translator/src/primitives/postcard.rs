//! Postcarding: a direct-mapped cache of flows per collector. A flow's cells are written to its N chunk
//! copies when its path is complete, when a newer flow takes its cache slot (to the evicted flow's chunks,
//! not the newcomer's as in the reference), or after an idle timeout counted from its first postcard.
//!
//! Partial writes of one flow compose. A flow's postcards come from different switches, milliseconds
//! apart and in any order, so one flow may be written several times: an entry flushed by its timeout,
//! then a new entry of its late hops. Each write covers only what its entry knows, one WRITE per run of
//! consecutive cells:
//!
//! * **Path length known** (opcode 0x04, whose paths are B hops by definition; opcode 0x06 and INT sink
//!   reports, which carry it): an entry writes the cells it holds, plus the blanks after the path's last
//!   hop that mark where a short path ends. It never writes a blank inside the path, so entries compose in
//!   any order, and a hop whose report never came reads as no path (its cell keeps what was there, which
//!   never decodes for this flow: every cell is keyed by the flow's hop checksum), never as a shorter one.
//! * **Path length unknown** (INT per-hop reports: a switch does not know how far its packet goes): the
//!   entry holding hop 1 writes the whole chunk, blanks for every hop it lacks (the blanks after the last
//!   hop are the only end marker there is); an entry without hop 1 writes only its cells. This composes
//!   when hop 1's entry is written first, as in path order; a later-written hop-1 entry covers the hops
//!   of an earlier continuation with blanks (`dta-sim postcard-spread` measures how often).
//!
//! An entry without hop 1 is counted as a *continuation*. A whole chunk goes as one 32-byte WRITE, its
//! zero padding included.

use std::collections::VecDeque;
use std::time::Duration;

use dta_protocol::dta::Opcode;
use dta_protocol::hash::POSTCARD_BLANK;
use dta_protocol::layout::{Geometry, PostcardGeometry, Region, CELL_LEN, MAX_HOPS};
use dta_protocol::roce::crc_table::key_checksum;

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
    /// Whether `path_len` is the path's real length (see the module docs), not a bound.
    pub length_known: bool,
}

#[derive(Debug, Clone, Copy)]
struct Flow {
    key: u32,
    values: [u32; MAX_HOPS as usize],
    have: u8,
    path_len: u8,
    length_known: bool,
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

    /// An eviction (up to [`MAX_RUNS`] runs of cells per copy) and a completion (one run).
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
        // Another flow's entry is evicted (taken out in place: no copy of the entry unless it goes).
        if slot.as_ref().is_some_and(|f| f.key != p.key) {
            if let Some(old) = slot.take() {
                out.counters.postcard_evictions += 1;
                write_flow(&old, region, &g, self.redundancy, out);
            }
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
                    length_known: p.length_known,
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

/// Writes a flow's cells to its N chunk copies: the cells its entry knows (see the module docs).
fn write_flow(f: &Flow, region: &Region, g: &PostcardGeometry, n: u8, out: &mut Sink<'_>) {
    let hops = usize::from(g.hops());
    let chunk = g.encode_chunk(f.key, &f.values[..hops]);
    if f.have & 1 == 0 {
        out.counters.postcard_continuations += 1;
    }
    let all = low_bits(hops);
    let mask = cells_to_write(f, hops);
    let runs = if mask == all {
        // The whole 32-byte stride, zero padding after the last hop included, as one WRITE.
        let mut r = [None; MAX_RUNS];
        r[0] = Some((0, usize::from(MAX_HOPS)));
        r
    } else {
        runs_of(mask, hops)
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

/// The cells (bit i: hop i + 1, of the first `hops`) an entry writes: held ones, and the blanks its
/// knowledge of the path allows (see the module docs).
fn cells_to_write(f: &Flow, hops: usize) -> u8 {
    let all = low_bits(hops);
    if f.length_known {
        // Blanks after the path's last hop: every entry may write them, they are the same for all.
        f.have | (all & !low_bits(usize::from(f.path_len)))
    } else if f.have & 1 != 0 {
        all
    } else {
        f.have
    }
}

/// Bits 0..n set.
fn low_bits(n: usize) -> u8 {
    ((1u16 << n.min(8)) - 1) as u8
}

/// Most runs of consecutive cells an entry can write (cells 1, 3, 5, 7 of 8).
const MAX_RUNS: usize = (MAX_HOPS as usize).div_ceil(2);

/// The runs `[start, end)` of cells, as a fixed array (no allocation per flush).
type Runs = [Option<(usize, usize)>; MAX_RUNS];

/// The runs of set bits of `mask` among the first `hops` cells.
fn runs_of(mask: u8, hops: usize) -> Runs {
    let mut out = [None; MAX_RUNS];
    let (mut k, mut i) = (0, 0);
    while i < hops {
        if mask & (1 << i) == 0 {
            i += 1;
            continue;
        }
        let start = i;
        while i < hops && mask & (1 << i) != 0 {
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
    fn runs_of_cells() {
        let r = |have, hops| {
            runs_of(have, hops)
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

    fn flow(have: u8, path_len: u8, length_known: bool) -> Flow {
        Flow {
            key: 1,
            values: [POSTCARD_BLANK; MAX_HOPS as usize],
            have,
            path_len,
            length_known,
            gen: 0,
        }
    }

    #[test]
    fn cells_an_entry_writes() {
        // Length known (B = 5): held cells only, never a blank inside the path.
        assert_eq!(cells_to_write(&flow(0b00011, 5, true), 5), 0b00011);
        assert_eq!(cells_to_write(&flow(0b11100, 5, true), 5), 0b11100);
        // A 3-hop path in a 5-hop region: the blanks after hop 3 too, from any entry.
        assert_eq!(cells_to_write(&flow(0b00001, 3, true), 5), 0b11001);
        assert_eq!(cells_to_write(&flow(0b00110, 3, true), 5), 0b11110);
        // Length unknown: the entry with hop 1 writes everything, a continuation its own cells.
        assert_eq!(cells_to_write(&flow(0b00011, 5, false), 5), 0b11111);
        assert_eq!(cells_to_write(&flow(0b10100, 5, false), 5), 0b10100);
        assert_eq!(low_bits(8), 0xFF);
    }
}
