//! The engine's timers: the next deadline over every QP and primitive, and the run of those due
//! (retransmissions, idle flushes, the rate limiter) or of everything held (a final flush).

use super::outputs::Event;
use super::state::Engine;
use crate::primitives::{FlushMode, Sink};
use crate::time::Instant;

impl Engine {
    /// The next instant [`handle_timeout`](Self::handle_timeout) has work.
    pub fn poll_timeout(&self) -> Option<Instant> {
        // One fold over every requester's and primitive's deadline (see `Earliest`).
        let mut t = crate::time::Earliest::NONE;
        for c in &self.collectors {
            c.qp.add_timeouts(&mut t);
            c.prims.add_timeouts(&mut t);
        }
        t.get()
    }

    /// Runs every timer due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.flush_inner(now, FlushMode::Due);
    }

    /// Writes everything batched or cached now (end of an offline capture, shutdown).
    pub fn flush(&mut self, now: Instant) {
        self.flush_inner(now, FlushMode::All);
    }

    fn flush_inner(&mut self, now: Instant, mode: FlushMode) {
        for (i, col) in self.collectors.iter_mut().enumerate() {
            let mut out = Sink {
                qp: &mut col.qp,
                mtu: col.mtu,
                counters: &mut self.counters,
            };
            for p in col.prims.timed() {
                p.flush(now, mode, &col.regions, &mut out);
            }
            if let Some(error) = col.qp.on_timeout(now, &mut self.counters) {
                self.events.push_back(Event::QpError {
                    collector: i,
                    error,
                });
            }
        }
    }
}
