//! Messages of the control channel between translator and collector (DESIGN.md section 6).
//!
//! TCP (default port 40050), one JSON object per line. The translator opens with a [`Hello`]; the collector
//! answers with a [`Welcome`] or refuses with a [`Refusal`] and closes. A welcomed translator keeps the
//! connection open with [`KeepAlive`] lines: it holds the QPs, which the collector reclaims once it is gone. Both sides check the protocol
//! version and the shared token before anything else.

use serde::{Deserialize, Serialize};

use crate::layout::Region;

/// Version of the control protocol; a peer with another version is refused.
pub const CONTROL_VERSION: u32 = 1;
/// Default TCP port of the collector's control server.
pub const CONTROL_PORT: u16 = 40050;

/// One translator QP: its (virtual) QP number and the PSN of its first packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RequesterQp {
    /// The translator's QP number (24 bits), carried in the collector's responses as destination QP.
    pub qpn: u32,
    /// The PSN the translator will send first on this QP (24 bits).
    pub start_psn: u32,
}

/// The translator's opening message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// Must equal [`CONTROL_VERSION`].
    pub version: u32,
    /// The shared secret configured on both sides.
    pub token: String,
    /// The translator port's MAC address.
    pub mac: [u8; 6],
    /// The translator's IPv4 address (the source of its RoCE frames).
    pub ip: [u8; 4],
    /// The translator's GID (IPv4-mapped IPv6 for RoCEv2), as 16 bytes.
    pub gid: [u8; 16],
    /// One entry per translator QP towards this collector.
    pub qps: Vec<RequesterQp>,
}

/// One collector QP, connected to one translator QP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResponderQp {
    /// The collector's QP number, the destination QP of the translator's frames.
    pub qpn: u32,
    /// The translator QP it is connected to.
    pub peer_qpn: u32,
}

/// The collector's answer to a good [`Hello`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Welcome {
    /// Equals [`CONTROL_VERSION`].
    pub version: u32,
    /// The collector port's MAC address.
    pub mac: [u8; 6],
    /// The collector's IPv4 address.
    pub ip: [u8; 4],
    /// One QP per translator QP of the hello, in the same order.
    pub qps: Vec<ResponderQp>,
    /// Atomics the collector accepts in flight per QP; the translator never exceeds it.
    pub max_dest_rd_atomic: u32,
    /// Largest RDMA payload per packet (path MTU), in bytes.
    pub path_mtu: u32,
    /// Every registered region.
    pub regions: Vec<Region>,
    /// The head word (`total_entries_written`) of each Append list as the collector's memory holds it
    /// when it answers, so that a translator that starts (or restarts) continues each list where it is
    /// instead of rewinding it to entry 0. A list not named here starts at 0 (as with a collector that
    /// predates this field).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub append_heads: Vec<AppendHead>,
}

/// Where one Append list is: its id and the head word in its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppendHead {
    /// The list's region id.
    pub list: u32,
    /// Its `total_entries_written`.
    pub head: u64,
}

/// A refusal with a reason a person can act on (wrong token, wrong version, malformed hello).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusal {
    /// Equals [`CONTROL_VERSION`], so that a peer of another version can still read the reason.
    pub version: u32,
    /// Why the collector refused.
    pub error: String,
}

/// The words of a [`Refusal`] saying that the hello's translator QPs (its address, GID and QPNs) are held
/// by another control connection that is still alive: a second translator configured like a first one,
/// or this translator's own previous connection not yet seen closed (a restart right after a crash of its
/// host). A translator retries such a refusal with backoff instead of giving up: the holder's connection
/// may end, and then the QPs are its own again.
pub const REFUSED_IN_USE: &str = "is held by a live control connection";

/// What the collector sends back: exactly one line of either kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum CollectorMessage {
    /// Accepted.
    Welcome(Welcome),
    /// Refused.
    Refusal(Refusal),
}

/// "Still here": a translator keeps its control connection open after the welcome and sends this at
/// least every [`KEEPALIVE_EVERY`]. The connection is the lease on the QPs its hellos opened: when it
/// closes (or goes silent), the collector reclaims them unless the translator says hello again within a
/// grace period. The collector does not answer it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeepAlive {
    /// Must equal [`CONTROL_VERSION`].
    pub version: u32,
}

/// How often a translator that holds its control connection sends a [`KeepAlive`]; a third of the
/// collector's default idle deadline (30 s), so one lost or late line does not end the lease.
pub const KEEPALIVE_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// What the translator sends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TranslatorMessage {
    /// Opening message (and, again on the same or a new connection, a request for new QPs).
    Hello(Hello),
    /// Keeps a welcomed connection, and with it the QPs, alive.
    KeepAlive(KeepAlive),
}
