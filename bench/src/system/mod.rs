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

mod procs;
pub mod search;

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::Serialize;
use serde_json::Value;

use procs::{
    cpu_and_preemptions, file_prefix, free_port, http_get, remove_stale_runtime_dirs, Proc,
};
use search::{metric_sum, Probe, Search};

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

/// testpmd io-fwd in the translator's place over the same vdevs, the collector the sink (it counts the
/// frames and discards them): the same search, lossless meaning every frame sent reached the collector.
#[derive(Debug, Default, Serialize)]
pub struct Testpmd {
    /// The sender unpaced: frames delivered to the collector per second.
    pub saturation_delivered_per_s: f64,
    /// The highest target rate found lossless through testpmd (0 if none).
    pub lossless_pps: f64,
    /// The lowest target rate found lossy.
    pub lossy_pps: f64,
    /// Where frames were lost at that rate: testpmd's receive ring (the sender's TX found it full), or
    /// after it (its TX to the collector, or the collector's ring).
    pub lossy_stage: String,
    /// Each probe: target rate, frames sent, sender drops, frames delivered.
    pub probes: Vec<TestpmdProbe>,
}

/// One testpmd probe.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TestpmdProbe {
    pub target_pps: f64,
    pub sent: u64,
    pub sender_secs: f64,
    pub sender_dropped: u64,
    pub delivered: u64,
    pub lossless: bool,
}

impl TestpmdProbe {
    /// Every frame sent reached the collector, none was refused, and the sender offered the target
    /// rate: one that fell more than 3 % short did not offer what the probe says (as in [`Probe`]).
    fn is_lossless(&self) -> bool {
        let offered = self.sent as f64 / self.sender_secs.max(1e-9);
        let short = self.target_pps > 0.0 && offered < 0.97 * self.target_pps;
        self.sent > 0 && !short && self.sender_dropped == 0 && self.delivered == self.sent
    }
}

/// Most testpmd search probes after its unpaced one.
const TESTPMD_PROBES: usize = 6;

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

/// The daemons' counters at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Counters {
    taken: u64,
    report_drops: u64,
    qp_errors: u64,
    translator_rx_missed: u64,
    translator_tx_dropped: u64,
    retransmitted: u64,
    collector_rx_missed: u64,
    collector_rx_frames: u64,
    written: u64,
}

struct Endpoints {
    translator: Option<SocketAddr>,
    collector: SocketAddr,
}

impl Endpoints {
    fn counters(&self) -> Result<Counters> {
        let c = http_get(self.collector, "/metrics").context("the collector's /metrics")?;
        let mut n = Counters {
            collector_rx_missed: metric_sum(&c, "dta_collector_port_rx_missed_total", None)
                + metric_sum(&c, "dta_collector_port_rx_dropped_total", None),
            collector_rx_frames: metric_sum(&c, "dta_collector_port_rx_frames_total", None),
            written: metric_sum(&c, "dta_collector_writes_total", None),
            ..Counters::default()
        };
        if let Some(t) = self.translator {
            let t = http_get(t, "/metrics").context("the translator's /metrics")?;
            n.taken = metric_sum(&t, "dta_translator_reports_total", None);
            n.report_drops = metric_sum(&t, "dta_translator_report_drops_total", None);
            n.qp_errors = metric_sum(&t, "dta_translator_qp_errors_total", None);
            n.translator_rx_missed = metric_sum(&t, "dta_translator_port_rx_missed_total", None)
                + metric_sum(&t, "dta_translator_port_rx_dropped_total", None);
            n.translator_tx_dropped = metric_sum(
                &t,
                "dta_translator_port_tx_dropped_total",
                Some("port=\"net_memif1\""),
            );
            n.retransmitted = metric_sum(&t, "dta_translator_retransmitted_frames_total", None);
        }
        Ok(n)
    }

    /// Waits until the counters stop moving (the translator publishes every 100 ms), at most `limit`.
    fn settle(&self, limit: Duration) -> Result<Counters> {
        let start = Instant::now();
        let mut last = self.counters()?;
        let mut still = 0;
        while start.elapsed() < limit {
            std::thread::sleep(Duration::from_millis(120));
            let now = self.counters()?;
            if now == last {
                still += 1;
                if still >= 2 {
                    break;
                }
            } else {
                still = 0;
            }
            last = now;
        }
        Ok(last)
    }
}

struct Run<'a> {
    o: &'a Opts,
    bin: PathBuf,
    sender_sock: String,
    collector_sock: String,
    /// The sender and the JSON lines asked of it so far.
    sender: Option<(Proc, usize)>,
    sender_starts: usize,
    /// Whether the sender yields its CPU while catching up (`--pace-yield`): yes beside the translator,
    /// which sleeps when idle; no beside testpmd, whose forwarding lcore never sleeps and, given the CPU
    /// at each yield, kept it for its whole time slice (the sender then sent 91,000 frames/s whatever
    /// the target).
    sender_yields: bool,
}

impl Run<'_> {
    /// A memif vdev's devargs: `net_memif<index>` in `role` on abstract socket `sock`, with the ring size.
    fn memif(&self, index: u8, role: &str, sock: &str) -> String {
        let mut v = format!("net_memif{index},role={role},socket={sock},id=0");
        if let Some(r) = self.o.memif_rsize {
            v.push_str(&format!(",rsize={r}"));
        }
        if let Some(b) = self.o.memif_bsize {
            v.push_str(&format!(",bsize={b}"));
        }
        v
    }

    fn eal(&self, cpu: usize, mem_mb: u32, role: &str) -> (String, String) {
        let prefix = file_prefix(role);
        (
            format!(
                "-l {cpu} {} -m {mem_mb} --no-pci --file-prefix {prefix} --log-level=warning --no-telemetry",
                self.o.mem
            ),
            prefix,
        )
    }

    /// Starts the sender (`dta-pktgen --commands`: one process and one memif link for every probe of
    /// a phase, since a memif peer that goes away while the other side polls can crash it) and runs a
    /// first short run at 200,000/s for `warm` seconds. The memif client's connect can fail while the
    /// server's process is busy (testpmd's forwarding lcore shares its CPU with the thread that accepts):
    /// such a start is tried again, up to 3 times.
    fn start_sender(&mut self, warm: f64) -> Result<Value> {
        for attempt in 1.. {
            self.stop_sender();
            self.sender_starts += 1;
            let name = format!("pktgen-{}", self.sender_starts);
            let (eal, prefix) = self.eal(self.o.sender_cpu, 256, "g");
            let mut cmd = Command::new(self.bin.join("dta-pktgen"));
            cmd.args(["--workload", "keywrite", "--redundancy", "1", "--commands"])
                .arg("--pace-sleep")
                .args(self.sender_yields.then_some("--pace-yield"))
                .arg("--dpdk")
                .arg(self.memif(0, "client", &self.sender_sock))
                .arg("--eal")
                .arg(eal);
            let p = Proc::start(&name, cmd, self.o.sender_cpu, &self.o.dir, Some(prefix))?;
            self.sender = Some((p, 0));
            match self.send(Some(200_000.0), warm) {
                Err(e) if attempt < 3 => {
                    let log = std::fs::read_to_string(self.o.dir.join(format!("{name}.log")))
                        .unwrap_or_default();
                    if !log.contains("Failed to connect socket") {
                        return Err(e);
                    }
                    eprintln!("system: {name}: the memif client could not connect; trying again");
                    std::thread::sleep(Duration::from_millis(300));
                }
                r => return r,
            }
        }
        unreachable!()
    }

    /// One run of the sender: `secs` at `rate` (paced, sleeping between bursts so that the collector
    /// sharing its CPU runs) or unpaced; its JSON line.
    fn send(&mut self, rate: Option<f64>, secs: f64) -> Result<Value> {
        let (p, lines) = self.sender.as_mut().context("no sender")?;
        let name = p.name.clone();
        writeln!(
            p.stdin().context("the sender's stdin")?,
            "{:.0} {secs}",
            rate.unwrap_or(0.0)
        )
        .with_context(|| format!("{name}: writing a command"))?;
        *lines += 1;
        let want = *lines;
        let out = self.o.dir.join(format!("{name}.out"));
        // EAL start-up without hugepages and the memif link (up to 10 s) before the first.
        let limit = Duration::from_secs_f64(secs + 30.0);
        let start = Instant::now();
        loop {
            let text = std::fs::read_to_string(&out).unwrap_or_default();
            if text.ends_with('\n') {
                if let Some(l) = text.lines().nth(want - 1) {
                    return serde_json::from_str(l).with_context(|| format!("{name}: {l:?}"));
                }
            }
            p.check_running()?;
            if start.elapsed() > limit {
                bail!("{name}: no answer in {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Ends the sender: end of input, then up to 5 s to exit.
    fn stop_sender(&mut self) {
        if let Some((mut p, _)) = self.sender.take() {
            p.close_stdin();
            if !matches!(p.wait_for(Duration::from_secs(5)), Ok(true)) {
                p.stop(libc::SIGTERM, Duration::from_secs(2));
            }
        }
    }

    /// One probe; `pids` the translator's and the collector's, for their CPU time and preemptions over
    /// the sender's run.
    fn probe(&mut self, ep: &Endpoints, rate: Option<f64>, pids: [u32; 2]) -> Result<Probe> {
        let before = ep.settle(Duration::from_secs(2))?;
        let t0 = Instant::now();
        let cpu0 = pids.map(cpu_and_preemptions);
        let s = self.send(rate, self.o.secs)?;
        let cpu1 = pids.map(cpu_and_preemptions);
        let wall = t0.elapsed().as_secs_f64();
        let after = ep.settle(Duration::from_secs(3))?;
        let d = |f: fn(&Counters) -> u64| f(&after).saturating_sub(f(&before));
        let p = Probe {
            target_pps: rate.unwrap_or(0.0),
            sent: s["sent"].as_u64().unwrap_or(0),
            sender_secs: s["elapsed_s"].as_f64().unwrap_or(0.0),
            sender_dropped: s["dropped"].as_u64().unwrap_or(0),
            taken: d(|c| c.taken),
            report_drops: d(|c| c.report_drops),
            qp_errors: d(|c| c.qp_errors),
            translator_rx_missed: d(|c| c.translator_rx_missed),
            translator_tx_dropped: d(|c| c.translator_tx_dropped),
            retransmitted: d(|c| c.retransmitted),
            collector_rx_missed: d(|c| c.collector_rx_missed),
            written: d(|c| c.written),
            translator_cpu_share: (cpu1[0].0 - cpu0[0].0) / wall,
            collector_cpu_share: (cpu1[1].0 - cpu0[1].0) / wall,
            translator_preempted: cpu1[0].1.saturating_sub(cpu0[0].1),
            collector_preempted: cpu1[1].1.saturating_sub(cpu0[1].1),
        };
        eprintln!(
            "system: {} -> sent {:.3} M/s, written {:.3} M/s, preempted t {} c {}, {} ({})",
            rate.map_or("unpaced".to_string(), |r| format!("{:.3} M/s", r / 1e6)),
            p.sender_pps() / 1e6,
            p.written_per_s() / 1e6,
            p.translator_preempted,
            p.collector_preempted,
            if p.lossless() { "lossless" } else { "lossy" },
            p.stage()
        );
        Ok(p)
    }
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

/// The collector's configuration: one Key-Write region big enough that N = 1 keys rarely collide.
fn collector_toml(control: u16, http: u16) -> String {
    format!(
        r#"[collector]
mac = "02:00:00:00:00:02"
ip = "198.18.0.2"
max_dest_rd_atomic = 16
path_mtu = 1024

[control]
bind = "127.0.0.1:{control}"
token = "bench"

[http]
bind = "127.0.0.1:{http}"

[[region]]
kind = "key_write"
slots = 1048576
entry_size = 8
n_max = 1
"#
    )
}

/// The translator's: two memif ports (reports in on the first, RoCE out of the second), one worker, and a
/// requester sized for a software collector over memif rather than for a NIC. What limits a QP is its
/// window over the round trip (W / RTT), and the round trip to a collector on a shared machine includes
/// the scheduler: measured here with the engine's defaults (window 256, adaptive, 1 ms least timeout), the
/// smoothed RTT read 100-400 us with spikes of 5-7 ms, each spike fired the 1 ms timeout, go-back-N and a
/// halved window, and the run wrote 0.2-2.0 M/s while the translator took 10 M/s. A window of 16,384
/// covers 3 ms at 5 M/s; the link loses nothing, so the adaptive window only shrinks it on scheduling
/// stalls, and a 20 ms least timeout keeps a stall from reading as a loss (docs/deploy.md says the same
/// for users).
fn translator_toml(to_sender: &str, to_collector: &str, control: u16, metrics: u16) -> String {
    format!(
        r#"[io]
kind = "dpdk"
ports = ["{to_sender}", "{to_collector}"]

[workers]
count = 1

[[collectors]]
control = "127.0.0.1:{control}"
token = "bench"

[metrics]
bind = "127.0.0.1:{metrics}"

[local]
mac = "02:00:00:00:00:01"
ip = [198, 18, 0, 1]

[requester]
window = {SYSTEM_WINDOW}
adaptive_window = false
queue_capacity = {SYSTEM_QUEUE}
retransmit_timeout_us = 20000
"#
    )
}

/// The translator's QP window in the whole-system run (see [`translator_toml`]).
const SYSTEM_WINDOW: u32 = 16_384;
/// Work requests waiting for that window: with it, 16 ms of stalled ACKs at 5 M/s.
const SYSTEM_QUEUE: u32 = 65_536;

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
        Some(tp) => Some(testpmd(
            &mut r,
            &ep,
            &tp,
            start + Duration::from_secs_f64(o.budget_s + 30.0),
        )?),
    };
    collector.stop(libc::SIGTERM, Duration::from_secs(3));

    Ok(SystemResult {
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
        saturation: saturation.clone().into(),
        probes: probes.into_iter().map(ProbeOut::from).collect(),
        lossless_pps: search.lossless(),
        lossless_written_per_s: lossless_written,
        lossy_pps: search.lossy(),
        saturating_stage,
        testpmd,
        load_before,
        load_after: load(),
        elapsed_s: start.elapsed().as_secs_f64(),
    })
}

fn which(b: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(b))
            .find(|f| f.exists())
    })
}

fn testpmd(r: &mut Run, ep: &Endpoints, tp: &Path, deadline: Instant) -> Result<Testpmd> {
    let o = r.o;
    let cpu = o.translator_cpu;
    let prefix = file_prefix("p");
    let mut cmd = Command::new(tp);
    // Main lcore (stats only) and the forwarding lcore both on the translator's CPU.
    cmd.arg(format!("--lcores=0@{cpu},1@{cpu}"))
        .args(o.mem.split_whitespace())
        .args(["-m", "512", "--no-pci", "--file-prefix", &prefix])
        .arg(format!("--vdev={}", r.memif(0, "server", &r.sender_sock)))
        .arg(format!(
            "--vdev={}",
            r.memif(1, "client", &r.collector_sock)
        ))
        .args(["--log-level=warning", "--no-telemetry", "--"])
        .args([
            "--forward-mode=io",
            "--stats-period",
            "1",
            "--nb-cores=1",
            // Enough to fill both 16,384-slot rings of `--memif-rsize 14` and the bursts in flight.
            "--total-num-mbufs=65536",
        ]);
    let mut p = Proc::start("testpmd", cmd, cpu, &o.dir, Some(prefix))?;
    let log = o.dir.join("testpmd.out");
    wait_until("testpmd forwarding", Duration::from_secs(30), || {
        p.check_running()?;
        Ok(std::fs::read_to_string(&log)?.contains("Rx-pps"))
    })?;
    // Its link to the collector up before the sender starts.
    std::thread::sleep(Duration::from_millis(500));
    eprintln!("system: testpmd io-fwd over the same memif vdevs");
    r.sender_yields = false;
    r.start_sender(0.1)?;
    let mut probe = |rate: Option<f64>| -> Result<TestpmdProbe> {
        let before = ep.settle(Duration::from_secs(1))?;
        let s = r.send(rate, o.secs)?;
        let after = ep.settle(Duration::from_secs(2))?;
        let sent = s["sent"].as_u64().unwrap_or(0);
        let sender_dropped = s["dropped"].as_u64().unwrap_or(0);
        let delivered = after
            .collector_rx_frames
            .saturating_sub(before.collector_rx_frames);
        let t = TestpmdProbe {
            target_pps: rate.unwrap_or(0.0),
            sent,
            sender_secs: s["elapsed_s"].as_f64().unwrap_or(0.0),
            sender_dropped,
            delivered,
            lossless: false,
        };
        let t = TestpmdProbe {
            lossless: t.is_lossless(),
            ..t
        };
        eprintln!(
            "system: testpmd {} -> sent {sent}, sender drops {sender_dropped}, delivered {delivered}",
            rate.map_or("unpaced".to_string(), |r| format!("{:.3} M/s", r / 1e6)),
        );
        Ok(t)
    };
    let sat = probe(None)?;
    let sat_delivered = if sat.sender_secs > 0.0 {
        sat.delivered as f64 / sat.sender_secs
    } else {
        0.0
    };
    let mut probes = vec![sat];
    let sender_max = probes[0].sent as f64 / probes[0].sender_secs.max(1e-9);
    let mut search = Search::new(sender_max, Some(sat_delivered), 0.1, 10_000.0);
    while probes.len() <= TESTPMD_PROBES && Instant::now() < deadline {
        let Some(rate) = search.next() else { break };
        let t = probe(Some(rate))?;
        search.record(rate, t.lossless);
        probes.push(t);
    }
    r.stop_sender();
    p.stop(libc::SIGINT, Duration::from_secs(3));
    let lossy = probes
        .iter()
        .filter(|t| !t.lossless)
        .min_by(|a, b| a.target_pps.total_cmp(&b.target_pps));
    let lossy_stage = match lossy {
        None => "none".to_string(),
        Some(t) if t.sender_dropped > 0 => {
            "testpmd: its receive ring was full (the sender's memif TX dropped)".to_string()
        }
        Some(_) => "after testpmd: its TX to the collector, or the collector's ring".to_string(),
    };
    Ok(Testpmd {
        saturation_delivered_per_s: sat_delivered,
        lossless_pps: search.lossless(),
        lossy_pps: search.lossy(),
        lossy_stage,
        probes,
    })
}

/// `--rates`: one probe per given rate, in order, after the warm-up; the same result shape with no search
/// (the lossless rate is the highest lossless one probed) and no testpmd.
#[allow(clippy::too_many_arguments)]
fn fixed_rates(
    o: &Opts,
    r: &mut Run,
    ep: &Endpoints,
    pids: [u32; 2],
    mut translator: Proc,
    mut collector: Proc,
    start: Instant,
    load_before: [f64; 3],
) -> Result<SystemResult> {
    let mut probes = Vec::new();
    for &rate in &o.rates {
        probes.push(r.probe(ep, Some(rate), pids)?);
    }
    r.stop_sender();
    translator.stop(libc::SIGTERM, Duration::from_secs(6));
    collector.stop(libc::SIGTERM, Duration::from_secs(3));
    let best = probes
        .iter()
        .filter(|p| p.lossless())
        .max_by(|a, b| a.target_pps.total_cmp(&b.target_pps));
    let lossy = probes
        .iter()
        .filter(|p| !p.lossless())
        .min_by(|a, b| a.target_pps.total_cmp(&b.target_pps));
    let first = probes.first().context("no rate given")?.clone();
    Ok(SystemResult {
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
        saturation: first.into(),
        lossless_pps: best.map_or(0.0, |p| p.target_pps),
        lossless_written_per_s: best.map_or(0.0, Probe::written_per_s),
        lossy_pps: lossy.map_or(0.0, |p| p.target_pps),
        saturating_stage: lossy.map_or("none", Probe::stage).to_string(),
        probes: probes.into_iter().map(ProbeOut::from).collect(),
        testpmd: None,
        load_before,
        load_after: load(),
        elapsed_s: start.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::TestpmdProbe;

    fn probe(target: f64, sent: u64, secs: f64, dropped: u64, delivered: u64) -> TestpmdProbe {
        TestpmdProbe {
            target_pps: target,
            sent,
            sender_secs: secs,
            sender_dropped: dropped,
            delivered,
            lossless: false,
        }
    }

    #[test]
    fn a_testpmd_probe_is_lossless_only_at_the_rate_it_says() {
        // Every frame delivered at the target rate.
        assert!(probe(2e6, 2_000_000, 1.0, 0, 2_000_000).is_lossless());
        // 3 % short is still the rate; more is not (the yielding sender beside testpmd sent 91,000/s).
        assert!(probe(2e6, 1_940_000, 1.0, 0, 1_940_000).is_lossless());
        assert!(!probe(2e6, 1_939_000, 1.0, 0, 1_939_000).is_lossless());
        assert!(!probe(13.2e6, 90_869, 1.0, 0, 90_869).is_lossless());
        // One frame refused or not delivered, or nothing sent.
        assert!(!probe(2e6, 2_000_000, 1.0, 1, 1_999_999).is_lossless());
        assert!(!probe(2e6, 2_000_000, 1.0, 0, 1_999_999).is_lossless());
        assert!(!probe(0.0, 0, 1.0, 0, 0).is_lossless());
        // Unpaced: no target to fall short of.
        assert!(probe(0.0, 5_000_000, 1.0, 0, 5_000_000).is_lossless());
    }
}
