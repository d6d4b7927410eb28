//! `dta-e2e-drive`: the demo's driver. Builds the test network, starts the collector (software
//! responder) and the translator (bump in the wire), sends a mixed workload of all five primitives, checks
//! every answer against the model, prints a table and two example queries, and tears everything down;
//! then the same with standard INT reports into a collector whose history exporter keeps the events and
//! drop counts as Parquet files, kept under `--history` and asked one SQL question with chdb.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Parser;
use dta_e2e::http::metric;
use dta_e2e::system::{Export, Io, Options, Responder, System};
use dta_e2e::{history, int_workload, workload};

#[derive(Parser)]
#[command(about = "Run the dta demo: reporter -> translator -> collector in network namespaces")]
struct Args {
    /// Scale of the workload: reports per primitive (about).
    #[arg(long, default_value_t = 20_000)]
    reports: u32,
    /// Translator I/O (and the collector's): dpdk (net_af_packet vdevs on the veths, no hugepages) or
    /// af-packet.
    #[arg(long, default_value = "dpdk")]
    io: String,
    /// Collector fault injection: drop and reorder probability.
    #[arg(long, default_value_t = 0.0)]
    faults: f64,
    /// Translator worker threads.
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// Skip the INT part.
    #[arg(long)]
    no_int: bool,
    /// Skip the search for the highest lossless rate.
    #[arg(long)]
    no_rate: bool,
    /// Where the INT part's exported history (the collector's Parquet files) is kept after the run.
    #[arg(long, default_value = "target/demo-history")]
    history: std::path::PathBuf,
}

/// The highest lossless rate here (open-loop Key-Write reports, N = 4), and what loses first above it.
fn rate_search(sys: &mut System) -> Result<()> {
    println!("== the highest lossless rate (open-loop sender, Key-Write N = 4: four RDMA WRITEs a report)");
    let w = workload::key_write(4_096, 1, 7)?;
    let (best, probes) =
        dta_e2e::rate::highest_lossless(sys, &w.reports, 10_000, 2_000_000, 4, 1.0)?;
    for p in &probes {
        println!(
            "  offered {:>9}/s: sent {:>8}, taken {:>8}, {}",
            p.rate,
            p.sent,
            p.taken,
            if p.lossless() {
                "lossless".to_string()
            } else {
                format!("losses, first at {}", p.bottleneck())
            }
        );
    }
    match best {
        Some(b) => println!("  highest lossless rate: {} reports/s end to end", b.rate),
        None => println!("  no lossless rate found (even 10,000 reports/s lose)"),
    }
    println!();
    Ok(())
}

fn main() -> Result<()> {
    let a = Args::parse();
    let io = match a.io.as_str() {
        "af-packet" => Io::AfPacket,
        "dpdk" => Io::Dpdk,
        other => bail!("--io {other}: use af-packet or dpdk"),
    };
    let opts = Options {
        io,
        faults: (a.faults > 0.0).then_some((a.faults, a.faults)),
        limit: Duration::from_secs(300),
        workers: a.workers,
        collector_io: io,
        responder: Responder::Soft,
        translators: 1,
        int: false,
        export: None,
    };
    std::env::set_var("DTA_REQUIRE_NETNS", "1");
    let mut sys = System::start("demo", opts)?.context("network namespaces")?;
    let n = a.reports.max(1000);
    let workloads = vec![
        workload::key_write(n / 2, 2, 42)?,
        workload::key_increment(1_000, n, 42)?,
        workload::append(n)?,
        workload::postcard(n / 10, 2, 42)?,
        workload::sketch((n / 4096).max(1), 1_000, 42)?,
    ];
    // A mixed stream: the primitives interleaved report by report, each keeping its own order.
    let mut mixed = Vec::new();
    let longest = workloads.iter().map(|w| w.reports.len()).max().unwrap_or(0);
    for i in 0..longest {
        for w in &workloads {
            if let Some(r) = w.reports.get(i) {
                mixed.push(r.clone());
            }
        }
    }
    let how = match io {
        Io::Dpdk => "DPDK net_af_packet ports on the veths",
        Io::AfPacket => "AF_PACKET sockets",
    };
    println!(
        "translator: bump in the wire on {how}, {} worker(s); collector: software RoCEv2 responder",
        a.workers
    );
    println!(
        "sending {} reports (5 primitives interleaved) ...",
        mixed.len()
    );
    let start = Instant::now();
    let base = sys.reports_taken()?;
    sys.send(&mixed, Duration::from_secs(240))?;
    let m = sys
        .metrics
        .wait_settled(base + mixed.len() as u64, Duration::from_secs(60))?;
    let secs = start.elapsed().as_secs_f64();
    let mut checked = 0;
    let mut total = 0;
    for w in &workloads {
        match sys.verify(w) {
            Ok(c) => {
                checked += c;
                total += c;
            }
            Err(e) => {
                eprintln!("MISMATCH: {e:#}");
                total += 1;
            }
        }
    }
    println!();
    println!("  {:<34} {:>12}", "reports sent", mixed.len());
    println!(
        "  {:<34} {:>12.0}",
        "reports/s end to end",
        mixed.len() as f64 / secs
    );
    println!(
        "  {:<34} {:>12}",
        "RoCE frames written",
        metric(&m, "dta_translator_roce_frames_out_total", "")
    );
    println!(
        "  {:<34} {:>12}",
        "retransmissions",
        metric(&m, "dta_translator_retransmitted_frames_total", "")
    );
    println!(
        "  {:<34} {:>12}",
        "reports dropped",
        metric(&m, "dta_translator_report_drops_total", "")
    );
    println!(
        "  {:<34} {:>7} / {:<5}",
        "queries answered correctly", checked, total
    );
    println!();
    show_queries(
        &sys,
        &[
            &["keywrite", "--key", "42"],
            &["append", "--list", "3", "--tail", "0", "--max", "8"],
        ],
    )?;
    println!();
    if !a.no_rate {
        rate_search(&mut sys)?;
    }
    if std::env::var_os("DTA_DEMO_COLLECTOR_METRICS").is_some() {
        println!("{}", sys.collector_metrics()?);
    }
    sys.quiet = true;
    let summary = sys.stop_translator()?;
    println!("{}", summary.trim_end());
    drop(sys);
    if checked != total {
        bail!("{} of {total} answers were wrong", total - checked);
    }
    if !a.no_int {
        int_phase(&a, io)?;
    }
    Ok(())
}

/// The INT part: standard INT reports (fabric-tna v0.5 per-hop and drop reports, v2.0 sink reports) into
/// a translator with `[int]` enabled, every path, hop record, drop counter and event checked, and the
/// collector's INT queries shown.
fn int_phase(a: &Args, io: Io) -> Result<()> {
    let opts = Options {
        io,
        faults: (a.faults > 0.0).then_some((a.faults, a.faults)),
        limit: Duration::from_secs(240),
        workers: a.workers,
        collector_io: io,
        responder: Responder::Soft,
        translators: 1,
        int: true,
        // The history exporter beside the regions: Parquet files, an epoch every second.
        export: Some(Export {
            poll_ms: 100,
            epoch_secs: 1,
            clickhouse: false,
        }),
    };
    let mut sys = System::start("dint", opts)?.context("network namespaces")?;
    let flows = (a.reports / 10).max(200);
    let w = int_workload::int(flows, flows / 4, flows / 2, 42)?;
    println!("== INT: switches' own telemetry reports, no DTA reporter");
    println!(
        "sending {} INT reports: fabric-tna v0.5 per-hop reports of {flows} 5-hop flows, v2.0 sink reports of {} flows, {} drop reports ...",
        w.reports.len(),
        flows / 4,
        flows / 2
    );
    let outcome = sys.run_int(&w);
    let m = sys.metrics.scrape()?;
    println!();
    println!("  {:<34} {:>12}", "INT reports sent", w.reports.len());
    println!(
        "  {:<34} {:>12}",
        "INT reports translated",
        metric(&m, "dta_translator_int_reports_total", "")
    );
    println!(
        "  {:<34} {:>12}",
        "INT reports not translated",
        metric(&m, "dta_translator_int_drops_total", "")
    );
    match &outcome {
        Ok(o) => {
            println!(
                "  {:<34} {:>12.0}",
                "INT reports/s end to end",
                o.reports as f64 / o.seconds
            );
            println!(
                "  {:<34} {:>7} / {:<5}",
                "queries answered correctly", o.checked, o.checked
            );
        }
        Err(e) => println!("MISMATCH: {e:#}"),
    }
    println!();
    let flow = int_workload::example_flow();
    show_queries(
        &sys,
        &[
            &["int-path", "--flow", flow.as_str()],
            &["int-drops", "--node", "1", "--reason", "71", "--n", "2"],
        ],
    )?;
    println!();
    // SIGTERM: the exporter drains the lists, reads a last epoch and closes its files.
    let summary = sys.stop_collector()?;
    let history = keep_history(&sys.history_dir(), &a.history)?;
    sys.quiet = true;
    drop(sys);
    show_history(&history, &summary)?;
    outcome.map(|_| ())
}

/// Copies the run's Parquet files (which go with its scratch directory) to `to`, replacing what an
/// earlier demo left there; returns `to` made absolute.
fn keep_history(from: &Path, to: &Path) -> Result<PathBuf> {
    if to.exists() {
        std::fs::remove_dir_all(to).with_context(|| format!("removing {}", to.display()))?;
    }
    copy_dir(from, to)?;
    std::fs::canonicalize(to).with_context(|| format!("{}", to.display()))
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    for e in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let e = e?;
        let dest = to.join(e.file_name());
        if e.file_type()?.is_dir() {
            copy_dir(&e.path(), &dest)?;
        } else {
            std::fs::copy(e.path(), &dest)?;
        }
    }
    Ok(())
}

/// The history the INT part left: where the files are, what the exporter wrote, and an operator's SQL
/// question over them answered by chdb (ClickHouse in-process, from the venv).
fn show_history(dir: &Path, summary: &str) -> Result<()> {
    println!(
        "== History: the collector's exporter kept the events and drop counts as Parquet files"
    );
    let mut files = Vec::new();
    list_files(dir, &mut files)?;
    files.sort();
    println!("  {} files under {}", files.len(), dir.display());
    for f in files.iter().take(6) {
        println!("    {}", f.strip_prefix(dir).unwrap_or(f).display());
    }
    if files.len() > 6 {
        println!("    ...");
    }
    for line in summary.lines() {
        let l = line.trim_start();
        if l.starts_with("dta_collector_export_rows_total")
            || l.starts_with("dta_collector_export_overruns_total")
        {
            println!("  {l}");
        }
    }
    let Some(python) = history::python_or_skip()? else {
        return Ok(());
    };
    let sql = format!(
        "SELECT node AS switch, toDateTime(epoch_ms) AS second, sum(count) AS drops \
         FROM file('{}/drop_counts/*/*.parquet', Parquet) \
         GROUP BY switch, second ORDER BY second, switch",
        dir.display()
    );
    println!();
    println!("drops per switch per second, SQL over the files (chdb, ClickHouse in-process):");
    println!(
        "$ .venv/bin/python -c 'import chdb, sys; print(chdb.query(sys.argv[1], \"PrettyCompact\"))' \"{sql}\""
    );
    print!("{}", history::chdb_query(&python, &sql, "PrettyCompact")?);
    println!();
    Ok(())
}

fn list_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for e in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let e = e?;
        if e.file_type()?.is_dir() {
            list_files(&e.path(), out)?;
        } else if e.path().extension().is_some_and(|x| x == "parquet") {
            out.push(e.path());
        }
    }
    Ok(())
}

/// Runs each `dta-collector query` in the collector's namespace and prints it with its answer (long
/// answers cut after 320 characters).
fn show_queries(sys: &System, queries: &[&[&str]]) -> Result<()> {
    let collector = sys.topo.collector.name().to_string();
    let server = sys.http.to_string();
    let bin = dta_e2e::bins::bin("dta-collector")?;
    for q in queries {
        println!("$ dta-collector query --server {server} {}", q.join(" "));
        let out = Command::new("ip")
            .args(["netns", "exec", &collector])
            .arg(&bin)
            .args(["query", "--server", &server])
            .args(q.iter())
            .output()
            .context("running dta-collector query")?;
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            match line.char_indices().nth(320) {
                Some((cut, _)) => println!("{} ...", &line[..cut]),
                None => println!("{line}"),
            }
        }
    }
    Ok(())
}
