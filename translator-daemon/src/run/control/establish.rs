//! Getting a usable welcome again: a new connection with backoff while the collector is down, or a hello
//! on the connection that still holds our QPs.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use dta_protocol::control::Welcome;

use super::answer::AnswerLimits;
use super::lease::Lease;
use super::link::POLL;
use super::{ControlLink, Refused};

const MAX_BACKOFF: Duration = Duration::from_secs(2);
/// How long the answer to a hello on the open connection may take before a new connection is tried.
const REHELLO_DEADLINE: Duration = Duration::from_secs(2);

impl ControlLink {
    fn sleep(&self, d: Duration) {
        let end = std::time::Instant::now() + d;
        while !self.stop.load(Ordering::Relaxed) && std::time::Instant::now() < end {
            std::thread::sleep(POLL.min(d));
        }
    }

    /// Connects and says hello until a usable welcome comes (or the daemon stops), with backoff. A
    /// welcome the engine cannot use detaches the workers from this collector (`detached` says they are)
    /// and is asked for again.
    pub(super) fn establish(
        &self,
        start_psn: u32,
        detached: &mut bool,
    ) -> Option<(Welcome, Lease)> {
        let mut backoff = Duration::from_millis(50);
        while !self.stop.load(Ordering::Relaxed) {
            let e = match self.connect(start_psn) {
                Ok((w, lease)) => {
                    self.counters.welcomes.fetch_add(1, Ordering::Relaxed);
                    let Some(why) = self.unusable(&w) else {
                        self.counters.usable.store(1, Ordering::Relaxed);
                        return Some((w, lease));
                    };
                    // Its connection goes with it: the collector reclaims the QPs it made for us.
                    drop(lease);
                    self.counters.refuse(Refused::Unusable);
                    self.detach(detached);
                    anyhow::anyhow!(
                        "its welcome cannot be used: {why}; its reports are refused and counted \
                         (report_drops_total{{reason=\"collector_unusable\"}}) until it offers memory \
                         the translator can write"
                    )
                }
                Err(e) => {
                    if let Some(why) = Refused::of(&e) {
                        self.counters.refuse(why);
                    }
                    e
                }
            };
            self.counters.failures.fetch_add(1, Ordering::Relaxed);
            let line = format!(
                "collector {} ({}): {e:#}; retrying in {backoff:?}",
                self.index, self.addr
            );
            if *detached {
                log::error!("{line}");
            } else {
                log::warn!("{line}");
            }
            self.sleep(backoff);
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
        None
    }

    /// Says hello again on the live connection `lease` (the collector replaces the QPs that connection
    /// holds): no other connection's hello can come between the old QPs and the new ones, as it could
    /// with a new connection, where a translator with our identity waiting to get in (refused while we
    /// live) would take our QPs in the gap. `None` (the connection closed, the answer refused, late, or
    /// a welcome the engine cannot use): [`establish`](Self::establish) takes over on a new connection.
    pub(super) fn rehello(&self, mut lease: Lease, start_psn: u32) -> Option<(Welcome, Lease)> {
        let limits = AnswerLimits {
            // A collector that went away without closing must not hold the reconnection for long.
            deadline: REHELLO_DEADLINE,
            ..AnswerLimits::default()
        };
        match self.handshake(&mut lease.stream, start_psn, limits) {
            Ok(w) if self.unusable(&w).is_none() => {
                self.counters.welcomes.fetch_add(1, Ordering::Relaxed);
                lease.last_sent = Instant::now();
                Some((w, lease))
            }
            Ok(_) => None,
            Err(e) => {
                log::info!(
                    "collector {} ({}): hello on the open connection: {e:#}; connecting anew",
                    self.index,
                    self.addr
                );
                None
            }
        }
    }
}
