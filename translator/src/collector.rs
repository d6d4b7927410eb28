//! What the engine knows about one collector: addresses, QPs and regions, from a control-channel
//! [`Welcome`] or, offline, from a static regions TOML of the same shape.

use dta_protocol::control::{ResponderQp, Welcome, CONTROL_VERSION};
use dta_protocol::layout::{Geometry, Region};
use serde::{Deserialize, Serialize};

use crate::error::ConfigError;

/// Default path MTU (payload bytes per packet) when a collector does not say.
pub const DEFAULT_PATH_MTU: u32 = 1024;
/// The largest path MTU a collector may advertise: IB's largest (RoCE NICs and rxe offer 256 to 4096).
pub const MAX_PATH_MTU: u32 = 4096;

/// One collector as a regions file describes it: a [`Welcome`] without the version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StaticCollector {
    /// Collector MAC, written `mac = "02:00:00:00:00:02"` (the array form of earlier versions is still
    /// read, with a deprecation warning).
    #[serde(
        deserialize_with = "mac_field::deserialize",
        serialize_with = "mac_field::serialize"
    )]
    pub mac: [u8; 6],
    /// Collector IPv4.
    pub ip: [u8; 4],
    /// The collector's QP (the engine uses the first one).
    pub qps: Vec<ResponderQp>,
    /// Atomics in flight the collector accepts.
    #[serde(default = "default_rd_atomic")]
    pub max_dest_rd_atomic: u32,
    /// Largest RDMA payload per packet.
    #[serde(default = "default_mtu")]
    pub path_mtu: u32,
    /// The regions.
    pub regions: Vec<Region>,
}

impl StaticCollector {
    /// What a collector's welcome would guarantee: QPNs of 24 bits, an IB path MTU, and regions that
    /// [`Regions::new`] accepts.
    fn validate(&self, collector: usize) -> Result<(), ConfigError> {
        let bad = |why: String| ConfigError::Collector { collector, why };
        if self.qps.is_empty() {
            return Err(bad("no QPs (qps = [{ qpn, peer_qpn }])".into()));
        }
        for q in &self.qps {
            for (name, v) in [("qpn", q.qpn), ("peer_qpn", q.peer_qpn)] {
                if v > 0xFF_FFFF {
                    return Err(bad(format!("{name} {v:#x} does not fit 24 bits")));
                }
            }
        }
        if !(256..=MAX_PATH_MTU).contains(&self.path_mtu) || !self.path_mtu.is_power_of_two() {
            return Err(bad(format!(
                "path_mtu {} is not one of 256, 512, 1024, 2048, 4096",
                self.path_mtu
            )));
        }
        Regions::new(collector, &self.regions).map(drop)
    }
}

/// A regions file's `mac`: a [`MacAddr`](dta_protocol::MacAddr) string in the file, bytes in memory (as in
/// the [`Welcome`] it stands for).
mod mac_field {
    use dta_protocol::MacAddr;
    use serde::{Deserializer, Serialize, Serializer};

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[u8; 6], D::Error> {
        fn warn() {
            log::warn!(
                "regions file: [[collectors]] mac as an array of bytes is deprecated: write it as a string, \
                 mac = \"02:00:00:00:00:02\""
            );
        }
        dta_protocol::mac::deserialize_with_legacy_array(d, warn).map(MacAddr::octets)
    }

    pub fn serialize<S: Serializer>(mac: &[u8; 6], s: S) -> Result<S::Ok, S::Error> {
        MacAddr(*mac).serialize(s)
    }
}

fn default_rd_atomic() -> u32 {
    16
}

fn default_mtu() -> u32 {
    DEFAULT_PATH_MTU
}

/// A regions file: one or more collectors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegionsFile {
    /// The collectors, in routing order.
    pub collectors: Vec<StaticCollector>,
}

impl RegionsFile {
    /// Parses a regions TOML into the [`Welcome`]s a control channel would have given.
    pub fn from_toml(text: &str) -> Result<Vec<Welcome>, ConfigError> {
        let f: RegionsFile = toml::from_str(text).map_err(|e| ConfigError::Toml(e.to_string()))?;
        for (i, c) in f.collectors.iter().enumerate() {
            c.validate(i)?;
        }
        Ok(f.collectors
            .into_iter()
            .map(|c| Welcome {
                version: CONTROL_VERSION,
                mac: c.mac,
                ip: c.ip,
                qps: c.qps,
                max_dest_rd_atomic: c.max_dest_rd_atomic,
                path_mtu: c.path_mtu,
                regions: c.regions,
                append_heads: Vec::new(),
            })
            .collect())
    }
}

/// The regions of one collector, sorted out by kind for quick lookup on the hot path.
#[derive(Debug, Clone, Default)]
pub struct Regions {
    /// The Key-Write region, if any.
    pub key_write: Option<Region>,
    /// The Key-Increment region, if any.
    pub key_increment: Option<Region>,
    /// The Postcarding region, if any.
    pub postcard: Option<Region>,
    /// Append lists, sorted by id.
    pub append: Vec<Region>,
    /// Sketches, sorted by id.
    pub sketch: Vec<Region>,
}

impl Regions {
    /// Sorts `regions`; a second region of a single-instance kind or a repeated list/sketch id is an error.
    pub fn new(collector: usize, regions: &[Region]) -> Result<Self, ConfigError> {
        let dup = |what: &str| ConfigError::Collector {
            collector,
            why: format!("more than one {what} region"),
        };
        let bad = |why: String| ConfigError::Collector { collector, why };
        // Where each region is: it must fit the address space, must not overlap another (a write to
        // one would land in the other), and counters must be 8-byte aligned (FETCH_ADD needs it; an
        // RDMA NIC NAKs a misaligned atomic).
        let mut spans = Vec::with_capacity(regions.len());
        for r in regions {
            let name = r.geometry.kind();
            let end = r.va.checked_add(r.len()).ok_or_else(|| {
                bad(format!(
                    "{name} region at {:#x} + {} bytes passes the end of the address space",
                    r.va,
                    r.len()
                ))
            })?;
            if matches!(r.geometry, Geometry::KeyIncrement(_)) && r.va % 8 != 0 {
                return Err(bad(format!(
                    "key_increment region at {:#x} is not 8-byte aligned (atomics need it)",
                    r.va
                )));
            }
            spans.push((r.va, end, name));
        }
        spans.sort_unstable();
        if let Some(w) = spans.windows(2).find(|w| w[1].0 < w[0].1) {
            return Err(bad(format!(
                "{} region [{:#x}, {:#x}) overlaps {} region [{:#x}, {:#x})",
                w[0].2, w[0].0, w[0].1, w[1].2, w[1].0, w[1].1
            )));
        }
        let mut out = Regions::default();
        for r in regions {
            let slot = match r.geometry {
                Geometry::KeyWrite(_) => &mut out.key_write,
                Geometry::KeyIncrement(_) => &mut out.key_increment,
                Geometry::Postcarding(_) => &mut out.postcard,
                Geometry::Append(_) => {
                    out.append.push(*r);
                    continue;
                }
                Geometry::Sketch(_) => {
                    out.sketch.push(*r);
                    continue;
                }
            };
            if slot.replace(*r).is_some() {
                return Err(dup(r.geometry.kind().name()));
            }
        }
        for (list, name) in [(&mut out.append, "append"), (&mut out.sketch, "sketch")] {
            list.sort_by_key(|r| r.id);
            if list.windows(2).any(|w| w[0].id == w[1].id) {
                return Err(dup(&format!("{name} id")));
            }
        }
        Ok(out)
    }

    /// The Append list with `id`.
    pub fn append_list(&self, id: u32) -> Option<&Region> {
        find(&self.append, id)
    }

    /// Where the Append list with `id` is in [`append`](Self::append).
    #[inline]
    pub fn append_index(&self, id: u32) -> Option<usize> {
        self.append.binary_search_by_key(&id, |r| r.id).ok()
    }

    /// Where the sketch with `id` is in [`sketch`](Self::sketch).
    #[inline]
    pub fn sketch_index(&self, id: u32) -> Option<usize> {
        self.sketch.binary_search_by_key(&id, |r| r.id).ok()
    }

    /// The sketch with `id`.
    pub fn sketch(&self, id: u32) -> Option<&Region> {
        find(&self.sketch, id)
    }
}

fn find(sorted: &[Region], id: u32) -> Option<&Region> {
    sorted
        .binary_search_by_key(&id, |r| r.id)
        .ok()
        .and_then(|i| sorted.get(i))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"
[[collectors]]
mac = "02:00:00:00:00:02"
ip = [198, 18, 0, 2]
qps = [{ qpn = 17, peer_qpn = 256 }]
[[collectors.regions]]
id = 0
va = 0x10000
rkey = 0x1234
geometry = { kind = "key_write", slots = 256, entry_size = 8, n_max = 4 }
[[collectors.regions]]
id = 3
va = 0x20000
rkey = 0x1234
geometry = { kind = "append", entries = 64, entry_size = 4, batch_size = 16 }
"#;

    #[test]
    fn parses_regions_file() {
        let w = RegionsFile::from_toml(FILE).unwrap();
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].path_mtu, 1024);
        assert_eq!(w[0].mac, [2, 0, 0, 0, 0, 2]);
        let old = FILE.replace("\"02:00:00:00:00:02\"", "[2, 0, 0, 0, 0, 2]");
        assert_eq!(RegionsFile::from_toml(&old).unwrap(), w);
        assert_eq!(w[0].max_dest_rd_atomic, 16);
        assert_eq!(w[0].qps[0].qpn, 17);
        let r = Regions::new(0, &w[0].regions).unwrap();
        assert_eq!(r.key_write.map(|r| r.va), Some(0x10000));
        assert_eq!(r.append_list(3).map(|r| r.va), Some(0x20000));
        assert!(r.append_list(4).is_none());
        let mut twice = w[0].regions.clone();
        twice.push(twice[0]);
        assert!(matches!(
            Regions::new(0, &twice),
            Err(ConfigError::Collector { collector: 0, .. })
        ));
    }

    #[test]
    fn refuses_bad_regions_files_with_reasons() {
        let cases = [
            (FILE.replace("rkey = 0x1234\ngeometry = { kind = \"append\"", "rkey = 0x1234\nbogus = 1\ngeometry = { kind = \"append\""), "unknown field `bogus`"),
            (FILE.replace("qpn = 17,", "qpn = 0x1000000,"), "qpn 0x1000000 does not fit 24 bits"),
            (FILE.replace("peer_qpn = 256", "peer_qpn = 256, extra = 3"), "unknown field `extra`"),
            (FILE.replace("va = 0x20000", "va = 0x10100"), "overlaps"),
            (FILE.replace("qps = [{ qpn = 17, peer_qpn = 256 }]", "qps = [{ qpn = 17, peer_qpn = 256 }]\npath_mtu = 1000"), "path_mtu 1000"),
            (
                FILE.replace(
                    "geometry = { kind = \"append\", entries = 64, entry_size = 4, batch_size = 16 }",
                    "geometry = { kind = \"key_increment\", slots = 64, n_max = 2 }",
                )
                .replace("va = 0x20000", "va = 0x20004"),
                "not 8-byte aligned",
            ),
        ];
        for (text, why) in cases {
            let e = RegionsFile::from_toml(&text).unwrap_err().to_string();
            assert!(e.contains(why), "{why}: {e}");
        }
        // TOML integers stop at 2^63, a welcome's JSON does not.
        let mut r = RegionsFile::from_toml(FILE).unwrap()[0].regions[1];
        r.va = u64::MAX - 100;
        let e = Regions::new(0, &[r]).unwrap_err().to_string();
        assert!(e.contains("passes the end of the address space"), "{e}");
    }
}
