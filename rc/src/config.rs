//! The requester's configuration: per-QP behaviour ([`RequesterConfig`]) and the rate limits
//! ([`RateConfig`]). Both are sections of the translator's TOML file, so they (de)serialise with the same
//! defaults and unknown-field rules.

use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use crate::dcqcn::CongestionConfig;

/// Requester per QP.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RequesterConfig {
    /// AckReq on every `ack_every`-th packet (and on the last one before the queue idles).
    pub ack_every: u32,
    /// Frames in flight (sent, unacknowledged) per QP.
    pub window: u32,
    /// Shrink the window on loss and grow it back as ACKs arrive (halved per sequence NAK or timeout,
    /// one frame more per window acknowledged; never below 8 frames or above `window`). Go-back-N resends
    /// everything after a lost frame, so a full window under random loss multiplies the traffic.
    pub adaptive_window: bool,
    /// Work requests waiting for the window per QP; beyond it reports are dropped or NACKed.
    pub queue_capacity: u32,
    /// Retransmit timeout in microseconds before the RTT is measured, and (with `adaptive_timeout`) the
    /// least timeout after; doubled on every timeout without progress.
    pub retransmit_timeout_us: u64,
    /// Follow the measured RTT (RFC 6298: smoothed RTT + 4 x its variation, Karn's rule) instead of a
    /// fixed timeout, so a loaded responder does not trigger go-back-N storms.
    pub adaptive_timeout: bool,
    /// Ceiling of the adaptive timeout in microseconds (before backoff).
    pub max_retransmit_timeout_us: u64,
    /// Largest backoff exponent: the timeout stops doubling after this many doublings.
    pub max_backoff_shift: u32,
    /// Timeouts (or RNR NAKs) in a row without progress before the QP is declared in error.
    pub retry_limit: u32,
}

impl Default for RequesterConfig {
    fn default() -> Self {
        RequesterConfig {
            ack_every: 16,
            window: 256,
            adaptive_window: true,
            queue_capacity: 4096,
            retransmit_timeout_us: 1000,
            adaptive_timeout: true,
            max_retransmit_timeout_us: 100_000,
            max_backoff_shift: 6,
            retry_limit: 7,
        }
    }
}

/// Token bucket per collector; 0 means unlimited.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RateConfig {
    /// Packets per second, 0 for no limit.
    pub packets_per_sec: u64,
    /// Bytes per second (whole frames), 0 for no limit.
    pub bytes_per_sec: u64,
    /// Bucket depth in packets.
    pub burst_packets: u64,
    /// Bucket depth in bytes.
    pub burst_bytes: u64,
    /// DCQCN-style rate cuts on congestion notification packets.
    pub congestion: CongestionConfig,
}

impl Default for RateConfig {
    fn default() -> Self {
        RateConfig {
            packets_per_sec: 0,
            bytes_per_sec: 0,
            burst_packets: 64,
            burst_bytes: 64 * 1024,
            congestion: CongestionConfig::default(),
        }
    }
}

impl RequesterConfig {
    /// `retransmit_timeout_us`.
    pub fn retransmit_timeout(&self) -> Duration {
        Duration::from_micros(self.retransmit_timeout_us)
    }

    /// `max_retransmit_timeout_us`.
    pub fn max_retransmit_timeout(&self) -> Duration {
        Duration::from_micros(self.max_retransmit_timeout_us)
    }
}
