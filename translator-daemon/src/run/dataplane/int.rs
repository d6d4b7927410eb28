//! INT reports: set aside from a burst and handed to the engine apart; the work they leave on other
//! workers' flows written as messages (into the report's own buffer, behind the frame, for the frame's
//! last) and staged for those workers; and the messages other workers sent given to the engine.

use std::ops::Range;

use dta_translator::{Engine, Instant};

use super::io::{Burst, Queue};
use super::DataPlane;

/// What an INT burst left for other workers: (frame of the burst, worker, its message's bytes in
/// [`IntHandoff::bytes`]), in frame order.
#[derive(Default)]
pub(super) struct IntHandoff {
    messages: Vec<(usize, usize, Range<usize>)>,
    bytes: Vec<u8>,
}

impl IntHandoff {
    /// Room for a burst of `burst` frames, each leaving one message of a few items (more grows the
    /// vectors once; a steady state allocates nothing).
    pub(super) fn with_capacity(burst: usize) -> Self {
        IntHandoff {
            messages: Vec::with_capacity(burst),
            bytes: Vec::with_capacity(burst * 128),
        }
    }
}

impl<Q: Queue> DataPlane<Q> {
    /// Moves INT report `i` of the receive burst to the INT burst, which the engine takes on its own.
    pub(super) fn set_int_aside(&mut self, i: usize) {
        if !self.rx.move_to(i, &mut self.int_rx) {
            // The INT burst has room for a whole receive burst: only a hole fails to move.
            self.rx.drop_one(i);
        }
    }

    /// Hands the INT burst (frames this worker received) to the engine, stages the messages of work it
    /// left for other workers (each frame's last message written into the frame's own buffer, behind the
    /// frame, any other in a buffer of its own: only a v2.0 group naming flows of several workers needs
    /// one), and recycles the rest.
    pub(super) fn int_takes(&mut self, engine: Option<&mut Engine>, now: Instant) {
        let Some(e) = engine else {
            self.counters.startup_drops += self.int_rx.len() as u64;
            self.int_rx.clear();
            return;
        };
        let hand = &mut self.int_hand;
        hand.messages.clear();
        hand.bytes.clear();
        e.handle_int_frames(now, self.int_rx.frames(), |i, worker, m| {
            let at = hand.bytes.len();
            hand.bytes.extend_from_slice(m);
            hand.messages.push((i, worker, at..hand.bytes.len()));
        });
        if self.int_hand.messages.is_empty() {
            self.queues[self.cfg.collector_port].recycle(&mut self.int_rx);
            return;
        }
        let messages = &self.int_hand.messages;
        for (n, &(i, k, ref range)) in messages.iter().enumerate() {
            let bytes = &self.int_hand.bytes[range.clone()];
            let Some(staged) = self.staged.get_mut(k) else {
                self.counters.handoff_full += 1;
                continue;
            };
            let last = messages.get(n + 1).map_or(true, |next| next.0 != i);
            let done = if last && self.int_rx.rewrite(i, bytes) {
                self.int_rx.move_to(i, staged)
            } else {
                self.queues[self.cfg.collector_port].push_bytes(bytes, staged)
            };
            if done {
                self.counters.handed_off += 1;
            } else {
                self.counters.handoff_full += 1;
            }
        }
        self.int_rx.compact();
        self.offer_staged();
        self.queues[self.cfg.collector_port].recycle(&mut self.int_rx);
    }

    /// Gives the messages in the INT burst (set aside from a handoff ring) to the engine, and recycles
    /// them.
    pub(super) fn int_work_takes(&mut self, engine: Option<&mut Engine>, now: Instant) {
        match engine {
            Some(e) => e.handle_int_work(now, self.int_rx.frames()),
            None => self.counters.startup_drops += self.int_rx.len() as u64,
        }
        self.queues[self.cfg.collector_port].recycle(&mut self.int_rx);
    }
}
