//! The transmit path: the next frame to send (DTA NACKs first, then each collector's RoCE frames, round
//! robin), into a `Vec` or straight into a NIC buffer, and a whole burst of them in one call
//! ([`Engine::poll_transmit_burst`]).

use super::state::Engine;
use crate::counters::Counters;
use crate::time::Instant;

impl Engine {
    /// Writes the next frame to send into `out` (cleared first); false when nothing may go now.
    pub fn poll_transmit(&mut self, now: Instant, out: &mut Vec<u8>) -> bool {
        if let Some(f) = self.nacks.pop_front() {
            *out = f;
            return true;
        }
        self.poll_qps(|qp, c| qp.poll_transmit(now, c, out).then_some(()))
            .is_some()
    }

    /// At most how many frames [`poll_transmit`](Self::poll_transmit) would give now (queued work, frames
    /// awaiting retransmission, DTA NACKs; the window and the rate limiter may hold some back): how many
    /// NIC buffers a transmit burst needs.
    pub fn pending_frames(&self) -> usize {
        self.nacks.len()
            + self
                .collectors
                .iter()
                .map(|c| c.qp.pending_frames())
                .sum::<usize>()
    }

    /// DTA NACKs waiting to go back to their reporters: [`poll_transmit_into`](Self::poll_transmit_into)
    /// gives these first. A daemon sends them out of the port their reports came in on, before it builds
    /// the RoCE burst for the collector port.
    pub fn pending_nacks(&self) -> usize {
        self.nacks.len()
    }

    /// [`poll_transmit`](Self::poll_transmit) straight into `buf`, a NIC buffer's data room: the frame is
    /// built where it is sent instead of in a `Vec` that is then copied. Returns the frame's length, or
    /// `None` when nothing may go now. A frame longer than `buf` stays queued: give a buffer of at least the
    /// path MTU plus 128 bytes (an mbuf's 2 KiB room).
    pub fn poll_transmit_into(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        if let Some(f) = self.nacks.front() {
            let room = buf.get_mut(..f.len())?;
            room.copy_from_slice(f);
            let n = f.len();
            self.nacks.pop_front();
            return Some(n);
        }
        self.poll_qps(|qp, c| qp.poll_transmit_into(now, c, buf))
    }

    /// The first QP, round robin, that `send` gets a frame from.
    #[inline]
    fn poll_qps<T>(
        &mut self,
        mut send: impl FnMut(&mut dta_rc::Requester, &mut Counters) -> Option<T>,
    ) -> Option<T> {
        let n = self.collectors.len();
        if n == 1 {
            // One collector, the common case: no round robin (and no divisions).
            return send(&mut self.collectors[0].qp, &mut self.counters);
        }
        for k in 0..n {
            let i = (self.next_qp + k) % n;
            if let Some(t) = send(&mut self.collectors[i].qp, &mut self.counters) {
                // Round robin: the next call starts after this QP, so one busy collector cannot starve
                // the others.
                self.next_qp = (i + 1) % n;
                return Some(t);
            }
        }
        None
    }

    /// Up to `bufs.len()` (and `lens.len()`) frames, frame `k` written into `bufs[k]` (a NIC buffer's data
    /// room) and its length into `lens[k]`: how many. The same frames, in the same order, with the same
    /// state and counters after, as calling [`poll_transmit_into`](Self::poll_transmit_into) on `bufs[0]`,
    /// `bufs[1]`, ... until it gives `None`; the buffers from there on are left as they were. With one
    /// collector and no DTA NACK waiting (the steady state), the QP builds the burst in one loop that
    /// checks its state and looks up the frames' shape once, instead of once a frame.
    pub fn poll_transmit_burst(
        &mut self,
        now: Instant,
        bufs: &mut [&mut [u8]],
        lens: &mut [usize],
    ) -> usize {
        let want = bufs.len().min(lens.len());
        let mut n = 0;
        // NACKs go first, and several collectors take turns frame by frame: one frame at a time then.
        while n < want && (!self.nacks.is_empty() || self.collectors.len() != 1) {
            let (Some(b), Some(l)) = (bufs.get_mut(n), lens.get_mut(n)) else {
                break;
            };
            match self.poll_transmit_into(now, b) {
                Some(len) => *l = len,
                None => return n,
            }
            n += 1;
        }
        let (Some(b), Some(l), Some(col)) = (
            bufs.get_mut(n..want),
            lens.get_mut(n..want),
            self.collectors.first_mut(),
        ) else {
            return n;
        };
        n + col.qp.transmit_burst(now, &mut self.counters, b, l)
    }
}
