//! The collector's TOML configuration: addresses, the control and HTTP endpoints, fault injection and the
//! regions with their geometry (the `dta-protocol` geometry types, so that a bad geometry is refused here
//! with the same message the translator would give).

use std::collections::HashSet;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;

use dta_protocol::int::mapping::{EventLists, EVENT_LEN, HOP_RECORD_LEN};
use dta_protocol::layout::Geometry;
use dta_protocol::MacAddr;
use serde::Deserialize;

mod export;
pub use export::{ClickHouseSection, ExportSection, ParquetSection};

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

impl Config {
    /// Reads and checks a file.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
        Self::parse(&text).map_err(|e| match e {
            Error::Config(m) => Error::Config(format!("{}: {m}", path.display())),
            other => other,
        })
    }

    /// Parses and checks TOML text.
    pub fn parse(text: &str) -> Result<Self> {
        let c: Config = toml::from_str(text).map_err(|e| Error::Config(e.to_string()))?;
        c.validate()?;
        Ok(c)
    }

    fn validate(&self) -> Result<()> {
        self.faults.validate().map_err(Error::Config)?;
        self.postcarding.universe()?;
        if !(256..=4096).contains(&self.collector.path_mtu)
            || !self.collector.path_mtu.is_power_of_two()
        {
            return Err(Error::Config(format!(
                "path_mtu {} is not one of 256, 512, 1024, 2048, 4096",
                self.collector.path_mtu
            )));
        }
        // Every QP keeps this many atomic responses for replay: 2^32 - 1 of them was accepted here and
        // aborted the collector allocating 64 GiB at the first hello. Soft-RoCE takes at most 128
        // (RXE_MAX_QP_RD_ATOM), ConnectX NICs 16; 0 would refuse the translator's FETCH_ADDs.
        let rd = self.collector.max_dest_rd_atomic;
        if !(1..=MAX_DEST_RD_ATOMIC).contains(&rd) {
            return Err(Error::Config(format!(
                "[collector] max_dest_rd_atomic = {rd} is not within 1..={MAX_DEST_RD_ATOMIC} (Soft-RoCE \
                 takes at most 128 atomics in flight per QP, ConnectX NICs 16)"
            )));
        }
        if let Some(vid) = self.collector.vlan.filter(|v| !(1..=4094).contains(v)) {
            return Err(Error::Config(format!(
                "vlan {vid} is not a VLAN id within 1..=4094 (leave it out for untagged)"
            )));
        }
        let mut seen = HashSet::new();
        for r in &self.regions {
            let kind = r.geometry.kind();
            let many = matches!(r.geometry, Geometry::Append(_) | Geometry::Sketch(_));
            if !many && r.id != 0 {
                return Err(Error::Config(format!(
                    "{kind} region has id {}; only append and sketch regions take ids",
                    r.id
                )));
            }
            if let Some(n) = r.redundancy {
                let n_max = match &r.geometry {
                    Geometry::KeyWrite(g) => g.n_max(),
                    Geometry::KeyIncrement(g) => g.n_max(),
                    Geometry::Postcarding(g) => g.n_max(),
                    _ => {
                        return Err(Error::Config(format!(
                            "{kind} region has a redundancy; only key_write, key_increment and \
                             postcarding regions take one"
                        )))
                    }
                };
                if !(1..=n_max).contains(&n) {
                    return Err(Error::Config(format!(
                        "{kind} region: redundancy {n} is not within 1..={n_max} (its n_max)"
                    )));
                }
            }
            if matches!(r.geometry, Geometry::Sketch(_)) && r.id > 255 {
                return Err(Error::Config(format!(
                    "sketch id {} does not fit the report's 8-bit sketch_id",
                    r.id
                )));
            }
            if !seen.insert((kind, r.id)) {
                return Err(Error::Config(if many {
                    format!("two {kind} regions with id {}", r.id)
                } else {
                    format!("more than one {kind} region")
                }));
            }
        }
        if let Some(int) = &self.int {
            self.validate_int(int)?;
        }
        if let Some(export) = &self.export {
            export.validate()?;
        }
        Ok(())
    }

    /// The `[int]` section against the regions: the lists it names hold 16-byte events, a Key-Write
    /// entry fits a hop record, and paths and hops have a universe and a length to decode.
    fn validate_int(&self, int: &IntSection) -> Result<()> {
        let lists = [
            ("drop_list", &int.drop_list),
            ("queue_list", &int.queue_list),
        ];
        for (name, id) in lists
            .iter()
            .flat_map(|(name, l)| l.ids().iter().map(move |&id| (*name, id)))
        {
            let g = self.regions.iter().find_map(|r| match r.geometry {
                Geometry::Append(g) if r.id == id => Some(g),
                _ => None,
            });
            match g {
                None => {
                    return Err(Error::Config(format!(
                        "[int] {name} = {id}: no append region with id {id}"
                    )))
                }
                Some(g) if g.entry_size() as usize != EVENT_LEN => {
                    return Err(Error::Config(format!(
                        "[int] {name} = {id}: the list's entry_size is {}, INT events are {EVENT_LEN} bytes",
                        g.entry_size()
                    )))
                }
                Some(_) => {}
            }
        }
        let mut ids: Vec<u32> = lists.iter().flat_map(|(_, l)| l.ids().to_vec()).collect();
        ids.sort_unstable();
        if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
            return Err(Error::Config(format!(
                "[int] list {} is named twice in drop_list and queue_list: drop and queue events \
                 (and each translator worker's) need lists of their own",
                w[0]
            )));
        }
        for r in &self.regions {
            match r.geometry {
                Geometry::KeyWrite(g) if g.data_len() < HOP_RECORD_LEN => {
                    return Err(Error::Config(format!(
                        "[int]: the key_write region's entries hold {} data bytes, fewer than a \
                         {HOP_RECORD_LEN}-byte hop record (entry_size 16 or 32 fits one)",
                        g.data_len()
                    )))
                }
                _ => {}
            }
        }
        if int.hops == Some(0) {
            return Err(Error::Config(
                "[int] hops = 0: a flow has at least one hop".into(),
            ));
        }
        let nodes = match int.node_universe()? {
            Some(n) => n,
            None => self.postcarding.universe()?,
        };
        let has_paths = self
            .regions
            .iter()
            .any(|r| matches!(r.geometry, Geometry::Postcarding(_)));
        if has_paths && nodes.is_empty() {
            return Err(Error::Config(
                "[int]: no node ids to decode paths with: set [int] nodes or [postcarding] ranges"
                    .into(),
            ));
        }
        Ok(())
    }

    /// Hops `int-flow` reads per flow: `[int] hops`, else the postcarding region's, else none.
    pub fn int_hops(&self) -> Option<u8> {
        self.int.as_ref().and_then(|i| i.hops).or_else(|| {
            self.regions.iter().find_map(|r| match r.geometry {
                Geometry::Postcarding(g) => Some(g.hops()),
                _ => None,
            })
        })
    }

    /// `(id, geometry)` of every region, in order, as [`crate::memory::Arena::new`] takes them.
    pub fn region_layout(&self) -> Vec<(u32, Geometry)> {
        self.regions.iter().map(|r| (r.id, r.geometry)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dta_protocol::layout::{AppendGeometry, KeyWriteGeometry};

    #[test]
    fn example_config_parses() {
        let c = Config::load(Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/examples/collector.toml"
        )))
        .unwrap();
        assert_eq!(
            c.regions[0].geometry,
            Geometry::KeyWrite(KeyWriteGeometry::new(65536, 8, 4).unwrap())
        );
        assert!(c.regions.iter().any(|r| r.id == 3
            && r.geometry == Geometry::Append(AppendGeometry::new(4096, 4, 16).unwrap())));
        assert_eq!(c.control.unwrap().bind.to_string(), "127.0.0.1:40050");
        assert_eq!(c.postcarding.universe().unwrap().len(), 64);
    }

    #[test]
    fn refuses_bad_configs_with_reasons() {
        let cases = [
            ("[[region]]\nkind = \"key_write\"\nslots = 100\nentry_size = 8\nn_max = 4\n", "power of two"),
            ("[[region]]\nkind = \"sketch\"\nid = 300\nrows = 2\ncolumns = 4\n", "8-bit"),
            ("[[region]]\nkind = \"append\"\nid = 1\nentries = 16\nentry_size = 4\nbatch_size = 16\n[[region]]\nkind = \"append\"\nid = 1\nentries = 16\nentry_size = 4\nbatch_size = 16\n", "two append regions with id 1"),
            ("[[region]]\nkind = \"key_increment\"\nid = 2\nslots = 16\nn_max = 2\n", "only append and sketch"),
            ("[control]\ntoken = \"x\"\n", "bind"),
            ("[collector]\nmac = \"02:00\"\n", "bad MAC"),
            ("[faults]\ndrop = 2.0\n", "not in 0..=1"),
            ("[postcarding]\nranges = [[5, 1]]\n", "empty"),
            ("[collector]\npath_mtu = 1000\n", "path_mtu"),
            ("[collector]\nvlan = 4095\n", "vlan 4095 is not a VLAN id"),
            ("[collector]\nvlan = 0\n", "vlan 0 is not a VLAN id"),
            ("[[region]]\nkind = \"key_increment\"\nslots = 16\nn_max = 2\nredundancy = 3\n", "redundancy 3 is not within 1..=2"),
            ("[[region]]\nkind = \"key_increment\"\nslots = 16\nn_max = 2\nredundancy = 0\n", "redundancy 0 is not within 1..=2"),
            ("[[region]]\nkind = \"append\"\nid = 1\nentries = 16\nentry_size = 4\nbatch_size = 16\nredundancy = 1\n", "only key_write, key_increment and postcarding"),
        ];
        for (text, why) in cases {
            let e = Config::parse(text).unwrap_err().to_string();
            assert!(e.contains(why), "{text:?}: {e}");
        }
        let c = Config::parse("[collector]\nmac = \"02:00:00:00:0a:ff\"\n").unwrap();
        assert_eq!(c.collector.mac, MacAddr([2, 0, 0, 0, 10, 255]));
    }

    /// Issue 26, item 9: `max_dest_rd_atomic = 4294967295` started and then aborted allocating 64 GiB at
    /// the first hello; `redundncy = 2` in a `[[region]]` was silently ignored. Both are refused at load.
    #[test]
    fn config_traps_are_refused_at_load() {
        let limit = "(Soft-RoCE takes at most 128 atomics in flight per QP, ConnectX NICs 16)";
        for rd in [0u64, 129, 4294967295] {
            let e = Config::parse(&format!("[collector]\nmax_dest_rd_atomic = {rd}\n"))
                .unwrap_err()
                .to_string();
            assert_eq!(
                e,
                format!(
                    "configuration: [collector] max_dest_rd_atomic = {rd} is not within 1..=128 {limit}"
                )
            );
        }
        for rd in [1, 16, 128] {
            Config::parse(&format!("[collector]\nmax_dest_rd_atomic = {rd}\n")).unwrap();
        }
        let region = "[[region]]\nkind = \"key_write\"\nslots = 256\nentry_size = 8\nn_max = 2\n";
        let e = Config::parse(&format!("{region}redundncy = 2\n"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown field `redundncy`, expected one of `slots`, `entry_size`, `n_max`"),
            "{e}"
        );
        let e = Config::parse(&format!("{region}colour = \"blue\"\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field `colour`"), "{e}");
        let c = Config::parse(&format!("{region}redundancy = 2\n")).unwrap();
        assert_eq!(c.regions[0].redundancy, Some(2));
        // Every other section already refused unknown keys; kept so.
        for (text, key) in [
            ("[collector]\nmax_dest_rd_atomc = 4\n", "max_dest_rd_atomc"),
            (
                "[control]\nbind = \"127.0.0.1:1\"\ntoken = \"t\"\ntokn = \"u\"\n",
                "tokn",
            ),
            ("[http]\nbind = \"127.0.0.1:1\"\nbnd = 1\n", "bnd"),
            ("[faults]\ndorp = 0.1\n", "dorp"),
            ("[postcarding]\nrange = []\n", "range"),
            ("[int]\ndrop_lst = 1\n", "drop_lst"),
            ("[colector]\n", "colector"),
        ] {
            let e = Config::parse(text).unwrap_err().to_string();
            assert!(
                e.contains(&format!("unknown field `{key}`")),
                "{text:?}: {e}"
            );
        }
    }

    /// The example's `[int]` block, uncommented, with the key_write entries it asks for.
    fn example_with_int() -> String {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/examples/collector.toml"
        ))
        .unwrap();
        let (before, rest) = text.split_once("# --- int ---\n").unwrap();
        let (block, after) = rest.split_once("# --- end int ---\n").unwrap();
        let block: String = block
            .lines()
            .map(|l| format!("{}\n", l.strip_prefix('#').unwrap_or(l).trim_start()))
            .collect();
        format!("{before}{block}{after}").replacen("entry_size = 8", "entry_size = 16", 1)
    }

    #[test]
    fn example_int_block_parses_once_uncommented() {
        let c = Config::parse(&example_with_int()).unwrap();
        let int = c.int.clone().unwrap();
        assert_eq!(
            (int.drop_list.clone(), int.queue_list.clone(), int.hops),
            (EventLists::one(4), EventLists::one(5), Some(5))
        );
        assert_eq!(int.node_universe().unwrap().unwrap().len(), 64);
        assert_eq!(c.int_hops(), Some(5));
        // As the example ships (block commented): no [int], hops from the postcarding region.
        let shipped = Config::load(Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/examples/collector.toml"
        )))
        .unwrap();
        assert!(shipped.int.is_none());
        assert_eq!(shipped.int_hops(), Some(5));
        // The block alone, without the larger entries, is refused for the key_write region.
        let e = Config::parse(&example_with_int().replacen("entry_size = 16", "entry_size = 8", 1))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("entries hold 4 data bytes, fewer than a 12-byte hop record"),
            "{e}"
        );
    }

    #[test]
    fn refuses_bad_int_sections_with_reasons() {
        let list = |id: u32, size: u32| {
            format!("[[region]]\nkind = \"append\"\nid = {id}\nentries = 16\nentry_size = {size}\nbatch_size = 16\n")
        };
        let cases = [
            (
                format!("[int]\ndrop_list = 4\n{}", list(3, 16)),
                "[int] drop_list = 4: no append region with id 4",
            ),
            (
                format!("[int]\nqueue_list = 3\n{}", list(3, 4)),
                "[int] queue_list = 3: the list's entry_size is 4, INT events are 16 bytes",
            ),
            (
                format!("[int]\ndrop_list = 3\nqueue_list = 3\n{}", list(3, 16)),
                "list 3 is named twice",
            ),
            (
                format!("[int]\ndrop_list = [3, 6]\n{}", list(3, 16)),
                "[int] drop_list = 6: no append region with id 6",
            ),
            (
                format!(
                    "[int]\ndrop_list = [3, 6]\nqueue_list = [7, 6]\n{}{}{}",
                    list(3, 16),
                    list(6, 16),
                    list(7, 16)
                ),
                "list 6 is named twice",
            ),
            ("[int]\nhops = 0\n".to_string(), "hops = 0"),
            ("[int]\nhops = 300\n".to_string(), "hops"),
            (
                "[int]\nnodes = [[9, 2]]\n".to_string(),
                "[int] nodes: configuration: postcarding range [9, 2] is empty",
            ),
            ("[int]\nlists = 3\n".to_string(), "unknown field `lists`"),
            (
                "[int]\n[[region]]\nkind = \"postcarding\"\nchunks = 16\nhops = 4\nn_max = 1\n"
                    .to_string(),
                "no node ids to decode paths with",
            ),
        ];
        for (text, why) in cases {
            let e = Config::parse(&text).unwrap_err().to_string();
            assert!(e.contains(why), "{text:?}: {e}");
        }
        // One list per translator worker.
        let c = Config::parse(&format!(
            "[int]\ndrop_list = [3, 6]\n{}{}",
            list(3, 16),
            list(6, 16)
        ))
        .unwrap();
        assert_eq!(c.int.unwrap().drop_list.ids(), [3, 6]);
        // A postcarding region with [int] nodes (and no [postcarding]) is fine.
        let c = Config::parse(
            "[int]\nnodes = [[1, 4]]\n[[region]]\nkind = \"postcarding\"\nchunks = 16\nhops = 4\nn_max = 1\n",
        )
        .unwrap();
        assert_eq!(
            c.int.unwrap().node_universe().unwrap(),
            Some(vec![1, 2, 3, 4])
        );
    }
}
