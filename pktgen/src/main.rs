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
use dta_reporter::pace::Pacer;

use args::Cli;
use output::{Output, Scratch};
use summary::Summary;

/// Frames handed to the output per burst.
const BURST: usize = 32;
/// Bursts between two clock reads when unpaced.
const CLOCK_EVERY: u32 = 16;

fn main() -> Result<()> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let cli = Cli::parse();
    let params = cli.params()?;
    let fmt = cli.format()?;
    let mut gen = FastGenerator::new(params, cli.endpoints()?, fmt)?;
    let mut out = Output::open(&cli)?;
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
            std::hint::spin_loop();
            continue;
        }
        let made = out.send(&mut gen, n as usize, stamp_ns, &mut scratch)?;
        if made as u64 != n {
            bail!("frame {} does not fit an mbuf", gen.index());
        }
        sent += n;
        if cli.progress && last_progress.elapsed() >= Duration::from_secs(1) {
            last_progress = Instant::now();
            let secs = start.elapsed().as_secs_f64();
            eprint!("\r{sent} frames, {:.0} pps   ", sent as f64 / secs);
        }
    }
    let dropped = out.finish()?;
    if cli.progress {
        eprintln!();
    }
    let elapsed = start.elapsed().as_secs_f64();
    let per_op: BTreeMap<&'static str, u64> = gen
        .per_opcode()
        .filter(|(_, n)| *n > 0)
        .map(|(op, n)| (summary::opcode_name(op), n))
        .collect();
    let s = Summary {
        workload: cli.workload,
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

fn out_name(cli: &Cli) -> &'static str {
    match (&cli.pcap, &cli.udp, &cli.dpdk) {
        (Some(_), _, _) => "pcap",
        (None, Some(_), _) => "udp",
        (None, None, Some(_)) => "dpdk",
        _ => "none",
    }
}
