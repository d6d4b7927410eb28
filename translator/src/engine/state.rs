//! The engine's state, [`Engine`], and the gauges read from it. Every other module of the engine adds
//! methods to it; this one uses only the collector link ([`Collector`]) and the outputs.

use std::collections::VecDeque;

use dta_protocol::dta::ReportFormat;
use dta_protocol::layout::Region;

use super::link::Collector;
use super::outputs::{Event, Handled, QpStats};
use crate::config::Config;
use crate::counters::Counters;
use crate::int::IntFrontEnd;
use crate::sequence::SequenceTracker;

/// The engine of one worker core.
pub struct Engine {
    pub(super) cfg: Config,
    pub(super) fmt: ReportFormat,
    pub(super) collectors: Vec<Collector>,
    pub(super) seq: SequenceTracker,
    pub(super) nacks: VecDeque<Vec<u8>>,
    pub(super) events: VecDeque<Event>,
    pub(super) counters: Counters,
    pub(super) next_qp: usize,
    /// The INT front end, when `[int] enabled`.
    pub(super) int: Option<IntFrontEnd>,
    /// [`route_index`](Self::route_index) of every sketch id a report can name (a byte), worked out when
    /// the collectors are (re)configured instead of per report.
    pub(super) sketch_routes: Vec<Option<(usize, usize)>>,
    /// [`route_index`](Self::route_index) of every Append list any collector holds, as (id, collector,
    /// index), sorted by id: one search per report instead of one per collector.
    pub(super) append_routes: Vec<(u32, usize, usize)>,
}

impl Engine {
    /// The translator QPNs the engine uses, one per collector (for the control channel's hello).
    pub fn local_qpns(&self) -> Vec<u32> {
        (0..self.collectors.len())
            .map(|i| (self.cfg.local.qpn_base + i as u32) & 0xFF_FFFF)
            .collect()
    }

    /// Every counter.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Gauges of collector `i`'s QP.
    pub fn qp_stats(&self, i: usize) -> Option<QpStats> {
        self.collectors.get(i).map(Collector::stats)
    }

    /// Whether every QP has nothing queued or in flight and no DTA NACK waits.
    pub fn is_idle(&self) -> bool {
        self.nacks.is_empty() && self.collectors.iter().all(|c| c.qp.is_idle())
    }

    /// Reports taken and not yet written: queued or unacknowledged on a QP, or held by a primitive
    /// (batched, cached, coalesced, merged). What a stop that cannot wait any longer loses, in reports.
    pub fn held_reports(&self) -> u64 {
        self.collectors.iter().map(Collector::held_reports).sum()
    }

    /// The regions of collector `i` as configured (for tests and tools).
    pub fn regions(&self, i: usize) -> Option<Vec<Region>> {
        self.collectors.get(i).map(Collector::region_list)
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Counts a frame to forward.
    pub(super) fn not_for_us(&mut self) -> Handled {
        self.counters.not_for_us += 1;
        Handled::NotForUs
    }
}
