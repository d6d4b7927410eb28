//! The software responder's I/O loop: receive a burst, pass it through fault injection (when configured)
//! and the sans-IO responder, send the burst of responses. Nothing protocol-related happens here.
//!
//! Two loops share one call path to the responder ([`answer::Locked::answer`]), one lock of the responder
//! and the arena per burst, and no allocation per frame unless fault injection (which holds frames back to
//! reorder them) is on:
//! * on DPDK, [`mbufs::MbufLoop`] runs to completion on the queue: requests are read in the mbufs the
//!   device wrote, responses built in mbufs and sent as a burst, no frame copied;
//! * on AF_PACKET (whose kernel ring copies every frame anyway), [`batch::BatchLoop`] receives into and
//!   sends from frame batches.

pub mod answer;
pub mod batch;
pub mod intake;
#[cfg(feature = "dpdk")]
pub mod mbufs;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use dta_netio::{NetioError, OpenPort as Port, RxStats, TxStats};

use crate::error::{Error, Result};
use crate::memory::Arena;
use crate::metrics::{Metrics, PortCounters};
use crate::responder::{FaultConfig, FaultCounts, Responder};

/// How often counters are published to the metrics.
const PUBLISH_EVERY: Duration = Duration::from_millis(200);

/// One port's loop as the daemon drives it.
pub trait PortLoop {
    /// Receives a burst, answers it and sends the responses; returns how many frames were received.
    fn poll(&mut self) -> std::result::Result<usize, NetioError>;
    /// Called after each empty poll (`empty_polls` in a row so far): waits for input or sleeps briefly, so
    /// that an idle collector does not hold a core.
    fn idle(&mut self, empty_polls: u32) -> std::result::Result<(), NetioError>;
    /// The port's counters and what fault injection did.
    fn stats(&self) -> (RxStats, TxStats, FaultCounts);
    /// Whether the port's link is up, where the port can tell (a DPDK port: a `net_memif` port is down
    /// while its peer is gone); `None` otherwise.
    fn link_up(&self) -> Option<bool> {
        None
    }
}

/// How long a poll waits before trying a port whose link is down again.
const LINK_DOWN_WAIT: std::time::Duration = std::time::Duration::from_millis(10);

fn io_error(port: &str, e: NetioError) -> Error {
    Error::Io {
        context: format!("port {port}"),
        source: std::io::Error::other(e.to_string()),
    }
}

/// Runs the responder on `port` until `stop` is set: the mbuf loop on a DPDK queue, the batch loop on any
/// other port.
pub fn run(
    port: &mut Port,
    responder: &Mutex<Responder>,
    arena: &Arena,
    faults: FaultConfig,
    metrics: &Metrics,
    stop: &AtomicBool,
) -> Result<()> {
    let name = port.name.clone();
    #[cfg(feature = "dpdk")]
    if let Some(queue) = port.dpdk_queue() {
        let mut l = mbufs::MbufLoop::new(queue, responder, arena, faults);
        return drive(&mut l, &name, responder, metrics, stop);
    }
    let mut l = batch::BatchLoop::new(&mut *port.io, responder, arena, faults);
    drive(&mut l, &name, responder, metrics, stop)
}

/// Polls `l` until `stop`, publishing its counters every [`PUBLISH_EVERY`] and once more at the end.
fn drive(
    l: &mut impl PortLoop,
    name: &str,
    responder: &Mutex<Responder>,
    metrics: &Metrics,
    stop: &AtomicBool,
) -> Result<()> {
    let mut last_publish = Instant::now();
    let mut empty = 0u32;
    let mut link_down = 0u64;
    let mut link = LinkLog::default();
    while !stop.load(Ordering::Relaxed) {
        let got = match l.poll() {
            Ok(n) => n,
            // A link that went down comes back: the responder waits, its memory intact, and the
            // translator resends what was not acknowledged meanwhile.
            Err(e) if e.is_link_down() => {
                link_down += 1;
                if link_down == 1 || link_down.is_power_of_two() {
                    log::warn!("port {name}: {e}; waiting for the link ({link_down} polls so far)");
                }
                std::thread::sleep(LINK_DOWN_WAIT);
                continue;
            }
            Err(e) => return Err(io_error(name, e)),
        };
        if last_publish.elapsed() >= PUBLISH_EVERY {
            link.observe(name, l.link_up());
            publish(l, responder, metrics);
            last_publish = Instant::now();
        }
        if got > 0 {
            empty = 0;
        } else {
            empty = empty.saturating_add(1);
            match l.idle(empty) {
                Ok(()) => {}
                Err(e) if e.is_link_down() => std::thread::sleep(LINK_DOWN_WAIT),
                Err(e) => return Err(io_error(name, e)),
            }
        }
    }
    publish(l, responder, metrics);
    Ok(())
}

/// The port's link as last seen, logged when it changes: a DPDK port's device drops what it is given while
/// its link is down, and the translator resends what was not acknowledged once it is back.
#[derive(Default)]
struct LinkLog {
    up: Option<bool>,
    downs: u64,
    since: Option<Instant>,
}

impl LinkLog {
    fn observe(&mut self, name: &str, state: Option<bool>) {
        match (self.up, state) {
            (None, Some(false)) => {
                self.since = Some(Instant::now());
                log::info!("port {name}: link down (waiting for its peer)");
            }
            (Some(true), Some(false)) => {
                self.downs += 1;
                self.since = Some(Instant::now());
                log::warn!(
                    "port {name}: link down (its peer is gone; {} time(s) so far); the memory is kept",
                    self.downs
                );
            }
            (Some(false), Some(true)) => {
                let away = self.since.take().map_or(0, |t| t.elapsed().as_millis());
                log::info!("port {name}: link up after {away} ms");
            }
            _ => {}
        }
        if state.is_some() {
            self.up = state;
        }
    }
}

fn publish(l: &impl PortLoop, responder: &Mutex<Responder>, metrics: &Metrics) {
    let (rx, tx, faults) = l.stats();
    {
        let r = responder.lock().unwrap_or_else(|e| e.into_inner());
        metrics.publish_responder(r.stats(), faults);
    }
    metrics.publish_port(PortCounters {
        rx_frames: rx.frames,
        rx_dropped: rx.dropped,
        rx_missed: rx.missed,
        tx_frames: tx.frames,
        tx_dropped: tx.dropped,
    });
}
