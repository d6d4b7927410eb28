//! The daemon's own data path, measured: each worker thread runs `dta-translator run`'s
//! [`DataPlane::poll`] (the function its worker loop calls; see translator-daemon `run/lcore.rs`) over a
//! queue of two DPDK ports, with the handoff rings between workers that the daemon makes.
//!
//! * Reporter side: `net_null` with `copy=0` and `size` = the report length, whose pool is pre-filled with
//!   the workload's report frames ([`Mempool::prefill`]): it "receives" reports at the cost of an mbuf
//!   allocation, like a NIC that wrote them.
//! * Collector side: `net_ring`, whose queue `k` is one ring for both directions. After each poll the
//!   worker's thread takes the RoCE frames the data path sent from that ring, answers each AckReq and each
//!   FETCH_ADD as an RNIC would ([`Acker`], a templated responder, with its cost measured apart),
//!   and puts the responses on the same ring, where the next poll receives them through the port: the engine
//!   gets real ACKs through the daemon's classification and handoff, not a side door.
//!
//! `forward` measures the bump in the wire: the data path without an engine between a looping `net_pcap`
//! of non-DTA frames and a `net_null` sink, the vdevs testpmd's io forwarding runs on in the same script.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use dta_netio::dpdk::{
    attach_ring, eal_init, register_thread, DpdkQueue, Eal, HandoffRx, HandoffTx, MbufBurst,
    Mempool, Port, PortConfig,
};
use dta_translator::{Engine, Instant};
use dta_translator_daemon::run::dataplane::dpdk::handoff_mesh;
use dta_translator_daemon::run::dataplane::{pool_mbufs, DataPlane, PlaneConfig};
use dta_translator_daemon::run::steer::Steering;
use serde::Serialize;

use crate::acker::{ack_build_ns, Acker};
use crate::sys::{thread_cpu_ns, vm_hwm_kib};
use crate::workloads::{self, Mode, TRANSLATOR_IP, TRANSLATOR_MAC};

/// Frames per receive burst, as the daemon's default `[io] burst`.
const BURST: usize = 64;
/// The requester's window here: the bench's collector answers once per poll, so its round trip is a whole
/// poll (two workers: up to two bursts of reports, ~280 frames for INT), where a RoCE NIC's is a few µs
/// (~50 frames at 10 M frames/s, well inside the default 256). With the default, the emulated round trip,
/// not the data path, would bound two workers (`queue_full` drops).
const WINDOW: u32 = 1024;

/// What one worker measured.
#[derive(Debug, Default, Clone, Serialize)]
pub struct WorkerResult {
    pub reports: u64,
    pub frames_out: u64,
    pub acks_fed: u64,
    pub handed_off: u64,
    pub handoff_waits: u64,
    pub forwarded: u64,
    pub cpu_ns: u64,
    pub wall_ns: u64,
    /// Of the wall time, the bench's part: the collector's answers and the NIC's writes of new reports.
    pub emulation_ns: u64,
    pub report_drops: u64,
    /// Report drops by reason: the DTA reasons, then the INT ones (dta-translator's counter order).
    pub drops_by_reason: Vec<u64>,
    pub qp_errors: u64,
    pub retransmitted: u64,
    pub tx_dropped: u64,
}

/// One measured configuration.
#[derive(Debug, Serialize)]
pub struct RunResult {
    pub mode: String,
    pub workers: usize,
    pub secs: f64,
    pub reports: u64,
    pub reports_per_s: f64,
    /// Reports taken and not dropped (an infinite source outruns a primitive whose RDMA rate is bounded,
    /// FETCH_ADD by the responder's outstanding atomics a round trip: the rest is dropped and counted).
    pub written_per_s: f64,
    /// Wall-clock ns per report on one worker core.
    pub ns_per_report: f64,
    pub cpu_ns_per_report: f64,
    pub frames_out_per_report: f64,
    pub acks_per_report: f64,
    /// The harness's cost of building those ACKs, per report (included in ns_per_report).
    pub ack_build_ns_per_report: f64,
    /// Wall-clock ns per report on one worker core less the bench's part (collector answers, NIC writes):
    /// the data path's own cost.
    pub data_path_ns_per_report: f64,
    pub handed_off: u64,
    pub handoff_waits: u64,
    pub report_drops: u64,
    pub qp_errors: u64,
    pub retransmitted: u64,
    pub tx_dropped: u64,
    pub vm_hwm_kib: u64,
    pub per_worker: Vec<WorkerResult>,
}

/// A worker's data path, engine and responder, made before the clock starts.
struct Prepared {
    plane: DataPlane<DpdkQueue>,
    engine: Engine,
    acker: Acker,
    /// The far side of its collector-port queue's ring.
    wire_tx: HandoffTx,
    wire_rx: HandoffRx,
    origin: std::time::Instant,
}

/// The steering the daemon would use with `workers` workers and one collector.
fn steering(mode: Mode, workers: usize) -> Steering {
    let cfg = workloads::config(mode);
    Steering {
        workers,
        collectors: 1,
        qpn_base: cfg.local.qpn_base,
        local_ip: TRANSLATOR_IP,
        report_port: cfg.report.udp_port,
        int_port: cfg.int.enabled.then_some(cfg.int.udp_port),
        form: cfg.report.dta_header,
    }
}

/// The measured loop: the daemon's poll, then the collector's answers. Never inlined, so that callgrind
/// can collect it alone (`--toggle-collect`), without the setup.
#[inline(never)]
fn worker(p: Prepared, reports: &[Vec<u8>], pool: &Mempool, secs: f64) -> Result<WorkerResult> {
    let Prepared {
        mut plane,
        mut engine,
        mut acker,
        mut wire_tx,
        mut wire_rx,
        origin,
    } = p;
    let clock = |o: &std::time::Instant| Instant(o.elapsed().as_nanos() as u64);
    let mut next = 0usize;
    let mut sent = MbufBurst::with_capacity(1024);
    let mut acks = MbufBurst::with_capacity(1024);
    let cpu0 = thread_cpu_ns();
    let start = clock(&origin);
    let end = Instant(start.0 + (secs * 1e9) as u64);
    let mut bad = None;
    let mut emulation_ns = 0u64;
    loop {
        let now = clock(&origin);
        if now >= end {
            break;
        }
        plane.poll(Some(&mut engine), now);
        let emulation_start = std::time::Instant::now();
        // The collector: every frame the data path sent, answered where asked, in order. One dequeue
        // takes them all (the ring holds 1,023); the answers then wait on the same ring for the next poll.
        if wire_rx.recv(&mut sent) > 0 {
            for f in sent.frames() {
                if let Err(e) = acker.observe(f) {
                    bad = Some(e);
                }
            }
            rewrite_reports(&mut sent, reports, &mut next);
            sent.clear();
            acker.drain(|ack| {
                if !acks.push_copy(pool, ack) {
                    bad = Some(anyhow!("no mbuf for an ACK"));
                }
            });
            wire_tx.send(&mut acks);
            if !acks.is_empty() {
                bad = Some(anyhow!("the ring refused ACKs"));
                acks.clear();
            }
        }
        emulation_ns += emulation_start.elapsed().as_nanos() as u64;
        if let Some(e) = bad.take() {
            return Err(e);
        }
    }
    let stop = clock(&origin);
    let c = engine.counters();
    let pc = plane.counters();
    Ok(WorkerResult {
        reports: c.reports_in.iter().sum::<u64>() + c.int.reports,
        frames_out: pc.engine_frames_out,
        acks_fed: acker.fed(),
        handed_off: pc.handed_off,
        handoff_waits: pc.handoff_waits,
        forwarded: pc.forwarded,
        cpu_ns: thread_cpu_ns() - cpu0,
        wall_ns: stop.0 - start.0,
        emulation_ns,
        report_drops: c.drops.iter().sum::<u64>() + c.int.drops.iter().sum::<u64>(),
        drops_by_reason: c.drops.iter().chain(c.int.drops.iter()).copied().collect(),
        qp_errors: c.qp_errors,
        retransmitted: c.retransmitted_frames,
        tx_dropped: plane.port_stats().iter().map(|(_, tx)| tx.dropped).sum(),
    })
}

/// Writes report frames back into the sent mbufs before they go back to their pools. The data path sends
/// a report's RoCE frame in the report's own mbuf; on a NIC the next receive overwrites it, while
/// `net_null` writes nothing, so the bench plays the NIC's part for mbufs of the pre-filled pool. Out of
/// line, so that its cost is told apart from the data path's (callgrind, by function).
#[inline(never)]
fn rewrite_reports(sent: &mut MbufBurst, reports: &[Vec<u8>], next: &mut usize) {
    for i in 0..sent.len() {
        let f = &reports[*next % reports.len()];
        *next += 1;
        if let Some(room) = sent.room_mut(i).get_mut(..f.len()) {
            room.copy_from_slice(f);
        }
    }
}

/// Opens the reporter side (`net_null`, pool pre-filled with `mode`'s reports) and the collector side
/// (`net_ring`), `workers` queues each.
fn open_ports(
    eal: &'static Eal,
    mode: Mode,
    workers: usize,
) -> Result<(Port, Vec<DpdkQueue>, Port, Vec<DpdkQueue>)> {
    let frames = workloads::report_frames(mode, &workloads::config(mode))?;
    let len = frames.first().map_or(0, Vec::len);
    if frames.iter().any(|f| f.len() != len) {
        bail!("{}: net_null needs reports of one length", mode.name());
    }
    // The daemon's pool size for this many workers.
    let cfg = PortConfig {
        queues: workers as u16,
        max_burst: BURST as u16,
        require_rss: false,
        mbufs: pool_mbufs(workers),
        ..PortConfig::default()
    };
    eal.attach(&format!("net_null9,size={len},copy=0"))
        .context("net_null9")?;
    let (reporters, rq) = Port::open(eal, "net_null9", &cfg).context("open net_null9")?;
    let n = reporters.pool().prefill(&frames)?;
    log::info!("{n} mbufs pre-filled with {} report frames", frames.len());
    eal.attach("net_ring9").context("net_ring9")?;
    let (collector, cq) = Port::open(eal, "net_ring9", &cfg).context("open net_ring9")?;
    Ok((reporters, rq, collector, cq))
}

/// Measures `mode` through the daemon's data path on `workers` cores for `secs`.
pub fn run(mode: Mode, workers: usize, secs: f64, eal: Vec<String>) -> Result<RunResult> {
    let eal = eal_init(eal).context("rte_eal_init")?;
    let (ack_ns, atomic_ack_ns) = ack_build_ns()?;
    let (reporters, rq, collector, cq) = open_ports(eal, mode, workers)?;
    let pool: &'static Mempool = Box::leak(Box::new(Mempool::new(
        eal,
        "dta_bench_acks",
        8191,
        256,
        2048 + 128,
        -1,
    )?));
    // The daemon's handoff rings.
    let mesh = handoff_mesh(eal, "bench_handoff", workers)?;
    let go = Arc::new(AtomicBool::new(false));
    let mut handles = Vec::new();
    let queues = rq.into_iter().zip(cq).zip(mesh).enumerate();
    for (w, ((r, c), (to, from))) in queues {
        let go = go.clone();
        let (wire_tx, wire_rx) = attach_ring(eal, &format!("ETH_RXTX{w}_net_ring9"))?;
        let mut cfg = workloads::config(mode);
        cfg.local.qpn_base += w as u32;
        cfg.requester.window = WINDOW;
        let mut welcome = workloads::welcome(mode)?;
        welcome.qps[0].peer_qpn = cfg.local.qpn_base;
        let plane_cfg = PlaneConfig {
            index: w,
            steering: steering(mode, workers),
            collector_port: 1,
            local_mac: TRANSLATOR_MAC,
            burst: BURST,
        };
        let reports = workloads::report_frames(mode, &workloads::config(mode))?;
        handles.push(std::thread::spawn(move || -> Result<WorkerResult> {
            register_thread(eal).context("rte_thread_register")?;
            crate::sys::pin_to_cpu(w);
            let acker = Acker::new(cfg.local.qpn_base)?;
            let mut engine =
                Engine::new(cfg, &[welcome], Instant(0)).map_err(|e| anyhow!("engine: {e}"))?;
            // As the daemon makes its workers: each translates its own flows' INT reports.
            engine.set_int_shard(w, workers);
            let p = Prepared {
                acker,
                engine,
                plane: DataPlane::new(plane_cfg, vec![r, c], to, from),
                wire_tx,
                wire_rx,
                origin: std::time::Instant::now(),
            };
            while !go.load(Ordering::Acquire) {
                std::hint::spin_loop();
            }
            worker(p, &reports, pool, secs)
        }));
    }
    std::thread::sleep(Duration::from_millis(50));
    go.store(true, Ordering::Release);
    let mut per_worker = Vec::new();
    for h in handles {
        per_worker.push(h.join().map_err(|_| anyhow!("worker panicked"))??);
    }
    drop((reporters, collector));
    let sum = |f: fn(&WorkerResult) -> u64| per_worker.iter().map(f).sum::<u64>();
    let reports = sum(|w| w.reports);
    let wall = per_worker.iter().map(|w| w.wall_ns).max().unwrap_or(1) as f64;
    let rf = reports.max(1) as f64;
    let per_ack = if mode == Mode::KeyIncrement {
        atomic_ack_ns
    } else {
        ack_ns
    };
    let acks = sum(|w| w.acks_fed);
    Ok(RunResult {
        mode: mode.name(),
        workers,
        secs,
        reports,
        reports_per_s: rf / (wall / 1e9),
        written_per_s: reports.saturating_sub(sum(|w| w.report_drops)) as f64 / (wall / 1e9),
        ns_per_report: wall * workers as f64 / rf,
        cpu_ns_per_report: sum(|w| w.cpu_ns) as f64 / rf,
        frames_out_per_report: sum(|w| w.frames_out) as f64 / rf,
        acks_per_report: acks as f64 / rf,
        ack_build_ns_per_report: acks as f64 / rf * per_ack,
        data_path_ns_per_report: per_worker
            .iter()
            .map(|w| (w.wall_ns - w.emulation_ns.min(w.wall_ns)) as f64)
            .sum::<f64>()
            / rf,
        handed_off: sum(|w| w.handed_off),
        handoff_waits: sum(|w| w.handoff_waits),
        report_drops: sum(|w| w.report_drops),
        qp_errors: sum(|w| w.qp_errors),
        retransmitted: sum(|w| w.retransmitted),
        tx_dropped: sum(|w| w.tx_dropped),
        vm_hwm_kib: vm_hwm_kib(),
        per_worker,
    })
}

/// What the bump in the wire measured.
#[derive(Debug, Serialize)]
pub struct ForwardResult {
    pub secs: f64,
    pub forwarded: u64,
    pub forwarded_per_s: f64,
    pub tx_dropped: u64,
}

/// The data path with no engine between ports `from` (receiving) and `to` (sending), both named in the EAL
/// arguments: every frame is not ours and is forwarded as it is.
pub fn forward(from: &str, to: &str, secs: f64, eal: Vec<String>) -> Result<ForwardResult> {
    let eal = eal_init(eal).context("rte_eal_init")?;
    let cfg = PortConfig {
        max_burst: BURST as u16,
        ..PortConfig::default()
    };
    let (a, aq) = Port::open(eal, from, &cfg).with_context(|| format!("open {from}"))?;
    let (b, bq) = Port::open(eal, to, &cfg).with_context(|| format!("open {to}"))?;
    register_thread(eal).context("rte_thread_register")?;
    let cfg = PlaneConfig {
        index: 0,
        steering: steering(Mode::KeyWrite { n: 1 }, 1),
        collector_port: 1,
        local_mac: TRANSLATOR_MAC,
        burst: BURST,
    };
    let queues = aq.into_iter().chain(bq).collect();
    let mut plane = DataPlane::new(cfg, queues, vec![None], Vec::new());
    // With an engine, as the daemon runs once its collectors answered: it sees every frame first.
    let mode = Mode::KeyWrite { n: 1 };
    let mut engine = Engine::new(
        workloads::config(mode),
        &[workloads::welcome(mode)?],
        Instant(0),
    )
    .map_err(|e| anyhow!("engine: {e}"))?;
    let origin = std::time::Instant::now();
    let limit = Duration::from_secs_f64(secs);
    let mut now = origin.elapsed();
    while now < limit {
        // Polls between clock reads: the clock is not the data path's.
        for _ in 0..64 {
            plane.poll(Some(&mut engine), Instant(now.as_nanos() as u64));
        }
        now = origin.elapsed();
    }
    let pc = plane.counters();
    let tx_dropped = plane.port_stats().iter().map(|(_, tx)| tx.dropped).sum();
    drop(plane);
    drop((a, b));
    Ok(ForwardResult {
        secs: now.as_secs_f64(),
        forwarded: pc.forwarded,
        forwarded_per_s: pc.forwarded as f64 / now.as_secs_f64(),
        tx_dropped,
    })
}
