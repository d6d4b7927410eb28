//! One collector's control client: what it is given (addresses, identity, QPs, the workers' inputs).

use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;
use std::time::Duration;

use dta_translator::Config;

use super::super::worker::ToWorker;
use super::ControlCounters;

/// One collector's control client.
pub struct ControlLink {
    /// Collector index (routing order).
    pub index: usize,
    /// Control server address.
    pub addr: SocketAddr,
    /// Shared token.
    pub token: String,
    /// Our MAC (the collector-facing port's).
    pub mac: [u8; 6],
    /// Our IPv4 address.
    pub ip: [u8; 4],
    /// Worker k's QPN towards this collector, for each k.
    pub qpns: Vec<u32>,
    /// PSN of the first connection; each later one starts elsewhere so that stale responses from a
    /// previous QP cannot be taken for new ones.
    pub base_psn: u32,
    /// Every worker's input.
    pub workers: Vec<Sender<ToWorker>>,
    /// QP failures reported by workers.
    pub requests: Receiver<()>,
    /// Counters.
    pub counters: Arc<ControlCounters>,
    /// Set when the daemon stops.
    pub stop: Arc<AtomicBool>,
    /// Worker 0's engine configuration: what a welcome is checked against before it is handed on (the
    /// workers' configurations differ only in their own QPNs and UDP ports).
    pub engine: Config,
}

/// How often the client checks for worker requests and for shutdown.
pub(super) const POLL: Duration = Duration::from_millis(50);
