//! The INT front end's state, [`IntFrontEnd`] (configuration, sharding, sequence gaps, the hops each
//! flow's reports named, the fabric), its setup and the settings read from it. `translate` and `lower`
//! add the translation to it.

use dta_protocol::int::inner::IntDetect;

use super::paths::PathMemory;
use super::sequence::SequenceGaps;
use super::shard::Shard;
use super::topology::Topology;
use crate::config::{HopMode, IntConfig};

/// The INT front end of one engine: configuration and sequence state.
#[derive(Debug)]
pub struct IntFrontEnd {
    pub(super) cfg: IntConfig,
    pub(super) shard: Shard,
    pub(super) detect: IntDetect,
    /// Path length of per-hop reports and the most hops a path may have (`postcard.hops`).
    pub(super) hops: u8,
    pub(super) seq: SequenceGaps,
    /// The switches each flow's per-hop reports named (see [`paths`](super::paths)).
    pub(super) paths: PathMemory,
    /// The fabric, with `hop_mode = "topology"`.
    pub(super) topology: Option<Topology>,
}

impl IntFrontEnd {
    /// A front end for `cfg`, with per-hop paths of `hops` hops (`postcard.hops`).
    pub fn new(cfg: &IntConfig, hops: u8) -> Self {
        IntFrontEnd {
            detect: IntDetect {
                udp_port: cfg.md_udp_port,
                dscp: cfg.md_dscp.map(|d| (d, cfg.md_dscp_mask)),
            },
            cfg: cfg.clone(),
            shard: Shard::default(),
            hops,
            seq: SequenceGaps::new(cfg.max_sequences),
            paths: PathMemory::default(),
            topology: (cfg.hop_mode == HopMode::Topology).then(|| Topology::new(&cfg.switches)),
        }
    }

    /// Makes this front end worker `shard.index` of `shard.count`, which translates its own flows' reports.
    pub fn set_shard(&mut self, shard: Shard) {
        self.shard = shard;
    }

    /// Which worker this is.
    pub fn shard(&self) -> Shard {
        self.shard
    }

    /// The UDP port INT reports arrive on.
    pub fn udp_port(&self) -> u16 {
        self.cfg.udp_port
    }

    /// Copies (N) of records and counters.
    pub fn redundancy(&self) -> u8 {
        self.cfg.redundancy
    }

    /// Append list of drop events (this engine's).
    pub fn drop_list(&self) -> Option<u32> {
        self.cfg.drop_list.first()
    }

    /// Append list of queue events (this engine's).
    pub fn queue_list(&self) -> Option<u32> {
        self.cfg.queue_list.first()
    }
}
