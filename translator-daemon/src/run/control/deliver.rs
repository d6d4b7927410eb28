//! Handing a welcome on to the workers (each its own QP), or detaching them from a collector whose
//! welcome the engine cannot use.

use std::sync::atomic::Ordering;

use dta_protocol::control::Welcome;
use dta_translator::Engine;

use super::super::worker::ToWorker;
use super::ControlLink;

/// How a welcome is handed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Reestablish,
    Replace,
}

impl ControlLink {
    /// The welcome as worker `k` sees it: its own QP only.
    fn for_worker(w: &Welcome, k: usize) -> Welcome {
        let mut mine = w.clone();
        mine.qps = vec![w.qps[k]];
        mine
    }

    pub(super) fn deliver(&self, w: &Welcome, start_psn: u32, kind: Kind) {
        for (k, tx) in self.workers.iter().enumerate() {
            let (collector, welcome) = (self.index, Self::for_worker(w, k));
            let msg = match kind {
                Kind::Reestablish => ToWorker::Reestablish {
                    collector,
                    welcome,
                    start_psn,
                },
                Kind::Replace => ToWorker::Replace {
                    collector,
                    welcome,
                    start_psn,
                },
            };
            let _ = tx.send(msg);
        }
    }

    /// Why the engine cannot use `w`, if it cannot.
    pub(super) fn unusable(&self, w: &Welcome) -> Option<String> {
        Engine::check_welcome(&self.engine, self.index, &Self::for_worker(w, 0))
            .err()
            .map(|e| e.to_string())
    }

    /// Tells the workers that the collector came back with memory they cannot use (once, until a usable
    /// welcome comes): they drop what they held for it, counted, and refuse its reports, counted.
    pub(super) fn detach(&self, detached: &mut bool) {
        self.counters.usable.store(0, Ordering::Relaxed);
        if !*detached {
            *detached = true;
            for tx in &self.workers {
                let _ = tx.send(ToWorker::Detach {
                    collector: self.index,
                });
            }
        }
    }
}
