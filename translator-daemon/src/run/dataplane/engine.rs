//! The engine's side of a poll: a lone worker's burst, the burst left for the engine, its NACKs, the
//! handoff rings drained into it, and its RoCE frames built and sent.

use dta_protocol::udp::{ether_type, ETHERTYPE_ARP};
use dta_translator::{Engine, Instant};

use super::io::{Burst, HandoffRx, Queue};
use super::{DataPlane, MAX_MARKS};
use dta_translator::int::handoff::is_message;

impl<Q: Queue> DataPlane<Q> {
    /// The burst of port `p` when this is the only worker: every frame is the engine's or the wire's, so the
    /// engine classifies the burst itself (one parse a frame) and gives back what is not for it, which is
    /// then answered (ARP) or forwarded.
    #[inline]
    pub(super) fn alone(&mut self, p: usize, e: &mut Engine, now: Instant) {
        let mut cursor = 0;
        let mut foreign = false;
        let rx = &self.rx;
        // One bit a frame of the burst: not for the engine.
        let mut marks = [0u64; MAX_MARKS / 64];
        let foreign_frame = |f: &[u8]| {
            // Frames come back in order: find this one's index from where the last one was.
            while cursor < rx.len() && !std::ptr::eq(rx.frame(cursor).as_ptr(), f.as_ptr()) {
                cursor += 1;
            }
            if let Some(m) = marks.get_mut(cursor / 64) {
                *m |= 1 << (cursor % 64);
                foreign = true;
            }
            cursor += 1;
        };
        if self.faces_reporters(p) {
            e.handle_reporter_frames(now, rx.frames(), foreign_frame);
        } else {
            e.handle_frames(now, rx.frames(), foreign_frame);
        }
        if foreign {
            for i in 0..self.rx.len().min(MAX_MARKS) {
                if marks[i / 64] & (1 << (i % 64)) == 0 {
                    continue;
                }
                if ether_type(self.rx.frame(i)) == Some(ETHERTYPE_ARP) {
                    self.arp(i);
                } else {
                    self.forward_one(i);
                }
            }
            self.send_side_bursts(p);
        }
        if e.pending_nacks() > 0 {
            self.send_nacks(p, e, now);
        }
        self.recycle_rx();
    }

    /// Hands the frames left in the receive burst (all from port `p`) to the engine in one call, sends the
    /// DTA NACKs they caused back out of port `p`, and frees them.
    #[inline]
    pub(super) fn engine_takes(
        &mut self,
        p: usize,
        responses: bool,
        engine: Option<&mut Engine>,
        now: Instant,
    ) {
        match engine {
            Some(e) => {
                // Frames the engine finds not for it after all (RoCE from an address that is no collector)
                // are dropped, as steering sent them here as ours: counted by the engine (not_for_us).
                if !responses {
                    e.handle_reporter_frames(now, self.rx.frames(), |_| {});
                } else {
                    e.handle_frames(now, self.rx.frames(), |_| {});
                }
                if e.pending_nacks() > 0 {
                    self.send_nacks(p, e, now);
                }
            }
            None => self.counters.startup_drops += self.rx.len() as u64,
        }
        self.recycle_rx();
    }

    /// Builds the engine's waiting DTA NACKs into mbufs of port `p` and sends them there.
    #[cold]
    pub(super) fn send_nacks(&mut self, p: usize, e: &mut Engine, now: Instant) {
        let n = e.pending_nacks();
        self.queues[p].send_nacks(e, now, n);
    }

    /// Drains the ring from worker `j` into the engine, or frees what it holds when there is no engine yet.
    pub(super) fn take_handoff(
        &mut self,
        j: usize,
        mut engine: Option<&mut Engine>,
        now: Instant,
    ) -> bool {
        let n = self.from[j].take(&mut self.rx);
        if n == 0 {
            return false;
        }
        // INT work other workers left for this one's flows goes to the engine apart; the rest are
        // reports and responses like those received.
        if self.cfg.steering.int_port.is_some() {
            let mut int = 0;
            for i in 0..n {
                if is_message(self.rx.frame(i)) {
                    self.set_int_aside(i);
                    int += 1;
                }
            }
            if int > 0 {
                self.rx.compact();
                self.int_work_takes(engine.as_deref_mut(), now);
                if int == n {
                    return true;
                }
            }
        }
        // Handed-off frames came in on one port in the common case (reports on the reporter side,
        // responses on the collector side): NACKs go back out of the first frame's. Responses among them
        // are taken: the worker that received them forwarded those from the reporters' side instead.
        let p = self
            .rx
            .origin(0)
            .and_then(|id| self.port_ids.iter().position(|&q| q == id))
            .unwrap_or(0);
        self.engine_takes(p, true, engine, now);
        true
    }

    /// Builds the engine's RoCE frames for the collector port, a burst at a time, and sends them.
    #[inline]
    pub(super) fn transmit(&mut self, e: &mut Engine, now: Instant) -> bool {
        let q = &mut self.queues[self.cfg.collector_port];
        let most = q.tx_burst();
        let mut any = false;
        loop {
            let want = e.pending_frames().min(most);
            if want == 0 {
                return any;
            }
            let (built, sent) = q.send_from_engine(e, now, want);
            self.counters.engine_frames_out += sent as u64;
            any |= built > 0;
            // A short burst means the window, the rate limiter or the queue stopped it: done for now.
            if built < most {
                return any;
            }
        }
    }
}
