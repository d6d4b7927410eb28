//! What the engine hands its caller besides frames: what it did with a frame ([`Handled`]), what the
//! caller must act on ([`Event`]), and a QP's gauges ([`QpStats`]). The bottom of the engine's modules:
//! it uses none of them.

use dta_rc::requester::QpError;

/// What the engine did with a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handled {
    /// A report or a response: consumed (possibly dropped and counted).
    Consumed,
    /// Not DTA and not from a collector: forward it untouched.
    NotForUs,
}

/// Something the caller must act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The QP to collector `collector` stopped; re-establish it over the control channel and call
    /// [`Engine::reestablish`](crate::Engine::reestablish). Its queued and unacknowledged work is kept
    /// until then.
    QpError {
        /// Collector index.
        collector: usize,
        /// Why.
        error: QpError,
    },
}

/// Gauges of one QP for metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpStats {
    /// Frames in flight.
    pub window: usize,
    /// Work requests queued.
    pub queue: usize,
    /// Next PSN.
    pub next_psn: u32,
    /// Error, if stopped.
    pub error: Option<QpError>,
    /// Base retransmit timeout in force (ns, before backoff).
    pub timeout_ns: u64,
    /// Smoothed RTT (ns), once measured.
    pub srtt_ns: Option<u64>,
    /// The window in force (frames), below the configured window after losses.
    pub window_limit: u32,
}
