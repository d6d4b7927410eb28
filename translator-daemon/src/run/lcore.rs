//! A run-to-completion worker thread on DPDK: its [`DataPlane`] polled in a loop, with its engine (once the
//! collectors have answered), control messages, QP error reports, metrics snapshots and the graceful stop
//! around it. The data path is `DataPlane::poll`; everything here runs between polls and touches no frame.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dta_translator::{Engine, Event, Instant};

use super::clock::Clock;
use super::dataplane::io::Queue;
use super::dataplane::DataPlane;
use super::link::LinkWatch;
use super::worker::{abandoned_at_stop, control, Snapshot, ToWorker, DRAIN, PUBLISH_EVERY};

/// Longest wait of an idle worker between polls (its queues may wait less: a DPDK worker sleeps 50 us),
/// which keeps an idle daemon from holding a core on a shared machine and bounds how late a timer fires.
const IDLE_WAIT: Duration = Duration::from_millis(1);

/// What a worker thread is given besides its data path.
pub struct LcoreIo {
    /// Index.
    pub index: usize,
    /// The engine, then control messages.
    pub rx: Receiver<ToWorker>,
    /// Per collector: ask its control client to re-establish the QPs.
    pub qp_errors: Vec<Sender<()>>,
    /// Where snapshots go.
    pub snapshots: Arc<Mutex<Vec<Snapshot>>>,
    /// Set when the daemon stops.
    pub stop: Arc<AtomicBool>,
    /// The ports' names, in port order (worker 0 watches their links).
    pub ports: Vec<String>,
    /// Workers that hold their engine (each adds one when it takes it).
    pub engines_taken: Arc<AtomicUsize>,
}

/// Runs until `stop`; then flushes the engine and keeps polling (the collector's ACKs come in through the
/// ports) until everything is acknowledged or the drain time is up.
pub fn run<Q: Queue>(mut plane: DataPlane<Q>, io: LcoreIo, clock: Clock) {
    let mut engine: Option<Box<Engine>> = None;
    let mut snap = Snapshot::default();
    let mut last_publish = Instant::ZERO;
    let mut stopping_since: Option<Instant> = None;
    // Empty polls in a row before the worker sleeps between polls: at full load it never sleeps, and a
    // burst after a pause finds it spinning for a while (a sleep of 50 us at line rate could overflow
    // a 1024-descriptor ring).
    let spin = plane.idle_spin();
    let mut idle = 0u32;
    // One worker watches the links (every worker has a queue of every port).
    let mut links = (io.index == 0).then(|| LinkWatch::new(&io.ports));
    loop {
        let now = clock.now();
        let busy = plane.poll(engine.as_deref_mut(), now);
        match io.rx.try_recv() {
            Ok(ToWorker::Start(e)) => {
                engine = Some(e);
                io.engines_taken.fetch_add(1, Ordering::Release);
            }
            Ok(msg) => {
                if let Some(e) = engine.as_deref_mut() {
                    control(e, io.index, msg, now, &mut snap);
                }
            }
            // The daemon is going away without a stop (it failed): stop with it.
            Err(TryRecvError::Disconnected) if engine.is_none() => break,
            Err(_) => {}
        }
        if let Some(e) = engine.as_deref_mut() {
            while let Some(Event::QpError { collector, error }) = e.poll_event() {
                log::warn!(
                    "worker {}: QP to collector {collector} failed: {error:?}",
                    io.index
                );
                if let Some(tx) = io.qp_errors.get(collector) {
                    let _ = tx.send(());
                }
            }
        }
        if now >= last_publish + PUBLISH_EVERY {
            if let Some(w) = links.as_mut() {
                w.observe(&plane.link_states(), now);
                snap.links = w.states();
            }
            publish(&plane, engine.as_deref(), &io, &mut snap);
            last_publish = now;
        }
        if io.stop.load(Ordering::Relaxed) {
            let Some(e) = engine.as_deref_mut() else {
                break;
            };
            let t = *stopping_since.get_or_insert(now);
            // Every poll while stopping, not once: reports keep arriving during the drain, and one
            // taken after a single flush sat in a batch that nothing wrote when the QPs went idle (lost
            // without a count). Flushed here, it is written, or counted below if not acknowledged.
            e.flush(now);
            if e.is_idle() || now > t + DRAIN {
                snap.abandoned_at_stop = abandoned_at_stop(e, io.index);
                break;
            }
        }
        if busy {
            idle = 0;
        } else {
            idle = idle.saturating_add(1);
            if idle > spin {
                let timer = engine
                    .as_deref()
                    .and_then(Engine::poll_timeout)
                    .map_or(IDLE_WAIT, |t| t - now);
                plane.idle_wait(timer.min(IDLE_WAIT));
            }
        }
    }
    publish(&plane, engine.as_deref(), &io, &mut snap);
}

fn publish<Q: Queue>(
    plane: &DataPlane<Q>,
    engine: Option<&Engine>,
    io: &LcoreIo,
    snap: &mut Snapshot,
) {
    if let Some(e) = engine {
        snap.counters = e.counters().clone();
        snap.qps = (0..).map_while(|i| e.qp_stats(i)).collect();
    }
    snap.plane = plane.counters();
    snap.ports = plane.port_stats();
    if let Ok(mut all) = io.snapshots.lock() {
        all[io.index] = snap.clone();
    }
}
