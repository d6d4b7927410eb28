//! The window: its size (halved on loss, grown back as ACKs arrive), where a PSN is in it, and
//! retiring acknowledged work requests from its front.

use super::state::Requester;
use crate::psn;

/// The least window loss shrinks it to (frames).
const MIN_CWND: u32 = 8;

impl Requester {
    /// The window in force (frames in flight at most), below the configured one after losses.
    pub fn window_limit(&self) -> u32 {
        self.cwnd
    }

    /// A loss (sequence NAK or timeout): halve the window, down to `MIN_CWND`.
    pub(super) fn on_loss(&mut self) {
        if self.p.cfg.adaptive_window {
            self.cwnd = (self.cwnd / 2).max(MIN_CWND.min(self.p.cfg.window));
            self.cwnd_acked = 0;
        }
    }

    /// `n` frames acknowledged: one frame more per window's worth (additive increase).
    pub(super) fn on_acked(&mut self, n: usize) {
        if self.cwnd >= self.p.cfg.window {
            return;
        }
        self.cwnd_acked = self.cwnd_acked.saturating_add(n as u32);
        if self.cwnd_acked >= self.cwnd {
            self.cwnd_acked -= self.cwnd;
            self.cwnd += 1;
        }
    }

    /// Index in the window of `psn`, if it is in flight.
    pub(super) fn index_of(&self, psn: u32) -> Option<usize> {
        if self.win == 0 {
            return None;
        }
        let front = self.ring.get(0)?.psn;
        let i = psn::distance(front, psn) as usize;
        (i < self.win).then_some(i)
    }

    /// Retires every frame before `until` (exclusive). An unanswered atomic stops the retirement: its
    /// response was lost, so it must be asked again (the responder answers from its cache). Returns whether
    /// that happened.
    // Always inline: out of line, the call cost a cumulative ACK of writes (Key-Write's) ~3
    // instructions a report (callgrind).
    #[inline(always)]
    pub(super) fn retire_before(&mut self, until: usize) -> bool {
        if until == 1 {
            // One frame (every ATOMIC ACKNOWLEDGE that answers the oldest atomic).
            return self.retire_one();
        }
        let (n, stuck) = if self.atomics == 0 {
            // Writes only (the common case, a cumulative ACK of Key-Write's writes): nothing can stop
            // the retirement, so nothing is looked at, and no clamp is needed: every caller retires
            // at most the window.
            debug_assert!(until <= self.win);
            (until, false)
        } else {
            // Find how far retirement goes.
            let (n, atomics, stuck) = self.retirable(until.min(self.win));
            self.atomics = self.atomics.saturating_sub(atomics);
            (n, stuck)
        };
        self.retire_ring(n);
        self.win -= n;
        self.sent = self.sent.saturating_sub(n);
        if self.cwnd < self.p.cfg.window {
            // One at a time, as the window grows by one per window's worth acknowledged.
            for _ in 0..n {
                self.on_acked(1);
            }
        }
        stuck
    }

    /// [`retire_before(1)`](Self::retire_before) without the count.
    pub(super) fn retire_one(&mut self) -> bool {
        if self.win == 0 {
            return false;
        }
        let Some(f) = self.ring.get(0) else {
            return false;
        };
        let atomic = f.wr.op.is_atomic();
        if atomic && !f.answered {
            return true;
        }
        self.retire_front(atomic);
        false
    }

    /// Retires the front of the window (`win > 0`), which may retire (`atomic`: whether it is an atomic,
    /// answered then).
    #[inline]
    pub(super) fn retire_front(&mut self, atomic: bool) {
        self.retire_ring(1);
        self.win -= 1;
        self.atomics = self.atomics.saturating_sub(u32::from(atomic));
        self.sent = self.sent.saturating_sub(1);
        if self.cwnd < self.p.cfg.window {
            self.on_acked(1);
        }
    }

    /// Retires the first `n` work requests of the ring (of the window): moving the ring's head, unless
    /// some in the window have a heap buffer to give back.
    #[inline]
    pub(super) fn retire_ring(&mut self, n: usize) {
        if self.heap_in_win == 0 {
            self.ring.advance(n);
        } else {
            let released = self.ring.pop_front(n);
            self.heap_in_win = self.heap_in_win.saturating_sub(released);
        }
    }

    /// How many of the first `until` frames of the window may retire (up to the first unanswered atomic),
    /// how many atomics are among them, and whether an unanswered atomic stopped the count.
    pub(super) fn retirable(&self, until: usize) -> (usize, u32, bool) {
        let mut atomics = 0;
        for i in 0..until {
            let Some(f) = self.ring.get(i) else {
                break;
            };
            if f.wr.op.is_atomic() {
                if !f.answered {
                    return (i, atomics, true);
                }
                atomics += 1;
            }
        }
        (until, atomics, false)
    }

    /// Go-back-N: everything in the window goes again, oldest first.
    pub(super) fn rewind_to_front(&mut self) {
        self.sent = 0;
    }
}
