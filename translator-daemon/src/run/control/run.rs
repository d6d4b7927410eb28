//! The client's life: the first welcome to the daemon's start-up, then the lease watched and the QPs
//! re-established or replaced on the workers' requests until the daemon stops.

use std::sync::atomic::Ordering;
use std::sync::mpsc::{RecvTimeoutError, Sender};

use dta_protocol::control::Welcome;
use dta_protocol::layout::Region;

use super::deliver::Kind;
use super::lease::Lease;
use super::link::POLL;
use super::{ControlLink, Refused};

impl ControlLink {
    /// Runs until `stop`. The first welcome goes to `initial`; a refusal there, or a welcome the engine
    /// cannot use, is fatal (a wrong token, version or memory layout at start-up is a configuration to
    /// fix; the daemon says which and exits). Later ones are retried because the collector may be
    /// restarting.
    pub fn run(self, initial: Sender<(usize, Result<Welcome, String>)>) {
        let mut detached = false;
        let first = match self.connect(self.psn(0)) {
            Ok((w, lease)) => match self.unusable(&w) {
                None => {
                    self.counters.welcomes.fetch_add(1, Ordering::Relaxed);
                    Ok((w, lease))
                }
                Some(why) => {
                    self.counters.refuse(Refused::Unusable);
                    Err(format!("its welcome cannot be used: {why}"))
                }
            },
            Err(e) if Refused::of(&e) == Some(Refused::ByCollector) => {
                self.counters.refuse(Refused::ByCollector);
                Err(format!("{e:#}"))
            }
            Err(e) => {
                // A collector that is down, or one whose QPs for us another live translator holds
                // (refused, counted, and retried: the holder may go).
                if Refused::of(&e) == Some(Refused::InUse) {
                    self.counters.refuse(Refused::InUse);
                    self.counters.failures.fetch_add(1, Ordering::Relaxed);
                }
                log::warn!(
                    "collector {} ({}): {e:#}; waiting for it",
                    self.index,
                    self.addr
                );
                self.establish(self.psn(0), &mut detached)
                    .ok_or_else(|| "stopped".to_string())
            }
        };
        let (first, mut lease) = match first {
            Ok((w, lease)) => (Ok(w), Some(lease)),
            Err(e) => (Err(e), None),
        };
        // None: the workers hold no memory of this collector (detached), so the next welcome replaces.
        let mut regions: Option<Vec<Region>> = match &first {
            Ok(w) => {
                self.counters.usable.store(1, Ordering::Relaxed);
                log::info!(
                    "collector {} ({}): welcome with {} regions",
                    self.index,
                    self.addr,
                    w.regions.len()
                );
                Some(w.regions.clone())
            }
            Err(_) => None,
        };
        let failed = first.is_err();
        let _ = initial.send((self.index, first));
        if failed {
            return;
        }
        let mut generation = 0u32;
        while !self.stop.load(Ordering::Relaxed) {
            // A failed QP is re-established on the connection that holds it, while it lives.
            let mut alive = lease.take();
            match self.requests.recv_timeout(POLL) {
                Ok(()) => {}
                Err(RecvTimeoutError::Timeout) => match alive.as_mut().map(Lease::check) {
                    Some(Ok(())) => {
                        lease = alive;
                        continue;
                    }
                    // Without the connection the collector reclaims our QPs after its grace period:
                    // say hello again now, as for a failed QP.
                    Some(Err(why)) => {
                        alive = None;
                        log::warn!(
                            "collector {} ({}): {why}; saying hello again",
                            self.index,
                            self.addr
                        )
                    }
                    None => continue,
                },
                Err(RecvTimeoutError::Disconnected) => return,
            }
            // Several workers may report one failure: one new set of QPs serves them all.
            while self.requests.try_recv().is_ok() {}
            generation = generation.wrapping_add(1);
            let psn = self.psn(generation);
            let again = alive.and_then(|l| self.rehello(l, psn));
            let Some((w, new_lease)) = again.or_else(|| self.establish(psn, &mut detached)) else {
                return;
            };
            lease = Some(new_lease);
            if regions.as_ref() == Some(&w.regions) {
                self.counters.reestablished.fetch_add(1, Ordering::Relaxed);
                log::info!(
                    "collector {}: QPs re-established at PSN {psn:#x}",
                    self.index
                );
                self.deliver(&w, psn, Kind::Reestablish);
            } else {
                self.counters.restarts.fetch_add(1, Ordering::Relaxed);
                if detached {
                    log::warn!(
                        "collector {} ({}): back with memory the translator can use; resuming on it",
                        self.index,
                        self.addr
                    );
                } else {
                    log::warn!(
                        "collector {} ({}): restarted with new memory; starting over on it",
                        self.index,
                        self.addr
                    );
                }
                self.deliver(&w, psn, Kind::Replace);
            }
            detached = false;
            regions = Some(w.regions);
            // Requests that arrived while reconnecting were about the old QPs.
            while self.requests.try_recv().is_ok() {}
        }
    }
}
