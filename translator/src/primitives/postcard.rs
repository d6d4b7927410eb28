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
//!
//! (Over 500 lines: 408 of them are the tests beside the code, with a copy of the former cache they
//! compare the current one with.)

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{RateConfig, RequesterConfig};
    use crate::counters::Counters;
    use dta_protocol::roce::ROCEV2_UDP_PORT;
    use dta_protocol::udp::UdpEndpoints;
    use dta_rc::frames::FrameBuilder;
    use dta_rc::requester::{Requester, RequesterParams};

    fn qp() -> Requester {
        let ep = UdpEndpoints::new([2; 6], [3; 6], [1; 4], [2; 4], 1, ROCEV2_UDP_PORT);
        let params = RequesterParams {
            cfg: RequesterConfig::default(),
            rate: RateConfig::default(),
            max_atomics: 16,
            start_psn: 0,
        };
        Requester::new(params, FrameBuilder::new(ep, 0x11), Instant(0))
    }

    /// Every frame queued so far on `qa` and `qb`: the same bytes, in the same order.
    fn same_frames(qa: &mut Requester, qb: &mut Requester, c: &mut Counters, what: &str) -> usize {
        let (mut fa, mut fb) = (Vec::new(), Vec::new());
        let mut n = 0;
        loop {
            let (sa, sb) = (
                qa.poll_transmit(Instant(0), c, &mut fa),
                qb.poll_transmit(Instant(0), c, &mut fb),
            );
            assert_eq!(sa, sb, "{what}");
            if !sa {
                break;
            }
            assert_eq!(fa, fb, "{what}");
            n += 1;
        }
        qa.assume_delivered();
        qb.assume_delivered();
        n
    }

    /// The cache writes what the former one wrote (the same frames, counters and outcomes) for random
    /// postcards: colliding and evicting flows, paths of known and unknown length, bad hops, every B,
    /// cache sizes that are and are not powers of two, redundancy 1 to 3. Timers run two ways: both
    /// caches flushed together at random instants (due or not), or each flushed only when its own
    /// `poll_timeout` says it is due (as the bench, the daemon and the simulator do), the former one
    /// then also at its stale entries' deadlines. The current deadline is always the former's earliest
    /// live one.
    #[test]
    fn writes_what_the_former_cache_wrote() {
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut rand = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let (mut written, mut seen) = (0, Counters::default());
        for case in 0..48u64 {
            let hops = 1 + (case % 8) as u8;
            let size = [1usize, 3, 4, 16, 5, 64][(case % 6) as usize];
            let redundancy = 1 + (case % 3) as u8;
            let own_timers = case % 2 == 0;
            let idle = Duration::from_nanos(1000);
            let g = PostcardGeometry::new(256, hops, 3).unwrap();
            let region = Region {
                id: 0,
                va: 0x10_0000,
                rkey: 7,
                geometry: Geometry::Postcarding(g),
            };
            let regions = Regions {
                postcard: Some(region),
                ..Regions::default()
            };
            let mut a = PostcardCache::new(size, idle, redundancy);
            let mut b = former::Former::new(size, idle, redundancy);
            let (mut qa, mut qb) = (qp(), qp());
            let (mut ca, mut cb, mut c) = (
                Counters::default(),
                Counters::default(),
                Counters::default(),
            );
            let keys = 1 + rand(3 * size as u64 + 2);
            let mut now = Instant(0);
            for step in 0..3000 {
                let what = format!("case {case} step {step}");
                now = now + Duration::from_nanos(rand(300));
                match rand(20) {
                    0 if !own_timers => {
                        let mut oa = Sink {
                            qp: &mut qa,
                            mtu: 1024,
                            counters: &mut ca,
                        };
                        a.flush(now, FlushMode::Due, &regions, &mut oa);
                        let mut ob = Sink {
                            qp: &mut qb,
                            mtu: 1024,
                            counters: &mut cb,
                        };
                        b.flush(now, FlushMode::Due, &regions, &mut ob);
                    }
                    1 if rand(20) == 0 => {
                        let mut oa = Sink {
                            qp: &mut qa,
                            mtu: 1024,
                            counters: &mut ca,
                        };
                        a.flush(now, FlushMode::All, &regions, &mut oa);
                        let mut ob = Sink {
                            qp: &mut qb,
                            mtu: 1024,
                            counters: &mut cb,
                        };
                        b.flush(now, FlushMode::All, &regions, &mut ob);
                    }
                    _ => {
                        let path_len = match rand(10) {
                            0 => rand(u64::from(hops) + 2) as u8,
                            1..=4 => hops,
                            _ => 1 + rand(u64::from(hops)) as u8,
                        };
                        let hop = match rand(10) {
                            0 => rand(u64::from(hops) + 2) as u8,
                            _ => 1 + rand(u64::from(path_len.max(1))) as u8,
                        };
                        let p = Postcard {
                            key: (rand(keys) as u32).wrapping_mul(0x9E37_79B1),
                            hop,
                            path_len,
                            data: match rand(4) {
                                0 => POSTCARD_BLANK,
                                _ => rand(1 << 32) as u32,
                            },
                            opcode: Opcode::Postcard,
                            length_known: rand(3) != 0,
                        };
                        let mut oa = Sink {
                            qp: &mut qa,
                            mtu: 1024,
                            counters: &mut ca,
                        };
                        let ra = a.handle(now, &p, &region, &mut oa);
                        let mut ob = Sink {
                            qp: &mut qb,
                            mtu: 1024,
                            counters: &mut cb,
                        };
                        let rb = b.handle(now, &p, &region, &mut ob);
                        assert_eq!(ra, rb, "{what}: {p:?}");
                    }
                }
                if own_timers {
                    if a.poll_timeout().is_some_and(|t| t <= now) {
                        let mut oa = Sink {
                            qp: &mut qa,
                            mtu: 1024,
                            counters: &mut ca,
                        };
                        a.flush(now, FlushMode::Due, &regions, &mut oa);
                    }
                    if b.poll_timeout().is_some_and(|t| t <= now) {
                        let mut ob = Sink {
                            qp: &mut qb,
                            mtu: 1024,
                            counters: &mut cb,
                        };
                        b.flush(now, FlushMode::Due, &regions, &mut ob);
                    }
                }
                assert_eq!(a.poll_timeout(), b.live_timeout(), "{what}");
                written += same_frames(&mut qa, &mut qb, &mut c, &what);
                assert_eq!(ca, cb, "{what}");
            }
            seen += &ca;
        }
        assert!(written > 20_000, "{written} writes");
        // Every way a flow is written came up.
        assert!(
            seen.postcard_evictions > 1000
                && seen.postcard_timeouts > 1000
                && seen.postcard_continuations > 1000,
            "{seen:?}"
        );
    }

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
            reports: 0,
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

/// The cache as it was before the per-report work was trimmed (a stale-entry queue, the per-cell
/// encoder, the eviction and completion as written then), kept to check the current one against.
#[cfg(test)]
mod former {
    use super::*;
    use dta_protocol::roce::crc_table::postcard_cell;

    #[derive(Debug, Clone, Copy)]
    struct Flow {
        key: u32,
        values: [u32; MAX_HOPS as usize],
        have: u8,
        path_len: u8,
        length_known: bool,
        gen: u64,
    }

    #[derive(Debug)]
    pub(super) struct Former {
        slots: Vec<Option<Flow>>,
        idle: Duration,
        redundancy: u8,
        gen: u64,
        expiry: VecDeque<(Instant, usize, u64)>,
    }

    impl Former {
        pub(super) fn new(size: usize, idle: Duration, redundancy: u8) -> Self {
            Former {
                slots: vec![None; size],
                idle,
                redundancy,
                gen: 0,
                expiry: VecDeque::new(),
            }
        }

        pub(super) fn handle(
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

        pub(super) fn flush(
            &mut self,
            now: Instant,
            mode: FlushMode,
            regions: &Regions,
            out: &mut Sink<'_>,
        ) {
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

        pub(super) fn poll_timeout(&self) -> Option<Instant> {
            self.expiry.front().map(|e| e.0)
        }

        /// The earliest deadline of a flow still cached (the stale entries' skipped).
        pub(super) fn live_timeout(&self) -> Option<Instant> {
            self.expiry
                .iter()
                .find(|&&(_, i, gen)| self.slots[i].is_some_and(|f| f.gen == gen))
                .map(|e| e.0)
        }
    }

    fn write_flow(f: &Flow, region: &Region, g: &PostcardGeometry, n: u8, out: &mut Sink<'_>) {
        let hops = usize::from(g.hops());
        let mut chunk = [0u8; CHUNK_STRIDE];
        for hop in 1..=g.hops() {
            let cell = postcard_cell(f.key, hop, f.values[usize::from(hop - 1)]).unwrap();
            let at = usize::from(hop - 1) * CELL_LEN;
            chunk[at..at + CELL_LEN].copy_from_slice(&cell.to_be_bytes());
        }
        if f.have & 1 == 0 {
            out.counters.postcard_continuations += 1;
        }
        let low = |n: usize| ((1u16 << n.min(8)) - 1) as u8;
        let all = low(hops);
        let mask = if f.length_known {
            f.have | (all & !low(usize::from(f.path_len)))
        } else if f.have & 1 != 0 {
            all
        } else {
            f.have
        };
        let mut runs = Vec::new();
        if mask == all {
            runs.push((0, usize::from(MAX_HOPS)));
        } else {
            let mut i = 0;
            while i < hops {
                if mask & (1 << i) == 0 {
                    i += 1;
                    continue;
                }
                let start = i;
                while i < hops && mask & (1 << i) != 0 {
                    i += 1;
                }
                runs.push((start, i));
            }
        }
        for copy in 0..n {
            let va = region.va + g.offset(f.key, copy);
            for &(start, end) in &runs {
                super::super::write(
                    out.qp,
                    Opcode::Postcard,
                    va + (start * CELL_LEN) as u64,
                    region.rkey,
                    Payload::from_slice(&chunk[start * CELL_LEN..end * CELL_LEN]),
                );
            }
        }
    }
}
