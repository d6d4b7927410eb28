//! Postcarding: a direct-mapped cache of flows per collector. A flow's chunk (all B cells, blanks for
//! missing hops) is written to its N chunk copies when its path is complete, when a newer flow takes its
//! cache slot (to the evicted flow's chunks, not the newcomer's as in the reference), or after an idle
//! timeout counted from its first postcard.

use std::collections::VecDeque;
use std::time::Duration;

use dta_protocol::dta::Opcode;
use dta_protocol::hash::{key_checksum, POSTCARD_BLANK};
use dta_protocol::layout::{Geometry, PostcardGeometry, Region, MAX_HOPS};

use super::{FlushMode, Outcome, Primitive, Sink, Timed};
use crate::collector::Regions;
use crate::counters::DropReason;
use crate::frames::Payload;
use crate::requester::Requester;
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

    /// An eviction and a completion.
    fn max_wrs(&self, _: &Postcard) -> usize {
        2 * usize::from(self.redundancy)
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
            write_flow(&old, region, &g, self.redundancy, out.qp);
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
            write_flow(&f, region, &g, self.redundancy, out.qp);
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
                    write_flow(&f, region, &g, self.redundancy, out.qp);
                }
            }
        }
    }

    /// The next idle timeout.
    fn poll_timeout(&self) -> Option<Instant> {
        self.expiry.front().map(|e| e.0)
    }
}

fn write_flow(f: &Flow, region: &Region, g: &PostcardGeometry, n: u8, qp: &mut Requester) {
    let chunk = g.encode_chunk(f.key, &f.values[..usize::from(g.hops())]);
    for copy in 0..n {
        let va = region.va + g.offset(f.key, copy);
        super::write(
            qp,
            Opcode::Postcard,
            va,
            region.rkey,
            Payload::from_slice(&chunk),
        );
    }
}
