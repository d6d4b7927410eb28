//! What a worker is told (its engine, QP re-establishments, collector restarts) and what it publishes (its
//! engine's counters, its data path's, its queues'), shared by the worker thread ([`super::lcore`]), the
//! control clients and the metrics.

use std::time::Duration;

use dta_netio::{RxStats, TxStats};
use dta_protocol::control::Welcome;
use dta_translator::{Counters, Engine, Instant, QpStats};

/// What a worker is told.
pub enum ToWorker {
    /// The engine, once every collector has answered (run-to-completion workers run their ports before,
    /// answering ARP and forwarding).
    Start(Box<Engine>),
    /// The collector's QP was re-created (after a QP error) and its memory is unchanged: resume, sending
    /// the unacknowledged work again from `start_psn`.
    Reestablish {
        /// Collector index.
        collector: usize,
        /// This worker's view of the welcome (its one QP).
        welcome: Welcome,
        /// First PSN of the new QP.
        start_psn: u32,
    },
    /// The collector restarted with new memory: start over on it and count what was lost.
    Replace {
        /// Collector index.
        collector: usize,
        /// This worker's view of the welcome.
        welcome: Welcome,
        /// First PSN of the new QP.
        start_psn: u32,
    },
    /// The collector came back with memory the engine cannot use (its control client refused the welcome
    /// and keeps asking): drop what was held for it, counted, and refuse its reports, counted, until a
    /// [`Replace`](Self::Replace).
    Detach {
        /// Collector index.
        collector: usize,
    },
}

/// What a worker's data path counts (published with its snapshot; summed over workers by the metrics).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PlaneCounters {
    /// Frames forwarded untouched to the other port.
    pub forwarded: u64,
    /// Frames neither ours nor forwardable (single-port mode): freed.
    pub not_forwarded: u64,
    /// ARP requests for our address answered.
    pub arp_replies: u64,
    /// Frames handed to another worker's ring.
    pub handed_off: u64,
    /// Frames another worker's ring refused (full): freed.
    pub handoff_full: u64,
    /// Polls that received nothing because another worker's ring was full (backpressure).
    pub handoff_waits: u64,
    /// Reports and responses that arrived before this worker had its engine (collectors still connecting).
    pub startup_drops: u64,
    /// Frames the engine built and the collector port took.
    pub engine_frames_out: u64,
}

/// Workers' counters add up to the daemon's.
impl std::ops::AddAssign for PlaneCounters {
    fn add_assign(&mut self, o: PlaneCounters) {
        self.forwarded += o.forwarded;
        self.not_forwarded += o.not_forwarded;
        self.arp_replies += o.arp_replies;
        self.handed_off += o.handed_off;
        self.handoff_full += o.handoff_full;
        self.handoff_waits += o.handoff_waits;
        self.startup_drops += o.startup_drops;
        self.engine_frames_out += o.engine_frames_out;
    }
}

/// What a worker publishes for metrics.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Engine counters.
    pub counters: Counters,
    /// Gauges of each collector's QP.
    pub qps: Vec<QpStats>,
    /// Reports lost because their collector restarted with new memory (queued, unacknowledged, or held
    /// by a primitive), or came back with memory the engine cannot use.
    pub lost_on_restart: u64,
    /// Collector restarts this worker started over from.
    pub restarts: u64,
    /// QPs re-established after an error.
    pub reestablished: u64,
    /// Reports not written when the worker stopped (their writes still queued or unacknowledged, its
    /// collector down or slow beyond the drain time, or held by a primitive): lost, and counted.
    pub abandoned_at_stop: u64,
    /// A run-to-completion worker's data path counters.
    pub plane: PlaneCounters,
    /// A run-to-completion worker's queue of every port, in port order.
    pub ports: Vec<(RxStats, TxStats)>,
    /// Worker 0's watch of every port's link, in port order: state (`None` where the port cannot tell)
    /// and times it went down; empty for the other workers.
    pub links: Vec<(Option<bool>, u64)>,
}

/// How often a worker publishes its counters to the metrics thread.
pub const PUBLISH_EVERY: Duration = Duration::from_millis(100);
/// How long shutdown waits for the collector to acknowledge what was sent.
pub const DRAIN: Duration = Duration::from_secs(2);

/// Counts and logs the reports an engine has not written when its worker stops (their writes queued or
/// unacknowledged, or held by a primitive).
pub fn abandoned_at_stop(engine: &Engine, index: usize) -> u64 {
    let lost = engine.held_reports();
    if lost == 0 {
        return 0;
    }
    let (queued, unacked) = (0..)
        .map_while(|i| engine.qp_stats(i))
        .fold((0, 0), |(q, w), s| (q + s.queue, w + s.window));
    log::warn!(
        "worker {index}: stopping with {lost} reports not written ({queued} writes queued and {unacked} \
         unacknowledged); they are lost (reports_lost_at_stop_total)"
    );
    lost
}

/// Applies a control message (QP re-established, collector replaced) to a worker's engine.
pub fn control(
    engine: &mut Engine,
    index: usize,
    msg: ToWorker,
    now: Instant,
    snap: &mut Snapshot,
) {
    match msg {
        ToWorker::Start(_) => {}
        ToWorker::Reestablish {
            collector,
            welcome,
            start_psn,
        } => match engine.reestablish(collector, &welcome, start_psn, now) {
            Ok(()) => snap.reestablished += 1,
            Err(e) => log::error!("worker {index}: re-establishing collector {collector}: {e}"),
        },
        ToWorker::Replace {
            collector,
            welcome,
            start_psn,
        } => match engine.replace_collector(collector, &welcome, start_psn, now) {
            Ok(lost) => {
                snap.restarts += 1;
                snap.lost_on_restart += lost;
                log::warn!(
                    "worker {index}: collector {collector} restarted with new memory; {lost} reports \
                     not written are lost (reports_lost_on_restart_total)"
                );
            }
            // The control client checked the welcome with the same rule, so this does not happen; if it
            // did, the old memory is gone all the same: detach rather than keep a queue nothing drains.
            Err(e) => {
                log::error!("worker {index}: collector {collector} after restart: {e}");
                detach(engine, index, collector, snap);
            }
        },
        ToWorker::Detach { collector } => detach(engine, index, collector, snap),
    }
}

/// Detaches collector `collector` (see [`ToWorker::Detach`]), counting the reports lost.
fn detach(engine: &mut Engine, index: usize, collector: usize, snap: &mut Snapshot) {
    match engine.detach_collector(collector) {
        Ok(lost) => {
            snap.lost_on_restart += lost;
            log::error!(
                "worker {index}: collector {collector} came back with memory the translator cannot use; \
                 {lost} reports not written are lost (reports_lost_on_restart_total), and its reports \
                 are refused (report_drops_total{{reason=\"collector_unusable\"}}) until it is usable"
            );
        }
        Err(e) => log::error!("worker {index}: detaching collector {collector}: {e}"),
    }
}
