//! The software responder's I/O loop: receive a burst, pass it through fault injection (when configured)
//! and the sans-IO responder, send the burst of responses. Nothing protocol-related happens here.
//!
//! One lock of the responder and the arena per burst, not per frame, and no allocation per frame unless
//! fault injection (which holds frames back to reorder them) is on.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use dta_netio::{FrameBatch, NetioError, OpenPort as Port};

use crate::error::{Error, Result};
use crate::memory::Arena;
use crate::metrics::{Metrics, PortCounters};
use crate::responder::{FaultConfig, FaultInjector, Outcome, Responder, RESPONSE_MAX};

/// How long an idle loop waits for input before it checks for shutdown and releases held frames.
const IDLE_WAIT: Duration = Duration::from_millis(100);
/// How often counters are published to the metrics.
const PUBLISH_EVERY: Duration = Duration::from_millis(200);
/// Frames per burst.
const BURST: usize = 64;
/// Largest frame received (jumbo frames included).
const MAX_FRAME: usize = 9216;

fn io_error(port: &str, e: NetioError) -> Error {
    Error::Io {
        context: format!("port {port}"),
        source: std::io::Error::other(e.to_string()),
    }
}

/// Runs the responder on `port` until `stop` is set.
pub fn run(
    port: &mut Port,
    responder: &Mutex<Responder>,
    arena: &Arena,
    faults: FaultConfig,
    metrics: &Metrics,
    stop: &AtomicBool,
) -> Result<()> {
    let mut injector = faults.is_active().then(|| FaultInjector::new(faults));
    let mut rx = FrameBatch::new(BURST, MAX_FRAME);
    let mut tx = FrameBatch::new(BURST * 2, RESPONSE_MAX);
    let mut deliver: Vec<Vec<u8>> = Vec::new();
    let mut out = [0u8; RESPONSE_MAX];
    let mut last_publish = Instant::now();
    let name = port.name.clone();
    while !stop.load(Ordering::Relaxed) {
        rx.clear();
        let got = port
            .io
            .recv_burst(&mut rx)
            .map_err(|e| io_error(&name, e))?;
        match injector.as_mut() {
            Some(inj) if got > 0 => rx.iter().for_each(|f| inj.push(f, &mut deliver)),
            Some(inj) => inj.flush(&mut deliver),
            None => {}
        }
        let pending = if injector.is_some() {
            deliver.len()
        } else {
            got
        };
        if pending > 0 {
            let mut r = responder.lock().unwrap_or_else(|e| e.into_inner());
            let mut mem = arena.write();
            let mem = mem.as_mut_slice();
            let mut respond = |frame: &[u8], tx: &mut FrameBatch| -> Result<()> {
                if let Outcome::Respond(n) = r.handle(frame, mem, &mut out) {
                    if tx.free() == 0 {
                        send(port, tx, &name)?;
                    }
                    // A slot holds RESPONSE_MAX bytes, the most a response has.
                    let _ = tx.push(&out[..n]);
                }
                Ok(())
            };
            if injector.is_some() {
                for frame in deliver.drain(..) {
                    respond(&frame, &mut tx)?;
                }
            } else {
                for frame in rx.iter() {
                    respond(frame, &mut tx)?;
                }
            }
        }
        if !tx.is_empty() {
            send(port, &mut tx, &name)?;
        }
        if last_publish.elapsed() >= PUBLISH_EVERY {
            publish(port, responder, injector.as_ref(), metrics);
            last_publish = Instant::now();
        }
        if got == 0 {
            port.io.wait(IDLE_WAIT).map_err(|e| io_error(&name, e))?;
        }
    }
    publish(port, responder, injector.as_ref(), metrics);
    Ok(())
}

fn send(port: &mut Port, tx: &mut FrameBatch, name: &str) -> Result<()> {
    // Frames the port refuses are counted in its TX statistics (published as drops); the translator
    // retransmits what was not acknowledged.
    port.io.send_burst(tx).map_err(|e| io_error(name, e))?;
    tx.clear();
    Ok(())
}

fn publish(
    port: &Port,
    responder: &Mutex<Responder>,
    injector: Option<&FaultInjector>,
    metrics: &Metrics,
) {
    let r = responder.lock().unwrap_or_else(|e| e.into_inner());
    metrics.publish_responder(r.stats(), injector.map(|i| i.counts()).unwrap_or_default());
    let (rx, tx) = (port.io.rx_stats(), port.io.tx_stats());
    metrics.publish_port(PortCounters {
        rx_frames: rx.frames,
        rx_dropped: rx.dropped,
        rx_missed: rx.missed,
        tx_frames: tx.frames,
        tx_dropped: tx.dropped,
    });
}
