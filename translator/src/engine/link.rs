//! One collector as the engine sees it: its QP, regions, path MTU and primitives, built from the
//! collector's [`Welcome`] and checked against the configuration, and the one place a report is handed to
//! a primitive.

use dta_protocol::control::Welcome;
use dta_protocol::dta::{AppendRepr, KeyWriteRepr, SketchRepr};
use dta_protocol::layout::{Geometry, Region};
use dta_protocol::roce::{ResponseIcrc, QPN_MASK, ROCEV2_UDP_PORT};
use dta_protocol::udp::UdpEndpoints;

use super::outputs::QpStats;
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
    // Inlined into each arm of `Engine::submit`: measured out of line (after DTA and INT reports came to
    // share `submit`), Postcarding cost 16 instructions a report more.
    #[inline(always)]
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
mod tests;
