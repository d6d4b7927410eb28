//! `dta-translator run`: the live translator. The pieces, one file each:
//!
//! * [`settings`]: the TOML (engine sections plus `[io]`, `[workers]`, `[[collectors]]`, `[metrics]`).
//! * [`ports`]: AF_PACKET or DPDK ports through dta-netio.
//! * DPDK, run to completion: [`dataplane`] (one worker's pass over its queue of every port: classify,
//!   forward, answer ARP, hand off, engine, transmit, with no copy) and [`lcore`] (the worker thread around
//!   it). Handoff rings of mbuf pointers join the workers.
//! * AF_PACKET: [`io_loop`] (the I/O thread: ARP, bump-in-the-wire forwarding, steering, transmit) and
//!   [`worker`] (one engine per worker thread, fed batches over channels).
//! * [`steer`] / [`arp`]: the pure decisions made per frame.
//! * [`control`]: one control client per collector (hello, welcome, re-establishment).
//! * [`metrics`]: Prometheus endpoint and the shutdown summary.

mod arp;
mod clock;
mod control;
#[cfg(feature = "dpdk")]
pub mod dataplane;
mod io_loop;
#[cfg(feature = "dpdk")]
mod lcore;
mod metrics;
mod ports;
pub mod settings;
pub mod steer;
mod worker;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result};
use dta_netio::FrameBatch;
use dta_protocol::control::Welcome;
use dta_translator::Engine;

use clock::Clock;
use control::{ControlCounters, ControlLink};
use io_loop::{
    IoCounters, IoThread, INPUT_BATCHES, OUTPUT_BATCHES, OUTPUT_SLOT_SIZE, RESPONSE_BATCHES,
};
use metrics::{MetricsServer, Sources};
use settings::{IoKind, Settings};
use steer::Steering;
use worker::{Snapshot, ToWorker, WorkerIo};

/// Command-line values that override the file.
#[derive(Debug, Default)]
pub struct Overrides {
    /// `--io`.
    pub io: Option<IoKind>,
    /// `--interface` (repeatable): the ports.
    pub interfaces: Vec<String>,
    /// `--eal`: EAL arguments, split on whitespace.
    pub eal: Option<String>,
    /// `--workers`.
    pub workers: Option<usize>,
    /// `--metrics`.
    pub metrics: Option<SocketAddr>,
}

fn spawn<T: Send + 'static>(
    name: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<JoinHandle<T>> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .with_context(|| format!("spawning thread {name}"))
}

/// Pins the calling thread to `core`, if one is configured (checked against the allowed cores at start,
/// so a failure here is unexpected and only costs the pinning).
fn pin(core: Option<usize>, who: &str) {
    if let Some(c) = core {
        match dta_netio::affinity::pin_current_thread(c) {
            Ok(()) => log::info!("{who} pinned to core {c}"),
            Err(e) => log::warn!("{who}: {e}"),
        }
    }
}

/// The I/O thread's ends of every worker's channels, one entry per worker (each worker holds the other
/// ends in its [`WorkerIo`]).
#[derive(Default)]
struct Lanes {
    input: Vec<mpsc::Sender<ToWorker>>,
    recycled: Vec<mpsc::Receiver<FrameBatch>>,
    responses: Vec<mpsc::Sender<FrameBatch>>,
    responses_recycled: Vec<mpsc::Receiver<FrameBatch>>,
    out_return: Vec<mpsc::Sender<FrameBatch>>,
}

/// Creates worker `k`'s channels with their batch pools filled: its own ends are returned, the I/O
/// thread's are added to `lanes`.
fn worker_channels(
    lanes: &mut Lanes,
    k: usize,
    burst: usize,
    out: mpsc::SyncSender<(usize, FrameBatch)>,
    qp_errors: Vec<mpsc::Sender<()>>,
    snapshots: Arc<Mutex<Vec<Snapshot>>>,
    stop: Arc<AtomicBool>,
) -> WorkerIo {
    let batches = |n: usize, slot: usize, tx: &mpsc::Sender<FrameBatch>| {
        for _ in 0..n {
            let _ = tx.send(FrameBatch::new(burst, slot));
        }
    };
    let (input, rx) = mpsc::channel::<ToWorker>();
    let (recycle_tx, recycle_rx) = mpsc::channel();
    batches(INPUT_BATCHES, dta_netio::DEFAULT_SLOT_SIZE, &recycle_tx);
    let (resp_tx, resp_rx) = mpsc::channel();
    let (resp_recycle_tx, resp_recycle_rx) = mpsc::channel();
    batches(
        RESPONSE_BATCHES,
        dta_netio::DEFAULT_SLOT_SIZE,
        &resp_recycle_tx,
    );
    let (pool_tx, pool_rx) = mpsc::channel();
    batches(OUTPUT_BATCHES, OUTPUT_SLOT_SIZE, &pool_tx);
    lanes.input.push(input);
    lanes.recycled.push(recycle_rx);
    lanes.responses.push(resp_tx);
    lanes.responses_recycled.push(resp_recycle_rx);
    lanes.out_return.push(pool_tx);
    WorkerIo {
        index: k,
        rx,
        recycle: recycle_tx,
        responses: resp_rx,
        responses_recycle: resp_recycle_tx,
        out,
        out_pool: pool_rx,
        qp_errors,
        snapshots,
        stop,
    }
}

/// Loads the configuration and applies the overrides.
pub fn load(path: &Path, o: Overrides) -> Result<Settings> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut s = Settings::from_toml(&text).with_context(|| path.display().to_string())?;
    let io = &mut s.daemon.io;
    if let Some(kind) = o.io {
        io.kind = kind;
    }
    if !o.interfaces.is_empty() {
        io.ports = o.interfaces;
    }
    if let Some(eal) = o.eal {
        io.eal_args = eal.split_whitespace().map(String::from).collect();
    }
    if let Some(w) = o.workers {
        s.daemon.workers.count = w;
    }
    if let Some(bind) = o.metrics {
        s.daemon.metrics = Some(settings::MetricsSection { bind });
    }
    s.validate()?;
    let allowed = dta_netio::affinity::current_thread_cores()
        .context("reading the cores this process may run on")?;
    s.check_cores(&allowed)?;
    Ok(s)
}

/// Runs the translator until SIGINT or SIGTERM, then prints the counter summary.
pub fn run(mut s: Settings) -> Result<()> {
    let stop_signal = Arc::new(AtomicBool::new(false));
    let flag = stop_signal.clone();
    ctrlc::set_handler(move || {
        if flag.swap(true, Ordering::Relaxed) {
            // A second signal means the graceful stop is taking too long for the operator.
            std::process::exit(130);
        }
    })
    .context("installing the SIGINT/SIGTERM handler")?;
    match s.daemon.io.kind {
        IoKind::Dpdk => run_to_completion(&mut s, stop_signal),
        IoKind::AfPacket => run_with_io_thread(&mut s, stop_signal),
    }
}

/// What the I/O side of a running daemon gives the shared part of [`run`]: every worker's control input,
/// and whether the I/O side already ended (an error).
struct Started<'a> {
    s: &'a Settings,
    stop_signal: Arc<AtomicBool>,
    to_workers: Vec<mpsc::Sender<ToWorker>>,
    qp_error_tx: Vec<mpsc::Sender<()>>,
    qp_error_rx: Vec<mpsc::Receiver<()>>,
    stop_control: Arc<AtomicBool>,
}

/// The control clients, one per collector, and every collector's first welcome.
struct Connected {
    welcomes: Vec<Welcome>,
    threads: Vec<JoinHandle<()>>,
    counters: Vec<Arc<ControlCounters>>,
}

impl Started<'_> {
    /// Starts one control client per collector and waits for every welcome (the engines need them all),
    /// giving up when the operator stops the daemon, a collector refuses, or `io_ended` says the I/O side
    /// failed.
    fn connect(&mut self, io_ended: impl Fn() -> bool) -> Result<Connected> {
        let s = self.s;
        let nw = s.daemon.workers.count;
        let (init_tx, init_rx) = mpsc::channel::<(usize, Result<Welcome, String>)>();
        let mut counters = Vec::new();
        let mut threads = Vec::new();
        let requests = std::mem::take(&mut self.qp_error_rx);
        for (i, (c, requests)) in s.daemon.collectors.iter().zip(requests).enumerate() {
            let cc = Arc::new(ControlCounters::default());
            counters.push(cc.clone());
            let link = ControlLink {
                index: i,
                addr: c.control,
                token: c.token.clone(),
                mac: s.engine.local.mac,
                ip: s.engine.local.ip,
                qpns: (0..nw)
                    .map(|k| s.worker_config(k).local.qpn_base + i as u32)
                    .collect(),
                base_psn: s.engine.local.start_psn,
                workers: self.to_workers.clone(),
                requests,
                counters: cc,
                stop: self.stop_control.clone(),
            };
            let tx = init_tx.clone();
            threads.push(spawn(&format!("dta-control-{i}"), move || link.run(tx))?);
        }
        let nc = s.daemon.collectors.len();
        let mut welcomes: Vec<Option<Welcome>> = vec![None; nc];
        while welcomes.iter().any(Option::is_none) {
            if self.stop_signal.load(Ordering::Relaxed) {
                anyhow::bail!("stopped before every collector answered");
            }
            match init_rx.recv_timeout(Duration::from_millis(100)) {
                Ok((i, Ok(w))) => welcomes[i] = Some(w),
                Ok((i, Err(e))) => {
                    anyhow::bail!("collector {i} ({}): {e}", s.daemon.collectors[i].control)
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => anyhow::bail!("control clients ended"),
            }
            if io_ended() {
                anyhow::bail!("the data path ended before every collector answered");
            }
        }
        Ok(Connected {
            welcomes: welcomes.into_iter().flatten().collect(),
            threads,
            counters,
        })
    }
}

/// Worker `k`'s engine: its view of every welcome is its own QP of each.
fn engine_for(s: &Settings, k: usize, welcomes: &[Welcome], clock: &Clock) -> Result<Engine> {
    let mine: Vec<Welcome> = welcomes
        .iter()
        .map(|w| {
            let mut m = w.clone();
            m.qps = vec![w.qps[k]];
            m
        })
        .collect();
    Engine::new(s.worker_config(k), &mine, clock.now())
        .with_context(|| format!("worker {k}'s engine"))
}

/// Starts the metrics endpoint if configured, says the daemon runs, and waits for a stop signal or for
/// `ended` to say the data path ended.
fn serve(
    s: &Settings,
    sources: &Sources,
    stop_signal: &AtomicBool,
    ended: impl Fn() -> bool,
) -> Result<Option<MetricsServer>> {
    let metrics = match &s.daemon.metrics {
        Some(m) => {
            let server = MetricsServer::start(m.bind, sources.clone())?;
            // Scripts and tests read the bound address (the port may be 0).
            println!("metrics listening on {}", server.addr);
            Some(server)
        }
        None => None,
    };
    println!("translator running");
    while !stop_signal.load(Ordering::Relaxed) && !ended() {
        std::thread::sleep(Duration::from_millis(50));
    }
    log::info!("stopping: flushing batches and waiting for acknowledgements");
    Ok(metrics)
}

/// Control channels to the control clients: one QP-error channel per collector.
fn qp_error_channels(nc: usize) -> (Vec<mpsc::Sender<()>>, Vec<mpsc::Receiver<()>>) {
    (0..nc).map(|_| mpsc::channel::<()>()).unzip()
}

/// DPDK: every worker owns one queue pair of every port and runs to completion ([`dataplane`]); the workers
/// start at once (answering ARP and forwarding while the collectors are being connected) and get their
/// engines when every collector has answered.
#[cfg(feature = "dpdk")]
fn run_to_completion(s: &mut Settings, stop_signal: Arc<AtomicBool>) -> Result<()> {
    use dataplane::{DataPlane, PlaneConfig};
    let nw = s.daemon.workers.count;
    let nc = s.daemon.collectors.len();
    let mut opened = ports::open_dpdk_queues(&s.daemon.io, nw)?;
    let cport = s.collector_port();
    s.engine.local.mac = opened.ports[cport].mac();
    log::info!(
        "{} DPDK port(s) {:?}, {nw} run-to-completion worker(s), {nc} collector(s), translator {}",
        opened.ports.len(),
        opened.names,
        std::net::Ipv4Addr::from(s.engine.local.ip)
    );
    let mesh = dataplane::handoff_mesh(opened.eal, "dta_handoff", nw).context("handoff rings")?;
    let steering = Steering::of(s);
    let snapshots = Arc::new(Mutex::new(vec![Snapshot::default(); nw]));
    let stop_workers = Arc::new(AtomicBool::new(false));
    let (qp_error_tx, qp_error_rx) = qp_error_channels(nc);
    let clock = Clock::start();
    let eal = opened.eal;
    let mut to_workers = Vec::new();
    let mut workers = Vec::new();
    let queues = std::mem::take(&mut opened.queues);
    for (k, (queues, (to, from))) in queues.into_iter().zip(mesh).enumerate() {
        let cfg = PlaneConfig {
            index: k,
            steering,
            collector_port: cport,
            local_mac: s.engine.local.mac,
            burst: s.daemon.io.burst,
        };
        let plane = DataPlane::new(cfg, queues, to, from);
        let (tx, rx) = mpsc::channel();
        to_workers.push(tx);
        let io = lcore::LcoreIo {
            index: k,
            rx,
            qp_errors: qp_error_tx.clone(),
            snapshots: snapshots.clone(),
            stop: stop_workers.clone(),
        };
        let core = s.daemon.workers.cores.get(k).copied();
        workers.push(spawn(&format!("dta-worker-{k}"), move || {
            if let Err(e) = dta_netio::dpdk::register_thread(eal) {
                log::error!("worker {k}: {e}; its mempool cache is off");
            }
            pin(core, &format!("worker {k}"));
            lcore::run(plane, io, clock)
        })?);
    }
    let port_stats = Arc::new(Mutex::new(
        opened
            .names
            .iter()
            .map(|n| (n.clone(), Default::default(), Default::default()))
            .collect(),
    ));
    let mut started = Started {
        s,
        stop_signal: stop_signal.clone(),
        to_workers: to_workers.clone(),
        qp_error_tx,
        qp_error_rx,
        stop_control: Arc::new(AtomicBool::new(false)),
    };
    let any_ended = |w: &[JoinHandle<()>]| w.iter().any(JoinHandle::is_finished);
    let stop_all = |c: &Started, why: anyhow::Error| -> anyhow::Error {
        c.stop_control.store(true, Ordering::Relaxed);
        stop_workers.store(true, Ordering::Relaxed);
        why
    };
    let connected = match started.connect(|| any_ended(&workers)) {
        Ok(c) => c,
        Err(e) => return Err(stop_all(&started, e)),
    };
    for (k, tx) in to_workers.iter().enumerate() {
        let engine =
            engine_for(s, k, &connected.welcomes, &clock).map_err(|e| stop_all(&started, e))?;
        // A worker that ended (its error is logged) leaves its queue unread: the daemon stops below.
        let _ = tx.send(ToWorker::Start(Box::new(engine)));
    }
    drop(started.qp_error_tx.drain(..));
    let sources = Sources {
        workers: snapshots,
        io: Arc::new(IoCounters::default()),
        ports: port_stats,
        control: connected.counters,
    };
    let metrics = serve(s, &sources, &stop_signal, || any_ended(&workers))?;
    stop_workers.store(true, Ordering::Relaxed);
    for w in workers {
        let _ = w.join();
    }
    started.stop_control.store(true, Ordering::Relaxed);
    for c in connected.threads {
        let _ = c.join();
    }
    drop(metrics);
    drop(opened);
    print!("{}", sources.summary());
    Ok(())
}

#[cfg(not(feature = "dpdk"))]
fn run_to_completion(_s: &mut Settings, _stop: Arc<AtomicBool>) -> Result<()> {
    anyhow::bail!("this build has no DPDK support (feature `dpdk` off); use --io af_packet")
}

/// AF_PACKET: one I/O thread owns the sockets and steers batches of copied frames to the worker threads.
fn run_with_io_thread(s: &mut Settings, stop_signal: Arc<AtomicBool>) -> Result<()> {
    let ports = ports::open(&s.daemon.io)?;
    let cport = s.collector_port();
    // Our RoCE frames leave through the collector port, so they carry its address.
    s.engine.local.mac = ports[cport].mac;
    let nw = s.daemon.workers.count;
    let nc = s.daemon.collectors.len();
    log::info!(
        "{} port(s) {:?} via {:?}, {nw} worker(s), {nc} collector(s), translator {}",
        ports.len(),
        ports.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
        s.daemon.io.kind,
        std::net::Ipv4Addr::from(s.engine.local.ip)
    );

    let stop_workers = Arc::new(AtomicBool::new(false));
    let stop_io = Arc::new(AtomicBool::new(false));
    let workers_started = Arc::new(AtomicBool::new(false));

    let burst = s.daemon.io.burst;
    let mut lanes = Lanes::default();
    let mut worker_io = Vec::new();
    let snapshots = Arc::new(Mutex::new(vec![Snapshot::default(); nw]));
    let (out_tx, out_rx) = mpsc::sync_channel(nw * OUTPUT_BATCHES);
    let (qp_error_tx, qp_error_rx) = qp_error_channels(nc);
    for k in 0..nw {
        worker_io.push(worker_channels(
            &mut lanes,
            k,
            burst,
            out_tx.clone(),
            qp_error_tx.clone(),
            snapshots.clone(),
            stop_workers.clone(),
        ));
    }
    drop(out_tx);
    let to_workers = lanes.input.clone();

    // The ports come alive before the first hello: a collector on an RDMA NIC resolves our MAC (ARP for
    // the GID its QP is told about) while it moves the QP to RTR, before it answers the hello, so the
    // I/O thread must already answer ARP. Reports that arrive before the workers exist are dropped and
    // counted (`startup_drops_total`) rather than stalling the port.
    let io_counters = Arc::new(IoCounters::default());
    let port_stats = Arc::new(Mutex::new(Vec::new()));
    let io_thread = IoThread {
        ports,
        steering: Steering::of(s),
        collector_port: cport,
        local_mac: s.engine.local.mac,
        workers: lanes.input,
        recycled: lanes.recycled,
        responses: lanes.responses,
        responses_recycled: lanes.responses_recycled,
        out_rx,
        out_return: lanes.out_return,
        counters: io_counters.clone(),
        port_stats: port_stats.clone(),
        stop: stop_io.clone(),
        workers_started: workers_started.clone(),
        burst,
    };
    let io_core = s.daemon.io.core;
    let io_handle = spawn("dta-io", move || {
        pin(io_core, "the I/O thread");
        io_thread.run()
    })?;
    let mut started = Started {
        s,
        stop_signal: stop_signal.clone(),
        to_workers,
        qp_error_tx,
        qp_error_rx,
        stop_control: Arc::new(AtomicBool::new(false)),
    };
    let stop_io_thread = |c: &Started, why: anyhow::Error| -> anyhow::Error {
        c.stop_control.store(true, Ordering::Relaxed);
        stop_io.store(true, Ordering::Relaxed);
        why
    };
    let connected = match started.connect(|| io_handle.is_finished()) {
        Ok(c) => c,
        Err(e) => return Err(stop_io_thread(&started, e)),
    };

    let clock = Clock::start();
    let mut workers = Vec::new();
    for (k, io) in worker_io.into_iter().enumerate() {
        let engine = engine_for(s, k, &connected.welcomes, &clock)
            .map_err(|e| stop_io_thread(&started, e))?;
        let core = s.daemon.workers.cores.get(k).copied();
        workers.push(spawn(&format!("dta-worker-{k}"), move || {
            pin(core, &format!("worker {k}"));
            worker::run(engine, io, clock)
        })?);
    }
    drop(started.qp_error_tx.drain(..));
    workers_started.store(true, Ordering::Relaxed);

    let sources = Sources {
        workers: snapshots,
        io: io_counters,
        ports: port_stats,
        control: connected.counters,
    };
    let metrics = serve(s, &sources, &stop_signal, || io_handle.is_finished())?;
    stop_workers.store(true, Ordering::Relaxed);
    for w in workers {
        let _ = w.join();
    }
    stop_io.store(true, Ordering::Relaxed);
    let io_result = io_handle
        .join()
        .unwrap_or_else(|_| Err(anyhow::anyhow!("the I/O thread panicked")));
    started.stop_control.store(true, Ordering::Relaxed);
    for c in connected.threads {
        let _ = c.join();
    }
    drop(metrics);
    print!("{}", sources.summary());
    io_result
}
