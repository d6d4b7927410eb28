//! INT reports: set aside from a burst, handed to the engine apart, and the frames whose flows other
//! workers own staged for them.

use dta_translator::{Engine, Instant};

use super::io::{Burst, Queue};
use super::DataPlane;

impl<Q: Queue> DataPlane<Q> {
    /// Moves INT report `i` of the receive burst to the INT burst, which the engine takes on its own.
    pub(super) fn set_int_aside(&mut self, i: usize) {
        if !self.rx.move_to(i, &mut self.int_rx) {
            // The INT burst has room for a whole receive burst: only a hole fails to move.
            self.rx.drop_one(i);
        }
    }

    /// Hands the INT burst to the engine (`handed`: other workers received it and handed it here), stages
    /// each received frame for the workers whose flows it also names (the frame itself to the last of
    /// them, a copy to each other one: only a v2.0 group of several flows needs more than one), and
    /// recycles the rest.
    pub(super) fn int_takes(&mut self, engine: Option<&mut Engine>, now: Instant, handed: bool) {
        let Some(e) = engine else {
            self.counters.startup_drops += self.int_rx.len() as u64;
            self.int_rx.clear();
            return;
        };
        let hand = &mut self.int_hand;
        hand.clear();
        e.handle_int_frames(now, self.int_rx.frames(), handed, |i, workers| {
            hand.push((i, workers))
        });
        let me = self.cfg.index;
        for &(i, workers) in &self.int_hand {
            let mut left = workers & !(1 << (me % 64));
            while left != 0 {
                let k = left.trailing_zeros() as usize;
                left &= left - 1;
                let staged = match self.staged.get_mut(k) {
                    Some(s) => s,
                    None => {
                        self.counters.handoff_full += 1;
                        continue;
                    }
                };
                let done = if left == 0 {
                    self.int_rx.move_to(i, staged)
                } else {
                    self.queues[self.cfg.collector_port].copy_to(&self.int_rx, i, staged)
                };
                if done {
                    self.counters.handed_off += 1;
                } else {
                    self.counters.handoff_full += 1;
                }
            }
        }
        if !self.int_hand.is_empty() {
            self.int_rx.compact();
            self.offer_staged();
        }
        self.queues[self.cfg.collector_port].recycle(&mut self.int_rx);
    }
}
