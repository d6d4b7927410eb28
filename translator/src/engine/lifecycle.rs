//! Building the engine and changing its collectors: setup from their welcomes, a QP re-established, a
//! collector replaced after a restart or detached, the offline mode that treats every frame as delivered.

use std::collections::VecDeque;

use dta_protocol::control::Welcome;

use super::link::Collector;
use super::outputs::Event;
use super::state::Engine;
use crate::config::Config;
use crate::counters::Counters;
use crate::error::ConfigError;
use crate::int::IntFrontEnd;
use crate::sequence::SequenceTracker;
use crate::time::Instant;

impl Engine {
    /// An engine for `collectors` (one [`Welcome`] each, from the control channel or a regions file).
    pub fn new(cfg: Config, collectors: &[Welcome], now: Instant) -> Result<Self, ConfigError> {
        cfg.validate()?;
        if collectors.is_empty() {
            return Err(ConfigError::Collector {
                collector: 0,
                why: "no collector configured".into(),
            });
        }
        let mut out = Vec::with_capacity(collectors.len());
        for (i, w) in collectors.iter().enumerate() {
            out.push(Collector::new(&cfg, i, w, now)?);
        }
        let int = cfg
            .int
            .enabled
            .then(|| IntFrontEnd::new(&cfg.int, cfg.postcard.hops));
        let mut e = Engine {
            fmt: cfg.report.format(),
            seq: SequenceTracker::new(cfg.sequence.max_reporters, cfg.sequence.nack_holdoff()),
            cfg,
            collectors: out,
            nacks: VecDeque::new(),
            events: VecDeque::new(),
            counters: Counters::default(),
            next_qp: 0,
            int,
            sketch_routes: Vec::new(),
            append_routes: Vec::new(),
        };
        e.work_out_routes();
        Ok(e)
    }

    /// Resumes collector `i`'s QP after the control channel re-established it (`welcome` is the new
    /// answer; its first QP is used). Unacknowledged work is sent again from `start_psn`.
    pub fn reestablish(
        &mut self,
        i: usize,
        welcome: &Welcome,
        start_psn: u32,
        now: Instant,
    ) -> Result<(), ConfigError> {
        let builder = Collector::builder(&self.cfg, i, welcome)?;
        let col = self.collectors.get_mut(i).ok_or(ConfigError::Collector {
            collector: i,
            why: "no such collector".into(),
        })?;
        col.qp.reestablish(builder, start_psn, now);
        self.events
            .retain(|e| !matches!(e, Event::QpError { collector, .. } if *collector == i));
        Ok(())
    }

    /// Replaces collector `i` after it restarted: its memory is new (regions at other addresses), so the
    /// queued and unacknowledged work, which names the old addresses, cannot be sent again, and per-collector
    /// state (Append heads, cached postcards, partial sketch merges) starts over as the new memory does.
    /// [`reestablish`](Self::reestablish) is for a QP error on a collector that kept its memory. Returns the
    /// reports lost with the old memory (those its queued and unacknowledged work completes, and those its
    /// primitives held), for the caller to count.
    pub fn replace_collector(
        &mut self,
        i: usize,
        welcome: &Welcome,
        start_psn: u32,
        now: Instant,
    ) -> Result<u64, ConfigError> {
        if i >= self.collectors.len() {
            return Err(ConfigError::Collector {
                collector: i,
                why: "no such collector".into(),
            });
        }
        let mut fresh = Collector::new(&self.cfg, i, welcome, now)?;
        fresh
            .qp
            .reestablish(Collector::builder(&self.cfg, i, welcome)?, start_psn, now);
        let old = std::mem::replace(&mut self.collectors[i], fresh);
        // The new memory may hold other sketches and Append lists.
        self.work_out_routes();
        self.events
            .retain(|e| !matches!(e, Event::QpError { collector, .. } if *collector == i));
        Ok(old.held_reports())
    }

    /// Whether a collector's `welcome` is one the engine can use as collector `i` (what
    /// [`new`](Self::new) and [`replace_collector`](Self::replace_collector) check: QPs, path MTU,
    /// regions, the Key-Write entry size against the reports'), and why not. A control client asks before
    /// it hands a welcome on, so that it can refuse it, say why and try again.
    pub fn check_welcome(cfg: &Config, i: usize, welcome: &Welcome) -> Result<(), ConfigError> {
        Collector::new(cfg, i, welcome, Instant::ZERO).map(drop)
    }

    /// Detaches collector `i`, which came back with memory the engine cannot use (its welcome was
    /// refused): its old memory is gone, so its queued and unacknowledged work and its primitives' state
    /// (batches, cached flows, merges) are dropped, and until [`replace_collector`](Self::replace_collector)
    /// gives it usable memory every report for it is refused and counted
    /// ([`DropReason::CollectorUnusable`](crate::DropReason::CollectorUnusable); a retransmittable one
    /// NACKed). Returns the reports lost, for the caller to count with those lost to restarts.
    pub fn detach_collector(&mut self, i: usize) -> Result<u64, ConfigError> {
        let cfg = &self.cfg;
        let col = self.collectors.get_mut(i).ok_or(ConfigError::Collector {
            collector: i,
            why: "no such collector".into(),
        })?;
        let lost = col.prims.held_reports() + col.qp.close();
        col.prims = crate::primitives::Primitives::new(cfg);
        self.events
            .retain(|e| !matches!(e, Event::QpError { collector, .. } if *collector == i));
        Ok(lost)
    }

    /// Offline mode: with no collector to answer, treat every frame sent so far as acknowledged, so the
    /// window never fills. Never use it with a live collector.
    pub fn assume_delivered(&mut self) {
        for c in &mut self.collectors {
            c.qp.assume_delivered();
        }
    }
}
