//! `dta-report`: send DTA reports from the command line, for functional tests of a translator.
//!
//! `dta-report keywrite --key 42 --data 7 --redundancy 2 --to 198.18.0.2 --count 10 --increment-key`
//!
//! `dta-report dart` writes Key-Writes straight into a collector over the reporter's own RDMA QP, with no
//! translator (DART mode; see `dart_run.rs`):
//!
//! `dta-report dart --control 198.19.0.2:40050 --token T --interface r0 --ip 198.18.0.10 --redundancy 2 --writes writes.txt`

use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};
use dta_protocol::dta::{HeaderForm, ReportFormat, SketchOp, DTA_NACK_UDP_PORT, DTA_UDP_PORT};
use dta_reporter::pace::Pacer;
use dta_reporter::{Report, Reporter, ReporterConfig};

mod dart_run;

#[derive(Parser)]
#[command(
    name = "dta-report",
    version,
    about = "Build and send DTA reports over UDP, or write Key-Writes straight into a collector (DART)"
)]
struct Cli {
    #[command(flatten, next_help_heading = "Report options (not used by `dart`)")]
    common: Common,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Args)]
struct Common {
    /// Collector IPv4 address (the reports' destination; the translator on the path intercepts them).
    #[arg(long, global = true, default_value = "127.0.0.1")]
    to: Ipv4Addr,
    /// Translator UDP port.
    #[arg(long, global = true, default_value_t = DTA_UDP_PORT)]
    port: u16,
    /// Local address to send from.
    #[arg(long, global = true, default_value = "0.0.0.0:0")]
    bind: std::net::SocketAddr,
    /// Base header form the translator expects.
    #[arg(long, global = true, value_enum, default_value_t = Form::Seq)]
    header: Form,
    /// Key-Write data size D (4, 12 or 28) the translator is configured with.
    #[arg(long, global = true, default_value_t = 4)]
    keywrite_data_len: usize,
    /// Append entry size E the translator is configured with.
    #[arg(long, global = true, default_value_t = 4)]
    append_entry_len: usize,
    /// Reports to send.
    #[arg(long, global = true, default_value_t = 1)]
    count: u64,
    /// Reports per second (default: as fast as possible).
    #[arg(long, global = true)]
    rate: Option<f64>,
    /// Add the report's index to its key (list id for Append, column for Sketch-Merge).
    #[arg(long, global = true)]
    increment_key: bool,
    /// Mark reports retransmittable and replay them on DTA NACKs (seq form only).
    #[arg(long, global = true)]
    retransmit: bool,
    /// Where to listen for NACKs with --retransmit.
    #[arg(long, global = true, default_value_t = SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, DTA_NACK_UDP_PORT))]
    nack_listen: SocketAddrV4,
    /// With --retransmit: how long to keep answering NACKs after the last report.
    #[arg(long, global = true, default_value_t = 200)]
    linger_ms: u64,
}

#[derive(Clone, Copy, ValueEnum)]
enum Form {
    Seq,
    Compact,
}

#[derive(Clone, Copy, ValueEnum)]
enum Merge {
    Sum,
    Max,
}

#[derive(Subcommand)]
enum Cmd {
    /// Key-Write (0x01).
    Keywrite {
        #[arg(long, value_parser = parse_u32)]
        key: u32,
        /// Data as an integer, right-aligned big-endian in D bytes.
        #[arg(long, value_parser = parse_u128, conflicts_with = "data_hex")]
        data: Option<u128>,
        /// Data as exactly D bytes of hex.
        #[arg(long)]
        data_hex: Option<String>,
        #[arg(long, default_value_t = 1)]
        redundancy: u8,
    },
    /// Append (0x02).
    Append {
        #[arg(long, value_parser = parse_u32)]
        list: u32,
        /// Entry as an integer, right-aligned big-endian in E bytes.
        #[arg(long, value_parser = parse_u128, conflicts_with = "data_hex")]
        data: Option<u128>,
        /// Entry as exactly E bytes of hex.
        #[arg(long)]
        data_hex: Option<String>,
    },
    /// Key-Increment (0x03).
    Keyincrement {
        #[arg(long, value_parser = parse_u32)]
        key: u32,
        #[arg(long, default_value_t = 1)]
        counter: u64,
        #[arg(long, default_value_t = 1)]
        redundancy: u8,
    },
    /// Postcarding (0x04, or 0x06 with --path-len).
    Postcard {
        #[arg(long, value_parser = parse_u32)]
        key: u32,
        /// 1-based hop.
        #[arg(long)]
        hop: u8,
        #[arg(long, value_parser = parse_u128)]
        data: u128,
        /// Carry the path length in the report (opcode 0x06).
        #[arg(long)]
        path_len: Option<u8>,
    },
    /// Sketch-Merge (0x05).
    Sketch {
        #[arg(long, default_value_t = 0)]
        sketch_id: u8,
        #[arg(long, value_enum, default_value_t = Merge::Sum)]
        op: Merge,
        #[arg(long, default_value_t = 0)]
        reporter_id: u16,
        #[arg(long, default_value_t = 0)]
        column: u16,
        /// Comma-separated counters, one per row.
        #[arg(long, value_delimiter = ',', required = true)]
        counters: Vec<u32>,
    },
    /// DART: write Key-Writes straight into a collector over our own RDMA RC QP (no translator).
    Dart(dart_run::DartArgs),
}

/// Decimal or 0x-prefixed hexadecimal.
fn parse_u128(s: &str) -> Result<u128, String> {
    let r = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u128::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.map_err(|e| format!("{s}: {e}"))
}

/// A 32-bit key or list id, decimal or 0x-prefixed hexadecimal.
fn parse_u32(s: &str) -> Result<u32, String> {
    let v = parse_u128(s)?;
    u32::try_from(v).map_err(|_| format!("{s} does not fit in 32 bits"))
}

/// The report's data bytes: `--data-hex` exactly, or `--data` right-aligned in `len` bytes.
fn data_bytes(int: Option<u128>, hex: Option<&str>, len: usize) -> Result<Vec<u8>> {
    if let Some(h) = hex {
        let h = h.strip_prefix("0x").unwrap_or(h);
        if h.len() != 2 * len || !h.is_ascii() {
            bail!(
                "--data-hex needs exactly {len} bytes ({} hex digits)",
                2 * len
            );
        }
        return (0..len)
            .map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).context("--data-hex"))
            .collect();
    }
    let v = int.unwrap_or(0);
    let be = v.to_be_bytes();
    if len < be.len() && be[..be.len() - len].iter().any(|&b| b != 0) {
        bail!("--data {v:#x} does not fit in {len} bytes");
    }
    let mut out = vec![0u8; len];
    let n = len.min(be.len());
    out[len - n..].copy_from_slice(&be[be.len() - n..]);
    Ok(out)
}

fn template(cmd: &Cmd, fmt: &ReportFormat) -> Result<Report> {
    Ok(match cmd {
        Cmd::Keywrite {
            key,
            data,
            data_hex,
            redundancy,
        } => Report::KeyWrite {
            redundancy: *redundancy,
            key: *key,
            data: data_bytes(*data, data_hex.as_deref(), fmt.keywrite_data_len)?,
        },
        Cmd::Append {
            list,
            data,
            data_hex,
        } => Report::Append {
            list_id: *list,
            data: data_bytes(*data, data_hex.as_deref(), fmt.append_entry_len)?,
        },
        Cmd::Keyincrement {
            key,
            counter,
            redundancy,
        } => Report::KeyIncrement {
            redundancy: *redundancy,
            key: *key,
            counter: *counter,
        },
        Cmd::Postcard {
            key,
            hop,
            data,
            path_len,
        } => {
            let data = u32::try_from(*data).context("--data of a postcard is 32 bits")?;
            match path_len {
                Some(p) => Report::PostcardPathLen {
                    key: *key,
                    hop: *hop,
                    path_len: *p,
                    data,
                },
                None => Report::Postcard {
                    key: *key,
                    hop: *hop,
                    data,
                },
            }
        }
        Cmd::Sketch {
            sketch_id,
            op,
            reporter_id,
            column,
            counters,
        } => Report::Sketch {
            sketch_id: *sketch_id,
            op: match op {
                Merge::Sum => SketchOp::Sum,
                Merge::Max => SketchOp::Max,
            },
            reporter_id: *reporter_id,
            column: *column,
            counters: counters.clone(),
        },
        Cmd::Dart(_) => bail!("DART mode sends no DTA reports"),
    })
}

/// Report number `i`: the template with its key (list id, column) advanced by `i`.
fn nth(t: &Report, i: u64) -> Report {
    let mut r = t.clone();
    let step = i as u32; // keys are 32 bits and wrap, as a switch's would
    match &mut r {
        Report::KeyWrite { key, .. }
        | Report::KeyIncrement { key, .. }
        | Report::Postcard { key, .. }
        | Report::PostcardPathLen { key, .. } => *key = key.wrapping_add(step),
        Report::Append { list_id, .. } => *list_id = list_id.wrapping_add(step),
        Report::Sketch { column, .. } => *column = column.wrapping_add(step as u16),
    }
    r
}

fn main() -> Result<()> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let cli = Cli::parse();
    if let Cmd::Dart(a) = &cli.cmd {
        return dart_run::run(a);
    }
    let c = &cli.common;
    let form = match c.header {
        Form::Seq => HeaderForm::Seq,
        Form::Compact => HeaderForm::Compact,
    };
    let fmt = ReportFormat::new(form, c.keywrite_data_len, c.append_entry_len)
        .context("report format")?;
    let socket = UdpSocket::bind(c.bind).with_context(|| format!("binding {}", c.bind))?;
    let mut reporter = Reporter::new(
        socket,
        ReporterConfig {
            format: fmt,
            ..ReporterConfig::default()
        },
    );
    if c.retransmit {
        let nack = UdpSocket::bind(c.nack_listen)
            .with_context(|| format!("binding the NACK socket {}", c.nack_listen))?;
        reporter = reporter.with_nack_socket(nack);
    }
    let t = template(&cli.cmd, &fmt)?;
    let to = SocketAddrV4::new(c.to, c.port);
    let mut pacer = Pacer::new(c.rate);
    for i in 0..c.count {
        pacer.wait();
        let r = if c.increment_key {
            nth(&t, i)
        } else {
            t.clone()
        };
        reporter
            .send_to(to, &r, c.retransmit)
            .with_context(|| format!("report {i}"))?;
        if c.retransmit {
            reporter.poll_nacks(Duration::ZERO)?;
        }
    }
    if c.retransmit {
        reporter.poll_nacks(Duration::from_millis(c.linger_ms))?;
    }
    let s = reporter.stats();
    log::info!(
        "sent {} reports to {to}, resent {} on {} NACKs ({} unrecoverable)",
        s.sent,
        s.resent,
        s.nacks,
        s.unrecoverable
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_right_aligned_and_checked() {
        assert_eq!(data_bytes(Some(0x2a), None, 4).unwrap(), [0, 0, 0, 0x2a]);
        assert_eq!(
            data_bytes(None, Some("0a0b0c0d"), 4).unwrap(),
            [10, 11, 12, 13]
        );
        assert!(data_bytes(Some(0x1_0000_0000), None, 4).is_err());
        assert!(data_bytes(None, Some("0a0b"), 4).is_err());
        assert!(data_bytes(None, Some("zz0b0c0d"), 4).is_err());
        assert_eq!(data_bytes(Some(1), None, 28).unwrap()[27], 1);
        assert_eq!(parse_u128("0x10"), Ok(16));
    }

    #[test]
    fn increment_key_moves_the_key() {
        let t = Report::KeyWrite {
            redundancy: 1,
            key: u32::MAX,
            data: vec![0; 4],
        };
        assert_eq!(
            nth(&t, 2),
            Report::KeyWrite {
                redundancy: 1,
                key: 1,
                data: vec![0; 4]
            }
        );
    }
}
