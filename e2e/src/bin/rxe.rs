//! `dta-e2e-rxe`: the translator judged by Linux Soft-RoCE. Runs as root inside the VM that
//! `scripts/rxe.sh` boots (a kernel with `rdma_rxe`): reporter and translator in namespaces, the collector
//! on the `ibverbs` backend over an rxe device in the init namespace. Every primitive is sent and every
//! answer checked through the collector's query API; then again under netem loss and reordering on both
//! directions of the collector's link. rxe's own counters and the kernel log (a bad iCRC is logged) are
//! reported; any mismatch, QP error, dropped report or iCRC warning fails the run.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use clap::Parser;
use dta_e2e::http::metric;
use dta_e2e::rxe;
use dta_e2e::system::{Options, Outcome, Responder, System, CONTROL_PORT, RXE_RETRY_LIMIT, TOKEN};
use dta_e2e::topo;
use dta_e2e::workload::{self, Workload};

#[derive(Parser)]
#[command(about = "Every primitive through Linux Soft-RoCE (run inside the rxe VM as root)")]
struct Args {
    /// Reports per primitive in the run without faults (at least 10,000 by the suite's contract).
    #[arg(long, default_value_t = 10_000)]
    reports: u32,
    /// Reports per primitive in the run under netem; 0 skips that run.
    #[arg(long, default_value_t = 10_000)]
    fault_reports: u32,
    /// netem loss and reorder, percent, on both directions of the collector's link.
    #[arg(long, default_value_t = 1.0)]
    fault_percent: f64,
}

/// One workload's result with rxe's counters over it.
struct Row {
    outcome: Outcome,
    rxe: BTreeMap<String, u64>,
}

fn workloads(n: u32, salt: u64) -> Result<Vec<Workload>> {
    Ok(vec![
        // Every answer is one HTTP query, and queries are what a TCG guest is slowest at: 10 rounds
        // over n/10 keys keep the reports at n and the answers to check at n/10.
        workload::key_write_n(n / 10, 10, salt, 1)?,
        workload::key_write_n(n / 10, 10, salt, workload::KW_N)?,
        workload::key_increment(1_000, n, salt)?,
        workload::postcard(n / 25, 5, salt)?,
        workload::append(n)?,
        workload::append_wrapping(n)?,
        workload::sketch(n.div_ceil(4096), 1_000, salt)?,
    ])
}

fn delta(after: &BTreeMap<String, u64>, before: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    after
        .iter()
        .map(|(k, &v)| (k.clone(), v - before.get(k).copied().unwrap_or(0)))
        .collect()
}

/// Runs `workloads` on a fresh system; prints a row per workload.
fn suite(
    title: &str,
    faults: Option<f64>,
    workloads: &[Workload],
    dart_writes: u32,
    salt: u64,
) -> Result<Vec<Row>> {
    println!("== {title}");
    let opts = Options {
        faults: faults.map(|p| (p / 100.0, p / 100.0)),
        limit: Duration::from_secs(1500),
        workers: 1,
        responder: Responder::Rxe,
        ..Options::default()
    };
    let mut sys = System::start("rxe", opts)?.context("the rxe topology")?;
    // What the collector chose: the source GID and the pages its registered regions live on.
    let log = std::fs::read_to_string(&sys.collector.as_ref().context("collector")?.log)
        .unwrap_or_default();
    for line in log
        .lines()
        .filter(|l| l.contains("source GID") || l.contains("regions:"))
    {
        let text = line.split_once("] ").map_or(line, |(_, t)| t);
        println!("collector: {text}");
    }
    let mut rows = Vec::new();
    for w in workloads {
        rows.push(measured(&mut sys, |sys| {
            sys.run(w).with_context(|| format!("{title}: {}", w.name))
        })?);
    }
    // DART: a reporter writing Key-Writes over its own QP, through the bump in the wire, into rxe.
    rows.push(measured(&mut sys, |sys| dart(sys, dart_writes, salt))?);
    let m = sys.metrics.scrape()?;
    for (name, what) in [
        ("dta_translator_report_drops_total", "reports dropped"),
        ("dta_translator_worker_backlog_drops_total", "backlog drops"),
        ("dta_translator_qp_errors_total", "QP errors"),
    ] {
        ensure!(
            metric(&m, name, "") == 0,
            "{title}: {what}: {}",
            metric(&m, name, "")
        );
    }
    if let (Some(r), Some(_)) = (sys.rxe.as_ref(), faults) {
        println!("netem:\n{}", r.impairment_stats());
    }
    // The CLI a user would type, against the same collector.
    let bin = dta_e2e::bins::bin("dta-collector")?;
    let server = sys.http.to_string();
    for q in [
        vec!["keyincrement", "--key", "7", "--n", "2"],
        vec!["append", "--list", "4", "--tail", "0", "--max", "2"],
    ] {
        let out = Command::new(&bin)
            .args(["query", "--server", &server])
            .args(&q)
            .output()
            .context("running dta-collector query")?;
        ensure!(
            out.status.success(),
            "dta-collector query {}: {}: {}",
            q.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        println!(
            "$ dta-collector query {}\n{}",
            q.join(" "),
            String::from_utf8_lossy(&out.stdout).trim_end()
        );
    }
    sys.quiet = true;
    let summary = sys.stop_translator()?;
    println!("{}", summary.trim_end());
    Ok(rows)
}

/// Runs `dta-report dart` in the reporter's namespace: `writes` Key-Writes (N = 2) over 10 rounds, each
/// acknowledged by rxe, then every key checked. The RoCE frames cross the translator's bump in the wire
/// (forwarded untouched, as every frame that is not a report); the control channel has a link of its own.
fn dart(sys: &System, writes: u32, salt: u64) -> Result<Outcome> {
    let (file, verify) = workload::dart_key_write(writes / 10, 10, salt, 2)?;
    let path = std::env::temp_dir().join(format!("dart-writes-{salt:x}.txt"));
    std::fs::write(&path, file)?;
    let reporter = sys.topo.reporter.name().to_string();
    // The reporter's own management link to the collector's host for the control channel (the TCP
    // segments a veth hands to the translator's AF_PACKET socket carry partial checksums, so the
    // bump would forward them unverifiable; a real NIC delivers them whole). It goes with the
    // reporter's namespace.
    if sys.topo.reporter.ip(&["link", "show", "rm"]).is_err() {
        sys.topo.collector.ip(&[
            "link", "add", "dm", "type", "veth", "peer", "name", "rm", "netns", &reporter,
        ])?;
        sys.topo
            .collector
            .ip(&["addr", "add", "198.19.1.2/24", "dev", "dm"])?;
        sys.topo.collector.ip(&["link", "set", "dm", "up"])?;
        sys.topo
            .reporter
            .ip(&["addr", "add", "198.19.1.1/24", "dev", "rm"])?;
        sys.topo.reporter.ip(&["link", "set", "rm", "up"])?;
        sys.topo.reporter.ip(&[
            "route",
            "replace",
            &format!("{}/32", topo::COLLECTOR_MGMT),
            "via",
            "198.19.1.2",
        ])?;
    }
    let start = Instant::now();
    let out = Command::new("ip")
        .args(["netns", "exec", &reporter])
        .arg(dta_e2e::bins::bin("dta-report")?)
        .args([
            "dart",
            "--control",
            &format!("{}:{CONTROL_PORT}", topo::COLLECTOR_MGMT),
            "--token",
            TOKEN,
            "--interface",
            "r0",
            "--ip",
            topo::REPORTER_IP,
            "--redundancy",
            "2",
            "--timeout-s",
            "120",
            "--retry-limit",
            &RXE_RETRY_LIMIT.to_string(),
            "--writes",
        ])
        .arg(&path)
        .output()
        .context("running dta-report dart")?;
    let seconds = start.elapsed().as_secs_f64();
    let _ = std::fs::remove_file(&path);
    let stdout = String::from_utf8_lossy(&out.stdout);
    ensure!(
        out.status.success(),
        "dta-report dart: {}: {}{}",
        out.status,
        stdout,
        String::from_utf8_lossy(&out.stderr)
    );
    println!("  {}", stdout.trim());
    let field = |name: &str| -> u64 {
        stdout
            .split_whitespace()
            .find_map(|w| w.strip_prefix(name)?.strip_prefix('=')?.parse().ok())
            .unwrap_or(0)
    };
    let w = Workload {
        name: "DART (reporter)",
        reports: Vec::new(),
        verify,
    };
    let checked = sys.verify(&w)?;
    Ok(Outcome {
        name: w.name,
        reports: u64::from(writes / 10 * 10),
        seconds,
        checked,
        retransmitted: field("retransmitted"),
        timeouts: field("timeouts"),
    })
}

/// Runs `f` and prints its outcome with what rxe counted meanwhile.
fn measured(sys: &mut System, f: impl FnOnce(&mut System) -> Result<Outcome>) -> Result<Row> {
    let before = sys.rxe.as_ref().context("rxe")?.counters()?;
    let outcome = f(sys)?;
    let after = sys.rxe.as_ref().context("rxe")?.counters()?;
    let row = Row {
        outcome,
        rxe: delta(&after, &before),
    };
    print_row(&row);
    Ok(row)
}

fn print_row(r: &Row) {
    let o = &r.outcome;
    let c = |k: &str| r.rxe.get(k).copied().unwrap_or(0);
    println!(
        "  {:<17} {:>6} reports {:>7.1}s {:>6} answers exact | resent {:>5} timeouts {:>4} | rxe: rcvd {:>6} sent {:>6} dup {:>5} out_of_seq {:>4} seq_err {:>3} retry_err {}",
        o.name,
        o.reports,
        o.seconds,
        o.checked,
        o.retransmitted,
        o.timeouts,
        c("rcvd_pkts"),
        c("sent_pkts"),
        c("duplicate_request"),
        c("out_of_seq_request"),
        c("rcvd_seq_err"),
        c("completer_retry_err"),
    );
}

fn main() -> Result<()> {
    let a = Args::parse();
    ensure!(
        a.reports >= 10_000,
        "--reports {}: the suite checks at least 10,000 reports per primitive",
        a.reports
    );
    let start = Instant::now();
    let clean = suite(
        "every primitive through rxe",
        None,
        &workloads(a.reports, 0x5eed)?,
        a.reports,
        0x5eed,
    )?;
    let mut faulty = Vec::new();
    if a.fault_reports > 0 {
        faulty = suite(
            &format!(
                "under netem: {p}% loss, {p}% reorder, 1 ms delay, both directions",
                p = a.fault_percent
            ),
            Some(a.fault_percent),
            &workloads(a.fault_reports.max(10_000), 0xfa17)?,
            a.fault_reports.max(10_000),
            0xfa17,
        )?;
    }
    let icrc = rxe::icrc_warnings()?;
    println!("kernel log lines about iCRC: {}", icrc.len());
    for l in &icrc {
        println!("  {l}");
    }
    ensure!(icrc.is_empty(), "rxe logged iCRC errors");
    let checked: u64 = clean.iter().chain(&faulty).map(|r| r.outcome.checked).sum();
    let reports: u64 = clean.iter().chain(&faulty).map(|r| r.outcome.reports).sum();
    println!(
        "RXE SUITE PASSED: {reports} reports, {checked} answers exact, 0 iCRC errors, {:.0} s",
        start.elapsed().as_secs_f64()
    );
    Ok(())
}
