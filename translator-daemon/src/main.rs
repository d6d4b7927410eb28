//! `dta-translator`: the translator's command line. `run` is the live translator (ports, workers, control
//! channel, metrics; see the `run` module). `offline` translates a capture of DTA reports into a capture of
//! the RoCEv2 frames the engine would send, with static region metadata and no collector.

use dta_translator_daemon::run;

use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use dta_protocol::roce::ROCEV2_UDP_PORT;
use dta_protocol::udp::UdpFrame;
use dta_translator::{Config, DropReason, Engine, Handled, Instant, RegionsFile};
use pcap_file::pcap::{PcapPacket, PcapReader, PcapWriter};

#[derive(Parser)]
#[command(
    name = "dta-translator",
    version,
    about = "DTA reports in, RoCEv2 RDMA out"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run the translator on one port, or two for a bump in the wire, until SIGINT/SIGTERM.
    Run {
        /// Translator configuration (TOML): engine sections plus [io], [workers], [[collectors]], [metrics].
        #[arg(long)]
        config: PathBuf,
        /// Packet I/O backend (overrides [io] kind).
        #[arg(long, value_enum)]
        io: Option<run::settings::IoKind>,
        /// A port: interface (af_packet) or DPDK device/devargs; give twice for a bump in the wire
        /// (overrides [io] ports).
        #[arg(long = "interface")]
        interfaces: Vec<String>,
        /// DPDK EAL arguments as one string, e.g. "-l 0 --no-huge --no-pci" (overrides [io] eal_args).
        #[arg(long, allow_hyphen_values = true)]
        eal: Option<String>,
        /// Worker threads (overrides [workers] count).
        #[arg(long)]
        workers: Option<usize>,
        /// Prometheus endpoint address (overrides [metrics] bind).
        #[arg(long)]
        metrics: Option<std::net::SocketAddr>,
    },
    /// Translate a pcap of DTA reports into a pcap of RoCEv2 frames (no collector, no ACKs).
    Offline {
        /// Translator configuration (TOML); defaults when absent.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Collectors and their regions (TOML, the shape of the control channel's welcome).
        #[arg(long)]
        regions: PathBuf,
        /// Input capture.
        #[arg(long = "in")]
        input: PathBuf,
        /// Output capture.
        #[arg(long)]
        out: PathBuf,
    },
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

fn main() -> Result<()> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    match Cli::parse().cmd {
        Cmd::Run {
            config,
            io,
            interfaces,
            eal,
            workers,
            metrics,
        } => {
            let o = run::Overrides {
                io,
                interfaces,
                eal,
                workers,
                metrics,
            };
            run::run(run::load(&config, o)?)
        }
        Cmd::Offline {
            config,
            regions,
            input,
            out,
        } => offline(config.as_deref(), &regions, &input, &out),
    }
}

fn offline(config: Option<&Path>, regions: &Path, input: &Path, out: &Path) -> Result<()> {
    let cfg = match config {
        Some(p) => Config::from_toml(&read(p)?).with_context(|| p.display().to_string())?,
        None => Config::default(),
    };
    let welcomes =
        RegionsFile::from_toml(&read(regions)?).with_context(|| regions.display().to_string())?;
    let file = File::open(input).with_context(|| format!("opening {}", input.display()))?;
    let mut reader = PcapReader::new(BufReader::new(file)).context("reading pcap header")?;
    let file = File::create(out).with_context(|| format!("creating {}", out.display()))?;
    let mut writer = PcapWriter::new(BufWriter::new(file)).context("writing pcap header")?;

    let mut engine: Option<Engine> = None;
    let mut buf = Vec::new();
    let (mut written, mut forwarded, mut nacks) = (0u64, 0u64, 0u64);
    let mut now = Instant::ZERO;
    while let Some(pkt) = reader.next_packet() {
        let pkt = pkt.context("reading a packet")?;
        // Capture time drives the engine's clock, so idle flushes happen where they would have live.
        now = now.max(Instant(
            u64::try_from(pkt.timestamp.as_nanos()).unwrap_or(u64::MAX),
        ));
        let e = match engine.as_mut() {
            Some(e) => e,
            None => engine.insert(Engine::new(cfg.clone(), &welcomes, now)?),
        };
        e.handle_timeout(now);
        if e.handle_frame(now, &pkt.data) == Handled::NotForUs {
            forwarded += 1;
        }
        drain(e, now, &mut buf, &mut writer, &mut written, &mut nacks)?;
    }
    if let Some(e) = engine.as_mut() {
        e.flush(now);
        drain(e, now, &mut buf, &mut writer, &mut written, &mut nacks)?;
        let c = e.counters();
        log::info!(
            "{} frames in, {} RoCE frames out, {} not DTA (not written), {} DTA NACKs (not written), {} reports dropped",
            c.frames_in,
            written,
            forwarded,
            nacks,
            c.drops.iter().sum::<u64>()
        );
        // Each reason apart, as the live translator's metrics give them.
        for r in DropReason::ALL {
            if c.dropped(r) > 0 {
                log::info!("  dropped ({}): {}", r.label(), c.dropped(r));
            }
        }
    }
    Ok(())
}

fn drain<W: std::io::Write>(
    e: &mut Engine,
    now: Instant,
    buf: &mut Vec<u8>,
    w: &mut PcapWriter<W>,
    written: &mut u64,
    nacks: &mut u64,
) -> Result<()> {
    while e.poll_transmit(now, buf) {
        let roce = UdpFrame::parse(buf).is_ok_and(|u| u.endpoints.dst_port == ROCEV2_UDP_PORT);
        if !roce {
            *nacks += 1;
            continue;
        }
        let ts = Duration::from_nanos(now.as_nanos());
        w.write_packet(&PcapPacket::new(ts, buf.len() as u32, buf))
            .context("writing a packet")?;
        *written += 1;
    }
    // No collector answers offline: frames on the wire count as delivered.
    e.assume_delivered();
    Ok(())
}
