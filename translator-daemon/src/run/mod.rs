//! `dta-translator run`: the live translator. The pieces, one file each:
//!
//! * [`settings`]: the TOML (engine sections plus `[io]`, `[workers]`, `[[collectors]]`, `[metrics]`).
//! * [`ports`]: AF_PACKET or DPDK ports through dta-netio.
//! * [`io_loop`]: the I/O thread (ARP, bump-in-the-wire forwarding, steering, transmit).
//! * [`steer`] / [`arp`]: the pure decisions the I/O thread makes per frame.
//! * [`worker`]: one engine per worker thread.
//! * [`control`]: one control client per collector (hello, welcome, re-establishment).
//! * [`metrics`]: Prometheus endpoint and the shutdown summary.

mod arp;
mod clock;
mod control;
mod io_loop;
mod metrics;
mod ports;
pub mod settings;
mod steer;
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
    let stop_control = Arc::new(AtomicBool::new(false));
    let workers_started = Arc::new(AtomicBool::new(false));

    let burst = s.daemon.io.burst;
    let mut lanes = Lanes::default();
    let mut worker_io = Vec::new();
    let snapshots = Arc::new(Mutex::new(vec![Snapshot::default(); nw]));
    let (out_tx, out_rx) = mpsc::sync_channel(nw * OUTPUT_BATCHES);
    let mut qp_error_tx = Vec::new();
    let mut qp_error_rx = Vec::new();
    for _ in 0..nc {
        let (tx, rx) = mpsc::channel::<()>();
        qp_error_tx.push(tx);
        qp_error_rx.push(rx);
    }
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
        steering: Steering {
            workers: nw,
            collectors: nc,
            qpn_base: s.engine.local.qpn_base,
            local_ip: s.engine.local.ip,
            report_port: s.engine.report.udp_port,
            int_port: s.engine.int.enabled.then_some(s.engine.int.udp_port),
            form: s.engine.report.dta_header,
        },
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
    let stop_io_thread = |why: anyhow::Error| -> anyhow::Error {
        stop_control.store(true, Ordering::Relaxed);
        stop_io.store(true, Ordering::Relaxed);
        why
    };

    // Then one control client per collector: the engines need every collector's welcome.
    let (init_tx, init_rx) = mpsc::channel::<(usize, Result<Welcome, String>)>();
    let mut control_counters = Vec::new();
    let mut control_threads = Vec::new();
    for (i, (c, requests)) in s.daemon.collectors.iter().zip(qp_error_rx).enumerate() {
        let counters = Arc::new(ControlCounters::default());
        control_counters.push(counters.clone());
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
            workers: to_workers.clone(),
            requests,
            counters,
            stop: stop_control.clone(),
        };
        let tx = init_tx.clone();
        control_threads.push(spawn(&format!("dta-control-{i}"), move || link.run(tx))?);
    }
    let mut welcomes: Vec<Option<Welcome>> = vec![None; nc];
    while welcomes.iter().any(Option::is_none) {
        if stop_signal.load(Ordering::Relaxed) {
            return Err(stop_io_thread(anyhow::anyhow!(
                "stopped before every collector answered"
            )));
        }
        match init_rx.recv_timeout(Duration::from_millis(100)) {
            Ok((i, Ok(w))) => welcomes[i] = Some(w),
            Ok((i, Err(e))) => {
                return Err(stop_io_thread(anyhow::anyhow!(
                    "collector {i} ({}): {e}",
                    s.daemon.collectors[i].control
                )));
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                return Err(stop_io_thread(anyhow::anyhow!("control clients ended")))
            }
        }
        if io_handle.is_finished() {
            return Err(stop_io_thread(anyhow::anyhow!(
                "the I/O thread ended before every collector answered"
            )));
        }
    }
    let welcomes: Vec<Welcome> = welcomes.into_iter().flatten().collect();

    let clock = Clock::start();
    let mut workers = Vec::new();
    for (k, io) in worker_io.into_iter().enumerate() {
        let mine: Vec<Welcome> = welcomes
            .iter()
            .map(|w| {
                let mut m = w.clone();
                m.qps = vec![w.qps[k]];
                m
            })
            .collect();
        let engine = Engine::new(s.worker_config(k), &mine, clock.now())
            .with_context(|| format!("worker {k}'s engine"))
            .map_err(stop_io_thread)?;
        let core = s.daemon.workers.cores.get(k).copied();
        workers.push(spawn(&format!("dta-worker-{k}"), move || {
            pin(core, &format!("worker {k}"));
            worker::run(engine, io, clock)
        })?);
    }
    workers_started.store(true, Ordering::Relaxed);

    let sources = Sources {
        workers: snapshots,
        io: io_counters,
        ports: port_stats,
        control: control_counters,
    };
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

    while !stop_signal.load(Ordering::Relaxed) && !io_handle.is_finished() {
        std::thread::sleep(Duration::from_millis(50));
    }
    log::info!("stopping: flushing batches and waiting for acknowledgements");
    stop_workers.store(true, Ordering::Relaxed);
    for w in workers {
        let _ = w.join();
    }
    stop_io.store(true, Ordering::Relaxed);
    let io_result = io_handle
        .join()
        .unwrap_or_else(|_| Err(anyhow::anyhow!("the I/O thread panicked")));
    stop_control.store(true, Ordering::Relaxed);
    for c in control_threads {
        let _ = c.join();
    }
    drop(metrics);
    print!("{}", sources.summary());
    io_result
}
