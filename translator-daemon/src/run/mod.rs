//! `dta-translator run`: the live translator. The pieces, one file each:
//!
//! * [`settings`]: the TOML (engine sections plus `[io]`, `[workers]`, `[[collectors]]`, `[metrics]`).
//! * [`ports`]: AF_PACKET or DPDK ports through dta-netio.
//! * [`dataplane`]: one worker's pass over its queue of every port, run to completion: classify, forward,
//!   answer ARP, hand off to the owning worker, engine, transmit; over DPDK (mbufs, no copy) or AF_PACKET
//!   (a socket per worker in a PACKET_FANOUT group). [`lcore`] is the worker thread around it, [`worker`]
//!   what workers are told and publish.
//! * [`steer`] / [`arp`]: the pure decisions made per frame.
//! * [`control`]: one control client per collector (hello, welcome, re-establishment).
//! * [`metrics`]: Prometheus endpoint and the shutdown summary.
//! * [`signals`]: SIGHUP (ignored, logged) and SIGUSR1 (the summary so far), taken by one thread.

mod arp;
mod clock;
mod control;
pub mod dataplane;
mod lcore;
mod link;
mod metrics;
mod ports;
pub mod settings;
mod signals;
pub mod steer;
mod worker;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result};
use dta_protocol::control::Welcome;
use dta_translator::Engine;

use clock::Clock;
use control::{ControlCounters, ControlLink};
use dataplane::io::Queue;
use dataplane::{DataPlane, PlaneConfig};
use metrics::{MetricsServer, Sources};
use settings::{IoKind, Settings};
use steer::Steering;
use worker::{Snapshot, ToWorker};

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

/// Runs the translator until SIGINT or SIGTERM, then prints the counter summary. SIGHUP is ignored and
/// SIGUSR1 prints the summary so far ([`signals`]).
pub fn run(mut s: Settings) -> Result<()> {
    // Before any thread exists, so that every thread inherits the mask.
    let signals = signals::Signals::block().context("blocking SIGHUP and SIGUSR1")?;
    let summary_of: SummarySource = Arc::new(OnceLock::new());
    let stop_signal = Arc::new(AtomicBool::new(false));
    let signal_thread = {
        let (stop, summary_of) = (stop_signal.clone(), summary_of.clone());
        spawn("dta-signals", move || {
            take_signals(&signals, &stop, &summary_of)
        })?
    };
    let r = run_until_stopped(&mut s, stop_signal.clone(), summary_of);
    stop_signal.store(true, Ordering::Relaxed);
    let _ = signal_thread.join();
    r
}

/// Where SIGUSR1 finds the counters: set once the workers have their engines.
type SummarySource = Arc<OnceLock<Sources>>;

/// The signal thread: SIGHUP and SIGUSR1 until the daemon stops.
fn take_signals(signals: &signals::Signals, stop: &AtomicBool, summary_of: &OnceLock<Sources>) {
    while !stop.load(Ordering::Relaxed) {
        match signals.wait(Duration::from_millis(100)) {
            Some(signals::Signal::Hangup) => log::warn!(
                "SIGHUP ignored: the translator has nothing to reload (its configuration is read at \
                 start); it keeps running (stop it with SIGTERM)"
            ),
            Some(signals::Signal::User1) => match summary_of.get() {
                Some(src) => {
                    let text = src.summary();
                    log::info!("SIGUSR1: the counters so far\n{text}");
                    print!("{text}");
                }
                None => log::info!("SIGUSR1: no counters yet (waiting for every collector's welcome)"),
            },
            None => {}
        }
    }
}

fn run_until_stopped(
    s: &mut Settings,
    stop_signal: Arc<AtomicBool>,
    summary_of: SummarySource,
) -> Result<()> {
    let flag = stop_signal.clone();
    ctrlc::set_handler(move || {
        if flag.swap(true, Ordering::Relaxed) {
            // A second signal means the graceful stop is taking too long for the operator.
            std::process::exit(130);
        }
    })
    .context("installing the SIGINT/SIGTERM handler")?;
    let nw = s.daemon.workers.count;
    match s.daemon.io.kind {
        IoKind::Dpdk => run_dpdk(s, stop_signal, summary_of),
        IoKind::AfPacket => {
            let opened = ports::open_af_packet_queues(&s.daemon.io, nw)?;
            let mesh = dataplane::afpacket::handoff_mesh(nw, s.daemon.io.burst);
            s.engine.local.mac = opened.macs[s.collector_port()];
            run_workers(
                s,
                stop_signal,
                summary_of,
                opened.queues,
                mesh,
                &opened.names,
                |_| {},
            )
        }
    }
}

#[cfg(feature = "dpdk")]
fn run_dpdk(
    s: &mut Settings,
    stop_signal: Arc<AtomicBool>,
    summary_of: SummarySource,
) -> Result<()> {
    let nw = s.daemon.workers.count;
    let mut opened = ports::open_dpdk_queues(&s.daemon.io, nw)?;
    let mesh =
        dataplane::dpdk::handoff_mesh(opened.eal, "dta_handoff", nw).context("handoff rings")?;
    s.engine.local.mac = opened.ports[s.collector_port()].mac();
    let eal = opened.eal;
    let queues = std::mem::take(&mut opened.queues);
    let register = move |k: usize| {
        // The per-lcore mempool cache makes mbuf allocation and freeing cheap.
        if let Err(e) = dta_netio::dpdk::register_thread(eal) {
            log::error!("worker {k}: {e}; its mempool cache is off");
        }
    };
    let r = run_workers(
        s,
        stop_signal,
        summary_of,
        queues,
        mesh,
        &opened.names,
        register,
    );
    // The ports outlive their queues, which the workers dropped.
    drop(opened);
    r
}

#[cfg(not(feature = "dpdk"))]
fn run_dpdk(_s: &mut Settings, _stop: Arc<AtomicBool>, _summary: SummarySource) -> Result<()> {
    anyhow::bail!("this build has no DPDK support (feature `dpdk` off); use --io af_packet")
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
}

impl Started<'_> {
    /// Starts one control client per collector and waits for every welcome (the engines need them all),
    /// giving up when the operator stops the daemon, a collector refuses, or `io_ended` says the I/O side
    /// failed.
    /// `counters` has one entry per collector, made before so that the metrics endpoint shows them while
    /// a collector refuses us (its QPs held by another translator, say).
    fn connect(
        &mut self,
        counters: &[Arc<ControlCounters>],
        io_ended: impl Fn() -> bool,
    ) -> Result<Connected> {
        let s = self.s;
        let nw = s.daemon.workers.count;
        let (init_tx, init_rx) = mpsc::channel::<(usize, Result<Welcome, String>)>();
        let mut threads = Vec::new();
        let requests = std::mem::take(&mut self.qp_error_rx);
        for (i, ((c, requests), cc)) in s
            .daemon
            .collectors
            .iter()
            .zip(requests)
            .zip(counters.iter().cloned())
            .enumerate()
        {
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
                engine: s.worker_config(0),
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
    let mut e = Engine::new(s.worker_config(k), &mine, clock.now())
        .with_context(|| format!("worker {k}'s engine"))?;
    // Every worker takes the INT reports it receives and translates its own flows' reports.
    e.set_int_shard(k, s.daemon.workers.count);
    Ok(e)
}

/// Starts the metrics endpoint if configured: before the collectors' welcomes, so that a translator a
/// collector keeps refusing shows why (`control_welcomes_refused_total`) while it waits.
fn start_metrics(s: &Settings, sources: &Sources) -> Result<Option<MetricsServer>> {
    Ok(match &s.daemon.metrics {
        Some(m) => {
            let server = MetricsServer::start(m.bind, sources.clone())?;
            // Scripts and tests read the bound address (the port may be 0).
            println!("metrics listening on {}", server.addr);
            Some(server)
        }
        None => None,
    })
}

/// Says the daemon runs, and waits for a stop signal or for `ended` to say the data path ended.
fn serve(stop_signal: &AtomicBool, ended: impl Fn() -> bool) {
    println!("translator running");
    while !stop_signal.load(Ordering::Relaxed) && !ended() {
        std::thread::sleep(Duration::from_millis(50));
    }
    log::info!("stopping: flushing batches and waiting for acknowledgements");
}

/// Control channels to the control clients: one QP-error channel per collector.
fn qp_error_channels(nc: usize) -> (Vec<mpsc::Sender<()>>, Vec<mpsc::Receiver<()>>) {
    (0..nc).map(|_| mpsc::channel::<()>()).unzip()
}

/// Every worker owns one queue of every port and runs to completion ([`dataplane`]); the workers start at
/// once (answering ARP and forwarding while the collectors are being connected) and get their engines when
/// every collector has answered. `on_start(k)` runs first on worker `k`'s thread.
#[allow(clippy::too_many_arguments)]
fn run_workers<Q: Queue + 'static>(
    s: &mut Settings,
    stop_signal: Arc<AtomicBool>,
    summary_of: SummarySource,
    queues: Vec<Vec<Q>>,
    mesh: Vec<dataplane::WorkerRings<Q>>,
    names: &[String],
    on_start: impl Fn(usize) + Clone + Send + 'static,
) -> Result<()>
where
    Q::HandoffTx: 'static,
    Q::HandoffRx: 'static,
{
    let nw = s.daemon.workers.count;
    let nc = s.daemon.collectors.len();
    let cport = s.collector_port();
    log::info!(
        "{} port(s) {names:?} via {:?}, {nw} run-to-completion worker(s), {nc} collector(s), translator {}",
        names.len(),
        s.daemon.io.kind,
        std::net::Ipv4Addr::from(s.engine.local.ip)
    );
    let steering = Steering::of(s);
    let snapshots = Arc::new(Mutex::new(vec![Snapshot::default(); nw]));
    let stop_workers = Arc::new(AtomicBool::new(false));
    let engines_taken = Arc::new(AtomicUsize::new(0));
    let (qp_error_tx, qp_error_rx) = qp_error_channels(nc);
    let clock = Clock::start();
    let mut to_workers = Vec::new();
    let mut workers = Vec::new();
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
            ports: names.to_vec(),
            engines_taken: engines_taken.clone(),
        };
        let core = s.daemon.workers.cores.get(k).copied();
        let on_start = on_start.clone();
        workers.push(spawn(&format!("dta-worker-{k}"), move || {
            on_start(k);
            pin(core, &format!("worker {k}"));
            lcore::run(plane, io, clock)
        })?);
    }
    let port_stats = Arc::new(Mutex::new(
        names
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
    let control: Vec<Arc<ControlCounters>> = (0..nc).map(|_| Arc::default()).collect();
    let sources = Sources {
        workers: snapshots,
        ports: port_stats,
        control: control.clone(),
    };
    let metrics = match start_metrics(s, &sources) {
        Ok(m) => m,
        Err(e) => return Err(stop_all(&started, e)),
    };
    let connected = match started.connect(&control, || any_ended(&workers)) {
        Ok(c) => c,
        Err(e) => return Err(stop_all(&started, e)),
    };
    for (k, tx) in to_workers.iter().enumerate() {
        let engine =
            engine_for(s, k, &connected.welcomes, &clock).map_err(|e| stop_all(&started, e))?;
        // A worker that ended (its error is logged) leaves its queue unread: the daemon stops below.
        let _ = tx.send(ToWorker::Start(Box::new(engine)));
    }
    // "translator running" once every worker holds its engine: a report a worker receives before that
    // is dropped (`startup_drops_total`), and scripts start sending when they read the line. Bounded by
    // the workers: one that ended stops the daemon below.
    while engines_taken.load(Ordering::Acquire) < to_workers.len()
        && !any_ended(&workers)
        && !stop_signal.load(Ordering::Relaxed)
    {
        std::thread::sleep(Duration::from_millis(1));
    }
    drop(started.qp_error_tx.drain(..));
    let _ = summary_of.set(sources.clone());
    serve(&stop_signal, || any_ended(&workers));
    stop_workers.store(true, Ordering::Relaxed);
    for w in workers {
        let _ = w.join();
    }
    started.stop_control.store(true, Ordering::Relaxed);
    for c in connected.threads {
        let _ = c.join();
    }
    drop(metrics);
    print!("{}", sources.summary());
    Ok(())
}
