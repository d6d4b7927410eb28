//! Key-Increment: a FETCH_ADD per copy at `base + 8·slot`, optionally coalesced: increments to the same
//! counter within a short window become one FETCH_ADD of their (wrapping, as the NIC adds) sum, so the
//! collector's counters stay exact while the atomic rate, which the responder caps, drops.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use dta_protocol::dta::{KeyIncrementRepr, Opcode};
use dta_protocol::layout::{Geometry, Region};
use dta_protocol::roce::crc_table::placement_hash5;

use super::{FlushMode, Outcome, Primitive, Sink, Timed};
use crate::collector::Regions;
use crate::counters::{primitive_tag, DropReason};
use crate::time::Instant;
use dta_rc::frames::Op;
use dta_rc::requester::{Requester, WorkRequest};

/// Queues a FETCH_ADD that completes `reports` reports (see `WorkRequest::reports`).
fn fetch_add(qp: &mut Requester, va: u64, rkey: u32, add: u64, reports: u32) {
    qp.push(WorkRequest {
        op: Op::FetchAdd { va, rkey, add },
        tag: primitive_tag(Opcode::KeyIncrement),
        reports,
    });
}

#[derive(Debug, Clone, Copy)]
struct Pending {
    rkey: u32,
    sum: u64,
    deadline: Instant,
    /// Reports whose last copy was folded in here: its FETCH_ADD completes them.
    reports: u32,
}

/// Increments waiting to be sent, per counter address, for one collector.
#[derive(Debug, Default)]
pub struct Coalescer {
    window: Duration,
    capacity: usize,
    pending: HashMap<u64, Pending>,
    /// Insertion order with each entry's deadline; an entry whose deadline no longer matches is stale.
    order: VecDeque<(Instant, u64)>,
}

impl Coalescer {
    /// Coalesces for `window` (zero: off), holding at most `capacity` counters.
    pub fn new(window: Duration, capacity: usize) -> Self {
        Coalescer {
            window,
            capacity,
            ..Default::default()
        }
    }

    /// Reports held in entries not sent yet.
    pub fn held_reports(&self) -> u64 {
        self.pending.values().map(|p| u64::from(p.reports)).sum()
    }

    fn flush_oldest(&mut self, qp: &mut Requester) {
        while let Some((deadline, va)) = self.order.pop_front() {
            if self.take(deadline, va, qp) {
                return;
            }
        }
    }

    /// Sends the entry for `va` if `deadline` is still its own; returns whether it did.
    fn take(&mut self, deadline: Instant, va: u64, qp: &mut Requester) -> bool {
        match self.pending.get(&va) {
            Some(p) if p.deadline == deadline => {
                let p = *p;
                self.pending.remove(&va);
                fetch_add(qp, va, p.rkey, p.sum, p.reports);
                true
            }
            _ => false,
        }
    }
}

impl Primitive for Coalescer {
    type Report<'r> = KeyIncrementRepr;

    fn region<'g>(&self, regions: &'g Regions, _: &KeyIncrementRepr) -> Option<&'g Region> {
        regions.key_increment.as_ref()
    }

    fn max_wrs(&self, r: &KeyIncrementRepr) -> usize {
        usize::from(r.redundancy)
    }

    fn handle(
        &mut self,
        now: Instant,
        r: &KeyIncrementRepr,
        region: &Region,
        out: &mut Sink<'_>,
    ) -> Result<Outcome, DropReason> {
        let Geometry::KeyIncrement(g) = region.geometry else {
            return Err(DropReason::NoRegion);
        };
        if r.redundancy > g.n_max() {
            return Err(DropReason::GeometryMismatch);
        }
        let mask = g.slots() - 1;
        // `g.offset(key, n)` (8 · slot) through the table CRC, ~4x cheaper on a 5-byte input; the hash
        // equals dta-protocol's (its property test) and the primitives tests read the addresses.
        let va = |n: u8| region.va + (u64::from(placement_hash5(r.key, n)) & mask) * 8;
        if self.window.is_zero() {
            // No coalescing: one FETCH_ADD per copy, the window not tested per copy.
            // N = 1, the common redundancy, on its own: no loop, copy 0's table at a fixed address.
            if r.redundancy == 1 {
                fetch_add(out.qp, va(0), region.rkey, r.counter, 1);
                return Ok(Outcome::Accepted);
            }
            for n in 0..r.redundancy {
                // The last copy carries the report.
                let last = u32::from(n + 1 == r.redundancy);
                fetch_add(out.qp, va(n), region.rkey, r.counter, last);
            }
            return Ok(Outcome::Accepted);
        }
        for n in 0..r.redundancy {
            let va = va(n);
            // The entry of the report's last copy carries it.
            let last = u32::from(n + 1 == r.redundancy);
            if let Some(p) = self.pending.get_mut(&va) {
                p.sum = p.sum.wrapping_add(r.counter);
                p.reports = p.reports.saturating_add(last);
                out.counters.increments_coalesced += 1;
                continue;
            }
            if self.pending.len() >= self.capacity {
                self.flush_oldest(out.qp);
            }
            let deadline = now + self.window;
            self.pending.insert(
                va,
                Pending {
                    rkey: region.rkey,
                    sum: r.counter,
                    deadline,
                    reports: last,
                },
            );
            self.order.push_back((deadline, va));
        }
        Ok(Outcome::Accepted)
    }
}

impl Timed for Coalescer {
    fn held_reports(&self) -> u64 {
        Coalescer::held_reports(self)
    }

    /// Sends every entry whose window has closed by `now` (everything with [`FlushMode::All`]).
    fn flush(&mut self, now: Instant, mode: FlushMode, _: &Regions, out: &mut Sink<'_>) {
        while let Some(&(deadline, va)) = self.order.front() {
            if mode == FlushMode::Due && deadline > now {
                break;
            }
            self.order.pop_front();
            self.take(deadline, va, out.qp);
        }
    }

    /// The next window to close.
    fn poll_timeout(&self) -> Option<Instant> {
        self.order.front().map(|(d, _)| *d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{RateConfig, RequesterConfig};
    use crate::counters::Counters;
    use dta_protocol::layout::KeyIncrementGeometry;
    use dta_protocol::roce::{Extension, FrameRepr, ROCEV2_UDP_PORT};
    use dta_protocol::udp::UdpEndpoints;
    use dta_rc::frames::FrameBuilder;
    use dta_rc::requester::RequesterParams;

    /// The table CRC of the hot path puts every counter copy where the layout says.
    #[test]
    fn addresses_match_the_layout() {
        let g = KeyIncrementGeometry::new(1 << 24, 8).unwrap();
        let region = Region {
            id: 0,
            va: 0x7f10_0000_0000,
            rkey: 3,
            geometry: Geometry::KeyIncrement(g),
        };
        let regions = Regions::new(0, &[region]).unwrap();
        let ep = UdpEndpoints::new([2; 6], [3; 6], [1; 4], [2; 4], 1, ROCEV2_UDP_PORT);
        let params = RequesterParams {
            cfg: RequesterConfig::default(),
            rate: RateConfig::default(),
            max_atomics: 1024,
            start_psn: 0,
        };
        let mut qp = Requester::new(params, FrameBuilder::new(ep, 0x11), Instant(0));
        let mut c = Counters::default();
        let mut ki = Coalescer::new(Duration::ZERO, 16);
        let mut out = Vec::new();
        for i in 0..2000u32 {
            let key = i.wrapping_mul(0x9E37_79B1) ^ i >> 5;
            // Every N, so that N = 1's own path is checked too.
            let r = KeyIncrementRepr {
                redundancy: (i % 8) as u8 + 1,
                key,
                counter: u64::from(i),
            };
            let reg = *ki.region(&regions, &r).unwrap();
            let mut sink = Sink {
                qp: &mut qp,
                mtu: 1024,
                counters: &mut c,
            };
            assert_eq!(
                ki.handle(Instant(0), &r, &reg, &mut sink),
                Ok(Outcome::Accepted)
            );
            for n in 0..r.redundancy {
                assert!(qp.poll_transmit(Instant(0), &mut c, &mut out));
                let f = FrameRepr::parse(&out).unwrap();
                let Extension::Atomic(a) = f.ext else {
                    panic!("not a FETCH_ADD")
                };
                assert_eq!(a.va, region.va + g.offset(key, n), "key {key} copy {n}");
                assert_eq!(a.swap_add, u64::from(i));
            }
            assert!(!qp.poll_transmit(Instant(0), &mut c, &mut out));
            qp.assume_delivered();
        }
    }
}
