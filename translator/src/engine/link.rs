//! One collector as the engine sees it: its QP, regions, path MTU and primitives, built from the
//! collector's [`Welcome`] and checked against the configuration, and the one place a report is handed to
//! a primitive.

use dta_protocol::control::Welcome;
use dta_protocol::layout::{Geometry, Region};
use dta_protocol::roce::{ResponseIcrc, QPN_MASK, ROCEV2_UDP_PORT};
use dta_protocol::udp::UdpEndpoints;

use super::QpStats;
use crate::collector::{Regions, DEFAULT_PATH_MTU};
use crate::config::Config;
use crate::counters::{Counters, DropReason};
use crate::error::ConfigError;
use crate::frames::FrameBuilder;
use crate::primitives::{Outcome, Primitive, Primitives, Sink};
use crate::requester::{Requester, RequesterParams};
use crate::time::{nanos, Instant};

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
        let p = pick(&mut self.prims);
        let region = *p.region(&self.regions, r).ok_or(DropReason::NoRegion)?;
        room(&self.qp, p.max_wrs(r))?;
        let mut out = Sink {
            qp: &mut self.qp,
            mtu: self.mtu,
            counters,
        };
        p.handle(now, r, &region, &mut out)
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
        Ok(Collector {
            ip: w.ip,
            regions,
            mtu: mtu as usize,
            qp: Requester::new(params, builder, now),
            prims: Primitives::new(cfg),
            can_atomic: w.max_dest_rd_atomic > 0,
            icrc: ResponseIcrc::new(),
        })
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

fn room(qp: &Requester, need: usize) -> Result<(), DropReason> {
    if qp.queue_room() >= need {
        Ok(())
    } else {
        Err(DropReason::QueueFull)
    }
}
