//! What a control server is given: the limits on its connections and QPs, and what it advertises.

use std::sync::Arc;
use std::time::Duration;

use dta_protocol::layout::Region;

use super::QpLimits;
use crate::memory::Arena;

/// What one control connection may cost before it is authenticated. A connection is a thread and a
/// buffer: the limits bound both, and a deadline on the whole hello (not on each read) keeps a peer that
/// trickles a byte at a time from holding one forever.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ControlLimits {
    /// Connections served at once; more are refused with a refusal line and closed.
    pub max_connections: usize,
    /// Connections served at once from one IP address, so that one host cannot take every slot.
    pub max_per_address: usize,
    /// The whole first hello line, from accept to its newline, must arrive within this.
    pub hello_deadline: Duration,
    /// On a welcomed connection the next line (a keep-alive, or a hello to re-establish) must arrive whole
    /// within this; past it the connection ends, and with it the lease on its QPs.
    pub idle_deadline: Duration,
    /// Longest hello line, newline included.
    pub max_hello: usize,
    /// QPs per hello and in all, and how long a closed connection's QPs wait for their translator.
    pub qps: QpLimits,
}

impl Default for ControlLimits {
    fn default() -> Self {
        ControlLimits {
            max_connections: 64,
            max_per_address: 8,
            hello_deadline: Duration::from_secs(10),
            idle_deadline: Duration::from_secs(30),
            // About 7,000 QPs; a translator sends one per worker.
            max_hello: 256 << 10,
            qps: QpLimits::default(),
        }
    }
}

/// What the collector advertises in every welcome.
#[derive(Debug, Clone)]
pub struct Advertised {
    /// The shared token a hello must carry.
    pub token: String,
    /// The collector's MAC.
    pub mac: [u8; 6],
    /// The collector's IPv4 address.
    pub ip: [u8; 4],
    /// Atomics in flight per QP.
    pub max_dest_rd_atomic: u32,
    /// Largest payload per packet.
    pub path_mtu: u32,
    /// Every region.
    pub regions: Vec<Region>,
    /// The regions' memory, when the welcome should carry each Append list's head word from it (a
    /// translator then continues its lists across its restarts); `None` advertises none, and every list
    /// starts at entry 0.
    pub memory: Option<Arc<Arena>>,
}
