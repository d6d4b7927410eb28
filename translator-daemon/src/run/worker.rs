//! A worker thread: one engine (one QP per collector), fed batches of frames by the I/O thread, handing
//! its output frames back in batches. It never touches a port, so the same code serves AF_PACKET and DPDK.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dta_netio::FrameBatch;
use dta_protocol::control::Welcome;
use dta_translator::{Counters, Engine, Event, Instant, QpStats};

use super::clock::Clock;
use dta_netio::{RxStats, TxStats};

/// What a worker is told.
pub enum ToWorker {
    /// The engine, once every collector has answered (run-to-completion workers run their ports before,
    /// answering ARP and forwarding).
    Start(Box<Engine>),
    /// Frames to handle; the batch goes back to the I/O thread's pool afterwards.
    Frames(FrameBatch),
    /// Responses are waiting on the response channel (wakes a sleeping worker).
    Wake,
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

/// What a worker publishes for metrics.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Engine counters.
    pub counters: Counters,
    /// Gauges of each collector's QP.
    pub qps: Vec<QpStats>,
    /// Work requests dropped because their collector restarted with new memory.
    pub lost_on_restart: u64,
    /// Collector restarts this worker started over from.
    pub restarts: u64,
    /// QPs re-established after an error.
    pub reestablished: u64,
    /// Writes still queued or unacknowledged when the worker stopped (its collector down or slow
    /// beyond the drain time): lost, and counted.
    pub abandoned_at_stop: u64,
    /// A run-to-completion worker's data path counters.
    pub plane: PlaneCounters,
    /// A run-to-completion worker's queue of every port, in port order.
    pub ports: Vec<(RxStats, TxStats)>,
}

/// A worker's channels and shared state.
pub struct WorkerIo {
    /// Index.
    pub index: usize,
    /// Input.
    pub rx: Receiver<ToWorker>,
    /// Used input batches back to the I/O thread.
    pub recycle: Sender<FrameBatch>,
    /// RoCE responses, taken ahead of queued reports (the I/O thread sends a [`ToWorker::Wake`] after each).
    pub responses: Receiver<FrameBatch>,
    /// Used response batches back to the I/O thread.
    pub responses_recycle: Sender<FrameBatch>,
    /// Output batches to the I/O thread (worker index, frames).
    pub out: SyncSender<(usize, FrameBatch)>,
    /// Empty output batches from the I/O thread.
    pub out_pool: Receiver<FrameBatch>,
    /// Per collector: ask its control client to re-establish the QPs.
    pub qp_errors: Vec<Sender<()>>,
    /// Where snapshots go.
    pub snapshots: Arc<Mutex<Vec<Snapshot>>>,
    /// Set when the daemon stops.
    pub stop: Arc<AtomicBool>,
}

/// Longest sleep without input: bounds how late a timer fires after a burst of control messages.
const MAX_IDLE: Duration = Duration::from_millis(5);
/// How often a worker publishes its counters to the metrics thread.
pub const PUBLISH_EVERY: Duration = Duration::from_millis(100);
/// How long shutdown waits for the collector to acknowledge what was sent.
pub const DRAIN: Duration = Duration::from_secs(2);

/// Runs until `stop`, then flushes everything batched and waits (bounded) for it to be acknowledged.
pub fn run(mut engine: Engine, io: WorkerIo, clock: Clock) {
    let mut snap = Snapshot::default();
    let mut last_publish = Instant::ZERO;
    let mut scratch = Vec::with_capacity(2048);
    let mut stopping_since: Option<Instant> = None;
    let mut spare = None;
    loop {
        let now = clock.now();
        let wait = engine
            .poll_timeout()
            .map(|t| t - now)
            .unwrap_or(MAX_IDLE)
            .min(MAX_IDLE);
        match io.rx.recv_timeout(wait) {
            Ok(msg) => {
                responses(&mut engine, &io, &clock);
                handle(&mut engine, &io, msg, &clock, &mut snap);
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        // Take everything else that is waiting before transmitting, so output batches fill up; responses
        // go first each time, so a backlog of reports does not delay ACKs into spurious timeouts.
        while let Ok(msg) = io.rx.try_recv() {
            responses(&mut engine, &io, &clock);
            handle(&mut engine, &io, msg, &clock, &mut snap);
        }
        responses(&mut engine, &io, &clock);
        let now = clock.now();
        engine.handle_timeout(now);
        while let Some(Event::QpError { collector, error }) = engine.poll_event() {
            log::warn!(
                "worker {}: QP to collector {collector} failed: {error:?}",
                io.index
            );
            if let Some(tx) = io.qp_errors.get(collector) {
                let _ = tx.send(());
            }
        }
        transmit(&mut engine, &io, &clock, &mut scratch, &mut spare);
        if now >= last_publish + PUBLISH_EVERY {
            publish(&engine, &io, &mut snap);
            last_publish = now;
        }
        if io.stop.load(Ordering::Relaxed) {
            let t = *stopping_since.get_or_insert_with(|| {
                engine.flush(now);
                now
            });
            if engine.is_idle() || now > t + DRAIN {
                snap.abandoned_at_stop = abandoned_at_stop(&engine, io.index);
                break;
            }
        }
    }
    publish(&engine, &io, &mut snap);
}

/// Counts and logs the writes an engine still holds when its worker stops (queued or unacknowledged).
pub fn abandoned_at_stop(engine: &Engine, index: usize) -> u64 {
    if engine.is_idle() {
        return 0;
    }
    let (queued, unacked) = (0..)
        .map_while(|i| engine.qp_stats(i))
        .fold((0, 0), |(q, w), s| (q + s.queue, w + s.window));
    log::warn!(
        "worker {index}: stopping with {queued} writes queued and {unacked} unacknowledged; \
         they are lost (writes_abandoned_at_stop_total)"
    );
    (queued + unacked) as u64
}

/// Handles every response batch waiting.
fn responses(engine: &mut Engine, io: &WorkerIo, clock: &Clock) {
    while let Ok(batch) = io.responses.try_recv() {
        // Responses are RoCE from a collector: none is forwarded.
        engine.handle_frames(clock.now(), batch.iter(), |_| {});
        let _ = io.responses_recycle.send(batch);
    }
}

fn handle(engine: &mut Engine, io: &WorkerIo, msg: ToWorker, clock: &Clock, snap: &mut Snapshot) {
    match msg {
        ToWorker::Frames(batch) => {
            // One call per burst. Not-for-us frames never reach a worker: the I/O thread forwards them
            // itself.
            engine.handle_frames(clock.now(), batch.iter(), |_| {});
            let _ = io.recycle.send(batch);
        }
        other => control(engine, io.index, other, clock.now(), snap),
    }
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
        ToWorker::Wake | ToWorker::Frames(_) | ToWorker::Start(_) => {}
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
                    "worker {index}: collector {collector} restarted with new memory; {lost} queued or unacknowledged writes lost"
                );
            }
            Err(e) => log::error!("worker {index}: collector {collector} after restart: {e}"),
        },
    }
}

/// Moves every frame the engine may send now into output batches. Without a free output batch the
/// frames stay in the engine (its window and queue are the backpressure), so nothing is lost here.
fn transmit(
    engine: &mut Engine,
    io: &WorkerIo,
    clock: &Clock,
    scratch: &mut Vec<u8>,
    spare: &mut Option<FrameBatch>,
) {
    let now = clock.now();
    loop {
        let mut batch = match spare.take() {
            Some(b) => b,
            None => match io.out_pool.try_recv() {
                Ok(b) => b,
                Err(_) => return,
            },
        };
        batch.clear();
        while batch.free() > 0 {
            // The engine writes each frame straight into the batch slot (no copy through `scratch`).
            match batch.push_with(|slot| engine.poll_transmit_into(now, slot).unwrap_or(0)) {
                Ok(n) if n > 0 => continue,
                Ok(_) | Err(_) => {}
            }
            // Nothing went into the slot: nothing may go now. (A frame longer than a slot cannot occur:
            // the slots hold a frame at the largest path MTU the engine accepts, 4096. The copying path
            // would report one.)
            if engine.poll_transmit(now, scratch) && batch.push(scratch).is_err() {
                log::error!(
                    "worker {}: a {}-byte frame does not fit a batch slot",
                    io.index,
                    scratch.len()
                );
            }
            break;
        }
        if batch.is_empty() {
            *spare = Some(batch);
            return;
        }
        let full = batch.free() == 0;
        if io.out.send((io.index, batch)).is_err() || !full {
            return;
        }
    }
}

fn publish(engine: &Engine, io: &WorkerIo, snap: &mut Snapshot) {
    snap.counters = engine.counters().clone();
    snap.qps = (0..).map_while(|i| engine.qp_stats(i)).collect();
    if let Ok(mut all) = io.snapshots.lock() {
        all[io.index] = snap.clone();
    }
}
