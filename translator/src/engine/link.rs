//! One collector as the engine sees it: its QP, regions, path MTU and primitives, built from the
//! collector's [`Welcome`] and checked against the configuration, and the one place a report is handed to
//! a primitive.

use dta_protocol::control::Welcome;
use dta_protocol::dta::{AppendRepr, KeyWriteRepr, SketchRepr};
use dta_protocol::layout::{Geometry, Region};
use dta_protocol::roce::{ResponseIcrc, QPN_MASK, ROCEV2_UDP_PORT};
use dta_protocol::udp::UdpEndpoints;

use super::QpStats;
use crate::collector::{Regions, DEFAULT_PATH_MTU, MAX_PATH_MTU};
use crate::config::Config;
use crate::counters::{Counters, DropReason};
use crate::error::ConfigError;
use crate::primitives::append::AppendLists;
use crate::primitives::keywrite::{Placement, SizedPlacement};
use crate::primitives::sketch::SketchMerger;
use crate::primitives::{Outcome, Primitive, Primitives, Sink};
use crate::time::{nanos, Instant};
use dta_rc::frames::FrameBuilder;
use dta_rc::requester::{Requester, RequesterParams};

/// One collector as the engine sees it.
pub(super) struct Collector {
    pub(super) ip: [u8; 4],
    pub(super) regions: Regions,
    pub(super) mtu: usize,
    pub(super) qp: Requester,
    pub(super) prims: Primitives,
    pub(super) can_atomic: bool,
    /// The CRC of this collector's response headers, remembered per response shape.
    pub(super) icrc: ResponseIcrc,
    /// The Key-Write region's placement, read out of `regions` once.
    key_write: Option<Placement>,
}

impl Collector {
    /// Hands a report to primitive `pick(prims)`: its region must exist and the queue must have room for
    /// the most work it may add (checked in that order, so a missing region is counted as one even when
    /// the queue is full).
    pub(super) fn offer<P: Primitive>(
        &mut self,
        now: Instant,
        pick: impl FnOnce(&mut Primitives) -> &mut P,
        r: &P::Report<'_>,
        counters: &mut Counters,
    ) -> Result<Outcome, DropReason> {
        // Borrowed field by field, so the region is read in place rather than copied out per report.
        let Collector {
            prims,
            regions,
            qp,
            mtu,
            ..
        } = self;
        let p = pick(prims);
        let region = p.region(regions, r).ok_or(DropReason::NoRegion)?;
        room(qp, p.max_wrs(r))?;
        let mut out = Sink {
            qp,
            mtu: *mtu,
            counters,
        };
        p.handle(now, r, region, &mut out)
    }

    /// [`offer`](Self::offer) of a Key-Write report (`checksum` is its key's; `Ok` is `offer`'s only
    /// outcome for Key-Write, `Accepted`) with the region's placement
    /// read once at setup: the same checks in the same order (region, queue room, then the primitive's
    /// `Placement::write`, which `offer`'s path runs too), so the same outcome (a test compares them).
    /// Through `Placement::write`: the model that `fast_paths_equal_offer` checks
    /// [`key_write_unrolled`](Self::key_write_unrolled), the engine's one Key-Write call, against.
    #[cfg(test)]
    #[inline(always)]
    pub(super) fn key_write(&mut self, r: &KeyWriteRepr, checksum: u32) -> Result<(), DropReason> {
        self.key_write_with::<false>(r, checksum)
    }

    /// `key_write` through `Placement::write_unrolled` (the same work requests): the engine's Key-Write
    /// call (`Engine::key_write`), inlined into its `key_write_parts` (called, the report went through
    /// the stack and the result was packed and unpacked around the call) and its run loop.
    #[inline(always)]
    pub(super) fn key_write_unrolled(
        &mut self,
        r: &KeyWriteRepr,
        checksum: u32,
    ) -> Result<(), DropReason> {
        self.key_write_with::<true>(r, checksum)
    }

    #[inline(always)]
    fn key_write_with<const UNROLL: bool>(
        &mut self,
        r: &KeyWriteRepr,
        checksum: u32,
    ) -> Result<(), DropReason> {
        let p = self.key_write.as_ref().ok_or(DropReason::NoRegion)?;
        room(&self.qp, usize::from(r.redundancy))?;
        if UNROLL {
            p.write_unrolled(r, checksum, &mut self.qp)
        } else {
            p.write(r, checksum, &mut self.qp)
        }
    }

    /// The Key-Write region's placement, for a caller that writes many reports here and keeps it in
    /// registers (through [`write_placed_sized`]) rather than reading it from the collector per report.
    pub(super) fn key_write_placement(&self) -> Option<Placement> {
        self.key_write
    }

    /// [`offer`](Self::offer) of an Append report whose list is `regions.append[k]`: the same checks in
    /// the same order (region, queue room, then the primitive's), the list found by index rather than by
    /// hashing its id (a test compares both paths).
    #[inline]
    pub(super) fn append(
        &mut self,
        now: Instant,
        k: usize,
        r: &AppendRepr,
        counters: &mut Counters,
    ) -> Result<Outcome, DropReason> {
        let Collector {
            prims,
            regions,
            qp,
            mtu,
            ..
        } = self;
        let region = regions.append.get(k).ok_or(DropReason::NoRegion)?;
        room(qp, AppendLists::MAX_WRS)?;
        let mut out = Sink {
            qp,
            mtu: *mtu,
            counters,
        };
        prims.append.handle_at(now, k, r, region, &mut out)
    }

    /// [`offer`](Self::offer) of a Sketch-Merge report whose sketch is `regions.sketch[k]`, as
    /// [`append`](Self::append) is for Append.
    #[inline]
    pub(super) fn sketch(
        &mut self,
        now: Instant,
        k: usize,
        r: &SketchRepr,
        counters: &mut Counters,
    ) -> Result<Outcome, DropReason> {
        let Collector {
            prims,
            regions,
            qp,
            mtu,
            ..
        } = self;
        let region = regions.sketch.get(k).ok_or(DropReason::NoRegion)?;
        room(qp, SketchMerger::MAX_WRS)?;
        let mut out = Sink {
            qp,
            mtu: *mtu,
            counters,
        };
        prims.sketch.handle_at(now, k, r, region, &mut out)
    }

    /// The frame builder of collector `i`'s QP (its first advertised QP).
    pub(super) fn builder(
        cfg: &Config,
        i: usize,
        w: &Welcome,
    ) -> Result<FrameBuilder, ConfigError> {
        let qp = w.qps.first().ok_or_else(|| ConfigError::Collector {
            collector: i,
            why: "advertises no QP".into(),
        })?;
        let l = &cfg.local;
        let mut ep = UdpEndpoints::new(
            l.mac,
            w.mac,
            l.ip,
            w.ip,
            l.udp_src_port_base.wrapping_add(i as u16),
            ROCEV2_UDP_PORT,
        );
        ep.dscp = l.dscp;
        ep.ecn = l.ecn;
        Ok(FrameBuilder::new(ep, qp.qpn & QPN_MASK))
    }

    /// Collector `i` as `w` describes it, checked against the configuration.
    pub(super) fn new(
        cfg: &Config,
        i: usize,
        w: &Welcome,
        now: Instant,
    ) -> Result<Self, ConfigError> {
        let builder = Self::builder(cfg, i, w)?;
        let mtu = if w.path_mtu == 0 {
            DEFAULT_PATH_MTU
        } else {
            w.path_mtu
        };
        if mtu < 64 {
            return Err(ConfigError::Collector {
                collector: i,
                why: format!("path MTU {mtu} is below 64 bytes"),
            });
        }
        // 4096 is the largest IB path MTU; the daemon's output slots are sized for its frames.
        if mtu > MAX_PATH_MTU {
            return Err(ConfigError::Collector {
                collector: i,
                why: format!("path MTU {mtu} is above {MAX_PATH_MTU} bytes, the largest IB MTU"),
            });
        }
        let regions = Regions::new(i, &w.regions)?;
        if let Some(r) = &regions.key_write {
            if let Geometry::KeyWrite(g) = r.geometry {
                if g.data_len() != cfg.report.keywrite_data_len {
                    return Err(ConfigError::Collector {
                        collector: i,
                        why: format!(
                            "Key-Write entries hold {} data bytes, reports carry {}",
                            g.data_len(),
                            cfg.report.keywrite_data_len
                        ),
                    });
                }
            }
        }
        let params = RequesterParams {
            cfg: cfg.requester.clone(),
            rate: cfg.rate.clone(),
            max_atomics: w.max_dest_rd_atomic,
            start_psn: cfg.local.start_psn,
        };
        let mut prims = Primitives::new(cfg);
        prims.append.continue_from(&w.append_heads);
        Ok(Collector {
            ip: w.ip,
            key_write: regions.key_write.as_ref().and_then(Placement::new),
            regions,
            mtu: mtu as usize,
            qp: Requester::new(params, builder, now),
            prims,
            can_atomic: w.max_dest_rd_atomic > 0,
            icrc: ResponseIcrc::new(),
        })
    }

    /// Reports taken for this collector and not yet written: in its QP's queue and window, and held by
    /// its primitives.
    pub(super) fn held_reports(&self) -> u64 {
        self.qp.held_reports() + self.prims.held_reports()
    }

    /// Gauges of this collector's QP.
    pub(super) fn stats(&self) -> QpStats {
        let (timeout, srtt) = self.qp.timeout();
        QpStats {
            window: self.qp.window_occupancy(),
            queue: self.qp.queue_depth(),
            next_psn: self.qp.next_psn(),
            error: self.qp.error(),
            timeout_ns: nanos(timeout),
            srtt_ns: srtt.map(nanos),
            window_limit: self.qp.window_limit(),
        }
    }

    /// Every region, as configured.
    pub(super) fn region_list(&self) -> Vec<Region> {
        let r = &self.regions;
        let mut v: Vec<Region> = [r.key_write, r.key_increment, r.postcard]
            .into_iter()
            .flatten()
            .collect();
        v.extend_from_slice(&r.append);
        v.extend_from_slice(&r.sketch);
        v
    }
}

/// [`Collector::key_write`]'s work for a report whose data is the `D` bytes `data`, once the region's
/// placement `p` (known to hold them) is found: the queue's room for the report's N (through `qp`'s
/// queue limit `limit`, taken before a run of pushes), then its N writes.
#[inline(always)]
pub(super) fn write_placed_sized<const D: usize>(
    p: &SizedPlacement<D>,
    qp: &mut Requester,
    limit: usize,
    r: &KeyWriteRepr,
    data: &[u8; D],
    checksum: u32,
) -> Result<(), DropReason> {
    // `room`'s check (N is at least 1: the parse refuses 0).
    if !qp.queue_fits(limit, usize::from(r.redundancy)) {
        return Err(no_room(qp));
    }
    p.write(r, data, checksum, qp)
}

fn room(qp: &Requester, need: usize) -> Result<(), DropReason> {
    if qp.queue_room() >= need {
        Ok(())
    } else {
        Err(no_room(qp))
    }
}

/// Why a QP without room refuses a report: its queue is full, or it is closed because its collector
/// cannot be used (off the report path: asked only when there is no room).
#[cold]
fn no_room(qp: &Requester) -> DropReason {
    if qp.is_closed() {
        DropReason::CollectorUnusable
    } else {
        DropReason::QueueFull
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::primitives::keywrite::KeyWriteReport;
    use crate::primitives::{FlushMode, Timed};
    use dta_protocol::control::{ResponderQp, CONTROL_VERSION};
    use dta_protocol::dta::SketchOp;
    use dta_protocol::hash::key_checksum;
    use dta_protocol::layout::{AppendGeometry, KeyWriteGeometry, SketchGeometry};

    /// Two Append lists, two sketches and a Key-Write region, with a small queue so that reports are
    /// refused for room too.
    fn pair() -> (Collector, Collector) {
        let region = |id, va, geometry| Region {
            id,
            va,
            rkey: 7,
            geometry,
        };
        let w = Welcome {
            version: CONTROL_VERSION,
            mac: [2, 0, 0, 0, 0, 2],
            ip: [198, 18, 0, 2],
            qps: vec![ResponderQp {
                qpn: 0x11,
                peer_qpn: 0x100,
            }],
            max_dest_rd_atomic: 16,
            path_mtu: 256,
            regions: vec![
                region(
                    0,
                    0x10_0000,
                    Geometry::KeyWrite(KeyWriteGeometry::new(1 << 10, 8, 4).unwrap()),
                ),
                region(
                    3,
                    0x20_0000,
                    Geometry::Append(AppendGeometry::new(48, 4, 16).unwrap()),
                ),
                region(
                    9,
                    0x30_0000,
                    Geometry::Append(AppendGeometry::new(64, 4, 4).unwrap()),
                ),
                region(
                    1,
                    0x40_0000,
                    Geometry::Sketch(SketchGeometry::new(2, 8).unwrap()),
                ),
                region(
                    4,
                    0x50_0000,
                    Geometry::Sketch(SketchGeometry::new(1, 100).unwrap()),
                ),
            ],
            append_heads: Vec::new(),
        };
        let mut cfg = Config::default();
        cfg.requester.queue_capacity = 12;
        cfg.sketch.reporters = 2;
        cfg.sketch.column_batch = 4;
        let a = Collector::new(&cfg, 0, &w, Instant(0)).unwrap();
        let b = Collector::new(&cfg, 0, &w, Instant(0)).unwrap();
        (a, b)
    }

    /// Every frame each collector's QP has ready, which must be the same bytes; returns how many.
    fn drain(a: &mut Collector, b: &mut Collector, now: Instant) -> usize {
        let (mut ca, mut cb) = (Counters::default(), Counters::default());
        let (mut fa, mut fb) = (Vec::new(), Vec::new());
        let mut n = 0;
        loop {
            let (sa, sb) = (
                a.qp.poll_transmit(now, &mut ca, &mut fa),
                b.qp.poll_transmit(now, &mut cb, &mut fb),
            );
            assert_eq!(sa, sb);
            if !sa {
                break;
            }
            assert_eq!(fa, fb);
            n += 1;
        }
        a.qp.assume_delivered();
        b.qp.assume_delivered();
        n
    }

    /// A small xorshift: many varied reports without a dependency.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u32 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 >> 16) as u32
        }
    }

    /// The by-index paths (`key_write`, `append`, `sketch`) give what `offer` gives, report for report
    /// (outcomes, refusals and their reasons, counters) and frame for frame, timer flushes included.
    #[test]
    fn fast_paths_equal_offer() {
        let (mut a, mut b) = pair();
        let (mut ca, mut cb) = (Counters::default(), Counters::default());
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mut columns = [[0u16; 3]; 5];
        // Reports taken per kind, and frames compared: the run must exercise every path.
        let (mut taken, mut frames) = ([0u32; 3], 0);
        for step in 0..20_000u64 {
            let now = Instant(step * 100);
            let x = rng.next();
            let data = x.to_be_bytes();
            let long = [x as u8; 12];
            // Mostly the configured sizes, sometimes not.
            let bytes: &[u8] = match x % 23 {
                0 => &long,
                1 => &data[..3],
                _ => &data,
            };
            match rng.next() % 3 {
                0 => {
                    let r = KeyWriteRepr {
                        redundancy: (x % 6) as u8,
                        key: rng.next(),
                        data: bytes,
                    };
                    let checksum = key_checksum(r.key);
                    // The engine's path and its model, in turn.
                    let fast = if step % 2 == 0 {
                        a.key_write(&r, checksum)
                    } else {
                        a.key_write_unrolled(&r, checksum)
                    }
                    .map(|()| Outcome::Accepted);
                    let kw = KeyWriteReport { repr: r, checksum };
                    let slow = b.offer(now, |p| &mut p.key_write, &kw, &mut cb);
                    assert_eq!(fast, slow, "step {step}");
                    taken[0] += u32::from(fast.is_ok());
                }
                1 => {
                    let list_id = [3, 9, 5][(x % 3) as usize];
                    let r = AppendRepr {
                        list_id,
                        data: bytes,
                    };
                    let fast = match a.regions.append_index(list_id) {
                        Some(k) => a.append(now, k, &r, &mut ca),
                        None => Err(DropReason::NoRegion),
                    };
                    let slow = b.offer(now, |p| &mut p.append, &r, &mut cb);
                    assert_eq!(fast, slow, "step {step}");
                    taken[1] += u32::from(fast.is_ok());
                }
                _ => {
                    let id = [1u8, 4, 2][(x % 3) as usize];
                    let reporter = (rng.next() % 3) as u16;
                    let next = columns[usize::from(id)][usize::from(reporter)];
                    // Mostly the next column, sometimes a repeat or a skip.
                    let column = match rng.next() % 9 {
                        0 => next.wrapping_sub(1),
                        1 => next + 2,
                        _ => next,
                    };
                    let counters = [x as u8; 8];
                    // Sketch 1 has two rows, the others one; sometimes the other count.
                    let rows = usize::from(id == 1) + 1;
                    let rows = if x % 31 == 0 { 3 - rows } else { rows };
                    let r = SketchRepr {
                        sketch_id: id,
                        op: if x % 41 == 0 {
                            SketchOp::Max
                        } else {
                            SketchOp::Sum
                        },
                        reporter_id: reporter,
                        column,
                        counters: &counters[..4 * rows],
                    };
                    let fast = match a.regions.sketch_index(u32::from(id)) {
                        Some(k) => a.sketch(now, k, &r, &mut ca),
                        None => Err(DropReason::NoRegion),
                    };
                    let slow = b.offer(now, |p| &mut p.sketch, &r, &mut cb);
                    assert_eq!(fast, slow, "step {step}");
                    if fast == Ok(Outcome::Accepted) {
                        taken[2] += 1;
                        columns[usize::from(id)][usize::from(reporter)] =
                            (column + 1) % if id == 1 { 8 } else { 100 };
                    }
                }
            }
            if rng.next() % 7 == 0 {
                frames += drain(&mut a, &mut b, now);
            }
            if rng.next() % 97 == 0 {
                let mode = if rng.next() % 2 == 0 {
                    FlushMode::All
                } else {
                    FlushMode::Due
                };
                for (c, counters) in [(&mut a, &mut ca), (&mut b, &mut cb)] {
                    let mut out = Sink {
                        qp: &mut c.qp,
                        mtu: c.mtu,
                        counters,
                    };
                    c.prims.append.flush(now, mode, &c.regions, &mut out);
                    c.prims.sketch.flush(now, mode, &c.regions, &mut out);
                }
                frames += drain(&mut a, &mut b, now);
            }
        }
        assert!(
            taken.iter().all(|&n| n > 1000) && frames > 5000,
            "{taken:?} {frames}"
        );
        assert_eq!(ca, cb);
        assert_eq!(a.prims.append.poll_timeout(), b.prims.append.poll_timeout());
        assert_eq!(a.prims.sketch.poll_timeout(), b.prims.sketch.poll_timeout());
    }
}
