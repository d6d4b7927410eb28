//! `dta-bench`: the benchmark binaries `scripts/bench.sh` runs. Every subcommand prints one JSON document on
//! stdout; `report` gathers them with the testpmd and criterion outputs into bench/results.{json,md,png}.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

mod acker;
mod daemon;
mod daemon_floors;
mod export;
mod floors;
mod iofwd;
mod queries;
mod raw;
mod report;
mod responder;
mod responder_daemon;
mod sys;
mod system;
mod udp_baseline;
mod workloads;

#[derive(Parser)]
#[command(about = "dta benchmarks (see scripts/bench.sh)")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// The daemon's own data path (`dta-translator run`'s worker poll) on DPDK: reports from a pre-filled
    /// net_null, RoCE to a net_ring answered as a collector would; one mode, `--workers` cores.
    Daemon {
        /// keywrite-n1, keywrite-n2, keyincrement, append-b1, append-b4, append-b16, postcard5, sketch,
        /// int-v05.
        #[arg(long)]
        mode: String,
        #[arg(long, default_value_t = 1)]
        workers: usize,
        #[arg(long, default_value_t = 3.0)]
        secs: f64,
        /// EAL arguments (after `--`), the same as testpmd's.
        #[arg(last = true)]
        eal: Vec<String>,
    },
    /// The daemon's data path as a bump in the wire: frames from port `--from` forwarded to `--to`.
    Forward {
        #[arg(long)]
        from: String,
        #[arg(long)]
        to: String,
        #[arg(long, default_value_t = 3.0)]
        secs: f64,
        /// EAL arguments (after `--`), naming both ports' vdevs.
        #[arg(last = true)]
        eal: Vec<String>,
    },
    /// Writes a pcap of `--count` 64-byte non-DTA frames (UDP to port 53, varied flows) for the forwarding
    /// runs' looping net_pcap.
    ForwardPcap {
        #[arg(long)]
        out: PathBuf,
        #[arg(long, default_value_t = 1024)]
        count: u32,
    },
    /// testpmd's io forwarding through dta-netio (the translator's pool and bursts) on one core.
    Iofwd {
        #[arg(long, default_value_t = 3.0)]
        secs: f64,
        /// EAL arguments (after `--`), the same as testpmd's.
        #[arg(last = true)]
        eal: Vec<String>,
    },
    /// The CPU collector baseline over UDP loopback: keywrite-n1 (hash table) or append-b1 (log).
    Baseline {
        #[arg(long)]
        mode: String,
        #[arg(long, default_value_t = 3.0)]
        secs: f64,
    },
    /// The collector's software RoCEv2 responder on one core: write or fetch-add frames from a ring.
    Responder {
        #[arg(long)]
        mode: String,
        #[arg(long, default_value_t = 3.0)]
        secs: f64,
    },
    /// The collector's software responder daemon's loop on DPDK (what `dta-collector serve --backend soft`
    /// runs on a DPDK queue), one core: the same ring's frames in and responses out through a net_ring.
    ResponderDaemon {
        /// write or fetch-add.
        #[arg(long, default_value = "write")]
        mode: String,
        #[arg(long, default_value_t = 3.0)]
        secs: f64,
        /// EAL arguments (after `--`).
        #[arg(last = true)]
        eal: Vec<String>,
    },
    /// The whole system as users run it: the release `dta-pktgen` (DPDK) → net_memif → `dta-translator run`
    /// (1 worker) → net_memif → `dta-collector serve --backend soft`, separate processes pinned to CPUs; the
    /// highest lossless Key-Write N=1 rate by search, the stage that saturates first, and testpmd io-fwd
    /// over the same memif vdevs. Needs the release binaries beside this one, and root (or DPDK's rights).
    System {
        /// Seconds the sender runs per probe.
        #[arg(long, default_value_t = 1.0)]
        secs: f64,
        /// Wall-clock seconds after which no further search probe starts.
        #[arg(long, default_value_t = 60.0)]
        budget_s: f64,
        /// Most search probes.
        #[arg(long, default_value_t = 10)]
        max_probes: usize,
        /// The search ends when the bracket is within this fraction of its top.
        #[arg(long, default_value_t = 0.05)]
        precision: f64,
        /// Directory for the configs, logs and outputs of the processes.
        #[arg(long)]
        dir: PathBuf,
        /// Directory of the release binaries (default: this binary's).
        #[arg(long)]
        bin_dir: Option<PathBuf>,
        /// EAL memory options of every process.
        #[arg(
            long,
            default_value = "--no-huge --no-shconf",
            allow_hyphen_values = true
        )]
        mem: String,
        /// log2 of every memif ring's size (memif's `rsize`; DPDK's default is 10, 1024 slots).
        #[arg(long)]
        memif_rsize: Option<u8>,
        /// Bytes of every memif buffer (memif's `bsize`; DPDK's default is 2048). A ring's buffers are
        /// its working set: 2^14 slots of 2 KiB are 32 MiB, which every copy in and out missed in cache.
        #[arg(long)]
        memif_bsize: Option<u32>,
        /// CPU of the sender. By default the translator's: the collector, whose answers bound every QP's
        /// window, gets a CPU of its own (sharing it with the sender stalled its ACKs for milliseconds).
        #[arg(long, default_value_t = 1)]
        sender_cpu: usize,
        #[arg(long, default_value_t = 1)]
        translator_cpu: usize,
        #[arg(long, default_value_t = 0)]
        collector_cpu: usize,
        /// Probe these target rates (reports/s, comma-separated) in order instead of searching: no
        /// unpaced run, no testpmd. For looking at one operating point.
        #[arg(long, value_delimiter = ',')]
        rates: Vec<f64>,
    },
    /// The collector's history exporter (Parquet sink) over an INT drop-event list: rows/s per core
    /// (closed loop), and the highest Append rate it keeps up with before the ring overruns (open loop).
    Export {
        /// Seconds of the closed-loop run.
        #[arg(long, default_value_t = 4.0)]
        secs: f64,
        /// Seconds per open-loop probe.
        #[arg(long, default_value_t = 2.0)]
        probe_secs: f64,
        /// Entries of the ring (16-byte INT drop events).
        #[arg(long, default_value_t = 1 << 16)]
        ring: u64,
        /// `[export] poll_ms` of the open-loop probes (the default's 100).
        #[arg(long, default_value_t = 100)]
        poll_ms: u64,
    },
    /// Collector queries per second on one core.
    Queries {
        #[arg(long, default_value_t = 2.0)]
        secs: f64,
    },
    /// Gathers a run directory into results.json, results.md and results.png.
    Report {
        /// Directory with the run's outputs (testpmd logs, JSON documents).
        #[arg(long)]
        dir: PathBuf,
        /// Criterion's output directory (target/criterion).
        #[arg(long)]
        criterion: PathBuf,
        /// Where the three files go.
        #[arg(long)]
        out: PathBuf,
        /// Whether the EAL ran on hugepages.
        #[arg(long)]
        hugepages: bool,
    },
    /// Prints the machine description as JSON (captured before the run starts).
    Machine {
        #[arg(long)]
        hugepages: bool,
    },
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let json = match cli.cmd {
        Cmd::Daemon {
            mode,
            workers,
            secs,
            eal,
        } => {
            let m = workloads::Mode::parse(&mode)?;
            serde_json::to_string_pretty(&daemon::run(m, workers, secs, eal)?)?
        }
        Cmd::Forward {
            from,
            to,
            secs,
            eal,
        } => serde_json::to_string_pretty(&daemon::forward(&from, &to, secs, eal)?)?,
        Cmd::ForwardPcap { out, count } => {
            iofwd::write_forward_pcap(&out, count)?;
            return Ok(());
        }
        Cmd::Iofwd { secs, eal } => serde_json::to_string_pretty(&iofwd::run(secs, eal)?)?,
        Cmd::Baseline { mode, secs } => {
            let m = workloads::Mode::parse(&mode)?;
            serde_json::to_string_pretty(&udp_baseline::run(m, secs)?)?
        }
        Cmd::Responder { mode, secs } => {
            let m = responder::Mode::parse(&mode)?;
            serde_json::to_string_pretty(&responder::run(m, secs)?)?
        }
        Cmd::ResponderDaemon { mode, secs, eal } => {
            let m = responder::Mode::parse(&mode)?;
            serde_json::to_string_pretty(&responder_daemon::run(m, secs, eal)?)?
        }
        Cmd::System {
            secs,
            budget_s,
            max_probes,
            precision,
            dir,
            bin_dir,
            mem,
            memif_rsize,
            memif_bsize,
            sender_cpu,
            translator_cpu,
            collector_cpu,
            rates,
        } => serde_json::to_string_pretty(&system::run(&system::Opts {
            secs,
            budget_s,
            max_probes,
            precision,
            dir,
            bin_dir,
            mem,
            memif_rsize,
            memif_bsize,
            sender_cpu,
            translator_cpu,
            collector_cpu,
            rates,
        })?)?,
        Cmd::Export {
            secs,
            probe_secs,
            ring,
            poll_ms,
        } => serde_json::to_string_pretty(&export::run(secs, probe_secs, ring, poll_ms)?)?,
        Cmd::Queries { secs } => serde_json::to_string_pretty(&queries::run(secs)?)?,
        Cmd::Report {
            dir,
            criterion,
            out,
            hugepages,
        } => {
            report::run(&dir, &criterion, &out, hugepages).context("report")?;
            return Ok(());
        }
        Cmd::Machine { hugepages } => {
            serde_json::to_string_pretty(&sys::Machine::probe(hugepages))?
        }
    };
    println!("{json}");
    Ok(())
}
