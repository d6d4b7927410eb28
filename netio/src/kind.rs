//! [`IoKind`]: which backend drives a daemon's ports, as both daemons' configuration files
//! (`kind = "af_packet"`, `io = "dpdk"`) and command lines (`--io af-packet`) name it.

use serde::{Deserialize, Serialize};

/// Which packet I/O backend drives a daemon's ports. serde spells it `af_packet` / `dpdk`; with the
/// `clap` feature it is a `clap::ValueEnum` (`--io af-packet`, `--io dpdk`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum IoKind {
    /// A raw socket on a kernel interface (no DPDK needed).
    #[default]
    AfPacket,
    /// A DPDK port: a device the EAL probed (PCI address, vdev on the EAL command line) or vdev devargs
    /// such as `net_af_packet0,iface=eth1`, hot-plugged.
    Dpdk,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct S {
        io: IoKind,
    }

    #[test]
    fn serde_names() {
        let s: S = toml_like("af_packet");
        assert_eq!(s.io, IoKind::AfPacket);
        let s: S = toml_like("dpdk");
        assert_eq!(s.io, IoKind::Dpdk);
    }

    fn toml_like(v: &str) -> S {
        use serde::de::value::{Error, MapDeserializer};
        use serde::de::IntoDeserializer;
        let map = MapDeserializer::<_, Error>::new(std::iter::once(("io", v.into_deserializer())));
        S::deserialize(map).unwrap()
    }
}
