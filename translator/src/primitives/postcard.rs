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
use dta_protocol::hash::key_checksum;
use dta_protocol::hash::POSTCARD_BLANK;
use dta_protocol::layout::{Geometry, PostcardGeometry, Region, CELL_LEN, CHUNK_STRIDE, MAX_HOPS};

use super::{FlushMode, Outcome, Primitive, Sink, Timed};
use crate::collector::Regions;
use crate::counters::DropReason;
use crate::time::Instant;
use dta_rc::frames::Payload;

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
    /// Reports folded into this entry: its write completes them (`WorkRequest::reports`).
    reports: u32,
}

/// The flow cache of one collector.
#[derive(Debug)]
pub struct PostcardCache {
    slots: Vec<Option<Flow>>,
    /// `slots.len() - 1` when the length is a power of two (the default): the slot is then the checksum's
    /// low bits, which is what `%` gives, without a division per report.
    mask: Option<usize>,
    /// The idle timeout in nanoseconds (saturated), what `Instant + Duration` adds, converted once.
    idle_ns: u64,
    redundancy: u8,
    gen: u64,
    /// Idle deadlines in the order flows were cached (`now` is monotonic, so in deadline order), each with
    /// its slot and the generation of the flow it was pushed for. An entry whose flow has gone (written
    /// when complete or evicted) is stale: it would only be popped and skipped. Stale entries at the front
    /// are popped as soon as their flow goes ([`left`](Self::left)), so the front, when there is one, is a
    /// cached flow's and [`poll_timeout`](Timed::poll_timeout) its deadline, not a gone flow's (a timer
    /// run would find nothing to write there). Stale entries behind a live one stay until they reach the
    /// front.
    expiry: VecDeque<(Instant, usize, u64)>,
}

impl PostcardCache {
    /// A cache of `size` flows writing `redundancy` chunk copies.
    pub fn new(size: usize, idle: Duration, redundancy: u8) -> Self {
        PostcardCache {
            slots: vec![None; size],
            mask: size.is_power_of_two().then(|| size - 1),
            idle_ns: crate::time::nanos(idle),
            redundancy,
            gen: 0,
            expiry: VecDeque::new(),
        }
    }

    /// The slot of `key`: its checksum modulo the cache size.
    #[inline]
    fn slot_of(&self, key: u32) -> usize {
        let h = key_checksum(key) as usize;
        match self.mask {
            Some(m) => h & m,
            // A cache of no slots (refused by the configuration) gives slot 0, which `get` then misses.
            None => h.checked_rem(self.slots.len()).unwrap_or(0),
        }
    }

    /// The flow of generation `gen` has left its slot: its expiry entry, if at the front, goes, with the
    /// stale ones behind it. (Behind a live front it stays until it gets there; then the entry before it
    /// leaving pops it.)
    ///
    /// Which live entries a flush writes, and in what order, is the same as with every stale entry kept:
    /// a flush walks the queue in order while deadlines are due, and deadlines never decrease along the
    /// queue, so it stops before the same live entry either way. Only `poll_timeout` differs: no longer
    /// a gone flow's deadline, at which a timer run wrote nothing.
    #[inline]
    fn left(&mut self, gen: u64) {
        if self.expiry.front().is_some_and(|e| e.2 == gen) {
            self.expiry.pop_front();
            self.drop_stale_front();
        }
    }

    /// Pops the stale entries at the front of the expiry queue (see [`expiry`](Self::expiry)).
    fn drop_stale_front(&mut self) {
        while let Some(&(_, i, gen)) = self.expiry.front() {
            let live = self
                .slots
                .get(i)
                .is_some_and(|s| s.as_ref().is_some_and(|f| f.gen == gen));
            if live {
                return;
            }
            self.expiry.pop_front();
        }
    }

    /// A report for a slot not holding its flow: evicts another flow's entry, caches a new one.
    /// Out of line: once per flow, where the cached-flow update is once per report.
    #[inline(never)]
    fn insert(
        &mut self,
        now: Instant,
        i: usize,
        p: &Postcard,
        region: &Region,
        g: &PostcardGeometry,
        out: &mut Sink<'_>,
    ) -> Result<Outcome, DropReason> {
        let redundancy = self.redundancy;
        let Some(slot) = self.slots.get_mut(i) else {
            // `slot_of` is below the cache size.
            return Err(DropReason::NoRegion);
        };
        // Another flow's entry is evicted.
        let evicted = slot.take().map(|old| {
            out.counters.postcard_evictions += 1;
            write_flow(&old, region, g, redundancy, out);
            old.gen
        });
        self.gen += 1;
        // Built in its slot (not on the stack and copied in).
        let flow = slot.insert(Flow {
            key: p.key,
            values: [POSTCARD_BLANK; MAX_HOPS as usize],
            have: 0,
            path_len: p.path_len,
            length_known: p.length_known,
            gen: self.gen,
            reports: 1,
        });
        // hop is in 1..=path_len, and path_len in 1..=B with B at most 8 (checked by `handle`).
        let hop = usize::from(p.hop - 1) & (MAX_HOPS as usize - 1);
        flow.values[hop] = p.data;
        flow.have = 1 << hop;
        if flow.path_len <= 1 {
            // A one-hop path: written at once and never left cached, so it needs no deadline.
            write_flow(flow, region, g, redundancy, out);
            *slot = None;
        } else {
            let at = Instant(now.0.saturating_add(self.idle_ns));
            self.expiry.push_back((at, i, self.gen));
        }
        if let Some(gen) = evicted {
            self.left(gen);
        }
        Ok(Outcome::Accepted)
    }

    /// Writes the complete flow in slot `i` and empties the slot. Out of line: once per flow.
    #[inline(never)]
    fn complete(&mut self, i: usize, region: &Region, g: &PostcardGeometry, out: &mut Sink<'_>) {
        let redundancy = self.redundancy;
        if let Some(slot) = self.slots.get_mut(i) {
            if let Some(f) = slot.as_ref() {
                let gen = f.gen;
                write_flow(f, region, g, redundancy, out);
                *slot = None;
                self.left(gen);
            }
        }
    }
}

impl PostcardCache {
    /// Reports held in cached flows.
    pub fn held_reports(&self) -> u64 {
        self.slots
            .iter()
            .flatten()
            .map(|f| u64::from(f.reports))
            .sum()
    }
}

impl Primitive for PostcardCache {
    type Report<'r> = Postcard;

    fn region<'g>(&self, regions: &'g Regions, _: &Postcard) -> Option<&'g Region> {
        regions.postcard.as_ref()
    }

    /// An eviction (up to `MAX_RUNS` runs of cells per copy) and a completion (one run).
    fn max_wrs(&self, _: &Postcard) -> usize {
        (MAX_RUNS + 1) * usize::from(self.redundancy)
    }

    /// Inlined into the engine's dispatch: most reports only update a cached flow, a few dozen
    /// instructions that a call's register saves and argument spills would add a third to. A flow's
    /// first report and its last go out of line (`insert`, `complete`).
    #[inline(always)]
    fn handle(
        &mut self,
        now: Instant,
        p: &Postcard,
        region: &Region,
        out: &mut Sink<'_>,
    ) -> Result<Outcome, DropReason> {
        let Geometry::Postcarding(g) = &region.geometry else {
            return Err(DropReason::NoRegion);
        };
        if self.redundancy > g.n_max() {
            return Err(DropReason::GeometryMismatch);
        }
        if p.path_len == 0 || p.path_len > g.hops() || p.hop == 0 || p.hop > p.path_len {
            return Err(DropReason::BadHop);
        }
        let i = self.slot_of(p.key);
        // The flow's own entry: most reports of a flow land here.
        if let Some(Some(flow)) = self.slots.get_mut(i) {
            if flow.key == p.key {
                // hop is in 1..=path_len, and path_len in 1..=B with B at most 8 (checked above).
                let hop = usize::from(p.hop - 1) & (MAX_HOPS as usize - 1);
                flow.values[hop] = p.data;
                flow.have |= 1 << hop;
                flow.reports = flow.reports.saturating_add(1);
                if BITS_SET[usize::from(flow.have)] >= flow.path_len {
                    self.complete(i, region, g, out);
                }
                return Ok(Outcome::Accepted);
            }
        }
        self.insert(now, i, p, region, g, out)
    }
}

/// `BITS_SET[m]` is `m.count_ones()`: one load where the count's bit arithmetic is about a dozen
/// instructions (the baseline x86-64 target has no `popcnt`), once per report.
static BITS_SET: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut m = 0;
    while m < 256 {
        t[m] = (m as u8).count_ones() as u8;
        m += 1;
    }
    t
};

impl Timed for PostcardCache {
    fn held_reports(&self) -> u64 {
        PostcardCache::held_reports(self)
    }

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
        self.drop_stale_front();
    }

    /// The next idle timeout.
    fn poll_timeout(&self) -> Option<Instant> {
        self.expiry.front().map(|e| e.0)
    }
}

/// Writes a flow's cells to its N chunk copies: the cells its entry knows (see the module docs).
fn write_flow(f: &Flow, region: &Region, g: &PostcardGeometry, n: u8, out: &mut Sink<'_>) {
    let hops = usize::from(g.hops());
    let chunk = g.encode_chunk_of(f.key, &f.values);
    if f.have & 1 == 0 {
        out.counters.postcard_continuations += 1;
    }
    let mask = cells_to_write(f, hops);
    if mask != low_bits(hops) {
        write_runs(f.key, &chunk, mask, region, g, n, out);
        out.qp.add_reports(f.reports);
        return;
    }
    // The whole 32-byte stride, zero padding after the last hop included, as one WRITE per copy (the
    // chunk moved in as the payload's inline buffer).
    for copy in 0..n {
        let va = region.va + g.offset(f.key, copy);
        let payload = match Payload::from_array(chunk, CHUNK_STRIDE) {
            Some(p) => p,
            // The inline buffer is the chunk's size.
            None => Payload::from_slice(&chunk),
        };
        super::write(out.qp, Opcode::Postcard, va, region.rkey, payload);
    }
    // The last write of the flow completes its reports.
    out.qp.add_reports(f.reports);
}

/// [`write_flow`] of an entry writing only some cells: one WRITE per run of them, per copy. Out of line
/// (a flow's hops arriving together write whole chunks), so the common path keeps a small frame.
#[cold]
#[inline(never)]
fn write_runs(
    key: u32,
    chunk: &[u8; CHUNK_STRIDE],
    mask: u8,
    region: &Region,
    g: &PostcardGeometry,
    n: u8,
    out: &mut Sink<'_>,
) {
    let runs = runs_of(mask, usize::from(g.hops()));
    for copy in 0..n {
        let va = region.va + g.offset(key, copy);
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

/// What Postcarding must do, written from its specification, for the property tests to check the cache
/// against.
#[cfg(test)]
mod spec;

#[cfg(test)]
mod tests;
