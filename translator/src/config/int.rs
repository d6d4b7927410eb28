//! `[int]`: standard INT telemetry reports in (issue 17). Switches that already export In-band Network
//! Telemetry (fabric-tna's v0.5 reports, Telemetry Report v2.0) feed DTA primitives without a DTA reporter;
//! `dta_protocol::int::mapping` says where each part lands.

use serde::{Deserialize, Serialize};

use super::bad;
use crate::error::ConfigError;
pub use dta_protocol::int::mapping::EventLists;
use dta_protocol::int::mapping::HOP_RECORD_LEN;
use dta_protocol::int::FABRIC_TNA_REPORT_PORT;
use dta_protocol::roce::ROCEV2_UDP_PORT;

/// INT front-end options.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IntConfig {
    /// Take INT reports at all (off by default: port 32766 traffic is forwarded untouched then).
    pub enabled: bool,
    /// UDP destination port of INT reports; v0.5 and v2.0 share it (the version nibble tells them apart).
    pub udp_port: u16,
    /// Initial TTLs (or IPv6 hop limits) senders use. A per-hop report carries no hop number: its hop is
    /// `initial - ttl + hop_offset`, with `initial` the smallest of these at or above the report's TTL.
    pub initial_ttls: Vec<u8>,
    /// Added to `initial - ttl`: 0 when the reported copy carries the TTL the reporting switch already
    /// decremented (fabric-tna mirrors at egress, after routing), 1 when it carries the TTL it received.
    pub hop_offset: u8,
    /// INT over UDP inside reported packets (INT 2.1 NPT 1 or 2): the UDP destination port announcing it.
    pub md_udp_port: Option<u16>,
    /// INT after L4 (NPT 0): the DSCP value announcing it, under `md_dscp_mask`.
    pub md_dscp: Option<u8>,
    /// The DSCP bits that carry the INT mark.
    pub md_dscp_mask: u8,
    /// Paths to Postcarding (key: the flow's 5-tuple hash, hop i: the i-th switch's node id).
    pub path: bool,
    /// Per-hop state (latency, queue) to Key-Write, keyed by (flow, hop); needs a Key-Write data size of
    /// at least 12 bytes (`report.keywrite_data_len`).
    pub flow_state: bool,
    /// Drops counted per (node, reason) with Key-Increment.
    pub drop_counts: bool,
    /// Copies (N) of each Key-Write record and Key-Increment counter.
    pub redundancy: u8,
    /// Append lists receiving drop events (16-byte entries): one, or one per worker of a daemon with
    /// several (`drop_list = [10, 12]`); none by default.
    pub drop_list: EventLists,
    /// Append lists receiving congestion events (16-byte entries), as `drop_list`; none by default.
    pub queue_list: EventLists,
    /// (node, hardware id) pairs whose report sequence numbers are tracked for loss.
    pub max_sequences: usize,
    /// How a per-hop report's hop is found: from the inner packet's TTL (`"ttl"`, for routed fabrics), or
    /// from the reporting switch's place in the fabric and the ports the report names (`"topology"`,
    /// for leaf-spine fabrics whose switches do not decrement the TTL on every hop, as fabric-tna's).
    pub hop_mode: HopMode,
    /// The fabric's switches, for `hop_mode = "topology"` (`[[int.switches]]`).
    pub switches: Vec<FabricSwitch>,
}

/// Where a per-hop report's hop comes from (`int.hop_mode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HopMode {
    /// `initial_ttl - TTL + hop_offset` from the inner packet's TTL.
    #[default]
    Ttl,
    /// The switch's role in a two-tier leaf-spine fabric and whether the report's ingress and egress
    /// ports face hosts (see `dta_translator::int::topology`).
    Topology,
}

/// A switch's role in a two-tier leaf-spine fabric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SwitchRole {
    /// A leaf (top of rack): hosts attach to its host ports, spines to the others.
    Leaf,
    /// A spine: every port faces a leaf.
    Spine,
}

/// One switch of the fabric, as its controller knows it (`[[int.switches]]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FabricSwitch {
    /// The node id its reports carry (fabric-tna's `switch_id`, v2.0's Node ID).
    pub node: u32,
    /// Leaf or spine.
    pub role: SwitchRole,
    /// A leaf's ports that face hosts (and anything outside the fabric), numbered as its reports number
    /// them (fabric-tna: the device port, 9 bits).
    #[serde(default)]
    pub host_ports: Vec<u16>,
}

impl Default for IntConfig {
    fn default() -> Self {
        IntConfig {
            enabled: false,
            udp_port: FABRIC_TNA_REPORT_PORT,
            initial_ttls: vec![64, 128, 255],
            hop_offset: 0,
            md_udp_port: None,
            md_dscp: None,
            md_dscp_mask: 0x3F,
            path: true,
            flow_state: true,
            drop_counts: true,
            redundancy: 2,
            drop_list: EventLists::default(),
            queue_list: EventLists::default(),
            max_sequences: 4096,
            hop_mode: HopMode::Ttl,
            switches: Vec::new(),
        }
    }
}

impl IntConfig {
    /// Checks what the front end cannot honour (`report_port` and `keywrite_data_len` from `[report]`).
    pub(super) fn validate(
        &self,
        report_port: u16,
        keywrite_data_len: usize,
    ) -> Result<(), ConfigError> {
        if !self.enabled {
            return Ok(());
        }
        // As for reports: RoCEv2's port carries the collector's responses, never INT.
        for (field, port) in [
            ("int.udp_port", Some(self.udp_port)),
            ("int.md_udp_port", self.md_udp_port),
        ] {
            if port == Some(ROCEV2_UDP_PORT) {
                return Err(bad(
                    field,
                    ROCEV2_UDP_PORT.into(),
                    "not 4791, RoCEv2's port, where the collector's responses arrive",
                ));
            }
        }
        if self.udp_port == report_port {
            return Err(bad(
                "int.udp_port",
                self.udp_port.into(),
                "not the DTA report port",
            ));
        }
        if self.initial_ttls.is_empty() || self.initial_ttls.contains(&0) {
            return Err(bad("int.initial_ttls", 0, "one or more TTLs, each 1..=255"));
        }
        if !(1..=8).contains(&self.redundancy) {
            return Err(bad("int.redundancy", self.redundancy.into(), "1..=8"));
        }
        if self.flow_state && keywrite_data_len < HOP_RECORD_LEN {
            return Err(bad(
                "report.keywrite_data_len",
                keywrite_data_len as u64,
                "at least 12 with int.flow_state (a hop record is 12 bytes)",
            ));
        }
        self.validate_lists()?;
        if let Some(d) = self.md_dscp.filter(|&d| d > 63) {
            return Err(bad("int.md_dscp", d.into(), "6 bits"));
        }
        if self.max_sequences == 0 || self.max_sequences > super::MAX_TABLE {
            return Err(bad(
                "int.max_sequences",
                self.max_sequences as u64,
                "1..=2^22",
            ));
        }
        self.validate_fabric()
    }

    /// Every event list once: two writers of one list would overwrite each other's entries.
    fn validate_lists(&self) -> Result<(), ConfigError> {
        let mut ids: Vec<u32> = [&self.drop_list, &self.queue_list]
            .iter()
            .flat_map(|l| l.ids().iter().copied())
            .collect();
        ids.sort_unstable();
        match ids.windows(2).find(|w| w[0] == w[1]) {
            Some(w) => Err(bad(
                "int.drop_list/queue_list",
                w[0].into(),
                "each list once (a list takes one kind of event from one worker)",
            )),
            None => Ok(()),
        }
    }

    /// The fabric of `hop_mode = "topology"`: some leaf, each node once, host ports on leaves only.
    fn validate_fabric(&self) -> Result<(), ConfigError> {
        if self.hop_mode == HopMode::Ttl {
            return Ok(());
        }
        if !self.switches.iter().any(|s| s.role == SwitchRole::Leaf) {
            return Err(bad(
                "int.switches",
                self.switches.len() as u64,
                "at least one leaf with hop_mode = \"topology\"",
            ));
        }
        if self.switches.len() > super::MAX_TABLE {
            return Err(bad(
                "int.switches",
                self.switches.len() as u64,
                "at most 2^22 switches",
            ));
        }
        let mut nodes: Vec<u32> = self.switches.iter().map(|s| s.node).collect();
        nodes.sort_unstable();
        if let Some(w) = nodes.windows(2).find(|w| w[0] == w[1]) {
            return Err(bad("int.switches", w[0].into(), "each node once"));
        }
        if let Some(s) = self
            .switches
            .iter()
            .find(|s| s.role == SwitchRole::Spine && !s.host_ports.is_empty())
        {
            return Err(bad(
                "int.switches",
                s.node.into(),
                "host_ports on leaves only (a spine's ports all face leaves)",
            ));
        }
        Ok(())
    }
}
