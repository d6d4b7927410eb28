//! Frames that are not for this worker's engine: staged for the worker that owns them, ARP answered in
//! place, forwarded across the bump; and the side bursts and staged handoffs sent.

use super::super::arp;
use super::io::{Burst, HandoffTx, Queue};
use super::DataPlane;

impl<Q: Queue> DataPlane<Q> {
    /// Hands frame `i` of the receive burst to worker `k`'s staging burst.
    pub(super) fn stage(&mut self, i: usize, k: usize) {
        let moved = match self.staged.get_mut(k) {
            Some(s) => self.rx.move_to(i, s),
            None => false,
        };
        if moved {
            self.counters.handed_off += 1;
        } else {
            // A worker index beyond the rings cannot come from steering (it knows the worker count); a
            // full staging burst cannot either (it holds a whole receive burst).
            self.rx.drop_one(i);
        }
    }

    /// Answers ARP request `i` in its own mbuf when it asks for our address; forwards it otherwise.
    pub(super) fn arp(&mut self, i: usize) {
        let ip = self.cfg.steering.local_ip;
        let mut reply = [0u8; arp::ARP_FRAME_LEN];
        let answered = arp::reply(self.rx.frame(i), ip, self.cfg.local_mac, &mut reply).is_some();
        if !answered {
            return self.forward_one(i);
        }
        // The reply is 42 bytes, as the request was at least: written over its first 42, the length kept
        // (a padded request gives a padded reply, as a NIC pads a short frame anyway).
        let frame = self.rx.frame_mut(i);
        match frame.get_mut(..arp::ARP_FRAME_LEN) {
            Some(head) => {
                head.copy_from_slice(&reply);
                if self.rx.move_to(i, &mut self.replies) {
                    self.counters.arp_replies += 1;
                }
            }
            None => self.rx.drop_one(i),
        }
    }

    /// Moves frame `i` to the other port's TX burst (bump in the wire), or frees and counts it with one port.
    pub(super) fn forward_one(&mut self, i: usize) {
        if self.queues.len() == 2 && self.rx.move_to(i, &mut self.forward) {
            self.counters.forwarded += 1;
        } else {
            self.rx.drop_one(i);
            self.counters.not_forwarded += 1;
        }
    }

    /// Sends what the burst from port `p` produced besides the engine's input: forwarded frames, ARP
    /// replies, handoffs.
    pub(super) fn send_side_bursts(&mut self, p: usize) {
        if !self.forward.is_empty() {
            let other = 1 - p;
            self.queues[other].send(&mut self.forward);
        }
        if !self.replies.is_empty() {
            self.queues[p].send(&mut self.replies);
        }
        self.offer_staged();
    }

    /// Offers every staged handoff to its ring; true when none is left waiting.
    pub(super) fn offer_staged(&mut self) -> bool {
        let mut all = true;
        for (k, staged) in self.staged.iter_mut().enumerate() {
            if staged.is_empty() {
                continue;
            }
            match self.to.get_mut(k).and_then(Option::as_mut) {
                Some(ring) => {
                    ring.offer(staged);
                    all &= staged.is_empty();
                }
                None => staged.clear(),
            }
        }
        all
    }
}
