//! Translator configuration (TOML). Every field has a default, so an empty file is a working setup for one
//! collector on the reference's sizes; [`Config::validate`] rejects values the engine cannot honour.

mod durations;
mod int;

pub use int::{EventLists, FabricSwitch, HopMode, IntConfig, SwitchRole};

use dta_protocol::dta::{HeaderForm, ReportFormat, DTA_UDP_PORT};
use dta_protocol::roce::ROCEV2_UDP_PORT;
use dta_protocol::udp::ECN_ECT0;
use serde::{Deserialize, Serialize};

use crate::error::ConfigError;

pub use dta_rc::config::{RateConfig, RequesterConfig};

/// The whole translator configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// What reports look like and where they arrive.
    pub report: ReportConfig,
    /// The translator's own addresses and QP identity.
    pub local: LocalConfig,
    /// RoCEv2 requester behaviour, per QP.
    pub requester: RequesterConfig,
    /// Token bucket per collector.
    pub rate: RateConfig,
    /// Per-reporter sequence tracking and DTA NACKs.
    pub sequence: SequenceConfig,
    /// How reports choose a collector.
    pub routing: RoutingConfig,
    /// Key-Increment options.
    pub key_increment: KeyIncrementConfig,
    /// Append options.
    pub append: AppendConfig,
    /// Postcarding options.
    pub postcard: PostcardConfig,
    /// Sketch-Merge options.
    pub sketch: SketchConfig,
    /// Standard INT reports in.
    pub int: IntConfig,
}

/// Report format and port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReportConfig {
    /// `"seq"` (default) or `"compact"`.
    pub dta_header: HeaderForm,
    /// UDP destination port of reports.
    pub udp_port: u16,
    /// Key-Write data size D: 4, 12 or 28.
    pub keywrite_data_len: usize,
    /// Append entry size E.
    pub append_entry_len: usize,
}

impl Default for ReportConfig {
    fn default() -> Self {
        ReportConfig {
            dta_header: HeaderForm::Seq,
            udp_port: DTA_UDP_PORT,
            keywrite_data_len: 4,
            append_entry_len: 4,
        }
    }
}

impl ReportConfig {
    /// The parser's view of this configuration.
    pub fn format(&self) -> ReportFormat {
        ReportFormat {
            form: self.dta_header,
            keywrite_data_len: self.keywrite_data_len,
            append_entry_len: self.append_entry_len,
        }
    }
}

/// The translator's own identity on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LocalConfig {
    /// Source MAC of RoCE frames, written `mac = "02:00:00:00:00:01"` ([`MacAddr`](dta_protocol::MacAddr) syntax). The array
    /// form `[2, 0, 0, 0, 0, 1]` of earlier versions is still read, with a deprecation warning. The bytes
    /// stay `[u8; 6]` here because the engine and its users read them as bytes.
    #[serde(
        deserialize_with = "local_mac::deserialize",
        serialize_with = "local_mac::serialize"
    )]
    pub mac: [u8; 6],
    /// Source IPv4 of RoCE frames.
    pub ip: [u8; 4],
    /// QPN of the first collector's QP; collector i uses `qpn_base + i`.
    pub qpn_base: u32,
    /// First PSN of every QP.
    pub start_psn: u32,
    /// UDP source port of the first collector's QP; collector i uses `udp_src_port_base + i` (ECMP entropy).
    pub udp_src_port_base: u16,
    /// DSCP of RoCE frames.
    pub dscp: u8,
    /// ECN code point of RoCE frames, ECT(0) by default so switches can mark congestion.
    pub ecn: u8,
}

/// `[local] mac`: a [`MacAddr`](dta_protocol::MacAddr) string on the wire, bytes in memory.
mod local_mac {
    use dta_protocol::MacAddr;
    use serde::{Deserializer, Serialize, Serializer};

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[u8; 6], D::Error> {
        fn warn() {
            log::warn!(
                "[local] mac as an array of bytes is deprecated: write it as a string, \
                 mac = \"02:00:00:00:00:01\""
            );
        }
        dta_protocol::mac::deserialize_with_legacy_array(d, warn).map(MacAddr::octets)
    }

    pub fn serialize<S: Serializer>(mac: &[u8; 6], s: S) -> Result<S::Ok, S::Error> {
        MacAddr(*mac).serialize(s)
    }

    #[cfg(test)]
    mod tests {
        use crate::config::Config;

        #[test]
        fn the_string_and_the_deprecated_array() {
            let c = Config::from_toml("[local]\nmac = \"02:00:00:00:0a:0B\"\n").unwrap();
            assert_eq!(c.local.mac, [2, 0, 0, 0, 10, 11]);
            let old = Config::from_toml("[local]\nmac = [2, 0, 0, 0, 10, 11]\n").unwrap();
            assert_eq!(old.local.mac, [2, 0, 0, 0, 10, 11]);
            for bad in ["\"02:00\"", "[2, 0, 0]", "[2, 0, 0, 0, 0, 300]", "7"] {
                assert!(
                    Config::from_toml(&format!("[local]\nmac = {bad}\n")).is_err(),
                    "{bad}"
                );
            }
            let text = toml::to_string(&c).unwrap();
            assert!(text.contains("mac = \"02:00:00:00:0a:0b\""), "{text}");
            assert_eq!(Config::from_toml(&text).unwrap(), c);
        }
    }
}

impl Default for LocalConfig {
    fn default() -> Self {
        LocalConfig {
            mac: [0x02, 0, 0, 0, 0, 0x01],
            ip: [198, 18, 0, 1],
            qpn_base: 0x100,
            start_psn: 0,
            udp_src_port_base: 49152,
            dscp: 0,
            ecn: ECN_ECT0,
        }
    }
}

/// Per-reporter sequence tracking.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SequenceConfig {
    /// Track seqnums of reports with the retransmit flag and NACK gaps (needs the seq header form).
    pub enabled: bool,
    /// A gap that persists is NACKed again after this many microseconds.
    pub nack_holdoff_us: u64,
    /// Reporters tracked at most; reports from further reporters are accepted untracked (and counted).
    pub max_reporters: usize,
}

impl Default for SequenceConfig {
    fn default() -> Self {
        SequenceConfig {
            enabled: true,
            nack_holdoff_us: 100,
            max_reporters: 65536,
        }
    }
}

/// How reports choose a collector when more than one is configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum KeyRouting {
    /// `crc32(key_le) mod collectors` for Key-Write, Key-Increment and Postcarding.
    #[default]
    KeyHash,
    /// The collector whose IP is the report's IPv4 destination (DESIGN.md section 2).
    DestinationIp,
}

/// Routing of reports to collectors. Append lists and sketches go to the collector that holds the list or
/// sketch region with their id (the list table is the regions the collectors advertise).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct RoutingConfig {
    /// Key-based primitives' routing.
    pub keys: KeyRouting,
}

/// Key-Increment options.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KeyIncrementConfig {
    /// Coalesce increments to the same counter for this many microseconds (0: send each at once).
    pub coalesce_us: u64,
    /// Counters held for coalescing at most; a new counter beyond it flushes the oldest.
    pub coalesce_capacity: usize,
}

impl Default for KeyIncrementConfig {
    fn default() -> Self {
        KeyIncrementConfig {
            coalesce_us: 0,
            coalesce_capacity: 4096,
        }
    }
}

/// Append options.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AppendConfig {
    /// A partial batch is written after this many microseconds without filling.
    pub idle_flush_us: u64,
    /// The head word is written at least every this many batches (and at every idle flush); at most 32.
    pub head_every_batches: u32,
}

impl Default for AppendConfig {
    fn default() -> Self {
        AppendConfig {
            idle_flush_us: 1000,
            head_every_batches: 32,
        }
    }
}

/// Postcarding options.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PostcardConfig {
    /// Path length B for opcode 0x04 (opcode 0x06 carries its own).
    pub hops: u8,
    /// Flows cached per collector (direct-mapped).
    pub cache_size: usize,
    /// A flow's postcards are written this many microseconds after its first one even if incomplete.
    pub idle_timeout_us: u64,
    /// Chunk copies written per flow (N).
    pub redundancy: u8,
}

impl Default for PostcardConfig {
    fn default() -> Self {
        PostcardConfig {
            hops: 5,
            cache_size: 4096,
            idle_timeout_us: 1000,
            redundancy: 1,
        }
    }
}

/// Sketch-Merge options.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SketchConfig {
    /// Reporters whose sketches are merged; their ids are `0..reporters`.
    pub reporters: u16,
    /// Completed columns written per WRITE at most (also capped by the path MTU).
    pub column_batch: u32,
    /// Completed columns that wait for a full batch are written after this many microseconds.
    pub idle_flush_us: u64,
}

impl Default for SketchConfig {
    fn default() -> Self {
        SketchConfig {
            reporters: 1,
            column_batch: 16,
            idle_flush_us: 1000,
        }
    }
}

/// Largest `requester.window` (frames in flight per QP, each kept for go-back-N).
pub const MAX_WINDOW: u32 = 1 << 16;
/// Largest `requester.queue_capacity` (work requests waiting per QP).
pub const MAX_QUEUE: u32 = 1 << 20;
/// Largest per-worker table: Postcarding cache flows, Key-Increment coalescing keys, tracked reporters.
/// Tables are sized at start, so a bound here is a bound on memory (about 2^22 x 64 B = 256 MiB).
pub const MAX_TABLE: usize = 1 << 22;
/// Largest `sketch.column_batch`.
pub const MAX_COLUMN_BATCH: u32 = 1024;

/// Lowest UDP source port of a RoCE v2 request.
pub const ROCEV2_MIN_SOURCE_PORT: u16 = 0xC000;

fn bad(field: &'static str, value: u64, why: &'static str) -> ConfigError {
    ConfigError::Invalid { field, value, why }
}

impl Config {
    /// Parses TOML and validates it.
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        let c: Config = toml::from_str(text).map_err(|e| ConfigError::Toml(e.to_string()))?;
        c.validate()?;
        Ok(c)
    }

    /// Checks every value the engine relies on.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.report
            .format()
            .validate()
            .map_err(|e| ConfigError::Report(e.to_string()))?;
        // The collector's responses (ACKs, NAKs, atomic ACKs) arrive on RoCEv2's port: reports expected
        // there would take every response for a report (and answer none of them).
        if self.report.udp_port == ROCEV2_UDP_PORT {
            return Err(bad(
                "report.udp_port",
                ROCEV2_UDP_PORT.into(),
                "not 4791, RoCEv2's port, where the collector's responses arrive",
            ));
        }
        let r = &self.requester;
        if r.ack_every == 0 {
            return Err(bad("requester.ack_every", 0, "at least 1"));
        }
        // Every frame in flight is kept for go-back-N; half the PSN space would keep "before" and "after"
        // unambiguous, but a window that large only multiplies what one loss resends.
        if r.window == 0 || r.window > MAX_WINDOW {
            return Err(bad("requester.window", r.window.into(), "1..=65536"));
        }
        if r.queue_capacity == 0 || r.queue_capacity > MAX_QUEUE {
            return Err(bad(
                "requester.queue_capacity",
                r.queue_capacity.into(),
                "1..=2^20 work requests per QP",
            ));
        }
        if r.retransmit_timeout_us == 0 {
            return Err(bad("requester.retransmit_timeout_us", 0, "at least 1"));
        }
        if r.max_retransmit_timeout_us < r.retransmit_timeout_us {
            return Err(bad(
                "requester.max_retransmit_timeout_us",
                r.max_retransmit_timeout_us,
                "at least requester.retransmit_timeout_us",
            ));
        }
        if r.max_backoff_shift > 20 {
            return Err(bad(
                "requester.max_backoff_shift",
                r.max_backoff_shift.into(),
                "at most 20",
            ));
        }
        if self.local.start_psn > dta_protocol::roce::PSN_MASK {
            return Err(bad(
                "local.start_psn",
                self.local.start_psn.into(),
                "24 bits",
            ));
        }
        if self.local.qpn_base > 0xFF_FFFF {
            return Err(bad("local.qpn_base", self.local.qpn_base.into(), "24 bits"));
        }
        if self.local.dscp > 63 {
            return Err(bad("local.dscp", self.local.dscp.into(), "6 bits"));
        }
        if self.local.ecn > 3 {
            return Err(bad("local.ecn", self.local.ecn.into(), "2 bits"));
        }
        // RoCE v2 requesters send from 0xC000..=0xFFFF (Linux's RDMA core draws its ports there); dta's
        // responder drops requests from any other source port, as traffic that is not a QP's.
        if self.local.udp_src_port_base < ROCEV2_MIN_SOURCE_PORT {
            return Err(bad(
                "local.udp_src_port_base",
                self.local.udp_src_port_base.into(),
                "at least 49152 (0xC000): RoCE v2 source ports are 0xC000..=0xFFFF",
            ));
        }
        let rate = &self.rate;
        if rate.packets_per_sec > 0 && rate.burst_packets == 0 {
            return Err(bad("rate.burst_packets", 0, "at least 1 when limited"));
        }
        if rate.bytes_per_sec > 0 && rate.burst_bytes < 1600 {
            return Err(bad(
                "rate.burst_bytes",
                rate.burst_bytes,
                "at least one frame (1600) when limited",
            ));
        }
        let ki = self.key_increment.coalesce_capacity;
        if ki == 0 || ki > MAX_TABLE {
            return Err(bad(
                "key_increment.coalesce_capacity",
                ki as u64,
                "1..=2^22 keys",
            ));
        }
        let sq = self.sequence.max_reporters;
        if sq > MAX_TABLE {
            return Err(bad(
                "sequence.max_reporters",
                sq as u64,
                "at most 2^22 reporters",
            ));
        }
        let a = &self.append;
        if a.head_every_batches == 0 || a.head_every_batches > 32 {
            return Err(bad(
                "append.head_every_batches",
                a.head_every_batches.into(),
                "1..=32",
            ));
        }
        let p = &self.postcard;
        if !(1..=8).contains(&p.hops) {
            return Err(bad("postcard.hops", p.hops.into(), "1..=8"));
        }
        if !(1..=8).contains(&p.redundancy) {
            return Err(bad("postcard.redundancy", p.redundancy.into(), "1..=8"));
        }
        // The cache is allocated whole at start: 2^60 entries used to abort on "capacity overflow".
        if p.cache_size == 0 || p.cache_size > MAX_TABLE {
            return Err(bad(
                "postcard.cache_size",
                p.cache_size as u64,
                "1..=2^22 flows",
            ));
        }
        self.int
            .validate(self.report.udp_port, self.report.keywrite_data_len)?;
        let s = &self.sketch;
        if s.reporters == 0 {
            return Err(bad("sketch.reporters", 0, "at least 1"));
        }
        if s.column_batch == 0 || s.column_batch > MAX_COLUMN_BATCH {
            return Err(bad(
                "sketch.column_batch",
                s.column_batch.into(),
                "1..=1024 columns per WRITE",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
