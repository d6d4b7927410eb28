//! The two daemons joined by DPDK's `net_memif` (as `dta-bench system` and users join them), the collector
//! restarted under load: the translator's worker is inside a memif burst while the dying collector's
//! rings are unmapped under it (DPDK 22.11's memif PMD tears the connection down on its interrupt thread
//! with no synchronisation with the lcores), which killed the translator with SIGSEGV before the fault
//! guard of dta-netio (3 runs in 4 here when both daemons stopped at once on a busy machine).
//!
//! Reports loop from a `net_pcap` vdev into the translator (memif server towards the collector, so that a
//! restarted collector, a memif client, connects again by itself); the collector is killed (SIGKILL, then
//! SIGTERM, then SIGKILL) and started again three times. Each time the translator must stay up (same
//! process), see and count the link going down and up, count what it could not deliver, and resume: the new
//! collector writes reports. Last, the translator stops: the collector stays up, logs its link down, and
//! stops cleanly. Run it under `flock /tmp/dta-heavy.lock` (it keeps a CPU busy with the loop
//! of reports), in release for the release daemons:
//! `flock /tmp/dta-heavy.lock cargo test --release -p dta-e2e --test memif`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use dta_e2e::bins::bin;
use dta_e2e::http::{get, metric};
use dta_e2e::procs::Proc;

/// The translator's memif port towards the collector.
const MEMIF: &str = "net_memif1";
/// Collector restarts.
const ROUNDS: usize = 3;
/// Longest a step may take without the translator taking a report (it takes millions a second from the
/// looping pcap, so a stall means it is stuck), and the ceiling of a step that takes about a second.
const STALL: Duration = Duration::from_secs(20);
const STEP: Duration = Duration::from_secs(60);

/// A scratch directory (kept, with the daemons' logs, unless the test passed) and the DPDK runtime
/// directories of this test's processes, removed on drop.
struct Scratch {
    dir: PathBuf,
    prefixes: Vec<String>,
    passed: bool,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if self.passed {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
        for p in &self.prefixes {
            let _ = std::fs::remove_dir_all(Path::new("/var/run/dpdk").join(p));
            if let Some(run) = std::env::var_os("XDG_RUNTIME_DIR") {
                let _ = std::fs::remove_dir_all(Path::new(&run).join("dpdk").join(p));
            }
        }
    }
}

fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

fn eal(cpu: usize, prefix: &str) -> String {
    format!(
        "-l {cpu} --no-huge --no-shconf -m 512 --no-pci --file-prefix {prefix} --log-level=warning --no-telemetry"
    )
}

/// Polls `f` every 100 ms until it says done; fails when the translator took no report for [`STALL`]
/// (read from its `/metrics` each time) or after [`STEP`].
fn wait(what: &str, translator: SocketAddr, mut f: impl FnMut() -> Result<bool>) -> Result<()> {
    let start = Instant::now();
    let (mut taken, mut moved) = (0, Instant::now());
    loop {
        if f().unwrap_or(false) {
            return Ok(());
        }
        let now_taken = get(translator, "/metrics")
            .map(|m| metric(&m, "dta_translator_frames_in_total", ""))
            .unwrap_or(taken);
        if now_taken != taken {
            (taken, moved) = (now_taken, Instant::now());
        }
        if moved.elapsed() > STALL {
            bail!("{what}: the translator took no report for {STALL:?}");
        }
        if start.elapsed() > STEP {
            bail!("{what}: not within {STEP:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

struct Setup {
    scratch: Scratch,
    collector_args: Vec<String>,
    collector_http: SocketAddr,
    metrics: SocketAddr,
}

impl Setup {
    fn new() -> Result<(Setup, Vec<String>)> {
        let tag = format!("dta-memif-{}", std::process::id());
        let dir = std::env::temp_dir().join(&tag);
        std::fs::create_dir_all(&dir)?;
        let scratch = Scratch {
            dir: dir.clone(),
            prefixes: vec![format!("{tag}-t"), format!("{tag}-c")],
            passed: false,
        };
        // 2,000 Key-Write reports (N = 1) to loop: fewer than the port's mbufs, which net_pcap's infinite
        // mode holds all at once.
        let pcap = dir.join("reports.pcap");
        let out = Command::new(bin("dta-pktgen")?)
            .args([
                "--workload",
                "keywrite",
                "--redundancy",
                "1",
                "--count",
                "2000",
            ])
            .arg("--pcap")
            .arg(&pcap)
            .output()
            .context("running dta-pktgen")?;
        ensure!(out.status.success(), "dta-pktgen: {out:?}");
        let (control, http, metrics) = (free_port()?, free_port()?, free_port()?);
        // An abstract socket (memif's default): nothing on disk.
        let sock = format!("/run/{tag}/collector.sock");
        let ccfg = dir.join("collector.toml");
        std::fs::write(
            &ccfg,
            format!(
                "[collector]\nmac = \"02:00:00:00:00:02\"\nip = \"198.18.0.2\"\nmax_dest_rd_atomic = 16\n\
                 path_mtu = 1024\n\n[control]\nbind = \"127.0.0.1:{control}\"\ntoken = \"memif\"\n\n\
                 [http]\nbind = \"127.0.0.1:{http}\"\n\n[[region]]\nkind = \"key_write\"\nslots = 65536\n\
                 entry_size = 8\nn_max = 1\n"
            ),
        )?;
        let tcfg = dir.join("translator.toml");
        std::fs::write(
            &tcfg,
            format!(
                "[io]\nkind = \"dpdk\"\nports = [\"net_pcap0,rx_pcap={},infinite_rx=1\", \
                 \"{MEMIF},role=server,socket={sock},id=0\"]\n\n[workers]\ncount = 1\n\n\
                 [[collectors]]\ncontrol = \"127.0.0.1:{control}\"\ntoken = \"memif\"\n\n\
                 [metrics]\nbind = \"127.0.0.1:{metrics}\"\n\n[local]\nmac = \"02:00:00:00:00:01\"\n\
                 ip = [198, 18, 0, 1]\n",
                pcap.display()
            ),
        )?;
        let translator_args = vec![
            "run".to_string(),
            "--config".into(),
            tcfg.display().to_string(),
            "--eal".into(),
            eal(0, &format!("{tag}-t")),
        ];
        let collector_args = vec![
            "serve".to_string(),
            "--backend".into(),
            "soft".into(),
            "--io".into(),
            "dpdk".into(),
            "--config".into(),
            ccfg.display().to_string(),
            "--interface".into(),
            format!("net_memif0,role=client,socket={sock},id=0"),
            "--eal".into(),
            eal(1, &format!("{tag}-c")),
        ];
        Ok((
            Setup {
                scratch,
                collector_args,
                collector_http: SocketAddr::from(([127, 0, 0, 1], http)),
                metrics: SocketAddr::from(([127, 0, 0, 1], metrics)),
            },
            translator_args,
        ))
    }

    fn start_collector(&self, n: usize) -> Result<Proc> {
        let args: Vec<&str> = self.collector_args.iter().map(String::as_str).collect();
        let log = self.scratch.dir.join(format!("collector-{n}.log"));
        Proc::spawn("collector", "", &bin("dta-collector")?, &args, &log)
    }

    fn translator_metrics(&self) -> Result<String> {
        get(self.metrics, "/metrics")
    }

    fn written(&self) -> Result<u64> {
        Ok(metric(
            &get(self.collector_http, "/metrics")?,
            "dta_collector_writes_total",
            "",
        ))
    }
}

#[test]
fn translator_survives_its_memif_collector_restarting_under_load() -> Result<()> {
    let (mut setup, targs) = Setup::new()?;
    let targs: Vec<&str> = targs.iter().map(String::as_str).collect();
    let tlog = setup.scratch.dir.join("translator.log");
    let mut translator = Proc::spawn("translator", "", &bin("dta-translator")?, &targs, &tlog)?;
    // The collector's memif client needs the translator's server listening, and the translator serves its
    // metrics once the collector has welcomed it.
    wait_for_log(&tlog, &format!("DPDK port {MEMIF}"))?;
    let mut collector = setup.start_collector(0)?;
    translator.wait_line("metrics listening on", STEP)?;
    let pid = translator.pid();
    let port = format!("port=\"{MEMIF}\"");
    let mut lost_before = 0;
    for round in 0..=ROUNDS {
        // The collector is up: the link comes up, the translator is welcomed, and reports are written.
        wait("the memif link up", setup.metrics, || {
            Ok(metric(
                &setup.translator_metrics()?,
                "dta_translator_port_link_up",
                &port,
            ) == 1)
        })?;
        wait("the collector writing reports", setup.metrics, || {
            Ok(setup.written()? >= 1000)
        })?;
        let m = setup.translator_metrics()?;
        ensure!(
            metric(&m, "dta_translator_port_link_downs_total", &port) == round as u64,
            "round {round}: link downs counted:\n{m}"
        );
        let lost = metric(&m, "dta_translator_reports_lost_on_restart_total", "")
            + metric(&m, "dta_translator_port_tx_dropped_total", &port);
        if round > 0 {
            ensure!(
                lost > lost_before,
                "round {round}: what the translator could not deliver while its collector was away is \
                 counted ({lost_before} before, {lost} now)"
            );
        }
        lost_before = lost;
        eprintln!(
            "round {round}: collector writing ({} so far), {lost} frames or reports counted lost, {} driver \
             faults survived",
            setup.written()?,
            metric(&m, "dta_translator_port_driver_faults_total", "")
        );
        if round == ROUNDS {
            break;
        }
        // The peer goes away: crashed, or stopped cleanly (which tells the memif peer it disconnects).
        if round % 2 == 0 {
            collector.kill();
        } else {
            collector
                .terminate(STEP)
                .context("the collector's clean stop")?;
        }
        wait("the memif link down", setup.metrics, || {
            let m = setup.translator_metrics()?;
            Ok(metric(&m, "dta_translator_port_link_up", &port) == 0
                && metric(&m, "dta_translator_port_link_downs_total", &port) == round as u64 + 1)
        })?;
        // Reports keep coming for a while with nowhere to go.
        std::thread::sleep(Duration::from_millis(500));
        ensure!(
            translator.running() && translator.pid() == pid,
            "round {round}: the translator survived its collector going away (see {})",
            tlog.display()
        );
        collector = setup.start_collector(round + 1)?;
    }
    let summary = translator.terminate(STEP)?;
    ensure!(
        summary.contains("reports in"),
        "the translator's summary:\n{summary}"
    );
    let log = std::fs::read_to_string(&tlog)?;
    let downs = log
        .matches(&format!("port {MEMIF}: link down (its peer is gone)"))
        .count();
    let ups = log.matches(&format!("port {MEMIF}: link up again")).count();
    ensure!(
        downs == ROUNDS && ups == ROUNDS,
        "the translator logs each fall and return of the link: {downs} down, {ups} up (see {})",
        tlog.display()
    );
    // The other way round: the collector's peer stopped, the collector stays up with its memory, says so,
    // and stops cleanly.
    let clog = setup.scratch.dir.join(format!("collector-{ROUNDS}.log"));
    wait_for_log(&clog, "port net_memif0: link down (its peer is gone")?;
    let written = setup.written()?;
    std::thread::sleep(Duration::from_millis(300));
    ensure!(
        collector.running() && setup.written()? == written,
        "the collector survived its translator stopping, its counts intact (see {})",
        clog.display()
    );
    collector
        .terminate(STEP)
        .context("the collector's clean stop")?;
    setup.scratch.passed = true;
    Ok(())
}

/// Waits until `log` contains `what` (at most [`STEP`]).
fn wait_for_log(log: &Path, what: &str) -> Result<()> {
    let start = Instant::now();
    while !std::fs::read_to_string(log)
        .unwrap_or_default()
        .contains(what)
    {
        if start.elapsed() > STEP {
            bail!("{} has no {what:?} after {STEP:?}", log.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}
