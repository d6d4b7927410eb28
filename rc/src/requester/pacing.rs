//! The rate limiter and congestion control: whether a rate applies, whether the next frame may go,
//! what a sent frame takes from the bucket, and the DCQCN cuts a CNP makes.

use super::state::Requester;
use super::timer_table::Timer;
use crate::stats::Tally;
use crate::time::Instant;

impl Requester {
    /// Whether a rate applies (configured, or a congestion cap): with none, the bucket is never asked,
    /// which callgrind put at ~100 instructions a frame for two calls that always said "now".
    pub(super) fn sync_limited(&mut self) {
        self.limited = self.p.rate.packets_per_sec > 0
            || self.p.rate.bytes_per_sec > 0
            || self.dcqcn.cap_pps().is_some();
        if !self.limited {
            self.timers.stop(Timer::RateWait);
        }
    }

    #[inline]
    pub(super) fn rate_ok(&mut self, now: Instant, len: usize, c: &mut impl Tally) -> bool {
        if !self.limited {
            return true;
        }
        let at = self.rate.ready_at(now, len);
        if at > now {
            if !self.timers.is_set(Timer::RateWait) {
                c.rate_limited();
            }
            self.timers.set(Timer::RateWait, at);
            return false;
        }
        self.timers.stop(Timer::RateWait);
        true
    }

    /// A retransmitted frame of `len` bytes went at `now`: its tokens taken, and
    /// [`frames_went`](Self::frames_went). (New frames go through `NewFrames::end`.)
    #[inline(always)]
    pub(super) fn account(&mut self, now: Instant, len: usize, c: &mut impl Tally) {
        if self.limited {
            self.rate.take(len);
        }
        self.frames_went(now, 1, len as u64, c);
    }

    /// A congestion notification for this QP: cut the packet rate (DCQCN-style; see [`crate::dcqcn`]).
    pub fn on_cnp(&mut self, now: Instant) {
        self.dcqcn.on_cnp(now);
        self.timers
            .set_to(Timer::Congestion, self.dcqcn.poll_timeout());
        self.rate.set_packet_cap(now, self.dcqcn.cap_pps());
        self.sync_limited();
    }

    /// The packet-rate cap congestion control has in force, if any.
    pub fn congestion_cap_pps(&self) -> Option<u64> {
        self.dcqcn.cap_pps()
    }
}
