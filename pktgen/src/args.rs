//! The command line, and what it turns into: workload parameters, report format and addresses.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{Parser, ValueEnum};
use dta_pktgen::fattree::FatTree;
use dta_pktgen::int::{IntKind, IntParams};
use dta_pktgen::keys::KeyDist;
use dta_pktgen::workload::{Kind, Params, SketchParams};
use dta_protocol::dta::{HeaderForm, ReportFormat, SketchOp, DTA_UDP_PORT};
use dta_protocol::int::FABRIC_TNA_REPORT_PORT;
use dta_protocol::udp::UdpEndpoints;
use dta_protocol::MacAddr;

/// Key distribution.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Dist {
    /// Every key equally likely.
    Uniform,
    /// Zipf with exponent --zipf-s.
    Zipf,
}

/// Which workload: a DTA report workload, or the reports INT switches send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Workload {
    /// Key-Write INT path tracing.
    Keywrite,
    /// Key-Increment counters.
    Keyincrement,
    /// Append events.
    Append,
    /// Postcarding 5-hop paths.
    Postcard,
    /// Sketch-Merge columns.
    Sketch,
    /// A third each of Key-Write, Key-Increment and Append.
    Mix,
    /// fabric-tna INT v0.5 reports, hop by hop, with drops (to --int-port).
    #[value(name = "int-v05")]
    IntV05,
    /// INT Telemetry Report v2.0 sink reports carrying the whole path (to --int-port).
    #[value(name = "int-v2")]
    IntV2,
}

impl Workload {
    /// The DTA workload, or the INT one.
    pub fn kind(self) -> Result<Kind, IntKind> {
        match self {
            Workload::Keywrite => Ok(Kind::Keywrite),
            Workload::Keyincrement => Ok(Kind::Keyincrement),
            Workload::Append => Ok(Kind::Append),
            Workload::Postcard => Ok(Kind::Postcard),
            Workload::Sketch => Ok(Kind::Sketch),
            Workload::Mix => Ok(Kind::Mix),
            Workload::IntV05 => Err(IntKind::V05),
            Workload::IntV2 => Err(IntKind::V2),
        }
    }

    /// Its name on the command line and in the summary.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Keywrite => "keywrite",
            Workload::Keyincrement => "keyincrement",
            Workload::Append => "append",
            Workload::Postcard => "postcard",
            Workload::Sketch => "sketch",
            Workload::Mix => "mix",
            Workload::IntV05 => "int-v05",
            Workload::IntV2 => "int-v2",
        }
    }
}

/// Base header form.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Form {
    /// opcode, seqnum, flags (3 bytes).
    Seq,
    /// opcode, flags (2 bytes).
    Compact,
}

/// Sketch merge operation.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Merge {
    /// Sum the columns.
    Sum,
    /// Take the maximum.
    Max,
}

#[derive(Parser, Debug, Clone)]
#[command(
    name = "dta-pktgen",
    version,
    about = "DTA report workloads to pcap or UDP"
)]
pub struct Cli {
    /// Workload.
    #[arg(long, value_enum)]
    pub workload: Workload,
    /// Frames to send (default 1000 unless --duration is given).
    #[arg(long)]
    pub count: Option<u64>,
    /// Seconds to run.
    #[arg(long)]
    pub duration: Option<f64>,
    /// Target frames per second (default: as fast as possible).
    #[arg(long)]
    pub rate: Option<f64>,
    /// When paced: sleep between bursts instead of spinning, so that processes sharing the core (a
    /// system under test on a small machine) get it; bursts then leave up to a sleep's overshoot late
    /// (tens of microseconds) and catch up, the long-run rate unchanged.
    #[arg(long)]
    pub pace_sleep: bool,
    /// Yield the CPU every 4 bursts (`sched_yield`), so that a receiver sharing the core drains its ring
    /// while the sender catches up after a preemption. For a receiver that sleeps when idle (the dta
    /// daemons); one that polls without sleeping (testpmd) keeps the CPU for its whole time slice at
    /// each yield and starves the sender.
    #[arg(long)]
    pub pace_yield: bool,
    /// Read runs from stdin instead, one a line: `<rate> <seconds>` (rate 0: as fast as possible); for
    /// each, send for that long and print a JSON line (sent, dropped, elapsed_s, pps, target_pps); exit at
    /// the end of input. One process, one port and one link for a whole rate search, as a TRex server
    /// serves its controller.
    #[arg(long, conflicts_with_all = ["count", "duration", "rate"])]
    pub commands: bool,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Distinct keys (lists, for Append).
    #[arg(long, default_value_t = 1_000_000)]
    pub keys: u32,
    /// First key (list id).
    #[arg(long, default_value_t = 0)]
    pub key_base: u32,
    /// Key distribution.
    #[arg(long, value_enum, default_value_t = Dist::Uniform)]
    pub dist: Dist,
    /// Zipf exponent.
    #[arg(long, default_value_t = 1.1)]
    pub zipf_s: f64,
    /// Key-Write / Key-Increment redundancy N.
    #[arg(long, default_value_t = 2)]
    pub redundancy: u8,
    /// Key-Write data size D: 4 (a postcard value) or 28 (5 x 4-byte switch IDs, zero padded); 12 also works.
    #[arg(long, default_value_t = 4)]
    pub keywrite_data_len: usize,
    /// Append entry size E.
    #[arg(long, default_value_t = 4)]
    pub append_entry_len: usize,
    /// Base header form.
    #[arg(long, value_enum, default_value_t = Form::Seq)]
    pub header: Form,
    /// Fat-tree parameter k (even).
    #[arg(long, default_value_t = 8)]
    pub k: u32,
    /// Key-Increment addend.
    #[arg(long, default_value_t = 1)]
    pub counter: u64,
    /// Sketch id.
    #[arg(long, default_value_t = 0)]
    pub sketch_id: u8,
    /// Sketch merge.
    #[arg(long, value_enum, default_value_t = Merge::Sum)]
    pub sketch_op: Merge,
    /// Sketch rows (counters per column).
    #[arg(long, default_value_t = 4)]
    pub sketch_rows: u8,
    /// Sketch columns.
    #[arg(long, default_value_t = 1024)]
    pub sketch_columns: u16,
    /// Sketch reporters interleaved.
    #[arg(long, default_value_t = 1)]
    pub sketch_reporters: u16,
    /// Source MAC.
    #[arg(long, default_value = "02:00:00:00:00:09")]
    pub src_mac: MacAddr,
    /// Destination MAC (the translator's port).
    #[arg(long, default_value = "02:00:00:00:00:01")]
    pub dst_mac: MacAddr,
    /// Source IPv4 (the reporter).
    #[arg(long, default_value = "10.0.0.9")]
    pub src_ip: Ipv4Addr,
    /// Destination IPv4 (the collector).
    #[arg(long, default_value = "198.18.0.2")]
    pub dst_ip: Ipv4Addr,
    /// UDP source port.
    #[arg(long, default_value_t = 40041)]
    pub src_port: u16,
    /// UDP destination port (the translator's).
    #[arg(long, default_value_t = DTA_UDP_PORT)]
    pub dst_port: u16,
    /// INT workloads: hops per thousand that drop the packet (int-v05: a drop report, and the flow ends).
    #[arg(long, default_value_t = 0)]
    pub drop_per_mille: u32,
    /// INT workloads: the translator's INT port (fabric-tna's collector port by default).
    #[arg(long, default_value_t = FABRIC_TNA_REPORT_PORT)]
    pub int_port: u16,
    /// Write frames to this pcap file.
    #[arg(long, conflicts_with = "udp")]
    pub pcap: Option<PathBuf>,
    /// Send frames out of this DPDK port, as TRex would: a device the EAL has (PCI address or a `--vdev`
    /// in `--eal`), or `name,key=value` to hot-plug a virtual device (e.g. `net_null0`,
    /// `net_af_packet0,iface=veth0`).
    #[arg(long, conflicts_with_all = ["pcap", "udp"])]
    pub dpdk: Option<String>,
    /// EAL arguments for `--dpdk`, whitespace-separated.
    #[arg(
        long,
        default_value = "-l 0 --no-huge --no-shconf -m 256 --no-pci",
        allow_hyphen_values = true
    )]
    pub eal: String,
    /// Send UDP payloads to this address.
    #[arg(long)]
    pub udp: Option<SocketAddr>,
    /// Local address of the UDP socket.
    #[arg(long, default_value = "0.0.0.0:0")]
    pub udp_bind: SocketAddr,
    /// Print a progress line on stderr every second.
    #[arg(long)]
    pub progress: bool,
}

impl Cli {
    /// The report format.
    pub fn format(&self) -> Result<ReportFormat> {
        let form = match self.header {
            Form::Seq => HeaderForm::Seq,
            Form::Compact => HeaderForm::Compact,
        };
        ReportFormat::new(form, self.keywrite_data_len, self.append_entry_len)
            .context("report format")
    }

    /// The frames' addresses.
    pub fn endpoints(&self) -> Result<UdpEndpoints> {
        Ok(UdpEndpoints::new(
            self.src_mac.octets(),
            self.dst_mac.octets(),
            self.src_ip.octets(),
            self.dst_ip.octets(),
            self.src_port,
            self.dst_port,
        ))
    }

    /// The INT workload's parameters (`kind` from [`Workload::kind`]).
    pub fn int_params(&self, kind: IntKind) -> Result<IntParams> {
        if self.drop_per_mille > 1000 {
            bail!("--drop-per-mille is at most 1000");
        }
        Ok(IntParams {
            kind,
            flows: self.keys()?,
            tree: self.tree()?,
            drop_per_mille: self.drop_per_mille,
            seed: self.seed,
        })
    }

    fn tree(&self) -> Result<FatTree> {
        FatTree::new(self.k).with_context(|| format!("--k {}: need an even k >= 2", self.k))
    }

    fn keys(&self) -> Result<KeyDist> {
        Ok(match self.dist {
            Dist::Uniform => KeyDist::uniform(self.key_base, self.keys),
            Dist::Zipf => {
                if !(self.zipf_s.is_finite() && self.zipf_s > 0.0) {
                    bail!("--zipf-s must be a positive number");
                }
                KeyDist::zipf(self.key_base, self.keys, self.zipf_s)
            }
        })
    }

    /// The DTA workload's parameters (`kind` from [`Workload::kind`]).
    pub fn params(&self, kind: Kind) -> Result<Params> {
        let tree = self.tree()?;
        if self.sketch_rows == 0 {
            bail!("--sketch-rows must be at least 1");
        }
        Ok(Params {
            kind,
            keys: self.keys()?,
            redundancy: self.redundancy,
            keywrite_data_len: self.keywrite_data_len,
            append_entry_len: self.append_entry_len,
            tree,
            counter: self.counter,
            sketch: SketchParams {
                id: self.sketch_id,
                op: match self.sketch_op {
                    Merge::Sum => SketchOp::Sum,
                    Merge::Max => SketchOp::Max,
                },
                rows: self.sketch_rows,
                columns: self.sketch_columns,
                reporters: self.sketch_reporters,
            },
            seed: self.seed,
        })
    }
}
