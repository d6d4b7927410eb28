//! A spec model of Postcarding (DESIGN.md "Postcarding", the paper's section 4, and this module's docs),
//! written as the rules say and not as the cache is built: each cached flow is a map of the hops it heard
//! from, the timers a scan of the cached flows, every write a list of bytes at an address, each cell
//! computed by the bitwise reference hashes of `dta_protocol::hash`. The property test in `tests.rs`
//! runs it beside [`PostcardCache`](super::PostcardCache) and compares what each writes and counts.
//!
//! The rules, numbered as the test's failures name them:
//!
//! 1. A report is refused, in this order: a region that is not Postcarding (no region), more copies than
//!    the region holds (geometry mismatch), a path length outside 1..=B or a hop outside 1..=path length
//!    (bad hop). Any other report is accepted.
//! 2. The cache is direct-mapped: flow `key` lives in slot `key_checksum(key) mod size`, one flow a slot.
//! 3. A report of the flow in its slot records its hop's value (a repeated hop: the last value) and
//!    counts one more report for the flow.
//! 4. A report of another flow evicts the slot's flow (written, one eviction counted), then caches its
//!    own flow with the path length and length knowledge of this first report, due `idle` after now.
//! 5. A flow is written and leaves the cache as soon as it has as many distinct hops as its path length.
//! 6. A timer run at `now` writes every cached flow due by `now` (a final flush: every cached flow), in
//!    the order they were cached, counting one timeout each. The next deadline is the earliest one of a
//!    cached flow.
//! 7. A flow is written to each of its N chunk copies (`placement(key, copy)`, copy by copy). The cells
//!    written are those it holds, and the blanks its knowledge allows: with the path length known, the
//!    cells after the path's end; with it unknown, every cell when it holds hop 1. Every cell of the B
//!    written: the whole 32-byte chunk in one write (zero after cell B); else one write per run of
//!    consecutive cells. Cell h holds `postcard_cell(key, h, value)` big-endian, the blank value for a
//!    hop it did not hear from. A flow without hop 1 counts one continuation.
//! 8. A written flow's reports are completed by its writes; the cache holds the reports of its cached
//!    flows.

use std::collections::BTreeMap;

use dta_protocol::hash::{key_checksum, placement, postcard_cell, POSTCARD_BLANK};
use dta_protocol::layout::{Geometry, PostcardGeometry, Region, CELL_LEN, CHUNK_STRIDE};

use super::Postcard;
use crate::counters::DropReason;
use crate::time::Instant;

/// One RDMA WRITE: `bytes` at `va` under `rkey`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Write {
    pub va: u64,
    pub rkey: u32,
    pub bytes: Vec<u8>,
}

/// What the model did since it was last asked ([`Spec::take`]).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct Effects {
    pub writes: Vec<Write>,
    pub evictions: u64,
    pub timeouts: u64,
    pub continuations: u64,
    /// Flows written because their path was complete (rule 5; no counter of the cache's).
    pub completions: u64,
    /// Reports the writes complete (rule 8).
    pub reports: u64,
}

#[derive(Debug, Clone)]
struct Flow {
    key: u32,
    /// Hop (1-based) to value.
    hops: BTreeMap<u8, u32>,
    path_len: u8,
    length_known: bool,
    due: Instant,
    /// When it was cached, in flows: the timer order (rule 6).
    order: u64,
    reports: u32,
}

/// The model of one collector's flow cache.
pub(super) struct Spec {
    slots: Vec<Option<Flow>>,
    idle_ns: u64,
    copies: u8,
    cached: u64,
    done: Effects,
}

impl Spec {
    pub(super) fn new(size: usize, idle_ns: u64, copies: u8) -> Self {
        Spec {
            slots: vec![None; size],
            idle_ns,
            copies,
            cached: 0,
            done: Effects::default(),
        }
    }

    /// Rules 1 to 5.
    pub(super) fn report(
        &mut self,
        now: Instant,
        p: &Postcard,
        region: &Region,
    ) -> Result<(), DropReason> {
        let Geometry::Postcarding(g) = region.geometry else {
            return Err(DropReason::NoRegion);
        };
        if self.copies > g.n_max() {
            return Err(DropReason::GeometryMismatch);
        }
        if !(1..=g.hops()).contains(&p.path_len) || !(1..=p.path_len).contains(&p.hop) {
            return Err(DropReason::BadHop);
        }
        let slot = key_checksum(p.key) as usize % self.slots.len();
        if self.slots[slot].as_ref().is_some_and(|f| f.key != p.key) {
            if let Some(old) = self.slots[slot].take() {
                self.done.evictions += 1;
                self.write(&old, region, &g);
            }
        }
        if self.slots[slot].is_none() {
            self.cached += 1;
        }
        let order = self.cached;
        let flow = self.slots[slot].get_or_insert_with(|| Flow {
            key: p.key,
            hops: BTreeMap::new(),
            path_len: p.path_len,
            length_known: p.length_known,
            due: Instant(now.0 + self.idle_ns),
            order,
            reports: 0,
        });
        flow.hops.insert(p.hop, p.data);
        flow.reports += 1;
        if flow.hops.len() >= usize::from(flow.path_len) {
            if let Some(f) = self.slots[slot].take() {
                self.done.completions += 1;
                self.write(&f, region, &g);
            }
        }
        Ok(())
    }

    /// Rule 6: a timer run at `now`, or a final flush (`all`).
    pub(super) fn flush(&mut self, now: Instant, all: bool, region: &Region) {
        let Geometry::Postcarding(g) = region.geometry else {
            return;
        };
        let mut due: Vec<usize> = (0..self.slots.len())
            .filter(|&i| self.slots[i].as_ref().is_some_and(|f| all || f.due <= now))
            .collect();
        due.sort_by_key(|&i| self.slots[i].as_ref().map(|f| f.order));
        for i in due {
            if let Some(f) = self.slots[i].take() {
                self.done.timeouts += 1;
                self.write(&f, region, &g);
            }
        }
    }

    /// Rule 6's deadline.
    pub(super) fn next_timeout(&self) -> Option<Instant> {
        self.slots.iter().flatten().map(|f| f.due).min()
    }

    /// Rule 8: the reports of the cached flows.
    pub(super) fn held_reports(&self) -> u64 {
        self.slots
            .iter()
            .flatten()
            .map(|f| u64::from(f.reports))
            .sum()
    }

    /// What was written and counted since the last call.
    pub(super) fn take(&mut self) -> Effects {
        std::mem::take(&mut self.done)
    }

    /// Rule 7 (and 8's completion).
    fn write(&mut self, f: &Flow, region: &Region, g: &PostcardGeometry) {
        let b = g.hops();
        let heard = |h: u8| f.hops.contains_key(&h);
        let written = |h: u8| {
            heard(h)
                || if f.length_known {
                    h > f.path_len
                } else {
                    heard(1)
                }
        };
        let cell = |h: u8| {
            let v = f.hops.get(&h).copied().unwrap_or(POSTCARD_BLANK);
            postcard_cell(f.key, h, v).map_or([0; CELL_LEN], u32::to_be_bytes)
        };
        // Runs of consecutive written cells, as (first hop, last hop).
        let mut runs: Vec<(u8, u8)> = Vec::new();
        for h in (1..=b).filter(|&h| written(h)) {
            match runs.last_mut() {
                Some(run) if run.1 + 1 == h => run.1 = h,
                _ => runs.push((h, h)),
            }
        }
        for copy in 0..self.copies {
            let chunk = region.va + placement(f.key, copy, g.chunks()) * CHUNK_STRIDE as u64;
            if runs == [(1, b)] {
                let mut bytes = vec![0u8; CHUNK_STRIDE];
                for h in 1..=b {
                    let at = usize::from(h - 1) * CELL_LEN;
                    bytes[at..at + CELL_LEN].copy_from_slice(&cell(h));
                }
                self.done.writes.push(Write {
                    va: chunk,
                    rkey: region.rkey,
                    bytes,
                });
                continue;
            }
            for &(first, last) in &runs {
                self.done.writes.push(Write {
                    va: chunk + u64::from(first - 1) * CELL_LEN as u64,
                    rkey: region.rkey,
                    bytes: (first..=last).flat_map(cell).collect(),
                });
            }
        }
        if !heard(1) {
            self.done.continuations += 1;
        }
        self.done.reports += u64::from(f.reports);
    }
}
