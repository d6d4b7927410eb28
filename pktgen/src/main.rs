//! `dta-pktgen`: generate a DTA report workload to a pcap file or a UDP socket, paced or as fast as
//! possible, with a progress line on stderr and a JSON summary on stdout.
//!
//! Frames come from [`FastGenerator`], which patches per-type templates (byte for byte what the reference
//! `Generator` + `FrameBuilder` build, as `tests/fast_path.rs` checks), straight into DPDK's mbufs.

mod args;
mod output;
mod summary;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use clap::Parser;
use dta_pktgen::fast::FastGenerator;
use dta_pktgen::int::IntGenerator;
use dta_pktgen::source::FrameSource;
use dta_protocol::udp::UdpEndpoints;
use dta_reporter::pace::Pacer;

use args::Cli;
use output::{Output, Scratch};
use summary::Summary;

/// Frames handed to the output per burst.
const BURST: usize = 32;
/// With `--pace-sleep`, bursts sent back to back before the sender yields its CPU. A sender that fell
/// behind its schedule (preempted, or slower than the rate) catches up without sleeping, and without
/// yielding it held a shared core for milliseconds: measured by `perf sched` in `dta-bench system`, the
/// translator beside it waited up to 6.2 ms for the CPU while its 16,384-slot memif ring overflowed.
/// Yielding every 4 bursts (128 frames) made 3 M reports/s lossless there; every burst cost more
/// system calls for no further gain.
const YIELD_EVERY: u32 = 4;

/// Bursts between two clock reads when unpaced.
const CLOCK_EVERY: u32 = 16;

fn main() -> Result<()> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let cli = Cli::parse();
    let mut out = Output::open(&cli)?;
    let (sent, elapsed, per_op) = match cli.workload.kind() {
        Ok(kind) => {
            let mut gen = FastGenerator::new(cli.params(kind)?, cli.endpoints()?, cli.format()?)?;
            if cli.commands {
                return commands(&cli, &mut gen, &mut out);
            }
            let (sent, elapsed) = pump(&cli, &mut gen, &mut out)?;
            let per_op: BTreeMap<&'static str, u64> = gen
                .per_opcode()
                .filter(|(_, n)| *n > 0)
                .map(|(op, n)| (summary::opcode_name(op), n))
                .collect();
            (sent, elapsed, per_op)
        }
        Err(kind) => {
            let ep = UdpEndpoints {
                dst_port: cli.int_port,
                ..cli.endpoints()?
            };
            let mut gen = IntGenerator::new(cli.int_params(kind)?, ep);
            if cli.commands {
                return commands(&cli, &mut gen, &mut out);
            }
            let (sent, elapsed) = pump(&cli, &mut gen, &mut out)?;
            let drops = gen.drops();
            let per_op = BTreeMap::from([("int_drop", drops), ("int_flow", sent - drops)]);
            (sent, elapsed, per_op)
        }
    };
    let dropped = out.finish()?;
    if cli.progress {
        eprintln!();
    }
    let s = Summary {
        workload: cli.workload.name(),
        output: out_name(&cli),
        sent,
        dropped,
        elapsed_s: elapsed,
        pps: if elapsed > 0.0 {
            sent as f64 / elapsed
        } else {
            0.0
        },
        target_pps: cli.rate,
        per_opcode: per_op,
    };
    println!("{}", serde_json::to_string(&s)?);
    Ok(())
}

/// `--commands`: a run per line of stdin (`<rate> <seconds>`), a JSON line on stdout after each.
fn commands(cli: &Cli, gen: &mut impl FrameSource, out: &mut Output) -> Result<()> {
    use std::io::{BufRead, Write};
    let mut dropped_before = out.finish()?;
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        let mut f = line.split_whitespace();
        let (Some(rate), Some(secs), None) = (f.next(), f.next(), f.next()) else {
            if line.trim().is_empty() {
                continue;
            }
            bail!("command {line:?}: want `<rate> <seconds>`");
        };
        let rate: f64 = rate
            .parse()
            .map_err(|e| anyhow::anyhow!("rate {rate:?}: {e}"))?;
        let secs: f64 = secs
            .parse()
            .map_err(|e| anyhow::anyhow!("seconds {secs:?}: {e}"))?;
        let run = Cli {
            rate: Some(rate).filter(|r| *r > 0.0),
            duration: Some(secs),
            count: None,
            ..cli.clone()
        };
        let (sent, elapsed) = pump(&run, gen, out)?;
        let dropped = out.finish()?;
        let s = serde_json::json!({
            "sent": sent,
            "dropped": dropped - dropped_before,
            "elapsed_s": elapsed,
            "pps": if elapsed > 0.0 { sent as f64 / elapsed } else { 0.0 },
            "target_pps": run.rate,
        });
        dropped_before = dropped;
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "{s}")?;
        stdout.flush()?;
    }
    Ok(())
}

/// Sends `gen`'s frames to `out` for the count or duration the command line gives, paced or not; returns
/// the frames sent and the seconds it took.
fn pump(cli: &Cli, gen: &mut impl FrameSource, out: &mut Output) -> Result<(u64, f64)> {
    let count = match (cli.count, cli.duration) {
        (Some(c), _) => c,
        (None, Some(_)) => u64::MAX,
        (None, None) => 1000,
    };
    let deadline = cli
        .duration
        .map(|s| Instant::now() + Duration::from_secs_f64(s));
    // pcap timestamps follow the schedule (1 s + i / rate; 10 Mpps nominal when unpaced), so a capture
    // depends only on the parameters.
    let stamp_ns = cli.rate.filter(|r| *r > 0.0).map_or(100.0, |r| 1e9 / r);

    let mut pacer = Pacer::new(cli.rate);
    let mut scratch = Scratch::default();
    let start = Instant::now();
    let mut last_progress = start;
    let mut sent = 0u64;
    // Unpaced, the clock is read every CLOCK_EVERY bursts only: a read costs about as much as building a
    // frame, and the deadline is then overshot by at most that many bursts (tens of microseconds).
    let paced = cli.rate.is_some();
    let mut now = start;
    let mut bursts = 0u32;
    let mut yields = 0u32;
    // --pace-sleep: one burst's time at the rate, the least a sleep is worth.
    let nap = cli
        .rate
        .filter(|r| cli.pace_sleep && *r > 0.0)
        .map(|r| Duration::from_secs_f64(BURST as f64 / r));
    while sent < count {
        if paced || bursts % CLOCK_EVERY == 0 {
            now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                break;
            }
        }
        bursts = bursts.wrapping_add(1);
        let want = (count - sent).min(BURST as u64);
        let n = pacer.grant(now, want);
        if n == 0 {
            match nap {
                Some(d) => std::thread::sleep(d),
                None => std::hint::spin_loop(),
            }
            continue;
        }
        let made = out.send(gen, n as usize, stamp_ns, &mut scratch)?;
        if made as u64 != n {
            bail!("frame {} does not fit an mbuf", gen.index());
        }
        sent += n;
        if cli.pace_yield {
            yields += 1;
            if yields % YIELD_EVERY == 0 {
                std::thread::yield_now();
            }
        }
        if cli.progress && last_progress.elapsed() >= Duration::from_secs(1) {
            last_progress = Instant::now();
            let secs = start.elapsed().as_secs_f64();
            eprint!("\r{sent} frames, {:.0} pps   ", sent as f64 / secs);
        }
    }
    Ok((sent, start.elapsed().as_secs_f64()))
}

fn out_name(cli: &Cli) -> &'static str {
    match (&cli.pcap, &cli.udp, &cli.dpdk) {
        (Some(_), _, _) => "pcap",
        (None, Some(_), _) => "udp",
        (None, None, Some(_)) => "dpdk",
        _ => "none",
    }
}
