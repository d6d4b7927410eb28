//! What a control client counts, and why a handshake's answer was refused (the metrics' reasons).

use std::sync::atomic::{AtomicU64, Ordering};

use dta_protocol::control::REFUSED_IN_USE;

/// Counters of one control client.
#[derive(Debug, Default)]
pub struct ControlCounters {
    /// Welcomes received (the first one, and one per re-establishment).
    pub welcomes: AtomicU64,
    /// Connection or handshake attempts that failed (collector down, refusal, malformed answer).
    pub failures: AtomicU64,
    /// Welcomes with new regions: the collector restarted.
    pub restarts: AtomicU64,
    /// Welcomes with the same regions after a QP error: only the QPs were re-created.
    pub reestablished: AtomicU64,
    /// Handshakes whose answer was refused, by [`Refused`] reason (index: its position in
    /// [`Refused::ALL`]).
    pub refused: [AtomicU64; Refused::ALL.len()],
    /// 1 while the collector's last welcome is one the workers use; 0 while it is unusable (or none came).
    pub usable: AtomicU64,
}

/// Why a handshake's answer was not taken (each also counts as a failure).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The collector refused us (token, version).
    ByCollector,
    /// The collector's QPs do not match ours.
    QpMismatch,
    /// A welcome whose regions the engine cannot use.
    Unusable,
    /// The collector refused us because another live control connection holds our QPs (a translator
    /// with our address and QPNs); retried with backoff.
    InUse,
}

impl Refused {
    /// Every reason, in counter order.
    pub const ALL: [Refused; 4] = [
        Refused::ByCollector,
        Refused::QpMismatch,
        Refused::Unusable,
        Refused::InUse,
    ];

    /// The metric label.
    pub const fn label(self) -> &'static str {
        match self {
            Refused::ByCollector => "refused_by_collector",
            Refused::QpMismatch => "qp_mismatch",
            Refused::Unusable => "unusable_welcome",
            Refused::InUse => "qps_in_use",
        }
    }

    /// The reason of a failed handshake, if the collector answered (from `handshake`'s errors).
    pub(super) fn of(e: &anyhow::Error) -> Option<Refused> {
        let text = format!("{e:#}");
        if text.contains("refused us") && text.contains(REFUSED_IN_USE) {
            Some(Refused::InUse)
        } else if text.contains("refused us") {
            Some(Refused::ByCollector)
        } else if text.contains("do not match our") {
            Some(Refused::QpMismatch)
        } else {
            None
        }
    }
}

impl ControlCounters {
    pub(super) fn refuse(&self, why: Refused) {
        if let Some(c) = Refused::ALL
            .iter()
            .position(|&r| r == why)
            .and_then(|k| self.refused.get(k))
        {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }
}
