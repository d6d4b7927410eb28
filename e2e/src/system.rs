//! A whole system for one test: the namespaces, the collector (software responder on `c0`) and the
//! translator (bump in the wire on `ta`/`tb`), with configuration files in a scratch directory and a
//! watchdog that tears everything down and fails the process if the test overruns its time.
//!
//! (Over 500 lines: the topology, both daemons' configs and the watchdog of one test system.)

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::bins::bin;
use crate::history::ClickHouse;
use crate::int_workload;
use crate::netns::Netns;
use crate::procs::Proc;
use crate::rxe::Rxe;
use crate::send::{Metrics, Sender};
use crate::topo::{self, SecondPath, Topology};
use crate::workload::{self, Workload};

/// Packet I/O of the translator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Io {
    /// AF_PACKET sockets on the veths.
    AfPacket,
    /// DPDK `net_af_packet` vdevs on the veths, without hugepages.
    Dpdk,
}

/// Who holds the collector's memory and answers the translator's RoCE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Responder {
    /// dta's software RoCEv2 responder (`--backend soft`) in the collector's namespace.
    Soft,
    /// Linux Soft-RoCE: `--backend ibverbs --device rxe0`, the collector in this process's own (init)
    /// namespace, where rxe receives. Needs a kernel with `rdma_rxe` (the VM suite).
    Rxe,
}

/// Options of a run.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Translator I/O.
    pub io: Io,
    /// Collector fault injection: drop and reorder probabilities.
    pub faults: Option<(f64, f64)>,
    /// The watchdog's limit for the whole test.
    pub limit: Duration,
    /// Translator worker threads (engines); reports are steered among them by the I/O thread.
    pub workers: usize,
    /// The collector's software responder I/O.
    pub collector_io: Io,
    /// The responder. With [`Responder::Rxe`], `faults` become netem loss and reorder (percent of
    /// `faults` × 100) on both directions of the collector's link.
    pub responder: Responder,
    /// Translators in front of the collector: 1, or 2 (each with its own reporter, both with the same
    /// QPNs, as every translator has by default; the software responder over AF_PACKET only).
    pub translators: usize,
    /// The translator takes INT reports too ([`int_workload::INT_SECTIONS`]: 12-byte Key-Write data, so the
    /// DTA Key-Write workloads do not fit such a run), and the collector has the INT lists.
    pub int: bool,
    /// The collector runs its history exporter (`[export]`): Parquet files under the run's scratch
    /// directory ([`System::history_dir`]), and with `clickhouse` a `clickhouse-server` of the run's own
    /// in the collector's namespace.
    pub export: Option<Export>,
}

impl Default for Options {
    /// The common run: AF_PACKET on both daemons, two translator workers, one translator, the software
    /// responder without faults, no INT and no exporter, 480 s for the whole test.
    fn default() -> Self {
        Options {
            io: Io::AfPacket,
            faults: None,
            limit: Duration::from_secs(480),
            workers: 2,
            collector_io: Io::AfPacket,
            responder: Responder::Soft,
            translators: 1,
            int: false,
            export: None,
        }
    }
}

/// The collector's `[export]` in a run.
#[derive(Debug, Clone, Copy)]
pub struct Export {
    /// `[export] poll_ms`: a list with nothing new is read again after this long. A test that must know
    /// exactly what a ring overwrote before it was read sets it longer than the run: the exporter then
    /// reads the lists when it starts and when the collector stops (SIGTERM wakes it), never between.
    pub poll_ms: u64,
    /// `[export] epoch_secs`.
    pub epoch_secs: u64,
    /// Also a real ClickHouse server (Debian's `clickhouse-server`, [`CLICKHOUSE_SERVER`]).
    pub clickhouse: bool,
}

/// The database the collector's ClickHouse sink writes, in runs with [`Export::clickhouse`].
pub const CLICKHOUSE_DATABASE: &str = "dta_e2e";
/// Where that server listens: the collector's management address.
const CLICKHOUSE_PORT: u16 = 8123;

pub use crate::history::CLICKHOUSE_SERVER;

/// The second reporter and translator of a two-translator run.
pub struct Second {
    /// The translator.
    pub translator: Proc,
    /// Its metrics.
    pub metrics: Metrics,
    sender: Sender,
    /// Its namespaces (dropped after the process).
    pub path: SecondPath,
}

/// The control token of every run.
pub const TOKEN: &str = "e2e-token";
/// The Soft-RoCE device of [`Responder::Rxe`] runs.
pub const RXE_DEVICE: &str = "rxe0";
/// `[requester] retry_limit` of the translator (and DART) in [`Responder::Rxe`] runs.
pub const RXE_RETRY_LIMIT: u32 = 16;
/// The collector's control port (on its management address).
pub const CONTROL_PORT: u16 = 40050;
const HTTP_PORT: u16 = 40060;
const METRICS_PORT: u16 = 9100;

/// What one workload took.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Name.
    pub name: &'static str,
    /// Reports sent.
    pub reports: u64,
    /// Seconds from the first report to a settled translator.
    pub seconds: f64,
    /// Answers checked.
    pub checked: u64,
    /// Frames the translator sent again during the workload, and the retransmit timeouts among the causes.
    pub retransmitted: u64,
    /// Retransmit timeouts during the workload.
    pub timeouts: u64,
}

/// The running system. Field order is drop order: processes stop before their namespaces go.
pub struct System {
    /// The translator.
    pub translator: Proc,
    /// The collector (None while stopped).
    pub collector: Option<Proc>,
    /// The ClickHouse server the collector exports to, with [`Export::clickhouse`].
    pub clickhouse: Option<ClickHouse>,
    /// The second translator, with `translators: 2`.
    pub second: Option<Second>,
    /// The rxe device, with [`Responder::Rxe`].
    pub rxe: Option<Rxe>,
    /// The namespaces.
    pub topo: Topology,
    /// Translator metrics.
    pub metrics: Metrics,
    /// Collector HTTP API (reachable from the collector namespace).
    pub http: SocketAddr,
    /// On drop the daemons' log tails are printed (cargo test shows them for failing tests only), unless
    /// this is set.
    pub quiet: bool,
    sender: Sender,
    /// The INT reports' sender (to the collector's INT port), with `int`.
    int_sender: Option<Sender>,
    dir: PathBuf,
    pids: Arc<Mutex<Vec<u32>>>,
    disarm: Arc<AtomicBool>,
    backend: &'static str,
}

fn collector_config(
    faults: Option<(f64, f64)>,
    io: Io,
    responder: Responder,
    interface: &str,
    int: bool,
    export: Option<(Export, &std::path::Path, Option<String>)>,
) -> String {
    let (drop, reorder) = match responder {
        Responder::Soft => faults.unwrap_or((0.0, 0.0)),
        // rxe is impaired by netem, not by the collector.
        Responder::Rxe => (0.0, 0.0),
    };
    let port = match (responder, io) {
        // The NIC (rxe) answers; the collector has no packet port.
        (Responder::Rxe, _) => String::new(),
        (Responder::Soft, Io::AfPacket) => format!("interface = \"{interface}\""),
        // --no-shconf: no shared runtime files, so the translator's EAL can run beside it.
        (Responder::Soft, Io::Dpdk) => "interface = \"net_af_packet0,iface=c0,framecnt=8192\"\nio = \"dpdk\"\neal_args = [\"-l\", \"0\", \"--no-huge\", \"--no-shconf\", \"-m\", \"256\", \"--no-pci\", \"--log-level=warning\", \"--no-telemetry\"]".to_string(),
    };
    let mut regions =
        workload::collector_regions(int) + if int { int_workload::COLLECTOR_INT } else { "" };
    let mut export_section = String::new();
    if let Some((e, dir, clickhouse)) = export {
        // The exporter reads drop counters with the redundancy the translator writes them with.
        regions = regions.replace(
            "kind = \"key_increment\"\n",
            &format!(
                "kind = \"key_increment\"\nredundancy = {}\n",
                workload::KI_N
            ),
        );
        export_section = format!(
            "\n[export]\nepoch_secs = {}\npoll_ms = {}\n\n[export.parquet]\ndir = \"{}\"\nrotate_secs = 1\n",
            e.epoch_secs,
            e.poll_ms,
            dir.display()
        );
        if let Some(url) = clickhouse {
            export_section += &format!(
                "\n[export.clickhouse]\nurl = \"{url}\"\ndatabase = \"{CLICKHOUSE_DATABASE}\"\nflush_ms = 200\n"
            );
        }
    }
    format!(
        r#"[collector]
mac = "{mac}"
ip = "{ip}"
{port}
max_dest_rd_atomic = 16
path_mtu = 1024

[control]
bind = "{mgmt}:{CONTROL_PORT}"
token = "{TOKEN}"

[http]
bind = "{mgmt}:{HTTP_PORT}"

[faults]
drop = {drop}
reorder = {reorder}
corrupt = 0.0
seed = 7
{regions}{export_section}"#,
        mac = topo::COLLECTOR_MAC,
        ip = topo::COLLECTOR_IP,
        mgmt = topo::COLLECTOR_MGMT,
    )
}

fn translator_config(io: Io, workers: usize, ip: &str, mgmt: &str, int: bool) -> String {
    let io_section = match io {
        Io::AfPacket => "[io]\nkind = \"af_packet\"\nports = [\"ta\", \"tb\"]\n".to_string(),
        // The PMD's default ring (512 frames) overflows under the sender's 4,096-report window, and
        // DPDK 22.11's net_af_packet does not count the kernel's ring drops: give it 8,192 frames.
        // One queue pair per worker (run to completion): `qpairs` makes the PMD spread frames over its
        // sockets by PACKET_FANOUT_HASH.
        Io::Dpdk => format!("[io]\nkind = \"dpdk\"\nports = [\"net_af_packet0,iface=ta,framecnt=8192,qpairs={workers}\", \"net_af_packet1,iface=tb,framecnt=8192,qpairs={workers}\"]\neal_args = [\"-l\", \"0\", \"--no-huge\", \"--no-shconf\", \"-m\", \"256\", \"--no-pci\", \"--log-level=warning\", \"--no-telemetry\"]\n"),
    };
    format!(
        r#"{io_section}
[workers]
count = {workers}

[[collectors]]
control = "{cm}:{CONTROL_PORT}"
token = "{TOKEN}"

[metrics]
bind = "{tm}:{METRICS_PORT}"

[local]
ip = [{ip}]
{engine}"#,
        ip = ip.replace('.', ", "),
        cm = topo::COLLECTOR_MGMT,
        tm = mgmt,
        engine = workload::translator_engine_sections(),
    ) + if int { int_workload::INT_SECTIONS } else { "" }
}

impl System {
    /// Builds the network and starts both daemons; `Ok(None)` means skip (printed).
    pub fn start(tag: &str, opts: Options) -> Result<Option<System>> {
        Self::start_with(tag, opts, "")
    }

    /// [`start`](Self::start) with `translator_extra` appended to every translator's configuration
    /// (after the INT sections with `int`, so its first lines continue `[int]`: a fabric's
    /// `hop_mode` and `[[int.switches]]`, say).
    pub fn start_with(tag: &str, opts: Options, translator_extra: &str) -> Result<Option<System>> {
        // Short and unique per test process: namespace names show up in `ip netns list`.
        let prefix = format!("dta{}{tag}", std::process::id());
        let (topo, rxe, backend) = match opts.responder {
            Responder::Soft => {
                let Some(topo) = topo::topology_or_skip(&prefix)? else {
                    return Ok(None);
                };
                (topo, None, "soft")
            }
            Responder::Rxe => {
                let topo = Topology::create_with_collector_here(&prefix)?;
                let mut rxe = Rxe::create(RXE_DEVICE, "c0")?;
                if let Some((drop, reorder)) = opts.faults {
                    rxe.impair(drop * 100.0, reorder * 100.0)?;
                }
                (topo, Some(rxe), "ibverbs")
            }
        };
        anyhow::ensure!(
            matches!(opts.translators, 1 | 2),
            "{} translators: runs have 1 or 2",
            opts.translators
        );
        let second_path = if opts.translators == 2 {
            anyhow::ensure!(
                opts.responder == Responder::Soft && opts.collector_io == Io::AfPacket,
                "two translators run with the software responder on AF_PACKET"
            );
            Some(topo.add_second_path(&prefix)?)
        } else {
            None
        };
        let dir = std::env::temp_dir().join(format!("dta-e2e-{prefix}"));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let pids = Arc::new(Mutex::new(Vec::new()));
        let disarm = Arc::new(AtomicBool::new(false));
        watchdog(opts.limit, &prefix, &dir, pids.clone(), disarm.clone());
        let history = dir.join("history");
        let clickhouse = match opts.export {
            Some(e) if e.clickhouse => {
                let ch = ClickHouse::start(
                    std::path::Path::new(CLICKHOUSE_SERVER),
                    topo.collector.name(),
                    format!("{}:{CLICKHOUSE_PORT}", topo::COLLECTOR_MGMT).parse()?,
                    &dir.join("clickhouse"),
                )?;
                if let Ok(mut v) = pids.lock() {
                    v.push(ch.pid());
                }
                Some(ch)
            }
            _ => None,
        };
        std::fs::write(
            dir.join("collector.toml"),
            collector_config(
                opts.faults,
                opts.collector_io,
                opts.responder,
                if second_path.is_some() { "br0" } else { "c0" },
                opts.int,
                opts.export.map(|e| {
                    (
                        e,
                        history.as_path(),
                        clickhouse.as_ref().map(ClickHouse::url),
                    )
                }),
            ),
        )?;
        let mut translator_toml = translator_config(
            opts.io,
            opts.workers,
            topo::TRANSLATOR_IP,
            topo::TRANSLATOR_MGMT,
            opts.int,
        ) + translator_extra;
        if opts.responder == Responder::Rxe {
            // rxe in a TCG guest can stall for longer than the default 7 timeouts (about 0.13 s at a
            // 1 ms timeout) when the host is busy; a failed QP is not what the suite judges.
            translator_toml = translator_toml.replace(
                "[requester]\n",
                &format!("[requester]\nretry_limit = {RXE_RETRY_LIMIT}\n"),
            );
        }
        std::fs::write(dir.join("translator.toml"), translator_toml)?;

        let collector = start_collector(&topo, &dir, &pids, backend)?;
        let (translator, metrics, sender) = start_translator(
            &topo.translator,
            &topo.reporter,
            &dir,
            "translator",
            topo::TRANSLATOR_MGMT,
            topo::REPORTER_IP,
            &pids,
        )?;
        let second = match second_path {
            Some(path) => {
                std::fs::write(
                    dir.join("translator2.toml"),
                    translator_config(
                        opts.io,
                        opts.workers,
                        topo::TRANSLATOR2_IP,
                        topo::TRANSLATOR2_MGMT,
                        opts.int,
                    ) + translator_extra,
                )?;
                let (translator, metrics, sender) = start_translator(
                    &path.translator,
                    &path.reporter,
                    &dir,
                    "translator2",
                    topo::TRANSLATOR2_MGMT,
                    topo::REPORTER2_IP,
                    &pids,
                )?;
                Some(Second {
                    translator,
                    metrics,
                    sender,
                    path,
                })
            }
            None => None,
        };
        let int_sender = if opts.int {
            Some(Sender::open_paced(
                topo.reporter.name(),
                format!("{}:40042", topo::REPORTER_IP).parse()?,
                format!("{}:{}", topo::COLLECTOR_IP, int_workload::INT_PORT).parse()?,
                crate::send::INT_PACKETS,
            )?)
        } else {
            None
        };
        Ok(Some(System {
            int_sender,
            translator,
            collector: Some(collector),
            clickhouse,
            second,
            rxe,
            http: format!("{}:{HTTP_PORT}", topo::COLLECTOR_MGMT).parse()?,
            topo,
            metrics,
            quiet: false,
            sender,
            dir,
            pids,
            disarm,
            backend,
        }))
    }

    /// Adds a process the test started beside the daemons (a Prometheus) to those the watchdog kills.
    pub fn watch(&self, pid: u32) {
        if let Ok(mut v) = self.pids.lock() {
            v.push(pid);
        }
    }

    /// Where the collector's exporter writes its Parquet files (runs with [`Options::export`]); kept
    /// with the scratch directory only while the run lasts (DTA_E2E_KEEP=1 keeps it).
    pub fn history_dir(&self) -> PathBuf {
        self.dir.join("history")
    }

    /// The run's scratch directory (configurations, logs, the history).
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    /// Stops the collector with SIGTERM (its exporter drains the lists, reads a last epoch and closes
    /// its files) and returns its final summary: the non-zero counters after that drain.
    pub fn stop_collector(&mut self) -> Result<String> {
        let mut c = self
            .collector
            .take()
            .context("the collector is not running")?;
        c.terminate(Duration::from_secs(60))
    }

    /// Kills the collector as a crash would.
    pub fn kill_collector(&mut self) {
        if let Some(mut c) = self.collector.take() {
            c.kill();
        }
    }

    /// Starts the collector again (new process, new memory).
    pub fn restart_collector(&mut self) -> Result<()> {
        self.kill_collector();
        self.collector = Some(start_collector(
            &self.topo,
            &self.dir,
            &self.pids,
            self.backend,
        )?);
        Ok(())
    }

    /// Restarts the collector with its regions in `file` (`[collector] memory_file`): from then on a
    /// collector restart, or a crash, keeps every region's contents.
    pub fn keep_collector_memory_in(&mut self, file: &std::path::Path) -> Result<()> {
        let cfg = self.dir.join("collector.toml");
        let text = std::fs::read_to_string(&cfg)?;
        anyhow::ensure!(
            text.starts_with("[collector]\n") && !text.contains("memory_file"),
            "unexpected collector configuration:\n{text}"
        );
        let text = text.replacen(
            "[collector]\n",
            &format!("[collector]\nmemory_file = \"{}\"\n", file.display()),
            1,
        );
        std::fs::write(&cfg, text)?;
        self.restart_collector()
    }

    /// Reports the translator has taken in so far.
    pub fn reports_taken(&self) -> Result<u64> {
        self.metrics.value("dta_translator_reports_total", "")
    }

    /// Sends reports without waiting for the translator to settle.
    pub fn send(&mut self, reports: &[Vec<u8>], timeout: Duration) -> Result<()> {
        let base = self.reports_taken()?;
        self.sender
            .send_all(reports, &self.metrics, base, 4096, timeout)
    }

    /// Sends `reports` (cycled) open-loop at `rate` per second for `duration`: (sent, refused by the
    /// reporter's kernel).
    pub fn send_at_rate(
        &mut self,
        reports: &[Vec<u8>],
        rate: u64,
        duration: Duration,
    ) -> Result<(u64, u64)> {
        self.sender.send_at_rate(reports, rate, duration)
    }

    /// Sends a workload, waits for the translator to settle, checks every answer.
    pub fn run(&mut self, w: &Workload) -> Result<Outcome> {
        let o = send_and_settle(&mut self.sender, &self.metrics, w)?;
        self.finish(w, o)
    }

    /// [`run`](Self::run) for INT reports (the run must have been started with `int`).
    pub fn run_int(&mut self, w: &Workload) -> Result<Outcome> {
        let s = self.int_sender.as_mut().context("started without int")?;
        let o = send_and_settle(s, &self.metrics, w)?;
        self.finish(w, o)
    }

    /// Sends INT reports and waits for the translator to settle, without the check (`checked` 0): for
    /// a caller that waits for something more before [`verify`](Self::verify).
    pub fn send_int(&mut self, w: &Workload) -> Result<Outcome> {
        let s = self.int_sender.as_mut().context("started without int")?;
        send_and_settle(s, &self.metrics, w)
    }

    /// [`run`](Self::run) through the second reporter and translator.
    pub fn run_second(&mut self, w: &Workload) -> Result<Outcome> {
        let s = self.second.as_mut().context("no second translator")?;
        let o = send_and_settle(&mut s.sender, &s.metrics, w)?;
        self.finish(w, o)
    }

    /// Sends a workload through the second reporter and translator and waits for it to settle, without
    /// the check (`checked` 0): for reports the second translator is expected to refuse.
    pub fn send_second(&mut self, w: &Workload) -> Result<Outcome> {
        let s = self.second.as_mut().context("no second translator")?;
        send_and_settle(&mut s.sender, &s.metrics, w)
    }

    fn finish(&self, w: &Workload, mut o: Outcome) -> Result<Outcome> {
        o.checked = self.verify(w)?;
        Ok(o)
    }

    /// Runs a workload's check from inside the collector namespace.
    pub fn verify(&self, w: &Workload) -> Result<u64> {
        let http = self.http;
        let v = &w.verify;
        crate::netns::enter_and_run(self.topo.collector.name(), move || v(http))?
            .with_context(|| format!("checking {}", w.name))
    }

    /// Collector metrics text (from its HTTP API).
    pub fn collector_metrics(&self) -> Result<String> {
        let http = self.http;
        crate::netns::enter_and_run(self.topo.collector.name(), move || {
            crate::http::get(http, "/metrics")
        })?
    }

    /// Stops the translator with SIGTERM (a clean stop) and starts it again with the same configuration:
    /// a new process with nothing of the old one's state. Returns the old one's final summary.
    pub fn restart_translator(&mut self) -> Result<String> {
        let summary = self.stop_translator()?;
        // The reporter's socket and its neighbour entry stay: the translator is a bump in the wire.
        let (translator, metrics) = spawn_translator(
            &self.topo.translator,
            &self.dir,
            "translator",
            topo::TRANSLATOR_MGMT,
            &self.pids,
        )?;
        (self.translator, self.metrics) = (translator, metrics);
        Ok(summary)
    }

    /// Stops the translator with SIGTERM and returns its final summary.
    pub fn stop_translator(&mut self) -> Result<String> {
        self.translator.terminate(Duration::from_secs(20))
    }

    /// Replaces the second translator (of a `translators: 2` run) with a twin of the first: the first's
    /// configuration, its address and QPNs included, behind the second path, with its metrics on the
    /// second's management address. A collector refuses the twin while the first lives, so this waits
    /// for its metrics endpoint, not for it to run. Its log is `twin.log`.
    pub fn start_twin(&mut self) -> Result<()> {
        let s = self.second.as_mut().context("no second translator")?;
        s.translator.terminate(Duration::from_secs(20))?;
        let first = std::fs::read_to_string(self.dir.join("translator.toml"))?;
        let bind = |mgmt: &str| format!("bind = \"{mgmt}:{METRICS_PORT}\"");
        let twin = first.replace(&bind(topo::TRANSLATOR_MGMT), &bind(topo::TRANSLATOR2_MGMT));
        anyhow::ensure!(
            twin != first,
            "the first translator's metrics bind not found"
        );
        let cfg = self.dir.join("twin.toml");
        std::fs::write(&cfg, twin)?;
        let mut twin = Proc::spawn(
            "twin",
            s.path.translator.name(),
            &bin("dta-translator")?,
            &["run", "--config", cfg.to_str().context("path")?],
            &self.dir.join("twin.log"),
        )?;
        self.pids
            .lock()
            .map_err(|_| anyhow::anyhow!("poisoned"))?
            .push(twin.pid());
        twin.wait_line("metrics listening", Duration::from_secs(60))?;
        s.translator = twin;
        Ok(())
    }
}

impl Drop for System {
    fn drop(&mut self) {
        self.disarm.store(true, Ordering::Relaxed);
        for name in [
            "translator.log",
            "translator2.log",
            "twin.log",
            "collector.log",
        ] {
            let path = self.dir.join(name);
            if self.quiet {
                break;
            }
            if let Ok(text) = std::fs::read_to_string(&path) {
                let lines: Vec<&str> = text.lines().collect();
                eprintln!("---- last lines of {name} ----");
                for l in &lines[lines.len().saturating_sub(20)..] {
                    eprintln!("{l}");
                }
            }
        }
        // The scratch directory goes with the run; DTA_E2E_KEEP=1 keeps configurations and logs.
        if std::env::var("DTA_E2E_KEEP").as_deref() != Ok("1") {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Sends `w` through `sender` and waits for the translator behind `metrics` to settle; `checked` is left
/// 0 for the caller's check.
fn send_and_settle(sender: &mut Sender, metrics: &Metrics, w: &Workload) -> Result<Outcome> {
    let taken = sender.paced_by();
    let base = metrics.value(taken, "")?;
    let resent = metrics.value("dta_translator_retransmitted_frames_total", "")?;
    let timeouts = metrics.value("dta_translator_retransmit_timeouts_total", "")?;
    let start = Instant::now();
    let n = w.reports.len() as u64;
    sender
        .send_all(&w.reports, metrics, base, 4096, Duration::from_secs(60))
        .with_context(|| format!("sending {}", w.name))?;
    metrics
        .wait_settled_on(taken, base + n, Duration::from_secs(60))
        .with_context(|| format!("settling after {}", w.name))?;
    let seconds = start.elapsed().as_secs_f64();
    Ok(Outcome {
        name: w.name,
        reports: n,
        seconds,
        checked: 0,
        retransmitted: metrics.value("dta_translator_retransmitted_frames_total", "")? - resent,
        timeouts: metrics.value("dta_translator_retransmit_timeouts_total", "")? - timeouts,
    })
}

/// Starts a translator in `ns` with `<name>.toml` from `dir`, waits until it runs, resolves the
/// collector's MAC from `reporter` through it and opens the reporter's sender.
fn start_translator(
    ns: &Netns,
    reporter: &Netns,
    dir: &std::path::Path,
    name: &str,
    mgmt: &str,
    reporter_ip: &str,
    pids: &Mutex<Vec<u32>>,
) -> Result<(Proc, Metrics, Sender)> {
    let (translator, metrics) = spawn_translator(ns, dir, name, mgmt, pids)?;
    // Resolve the collector's MAC through the bump before sending: the reporter's kernel queues only a
    // handful of datagrams while ARP is unresolved and drops the rest.
    resolve_collector(reporter)
        .with_context(|| format!("ARP from the reporter to the collector through {name}"))?;
    let sender = Sender::open(
        reporter.name(),
        format!("{reporter_ip}:40041").parse()?,
        format!("{}:40040", topo::COLLECTOR_IP).parse()?,
    )?;
    Ok((translator, metrics, sender))
}

/// Starts translator `name` (configuration `{name}.toml` in `dir`) and waits until it runs.
fn spawn_translator(
    ns: &Netns,
    dir: &std::path::Path,
    name: &str,
    mgmt: &str,
    pids: &Mutex<Vec<u32>>,
) -> Result<(Proc, Metrics)> {
    let cfg = dir.join(format!("{name}.toml"));
    let mut translator = Proc::spawn(
        name,
        ns.name(),
        &bin("dta-translator")?,
        &["run", "--config", cfg.to_str().context("path")?],
        &dir.join(format!("{name}.log")),
    )?;
    pids.lock()
        .map_err(|_| anyhow::anyhow!("poisoned"))?
        .push(translator.pid());
    translator.wait_line("translator running", Duration::from_secs(60))?;
    let metrics = Metrics {
        ns: ns.name().to_string(),
        addr: format!("{mgmt}:{METRICS_PORT}").parse()?,
    };
    Ok((translator, metrics))
}

fn start_collector(
    topo: &Topology,
    dir: &std::path::Path,
    pids: &Mutex<Vec<u32>>,
    backend: &str,
) -> Result<Proc> {
    let cfg = dir.join("collector.toml");
    let mut args = vec![
        "serve",
        "--backend",
        backend,
        "--config",
        cfg.to_str().context("path")?,
    ];
    if backend == "ibverbs" {
        args.extend(["--device", RXE_DEVICE]);
    }
    let mut p = Proc::spawn(
        "collector",
        topo.collector.name(),
        &bin("dta-collector")?,
        &args,
        &dir.join("collector.log"),
    )?;
    if let Ok(mut v) = pids.lock() {
        v.push(p.pid());
    }
    p.wait_line("control listening", Duration::from_secs(30))?;
    Ok(p)
}

/// Sends one datagram to the discard port (the translator forwards it like any foreign frame) and waits
/// until the reporter's kernel has learnt the collector's MAC.
fn resolve_collector(reporter: &Netns) -> Result<()> {
    let to: SocketAddr = format!("{}:9", topo::COLLECTOR_IP).parse()?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        reporter.run_in(move || -> Result<()> {
            let s = std::net::UdpSocket::bind("0.0.0.0:0")?;
            s.send_to(b"arp", to)?;
            Ok(())
        })??;
        std::thread::sleep(Duration::from_millis(100));
        let out = std::process::Command::new("ip")
            .args(["-n", reporter.name(), "neigh", "show", topo::COLLECTOR_IP])
            .output()?;
        if String::from_utf8_lossy(&out.stdout).contains(topo::COLLECTOR_MAC) {
            return Ok(());
        }
    }
    anyhow::bail!("the collector's MAC was not learnt within 10 s")
}

/// After `limit`, kills the daemons, removes the namespaces and exits with failure: a hung test must not
/// hang `make test`, nor leave namespaces behind. It writes to the process's stderr directly (the test
/// harness captures `eprintln!` and never shows it when the process exits), with the daemons' log tails.
fn watchdog(
    limit: Duration,
    prefix: &str,
    dir: &std::path::Path,
    pids: Arc<Mutex<Vec<u32>>>,
    disarm: Arc<AtomicBool>,
) {
    let prefix = prefix.to_string();
    let dir = dir.to_path_buf();
    std::thread::spawn(move || {
        let end = Instant::now() + limit;
        while Instant::now() < end {
            if disarm.load(Ordering::Relaxed) {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let mut err = std::io::stderr();
        let _ = writeln!(
            err,
            "WATCHDOG: test {prefix} exceeded {limit:?}; cleaning up and failing"
        );
        for name in [
            "translator.log",
            "translator2.log",
            "twin.log",
            "collector.log",
        ] {
            if let Ok(text) = std::fs::read_to_string(dir.join(name)) {
                let lines: Vec<&str> = text.lines().collect();
                let _ = writeln!(err, "---- last lines of {name} ----");
                for l in &lines[lines.len().saturating_sub(30)..] {
                    let _ = writeln!(err, "{l}");
                }
            }
        }
        if let Ok(v) = pids.lock() {
            for &pid in v.iter() {
                // SAFETY: kill(2) on PIDs of our own children.
                unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            }
        }
        for s in ["r", "t", "c", "s", "u"] {
            let _ = crate::netns::ip(&["netns", "del", &format!("{prefix}{s}")]);
        }
        let _ = std::fs::remove_dir_all(&dir);
        std::process::exit(1);
    });
}
