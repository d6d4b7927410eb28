//! The collector's software responder daemon on DPDK, measured through its port: `MbufLoop::poll`, the
//! function `dta-collector serve --backend soft` calls in its loop on a DPDK queue (collector
//! `io_loop/mbufs.rs`), on one core, over a `net_ring` vdev. The bench plays the wire on the far side of the
//! ring: before each poll it writes the next burst of the responder bench's ring of requests (`responder.rs`:
//! WRITE ONLY of one Key-Write entry, AckReq every 16th, or FETCH_ADD) into fresh mbufs of the port's pool
//! and enqueues them, as a NIC's DMA would; after the poll it takes the responses the loop sent and frees
//! them. That part is timed apart (`emulation_ns_per_frame`), so that the data path's own cost per frame
//! (receive, the responder, responses built in mbufs, transmit) is told from the bench's.
//!
//! The floor divides this loop's rate by the responder's alone (`dta-bench responder`'s loop, no port). Run
//! as separate commands minutes apart, the two drifted with the machine's load (0.74 in one `make bench`,
//! 0.81 to 0.84 on a quiet machine): so the run alternates the two in [`ROUNDS`] slices of equal time in
//! this process, and reports the baseline measured beside it.
//!
//! The run checks what it measured, as `dta-bench responder` does: every frame received, none dropped by
//! the responder or the port, the responses due and no more, the memory holding the last pass's WRITEs (or
//! every FETCH_ADD applied once).

use std::sync::Mutex;
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use dta_collector::io_loop::mbufs::MbufLoop;
use dta_collector::responder::FaultConfig;
use dta_netio::dpdk::{attach_ring, eal_init, MbufBurst, Port, PortConfig};
use serde::Serialize;

use crate::responder::{self, Baseline, Mode, Ring, RING};
use crate::sys::thread_cpu_ns;

/// Requests the wire hands the loop per poll: one receive burst, the daemon's.
const BURST: usize = 64;
/// The vdev (a name no other bench run in the same process uses).
const DEVICE: &str = "net_ring8";
/// Slices of the daemon's loop alternated with as many of the baseline's, each `secs / (2 * ROUNDS)`.
const ROUNDS: u32 = 10;

/// What one run measured.
#[derive(Debug, Serialize)]
pub struct ResponderDaemonResult {
    pub mode: Mode,
    pub secs: f64,
    /// Requests through the port (whole passes of the ring).
    pub frames: u64,
    /// Requests per second through the port, the bench's wire included.
    pub frames_per_s: f64,
    /// Wall-clock ns per request, the bench's wire included.
    pub ns_per_frame: f64,
    /// Of those, the bench's: writing requests into mbufs, enqueueing them, taking and freeing responses.
    pub emulation_ns_per_frame: f64,
    /// Wall-clock ns per request of the daemon's loop alone (`ns_per_frame` less the emulation).
    pub data_path_ns_per_frame: f64,
    /// Requests per second of the daemon's loop alone: the row to divide by `dta-bench responder`'s.
    pub data_path_frames_per_s: f64,
    /// Thread CPU time per request, the bench's wire included.
    pub cpu_ns_per_frame: f64,
    /// Responses sent per request (1/16 for WRITEs, 1 for FETCH_ADDs).
    pub responses_per_frame: f64,
    /// Requests the responder dropped.
    pub drops: u64,
    /// Responses the port dropped (refused, or no mbuf).
    pub tx_dropped: u64,
    /// The baseline, alternated with the loop in this process: `dta-bench responder`'s loop (the responder
    /// alone, no port), requests per second over all its slices.
    pub baseline_frames_per_s: f64,
    /// `data_path_frames_per_s / baseline_frames_per_s`: the floor's ratio.
    pub ratio_to_baseline: f64,
}

/// Runs `mode` through the daemon's loop for about `secs` seconds (whole passes of the ring).
pub fn run(mode: Mode, secs: f64, eal: Vec<String>) -> Result<ResponderDaemonResult> {
    let eal = eal_init(eal).context("rte_eal_init")?;
    eal.attach(DEVICE).context(DEVICE)?;
    let cfg = PortConfig {
        max_burst: BURST as u16,
        ..PortConfig::default()
    };
    let (port, mut queues) = Port::open(eal, DEVICE, &cfg).context("open net_ring8")?;
    let queue = queues
        .first_mut()
        .ok_or_else(|| anyhow!("{DEVICE} has no queue"))?;
    // The far side of queue 0's ring: what the loop sends comes out here, what goes in here it receives.
    let (mut wire_tx, mut wire_rx) = attach_ring(eal, &format!("ETH_RXTX0_{DEVICE}"))?;
    let pool = port.pool();

    let arena = responder::arena()?;
    let ring = Ring::new(mode, &arena)?;
    let resp = Mutex::new(responder::responder(&arena));
    let mut l = MbufLoop::new(queue, &resp, &arena, FaultConfig::default());
    let mut requests = MbufBurst::with_capacity(BURST);
    let mut sent = MbufBurst::with_capacity(1024);
    let (mut frames, mut passes, mut responses) = (0u64, 0u64, 0u64);
    let mut emulation_ns = 0u64;
    let (mut wall_ns, mut cpu_ns) = (0u64, 0u64);
    let mut baseline = Baseline::new(mode)?;
    let slice = secs / f64::from(2 * ROUNDS);
    for _ in 0..ROUNDS {
        baseline.run_for(slice);
        let cpu0 = thread_cpu_ns();
        let t = Instant::now();
        while t.elapsed().as_secs_f64() < slice {
            responder::reopen(&mut *resp.lock().map_err(|_| anyhow!("responder lock"))?);
            for burst in ring.frames.chunks(BURST) {
                let e = Instant::now();
                for f in burst {
                    if !requests.push_copy(pool, f) {
                        bail!("no mbuf for a request ({} in use)", pool.in_use());
                    }
                }
                wire_tx.send(&mut requests);
                if !requests.is_empty() {
                    bail!("the ring refused requests");
                }
                emulation_ns += e.elapsed().as_nanos() as u64;
                let got = l.poll();
                let e = Instant::now();
                while wire_rx.recv(&mut sent) > 0 {
                    responses += sent.len() as u64;
                    sent.clear();
                }
                emulation_ns += e.elapsed().as_nanos() as u64;
                if got != burst.len() {
                    bail!("the loop received {got} of a burst of {}", burst.len());
                }
            }
            frames += RING as u64;
            passes += 1;
        }
        wall_ns += t.elapsed().as_nanos() as u64;
        cpu_ns += thread_cpu_ns() - cpu0;
    }
    let wall_ns = wall_ns as f64;
    let cpu = cpu_ns as f64;
    let (rx, tx) = (l.rx_stats(), l.tx_stats());
    drop(l);
    let stats = resp
        .lock()
        .map_err(|_| anyhow!("responder lock"))?
        .stats()
        .clone();
    ring.check_memory(arena.read().as_slice(), passes)?;
    let drops: u64 = stats.drops.iter().sum();
    let due = ring.responses_due(frames);
    if drops != 0 || responses != due || tx.frames != due || tx.dropped != 0 || rx.frames != frames
    {
        bail!(
            "{drops} requests dropped, {responses} responses taken and {} sent where {due} were due, \
             {} refused, {} of {frames} requests received",
            tx.frames,
            tx.dropped,
            rx.frames
        );
    }
    drop((wire_tx, wire_rx, requests, sent));
    drop(queues);
    drop(port);
    let n = frames as f64;
    let data_path_ns = (wall_ns - emulation_ns as f64) / n;
    let baseline_frames_per_s = baseline.result()?.frames_per_s;
    Ok(ResponderDaemonResult {
        mode,
        secs: wall_ns / 1e9,
        frames,
        frames_per_s: n / (wall_ns / 1e9),
        ns_per_frame: wall_ns / n,
        emulation_ns_per_frame: emulation_ns as f64 / n,
        data_path_ns_per_frame: data_path_ns,
        data_path_frames_per_s: 1e9 / data_path_ns,
        cpu_ns_per_frame: cpu / n,
        responses_per_frame: responses as f64 / n,
        drops,
        tx_dropped: tx.dropped,
        baseline_frames_per_s,
        ratio_to_baseline: 1e9 / data_path_ns / baseline_frames_per_s,
    })
}
