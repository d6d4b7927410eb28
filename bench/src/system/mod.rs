//! The whole system as users run it (issue 25, item 6): the shipped release binaries as separate processes,
//! `dta-pktgen` (DPDK) → `net_memif` → `dta-translator run` (1 worker) → `net_memif` →
//! `dta-collector serve --backend soft` (DPDK), the translator's control channel to the collector over TCP on
//! the loopback. Key-Write N = 1 reports at a target rate for a fixed time, counted at every stage from the
//! daemons' Prometheus `/metrics` and the sender's summary; a search for the highest rate at which every
//! report sent is written at the collector and no stage counts a drop, and the stage that loses first above
//! it. Then `dpdk-testpmd --forward-mode=io` in the translator's place, over the same memif vdevs with the
//! same sender and the collector as the sink: what the transport carries on this layout.
//!
//! Every process is pinned to one CPU (`sched_setaffinity` before exec, and its EAL lcore on that CPU),
//! dies with the bench (`PR_SET_PDEATHSIG`) and has its own `--file-prefix`, whose runtime directory is
//! removed when it stops (and on the next run if the bench was killed).

mod configs;
mod endpoints;
mod fixed;
mod probing;
mod procs;
pub mod search;
mod testpmd;

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::Serialize;
use serde_json::Value;

use configs::{collector_toml, translator_toml};
use endpoints::{Counters, Endpoints};
use fixed::fixed_rates;
use probing::Run;
use procs::{
    cpu_and_preemptions, file_prefix, free_port, http_get, remove_stale_runtime_dirs, Proc,
};
use search::{metric_sum, Probe, Search};
use testpmd::Testpmd;

/// The command line's choices.
pub struct Opts {
    /// Seconds the sender runs per probe.
    pub secs: f64,
    /// Wall-clock seconds the search may take (the probes after it are not started).
    pub budget_s: f64,
    /// Most search probes.
    pub max_probes: usize,
    /// Stop when the bracket is within this fraction of its top.
    pub precision: f64,
    /// Where configs, logs and the processes' outputs go.
    pub dir: PathBuf,
    /// Where the release binaries are (default: this binary's directory).
    pub bin_dir: Option<PathBuf>,
    /// EAL memory options of every process (`--no-huge --no-shconf`, or `--in-memory` on hugepages).
    pub mem: String,
    /// log2 of the memif rings' size (DPDK's default 10 when `None`).
    pub memif_rsize: Option<u8>,
    /// Bytes of each memif buffer (DPDK's default 2048 when `None`); a longer frame takes several.
    pub memif_bsize: Option<u32>,
    /// CPU of the sender.
    pub sender_cpu: usize,
    /// CPU of the translator (every thread; its one worker is the EAL's main lcore's thread's sibling).
    pub translator_cpu: usize,
    /// CPU of the collector.
    pub collector_cpu: usize,
    /// Fixed target rates to probe instead of the search (no unpaced run, no testpmd).
    pub rates: Vec<f64>,
}

/// The run's result (`system.json`).
#[derive(Debug, Serialize)]
pub struct SystemResult {
    /// Where each process ran.
    pub layout: String,
    pub sender_cpu: usize,
    pub translator_cpu: usize,
    pub collector_cpu: usize,
    pub translator_workers: usize,
    /// log2 of the memif rings' size.
    pub memif_rsize: u8,
    /// Bytes of each memif buffer.
    pub memif_bsize: u32,
    pub secs_per_probe: f64,
    /// The sender unpaced: what the system writes when offered all it can take.
    pub saturation: ProbeOut,
    /// The search's probes, in order.
    pub probes: Vec<ProbeOut>,
    /// The highest target rate found lossless (0 if none).
    pub lossless_pps: f64,
    /// Reports written per second at that rate.
    pub lossless_written_per_s: f64,
    /// The lowest target rate found lossy.
    pub lossy_pps: f64,
    /// The stage that lost first at the lowest lossy rate probed (the saturation run's if none).
    pub saturating_stage: String,
    pub testpmd: Option<Testpmd>,
    /// /proc/loadavg's 1, 5 and 15 minute loads before and after.
    pub load_before: [f64; 3],
    pub load_after: [f64; 3],
    pub elapsed_s: f64,
}

/// A probe with its derived figures, as the JSON carries it.
#[derive(Debug, Clone, Serialize)]
pub struct ProbeOut {
    #[serde(flatten)]
    pub probe: Probe,
    pub sender_pps: f64,
    pub written_per_s: f64,
    pub lossless: bool,
    pub stage: &'static str,
}

impl From<Probe> for ProbeOut {
    fn from(p: Probe) -> Self {
        ProbeOut {
            sender_pps: p.sender_pps(),
            written_per_s: p.written_per_s(),
            lossless: p.lossless(),
            stage: p.stage(),
            probe: p,
        }
    }
}

fn load() -> [f64; 3] {
    let t = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut v = t.split_whitespace().map(|x| x.parse().unwrap_or(f64::NAN));
    [
        v.next().unwrap_or(f64::NAN),
        v.next().unwrap_or(f64::NAN),
        v.next().unwrap_or(f64::NAN),
    ]
}

fn wait_until(what: &str, limit: Duration, mut f: impl FnMut() -> Result<bool>) -> Result<()> {
    let start = Instant::now();
    let mut last_err = None;
    while start.elapsed() < limit {
        match f() {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) => last_err = Some(e),
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    match last_err {
        Some(e) => Err(e.context(format!("waiting for {what}"))),
        None => bail!("waiting for {what}: not within {limit:?}"),
    }
}

/// The whole run.
pub fn run(o: &Opts) -> Result<SystemResult> {
    let start = Instant::now();
    let load_before = load();
    remove_stale_runtime_dirs();
    std::fs::create_dir_all(&o.dir)?;
    let bin = match &o.bin_dir {
        Some(b) => b.clone(),
        None => std::env::current_exe()?
            .parent()
            .context("this binary's directory")?
            .to_path_buf(),
    };
    for b in ["dta-translator", "dta-collector", "dta-pktgen"] {
        if !bin.join(b).exists() {
            bail!(
                "{} not found: build the release binaries first",
                bin.join(b).display()
            );
        }
    }
    // Abstract socket names (memif's default): nothing on disk, unique to this run.
    let tag = format!("{}-{}", procs::PREFIX, std::process::id());
    let mut r = Run {
        o,
        bin,
        sender_sock: format!("/run/{tag}/sender.sock"),
        collector_sock: format!("/run/{tag}/collector.sock"),
        sender: None,
        sender_starts: 0,
        sender_yields: true,
    };
    let (control, http, metrics) = (free_port()?, free_port()?, free_port()?);
    let ccfg = o.dir.join("collector.toml");
    let tcfg = o.dir.join("translator.toml");
    std::fs::write(&ccfg, collector_toml(control, http))?;
    std::fs::write(
        &tcfg,
        translator_toml(
            &r.memif(0, "server", &r.sender_sock),
            &r.memif(1, "client", &r.collector_sock),
            control,
            metrics,
        ),
    )?;

    // The collector, its responder on a memif server.
    let (eal, prefix) = r.eal(o.collector_cpu, 512, "c");
    let mut cmd = Command::new(r.bin.join("dta-collector"));
    cmd.args(["serve", "--backend", "soft", "--io", "dpdk", "--config"])
        .arg(&ccfg)
        .arg("--interface")
        .arg(r.memif(0, "server", &r.collector_sock))
        .arg("--eal")
        .arg(eal);
    let mut collector = Proc::start("collector", cmd, o.collector_cpu, &o.dir, Some(prefix))?;
    let mut ep = Endpoints {
        translator: None,
        collector: SocketAddr::from(([127, 0, 0, 1], http)),
    };
    wait_until("the collector's HTTP API", Duration::from_secs(30), || {
        collector.check_running()?;
        Ok(ep.counters().is_ok())
    })?;

    // The translator: memif server to the sender, client to the collector.
    let (eal, prefix) = r.eal(o.translator_cpu, 512, "t");
    let mut cmd = Command::new(r.bin.join("dta-translator"));
    cmd.args(["run", "--config"])
        .arg(&tcfg)
        .arg("--eal")
        .arg(eal);
    let mut translator = Proc::start("translator", cmd, o.translator_cpu, &o.dir, Some(prefix))?;
    let taddr = SocketAddr::from(([127, 0, 0, 1], metrics));
    wait_until(
        "the translator's welcome from the collector",
        Duration::from_secs(30),
        || {
            translator.check_running()?;
            let t = http_get(taddr, "/metrics")?;
            Ok(metric_sum(&t, "dta_translator_control_welcomes_total", None) >= 1)
        },
    )?;
    ep.translator = Some(taddr);

    // Warm-up: a few reports until the collector has written them all (the memif links up, the QP's
    // first round trips done).
    let before = ep.counters()?;
    let warm = r.start_sender(0.1)?["sent"].as_u64().unwrap_or(0);
    wait_until("the warm-up's writes", Duration::from_secs(10), || {
        Ok(ep.counters()?.written - before.written >= warm)
    })
    .context("the warm-up reports did not all reach the collector")?;

    let pids = [
        translator.pid().context("the translator's pid")?,
        collector.pid().context("the collector's pid")?,
    ];
    if !o.rates.is_empty() {
        return fixed_rates(
            o,
            &mut r,
            &ep,
            pids,
            translator,
            collector,
            start,
            load_before,
        );
    }
    eprintln!("system: saturation (sender unpaced)");
    let saturation = r.probe(&ep, None, pids)?;
    let mut search = Search::new(
        saturation.sender_pps(),
        Some(saturation.written_per_s()).filter(|_| !saturation.lossless()),
        o.precision,
        10_000.0,
    );
    let mut probes = Vec::new();
    if saturation.lossless() {
        // The system keeps up with the sender: the sender's rate is the answer (bounded by the sender).
        search.record(saturation.sender_pps(), true);
    } else {
        while probes.len() < o.max_probes && start.elapsed().as_secs_f64() < o.budget_s {
            let Some(rate) = search.next() else { break };
            let p = r.probe(&ep, Some(rate), pids)?;
            search.record(rate, p.lossless());
            probes.push(p);
        }
    }
    let lossless_probe = probes
        .iter()
        .rfind(|p| p.lossless() && p.target_pps == search.lossless())
        .or(Some(&saturation).filter(|p| p.lossless()));
    let lossy_probe = probes
        .iter()
        .filter(|p| !p.lossless())
        .min_by(|a, b| a.target_pps.total_cmp(&b.target_pps))
        .unwrap_or(&saturation);
    let saturating_stage = lossy_probe.stage().to_string();
    let lossless_written = lossless_probe.map_or(0.0, Probe::written_per_s);
    r.stop_sender();
    translator.stop(libc::SIGTERM, Duration::from_secs(6));
    ep.translator = None;

    // testpmd io-fwd in the translator's place: the same memif roles and sockets.
    let testpmd = match which("dpdk-testpmd") {
        None => {
            eprintln!("system: dpdk-testpmd not found, no transport ceiling");
            None
        }
        Some(tp) => Some(testpmd::search(
            &mut r,
            &ep,
            &tp,
            start + Duration::from_secs_f64(o.budget_s + 30.0),
        )?),
    };
    collector.stop(libc::SIGTERM, Duration::from_secs(3));

    Ok(SystemResult::of(
        o,
        Found {
            saturation: saturation.clone(),
            probes,
            lossless_pps: search.lossless(),
            lossless_written_per_s: lossless_written,
            lossy_pps: search.lossy(),
            saturating_stage,
            testpmd,
        },
        start,
        load_before,
    ))
}

/// What a run found, before the fields every result shares ([`SystemResult::of`]).
struct Found {
    saturation: Probe,
    probes: Vec<Probe>,
    lossless_pps: f64,
    lossless_written_per_s: f64,
    lossy_pps: f64,
    saturating_stage: String,
    testpmd: Option<Testpmd>,
}

impl SystemResult {
    /// The result of a run with options `o` that started at `start` with the machine's load at
    /// `load_before`, and found `f`.
    fn of(o: &Opts, f: Found, start: Instant, load_before: [f64; 3]) -> SystemResult {
        SystemResult {
            layout: format!(
                "dta-pktgen on CPU {}, dta-translator (1 worker, every thread) on CPU {}, dta-collector on CPU {}",
                o.sender_cpu, o.translator_cpu, o.collector_cpu
            ),
            sender_cpu: o.sender_cpu,
            translator_cpu: o.translator_cpu,
            collector_cpu: o.collector_cpu,
            translator_workers: 1,
            memif_rsize: o.memif_rsize.unwrap_or(10),
            memif_bsize: o.memif_bsize.unwrap_or(2048),
            secs_per_probe: o.secs,
            saturation: f.saturation.into(),
            probes: f.probes.into_iter().map(ProbeOut::from).collect(),
            lossless_pps: f.lossless_pps,
            lossless_written_per_s: f.lossless_written_per_s,
            lossy_pps: f.lossy_pps,
            saturating_stage: f.saturating_stage,
            testpmd: f.testpmd,
            load_before,
            load_after: load(),
            elapsed_s: start.elapsed().as_secs_f64(),
        }
    }
}

fn which(b: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(b))
            .find(|f| f.exists())
    })
}
