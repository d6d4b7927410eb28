//! The burst transmit path: [`Engine::poll_transmit_burst`] fills a burst of NIC buffers in one call.

use super::Engine;
use crate::time::Instant;

impl Engine {
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
