//! The I/O thread: owns the ports, answers ARP for the translator's address, forwards every frame that is
//! not DTA or our RoCE to the other port untouched (bump in the wire), steers the rest to the worker that
//! owns its state, and transmits what the workers produce (RoCE towards the collectors, DTA NACKs back to
//! the reporters). Batches travel between threads and come back, so steady state allocates nothing.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use dta_netio::{FrameBatch, RxStats, TxStats, DEFAULT_SLOT_SIZE};
use dta_protocol::roce::ROCEV2_UDP_PORT;
use dta_protocol::udp::UdpFrame;

use super::arp;
use super::ports::Port;
use super::steer::{Steering, Target};
use super::worker::ToWorker;

/// A worker's two inputs: reports, and RoCE responses that overtake them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lane {
    Reports,
    Responses,
}

/// Counters of the I/O thread.
#[derive(Debug, Default)]
pub struct IoCounters {
    /// Frames forwarded untouched to the other port.
    pub forwarded: AtomicU64,
    /// Frames neither ours nor forwardable (single-port mode).
    pub not_forwarded: AtomicU64,
    /// ARP requests for our address answered.
    pub arp_replies: AtomicU64,
    /// Frames for a worker dropped at shutdown, when the worker no longer takes input.
    pub worker_backlog_drops: AtomicU64,
    /// Reports and responses that arrived before the workers started (while the collectors were still
    /// being connected): dropped, since there is no engine to take them yet.
    pub startup_drops: AtomicU64,
    /// Frames the workers produced and handed to a port.
    pub engine_frames_out: AtomicU64,
}

/// Per port: name and counters, for metrics.
pub type PortStats = Vec<(String, RxStats, TxStats)>;

/// What the I/O thread works with.
pub struct IoThread {
    /// The ports.
    pub ports: Vec<Port>,
    /// Steering.
    pub steering: Steering,
    /// Where RoCE frames leave.
    pub collector_port: usize,
    /// The MAC ARP replies carry.
    pub local_mac: [u8; 6],
    /// Each worker's input.
    pub workers: Vec<Sender<ToWorker>>,
    /// Each worker's used input batches.
    pub recycled: Vec<Receiver<FrameBatch>>,
    /// Each worker's response channel (RoCE responses overtake queued reports).
    pub responses: Vec<Sender<FrameBatch>>,
    /// Each worker's used response batches.
    pub responses_recycled: Vec<Receiver<FrameBatch>>,
    /// Output from the workers.
    pub out_rx: Receiver<(usize, FrameBatch)>,
    /// Empty output batches back to each worker.
    pub out_return: Vec<Sender<FrameBatch>>,
    /// Counters.
    pub counters: Arc<IoCounters>,
    /// Port counters, published periodically.
    pub port_stats: Arc<Mutex<PortStats>>,
    /// Set when the daemon stops.
    pub stop: Arc<AtomicBool>,
    /// Set once every worker runs; until then the ports only answer ARP and forward.
    pub workers_started: Arc<AtomicBool>,
    /// Frames per burst.
    pub burst: usize,
}

/// Input batches per worker: how far a worker may fall behind before the I/O thread drops its frames.
pub const INPUT_BATCHES: usize = 64;
/// Output batches per worker.
pub const OUTPUT_BATCHES: usize = 8;
/// Slot size of the workers' output batches: the longest frame the engine emits, an RDMA WRITE at the
/// largest IB path MTU (4096 payload bytes, which the engine refuses to exceed) with its Ethernet, IPv4, UDP,
/// BTH and RETH headers and the iCRC, rounded up. A 2 KiB slot held frames up to a path MTU of about
/// 1,900 bytes only, and a frame that did not fit was taken out of the engine and lost.
pub const OUTPUT_SLOT_SIZE: usize = 4096 + 128;
/// Response batches per worker: responses are few (one per AckReq) and handled first.
pub const RESPONSE_BATCHES: usize = 8;
/// Learned MAC addresses kept at most (a flood of random source MACs must not grow memory).
const MAX_LEARNED: usize = 4096;

impl IoThread {
    /// Runs until `stop`.
    pub fn run(mut self) -> Result<()> {
        let n = self.ports.len();
        let slot = DEFAULT_SLOT_SIZE;
        let mut rx = FrameBatch::new(self.burst, slot);
        let mut fwd = FrameBatch::new(self.burst, slot);
        let mut replies = FrameBatch::new(self.burst, slot);
        // Per-port copies of the workers' frames: their slot size.
        let mut tx: Vec<FrameBatch> = (0..n)
            .map(|_| FrameBatch::new(self.burst, OUTPUT_SLOT_SIZE))
            .collect();
        let mut pending: Vec<Option<FrameBatch>> = (0..self.workers.len()).map(|_| None).collect();
        let mut pending_resp: Vec<Option<FrameBatch>> =
            (0..self.workers.len()).map(|_| None).collect();
        let mut learned: HashMap<[u8; 6], usize> = HashMap::new();
        let mut arp_buf = [0u8; arp::ARP_FRAME_LEN];
        let mut last_publish = Instant::now();
        let local_ip = self.steering.local_ip;
        let mut started = false;
        while !self.stop.load(Ordering::Relaxed) {
            let mut busy = false;
            for p in 0..n {
                rx.clear();
                let got = self.ports[p]
                    .io
                    .recv_burst(&mut rx)
                    .with_context(|| format!("receiving on {}", self.ports[p].name))?;
                if got == 0 {
                    continue;
                }
                busy = true;
                fwd.clear();
                replies.clear();
                // Latched once per burst, so that steady state reads no shared flag per frame.
                started = started || self.workers_started.load(Ordering::Relaxed);
                for f in rx.iter() {
                    match self.steering.target(f) {
                        // No engine yet (collectors still connecting): waiting for a batch here would
                        // stop ARP, which the collector's QP setup needs.
                        Target::Worker(_) | Target::Any(_) | Target::Response(_) if !started => {
                            self.counters.startup_drops.fetch_add(1, Ordering::Relaxed);
                        }
                        Target::Worker(k) | Target::Any(k) => {
                            if f.len() >= 12 && learned.len() < MAX_LEARNED {
                                let mut mac = [0u8; 6];
                                mac.copy_from_slice(&f[6..12]);
                                learned.insert(mac, p);
                            }
                            self.queue(Lane::Reports, k, f, &mut pending, &mut tx, &learned)?;
                        }
                        // A response is taken only from the collectors' side: one from the reporters'
                        // could be forged. It crosses the bump like any frame not ours.
                        Target::Response(_) if n == 2 && p != self.collector_port => {
                            self.forward(f, &mut fwd)
                        }
                        Target::Response(k) => {
                            self.queue(Lane::Responses, k, f, &mut pending_resp, &mut tx, &learned)?
                        }
                        Target::Arp => {
                            if let Some(len) = arp::reply(f, local_ip, self.local_mac, &mut arp_buf)
                            {
                                let _ = replies.push(&arp_buf[..len]);
                                self.counters.arp_replies.fetch_add(1, Ordering::Relaxed);
                            } else {
                                self.forward(f, &mut fwd);
                            }
                        }
                        Target::Forward => self.forward(f, &mut fwd),
                    }
                }
                if !fwd.is_empty() {
                    self.ports[1 - p].io.send_burst(&fwd)?;
                }
                if !replies.is_empty() {
                    self.ports[p].io.send_burst(&replies)?;
                }
            }
            // Responses first: they retire frames and open the workers' windows.
            self.flush(Lane::Responses, &mut pending_resp);
            self.flush(Lane::Reports, &mut pending);
            busy |= self.drain_output(&mut tx, &learned)?;
            if last_publish.elapsed() >= Duration::from_millis(100) {
                self.publish();
                last_publish = Instant::now();
            }
            if !busy {
                for port in &self.ports {
                    port.io.wait(Duration::from_micros(100))?;
                }
            }
        }
        self.publish();
        Ok(())
    }

    fn forward(&self, f: &[u8], fwd: &mut FrameBatch) {
        if self.ports.len() == 2 && fwd.push(f).is_ok() {
            self.counters.forwarded.fetch_add(1, Ordering::Relaxed);
        } else {
            self.counters.not_forwarded.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Hands worker `k` a filled batch on `lane`; a worker that is gone (stopping) loses it, counted.
    fn deliver(&self, lane: Lane, k: usize, b: FrameBatch) {
        let sent = match lane {
            Lane::Reports => self.workers[k].send(ToWorker::Frames(b)).is_ok(),
            // The wake makes a sleeping worker look at its response channel; a busy one looks anyway.
            Lane::Responses => {
                self.responses[k].send(b).is_ok() && self.workers[k].send(ToWorker::Wake).is_ok()
            }
        };
        if !sent {
            self.counters
                .worker_backlog_drops
                .fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Hands every worker its partly filled batch on `lane`.
    fn flush(&self, lane: Lane, pending: &mut [Option<FrameBatch>]) {
        for (k, slot) in pending.iter_mut().enumerate() {
            if let Some(b) = slot.take() {
                self.deliver(lane, k, b);
            }
        }
    }

    /// Queues a frame for worker `k` on `lane`. When all of the worker's batches of that lane are in use,
    /// the I/O thread waits for one instead of dropping (an ACK dropped here costs a retransmission storm
    /// later): the frames wait in the kernel's socket buffer or the NIC's ring meanwhile, and the worker's
    /// output keeps flowing so that the worker is never stuck behind us.
    fn queue(
        &mut self,
        lane: Lane,
        k: usize,
        f: &[u8],
        pending: &mut [Option<FrameBatch>],
        tx: &mut [FrameBatch],
        learned: &HashMap<[u8; 6], usize>,
    ) -> Result<()> {
        if pending[k].as_ref().is_some_and(|b| b.free() == 0) {
            if let Some(full) = pending[k].take() {
                self.deliver(lane, k, full);
            }
        }
        while pending[k].is_none() {
            let pool = match lane {
                Lane::Reports => &self.recycled[k],
                Lane::Responses => &self.responses_recycled[k],
            };
            match pool.recv_timeout(Duration::from_micros(200)) {
                Ok(mut b) => {
                    b.clear();
                    pending[k] = Some(b);
                }
                Err(_) if self.stop.load(Ordering::Relaxed) => break,
                Err(_) => {
                    self.drain_output(tx, learned)?;
                }
            }
        }
        if !pending[k].as_mut().is_some_and(|b| b.push(f).is_ok()) {
            self.counters
                .worker_backlog_drops
                .fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Transmits every output batch the workers have ready; true if there was any.
    fn drain_output(
        &mut self,
        tx: &mut [FrameBatch],
        learned: &HashMap<[u8; 6], usize>,
    ) -> Result<bool> {
        let mut any = false;
        while let Ok((k, batch)) = self.out_rx.try_recv() {
            any = true;
            self.transmit(&batch, tx, learned)?;
            let _ = self.out_return[k].send(batch);
        }
        Ok(any)
    }

    /// Sends a worker's frames: RoCE out of the collector port, anything else (DTA NACKs) out of the port
    /// its destination was last seen on, else the first other port.
    fn transmit(
        &mut self,
        batch: &FrameBatch,
        tx: &mut [FrameBatch],
        learned: &HashMap<[u8; 6], usize>,
    ) -> Result<()> {
        let n = self.ports.len();
        self.counters
            .engine_frames_out
            .fetch_add(batch.len() as u64, Ordering::Relaxed);
        // The common case, every frame RoCE (DTA NACKs are rare) or a single port: the worker's batch goes
        // out as it is, without a copy.
        if n == 1 || batch.iter().all(is_roce) {
            self.ports[self.collector_port].io.send_burst(batch)?;
            return Ok(());
        }
        for b in tx.iter_mut() {
            b.clear();
        }
        for f in batch.iter() {
            let p = if is_roce(f) {
                self.collector_port
            } else {
                f.get(0..6)
                    .and_then(|m| learned.get(m))
                    .copied()
                    .unwrap_or(1 - self.collector_port)
            };
            if tx[p].free() == 0 {
                self.ports[p].io.send_burst(&tx[p])?;
                tx[p].clear();
            }
            // The port batches have the workers' slot size and room (checked above): this cannot fail.
            if let Err(e) = tx[p].push(f) {
                log::error!("a worker's frame was not sent: {e}");
            }
        }
        for (p, b) in tx.iter().enumerate() {
            if !b.is_empty() {
                self.ports[p].io.send_burst(b)?;
            }
        }
        Ok(())
    }

    fn publish(&self) {
        if let Ok(mut s) = self.port_stats.lock() {
            *s = self
                .ports
                .iter()
                .map(|p| (p.name.clone(), p.rx_stats(), p.tx_stats()))
                .collect();
        }
    }
}

/// Whether `f` is a RoCEv2 datagram (this runs for every frame a worker sends: the engine's frames take the
/// parse's fixed-offset path).
fn is_roce(f: &[u8]) -> bool {
    UdpFrame::parse(f).is_ok_and(|u| u.endpoints.dst_port == ROCEV2_UDP_PORT)
}

#[cfg(test)]
mod tests {
    use super::OUTPUT_SLOT_SIZE;
    use dta_translator::frames::{Op, Payload};

    /// A WRITE at the largest IB path MTU (4096 payload bytes) fits an output slot: 14 Ethernet + 20 IPv4
    /// + 8 UDP + 12 BTH + 16 RETH + 4096 + 4 iCRC = 4170 bytes.
    #[test]
    fn the_largest_frame_fits_an_output_slot() {
        let op = Op::Write {
            va: 0,
            rkey: 0,
            payload: Payload::from_slice(&[0u8; 4096]),
        };
        assert_eq!(op.frame_len(), 4170);
        assert!(op.frame_len() <= OUTPUT_SLOT_SIZE);
    }
}
