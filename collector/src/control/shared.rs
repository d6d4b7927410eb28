//! What every connection thread shares: the advertisement, the limits and the QP table.

use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::slots::Slots;
use super::{Advertised, ControlLimits, QpOpener, QpStats, QpTable};

/// What every connection thread shares.
pub(super) struct Shared {
    pub(super) ad: Advertised,
    pub(super) opener: Arc<dyn QpOpener>,
    pub(super) limits: ControlLimits,
    pub(super) stop: Arc<AtomicBool>,
    pub(super) slots: Arc<Slots>,
    /// Every open QP and the lease holding it; one lock, so that caps and replacement see one state.
    pub(super) table: Mutex<QpTable>,
    pub(super) qp_stats: Arc<QpStats>,
    pub(super) next_lease: AtomicU64,
}

impl Shared {
    pub(super) fn table(&self) -> std::sync::MutexGuard<'_, QpTable> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Closes the QPs of leases whose grace has passed.
    pub(super) fn reap(&self) {
        let n = self
            .table()
            .reap(self.opener.as_ref(), Instant::now(), &self.qp_stats);
        if n > 0 {
            log::info!(
                "reclaimed {n} QPs of translators whose control connection closed {:?} ago and who did \
                 not say hello again",
                self.limits.qps.grace
            );
        }
    }
}
