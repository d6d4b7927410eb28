//! The file's shape: its sections and their fields as serde reads them, and their bounds.

use std::net::{Ipv4Addr, SocketAddr};

use dta_protocol::int::mapping::EventLists;
use dta_protocol::layout::Geometry;
use dta_protocol::MacAddr;
use serde::Deserialize;

use super::ExportSection;
use crate::error::{Error, Result};
use crate::port::IoKind;
use crate::responder::FaultConfig;

/// Largest postcard value universe: the decoder keeps a table with one entry per value.
pub const MAX_UNIVERSE: usize = 1 << 24;

/// Largest `[collector] max_dest_rd_atomic`: Soft-RoCE's limit (rxe's `RXE_MAX_QP_RD_ATOM`).
pub const MAX_DEST_RD_ATOMIC: u32 = 128;

/// The whole file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// This collector's addresses and RDMA limits.
    #[serde(default)]
    pub collector: CollectorSection,
    /// The control server; absent means no control server.
    pub control: Option<ControlSection>,
    /// The HTTP query and metrics server; absent means none.
    pub http: Option<HttpSection>,
    /// Fault injection for the software responder.
    #[serde(default)]
    pub faults: FaultConfig,
    /// The Postcarding value universe.
    #[serde(default)]
    pub postcarding: PostcardingSection,
    /// Where INT reports land (issue 17); absent means the INT queries use their defaults.
    pub int: Option<IntSection>,
    /// The history exporter (Parquet files, ClickHouse); absent means none.
    pub export: Option<ExportSection>,
    /// The regions, in the order they are laid out.
    #[serde(default, rename = "region")]
    pub regions: Vec<RegionConfig>,
}

/// `[collector]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CollectorSection {
    /// The MAC address responses come from (the interface's own address), `"02:00:00:00:00:02"`.
    pub mac: MacAddr,
    /// The IPv4 address the translator sends to.
    pub ip: Ipv4Addr,
    /// The software responder's port: an interface name (AF_PACKET), or for `io = "dpdk"` a DPDK device
    /// name or vdev devargs such as `net_af_packet0,iface=eth1`.
    pub interface: Option<String>,
    /// Packet I/O of the software responder.
    pub io: IoKind,
    /// EAL arguments for `io = "dpdk"`, passed through verbatim.
    pub eal_args: Vec<String>,
    /// Atomics in flight per QP that the collector accepts (and caches for duplicates).
    pub max_dest_rd_atomic: u32,
    /// Largest RDMA payload per packet.
    pub path_mtu: u32,
    /// The software responder's VLAN, as a NIC's VLAN interface: unset, it takes untagged frames (and
    /// VID 0 priority tags) and drops tagged ones; set (1..=4094), only frames tagged with this VID, and
    /// it answers tagged. Drops are counted as `dta_collector_drops_total{reason="vlan"}`.
    pub vlan: Option<u16>,
    /// A file whose shared mapping holds the regions (on hugetlbfs, `/dev/hugepages/dta-regions`, or
    /// tmpfs, `/dev/shm/dta-regions`), so that their contents outlive the process: a restart or a crash
    /// keeps what the translators wrote. Its header records the layout; a restart with other regions is
    /// refused unless started with `--fresh-memory`. Unset: anonymous memory, gone with the process.
    pub memory_file: Option<std::path::PathBuf>,
    /// Discard the memory file's contents at start (`serve --fresh-memory`); never read from the file.
    #[serde(skip)]
    pub fresh_memory: bool,
}

impl Default for CollectorSection {
    fn default() -> Self {
        CollectorSection {
            mac: MacAddr([0x02, 0, 0, 0, 0, 0x02]),
            ip: Ipv4Addr::new(198, 18, 0, 2),
            interface: None,
            io: IoKind::AfPacket,
            eal_args: Vec::new(),
            max_dest_rd_atomic: 16,
            path_mtu: 1024,
            vlan: None,
            memory_file: None,
            fresh_memory: false,
        }
    }
}

/// `[control]`: the bind address is required, never every interface by default.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ControlSection {
    /// Address and port to listen on.
    pub bind: SocketAddr,
    /// Shared secret the translator must present.
    pub token: String,
}

/// `[http]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpSection {
    /// Address and port to listen on.
    pub bind: SocketAddr,
}

/// `[postcarding]`: the values a hop can report (for example switch IDs), as a list and/or inclusive ranges.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PostcardingSection {
    /// Individual values.
    pub values: Vec<u32>,
    /// Inclusive `[first, last]` ranges.
    pub ranges: Vec<[u32; 2]>,
}

impl PostcardingSection {
    /// The universe as a sorted, deduplicated list.
    pub fn universe(&self) -> Result<Vec<u32>> {
        let mut v = self.values.clone();
        for &[a, b] in &self.ranges {
            if a > b || (b - a) as usize >= MAX_UNIVERSE {
                return Err(Error::Config(format!(
                    "postcarding range [{a}, {b}] is empty or larger than {MAX_UNIVERSE} values"
                )));
            }
            v.extend(a..=b);
        }
        v.sort_unstable();
        v.dedup();
        if v.len() > MAX_UNIVERSE {
            return Err(Error::Config(format!(
                "postcarding universe has {} values, more than {MAX_UNIVERSE}",
                v.len()
            )));
        }
        Ok(v)
    }
}

/// `[int]`: what the INT queries need beyond the regions (`dta_protocol::int::mapping` is the contract).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IntSection {
    /// The Append lists of drop events (16-byte entries): one, or the translator workers' (one each,
    /// `drop_list = [10, 12]`), read together; none: `int-drops` answers counts only.
    pub drop_list: EventLists,
    /// The Append lists of congestion (queue) events (16-byte entries), as `drop_list`.
    pub queue_list: EventLists,
    /// The node ids a path can hold, as inclusive `[first, last]` ranges; none: the `[postcarding]`
    /// universe.
    pub nodes: Option<Vec<[u32; 2]>>,
    /// Hops `int-flow` reads per flow; none: the postcarding region's `hops`.
    pub hops: Option<u8>,
}

impl IntSection {
    /// The node universe, when `nodes` gives one.
    pub fn node_universe(&self) -> Result<Option<Vec<u32>>> {
        self.nodes
            .as_ref()
            .map(|ranges| {
                PostcardingSection {
                    values: Vec::new(),
                    ranges: ranges.clone(),
                }
                .universe()
                .map_err(|e| Error::Config(format!("[int] nodes: {e}")))
            })
            .transpose()
    }
}

/// How a sketch's columns were merged, which decides the estimator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SketchMerge {
    /// Summed: a count-min sketch.
    #[default]
    Sum,
    /// Max-merged: HyperLogLog registers.
    Max,
}

/// One `[[region]]`: `kind` and the geometry fields of that kind, plus `id` for lists and sketches.
#[derive(Debug, Clone, Deserialize)]
pub struct RegionConfig {
    /// List id (Append) or sketch id (Sketch); 0 for the single-instance kinds.
    #[serde(default)]
    pub id: u32,
    /// For sketches: how columns are merged.
    #[serde(default)]
    pub merge: SketchMerge,
    /// Key-Write, Key-Increment and Postcarding: the redundancy N the reporters (and translators) use,
    /// which queries take by default. Only a region knows its `n_max`, not how many of those copies a
    /// report fills: a Key-Increment minimum over more copies than were written reads 0.
    #[serde(default)]
    pub redundancy: Option<u8>,
    /// Kind and layout.
    #[serde(flatten)]
    pub geometry: Geometry,
}
