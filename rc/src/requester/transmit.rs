//! Sending: the next frame (new, or a go-back-N retransmission) into a `Vec` or a NIC buffer, and
//! bursts of new frames built in one loop. Every path applies the same window, atomic-limit, rate and
//! AckReq rules (`atomic_limit_stalls` is the one AckReq-before-a-stall rule).

use super::burst::{self, FetchAdds, Writes, Writes8};
use super::ring;
use super::*;
use crate::frames::{FrameOut, Op};
use crate::psn;
use crate::stats::Tally;
use crate::time::Instant;

/// Whether the responder's atomic limit (`max` atomics in the window) holds back the next work request
/// after a frame that is an atomic or not (`atomic`), sent with `atomics` atomics in the window before
/// it; `next_atomic` says whether the next is an atomic, and is asked only when the limit could bite.
/// Such a frame is the last before a stall, so it asks for an ACK (or the window waits for the timeout).
/// The one rule for every transmit path.
#[inline(always)]
pub(super) fn atomic_limit_stalls(
    atomic: bool,
    atomics: u32,
    max: u32,
    next_atomic: impl FnOnce() -> bool,
) -> bool {
    atomics + u32::from(atomic) >= max && next_atomic()
}

impl Requester {
    /// Writes the next frame to send into `out`, if any may go now.
    pub fn poll_transmit(&mut self, now: Instant, c: &mut impl Tally, out: &mut Vec<u8>) -> bool {
        self.transmit(now, c, out).is_some()
    }

    /// [`poll_transmit`](Self::poll_transmit) straight into `buf` (a NIC buffer's data room): the frame's
    /// length, or `None` when nothing may go now or the next frame is longer than `buf` (then it stays
    /// queued; a buffer of the path MTU plus 128 bytes always fits).
    pub fn poll_transmit_into(
        &mut self,
        now: Instant,
        c: &mut impl Tally,
        buf: &mut [u8],
    ) -> Option<usize> {
        self.transmit(now, c, buf)
    }

    pub(super) fn transmit<O: FrameOut + ?Sized>(
        &mut self,
        now: Instant,
        c: &mut impl Tally,
        out: &mut O,
    ) -> Option<usize> {
        if self.error.is_some() {
            return None;
        }
        if let Some(t) = self.timers.get(Timer::Rnr) {
            if t > now {
                return None;
            }
            self.timers.stop(Timer::Rnr);
        }
        if self.probe.is_some() && self.sent >= 1 {
            // Probing after a timeout: nothing more until the probe is answered.
            return None;
        }
        if self.sent < self.win {
            return self.retransmit(now, c, out);
        }
        // The front work request's slot found once (its facts read once: opcode, tag, length), and
        // the next one's from it: each ring lookup and op match costs a few instructions on every frame.
        let at = self.win;
        let slot = self.ring.slot_of(at)?;
        let front = &self.ring.at(slot)?.wr;
        let (atomic, tag) = (front.op.is_atomic(), front.tag);
        // The frame's length only for the rate: whether it fits `out` is learnt from the build (below),
        // which saves computing it for every frame.
        let limited_len = self.limited.then(|| front.op.frame_len());
        if at >= self.cwnd as usize || (atomic && self.atomics >= self.p.max_atomics) {
            return None;
        }
        if let Some(len) = limited_len {
            if !out.fits(len) || !self.rate_ok(now, len, c) {
                return None;
            }
        }
        self.since_ack_req += 1;
        let psn = self.next_psn;
        let window_full = at + 1 >= self.cwnd as usize;
        let stalls = match self.ring.next_of(at, slot) {
            None => true,
            Some(next) => {
                // `next` cannot follow at once: the responder's atomic limit, or the rate.
                atomic_limit_stalls(atomic, self.atomics, self.p.max_atomics, || {
                    next.wr.op.is_atomic()
                }) || (self.limited && self.rate.ready_at(now, next.wr.op.frame_len()) > now)
            }
        };
        let ack_req = self.since_ack_req >= self.p.cfg.ack_every || window_full || stalls;
        // `slot` holds element `at`: `at` above found it.
        let f = self.ring.at_mut(slot)?;
        let Some(n) = out.build(&mut self.builder, &f.wr.op, psn, ack_req) else {
            if !out.fits(f.wr.op.frame_len()) {
                // `out` is too short (the build wrote nothing): it stays queued, and nothing changed
                // but the cadence count, put back (a rate, which the frame's length went to, checked
                // the fit before anything changed).
                self.since_ack_req -= 1;
                return None;
            }
            // A frame that cannot be emitted at all (beyond the UDP length limit, which the MTU cap rules
            // out) is dropped, as when the queue was apart from the window, so it cannot block the queue.
            self.ring.remove(at);
            return None;
        };
        f.psn = psn;
        f.answered = false;
        f.sent_at = now;
        f.resent = false;
        let heap = ring::on_heap(&f.wr.op);
        if ack_req {
            self.since_ack_req = 0;
        }
        if atomic {
            self.atomics += 1;
        }
        self.heap_in_win += usize::from(heap);
        c.first_sent(tag);
        self.win += 1;
        self.sent += 1;
        self.next_psn = psn::add(psn, 1);
        self.account(now, n, c);
        Some(n)
    }

    /// Up to `bufs.len()` (and `lens.len()`) frames, frame `k` written into `bufs[k]` and its length into
    /// `lens[k]`: how many. The same frames, state and counters as calling
    /// [`poll_transmit_into`](Self::poll_transmit_into) on `bufs[0]`, `bufs[1]`, ... until it gives
    /// `None` (buffers from there on are left as they were). New frames of the shape built last, with no
    /// retransmission, probe, RNR wait or rate in the way (the steady state) are built in one tight loop
    /// that checks those once; anything else goes through the per-frame path, one frame at a time.
    pub fn transmit_burst(
        &mut self,
        now: Instant,
        c: &mut impl Tally,
        bufs: &mut [&mut [u8]],
        lens: &mut [usize],
    ) -> usize {
        let want = bufs.len().min(lens.len());
        let mut n = 0;
        while n < want {
            if self.error.is_none()
                && !self.timers.is_set(Timer::Rnr)
                && self.probe.is_none()
                && self.sent == self.win
                && !self.limited
            {
                let (Some(b), Some(l)) = (bufs.get_mut(n..want), lens.get_mut(n..want)) else {
                    break;
                };
                n += self.burst_new(now, c, b, l);
                if n >= want {
                    break;
                }
            }
            // The next frame (whatever stopped the loop above: another shape, a stall, a short buffer)
            // the general way; `None` ends the burst as it ends a caller's loop.
            let (Some(b), Some(l)) = (bufs.get_mut(n), lens.get_mut(n)) else {
                break;
            };
            match self.transmit(now, c, &mut **b) {
                Some(len) => *l = len,
                None => break,
            }
            n += 1;
        }
        n
    }

    /// The tight loop of [`transmit_burst`](Self::transmit_burst): new frames while they have the
    /// builder's last shape, the window has room and nothing but the cadence decides AckReq. The caller
    /// checked that no error, RNR wait, probe, retransmission or rate applies (none of which a new frame
    /// changes). It stops before the first frame it cannot build exactly as [`transmit`](Self::transmit)
    /// would (leaving it, untouched, to that), and returns how many it built. Each step is `transmit`'s
    /// new-frame path with those checks taken out and the shape looked up once.
    #[inline(never)]
    pub(super) fn burst_new(
        &mut self,
        now: Instant,
        c: &mut impl Tally,
        bufs: &mut [&mut [u8]],
        lens: &mut [usize],
    ) -> usize {
        let Some(shape) = self.builder.last_shape() else {
            return 0;
        };
        if let Some((frame_len, payload_len)) = shape.short_write_lens() {
            if shape.write8().is_some() {
                // The staging area is lent to the burst and given back (allocated only if a panic
                // had lost it).
                let fields = self.stage8.take().unwrap_or_else(burst::stage8);
                let mut w = Writes8 { fields };
                let k = self.burst_templated(now, c, (bufs, lens), frame_len, &mut w);
                self.stage8 = Some(w.fields);
                return k;
            }
            let mut writes = Writes { payload_len };
            return self.burst_templated(now, c, (bufs, lens), frame_len, &mut writes);
        }
        if let Some(frame_len) = shape.fetch_add_len() {
            return self.burst_templated(now, c, (bufs, lens), frame_len, &mut FetchAdds);
        }
        let cwnd = self.cwnd as usize;
        let (max_atomics, ack_every) = (self.p.max_atomics, self.p.cfg.ack_every);
        let mut psn = self.next_psn;
        let mut bytes = 0u64;
        let mut k = 0;
        for (buf, len_out) in bufs.iter_mut().zip(lens.iter_mut()) {
            let at = self.win;
            if at >= cwnd {
                break;
            }
            let Some(slot) = self.ring.slot_of(at) else {
                break;
            };
            let Some(f) = self.ring.at(slot) else {
                break;
            };
            let op = &f.wr.op;
            let atomic = op.is_atomic();
            if (atomic && self.atomics >= max_atomics) || !shape.fits(op) {
                break;
            }
            let since = self.since_ack_req + 1;
            let stalls = match self.ring.next_of(at, slot) {
                None => true,
                Some(next) => {
                    // As in `transmit`, without the rate (none applies).
                    atomic_limit_stalls(atomic, self.atomics, max_atomics, || {
                        next.wr.op.is_atomic()
                    })
                }
            };
            let ack_req = since >= ack_every || at + 1 >= cwnd || stalls;
            // A buffer too short: nothing written, nothing changed; `transmit` decides about it. A
            // WRITE's payload bytes are read out once, for the build and the heap test.
            let (built, heap) = match op {
                Op::Write { va, rkey, payload } => {
                    let data: &[u8] = payload;
                    let heap = !ring::is_inline_data(payload, data);
                    let built = shape.write_rdma_write(op, *va, *rkey, data, psn, ack_req, buf);
                    (built, heap)
                }
                Op::FetchAdd { .. } => (shape.write(op, psn, ack_req, buf), false),
            };
            let Some(n) = built else {
                break;
            };
            let tag = f.wr.tag;
            if let Some(f) = self.ring.at_mut(slot) {
                f.psn = psn;
                f.answered = false;
                f.sent_at = now;
                f.resent = false;
            }
            self.since_ack_req = if ack_req { 0 } else { since };
            self.atomics += u32::from(atomic);
            self.heap_in_win += usize::from(heap);
            c.first_sent(tag);
            self.win += 1;
            self.sent += 1;
            psn = psn::add(psn, 1);
            bytes += n as u64;
            *len_out = n;
            k += 1;
        }
        if k > 0 {
            self.burst_sent(now, c, psn, k, bytes);
        }
        k
    }

    /// The end of a burst of `k` new frames (`bytes` in all), the next PSN `psn`: `account` for each
    /// frame (no rate applies, and `now` is the same for all of them) and the retransmission timer.
    #[inline(always)]
    pub(super) fn burst_sent(
        &mut self,
        now: Instant,
        c: &mut impl Tally,
        psn: u32,
        k: usize,
        bytes: u64,
    ) {
        self.next_psn = psn;
        c.frames_out(k as u64, bytes);
        if !self.timers.is_set(Timer::Retransmit) {
            self.timers.set(Timer::Retransmit, now);
        }
    }

    /// The next frame of a go-back-N retransmission (`sent < win`): out of line, so the new-frame path
    /// keeps its registers.
    #[inline(never)]
    pub(super) fn retransmit<O: FrameOut + ?Sized>(
        &mut self,
        now: Instant,
        c: &mut impl Tally,
        out: &mut O,
    ) -> Option<usize> {
        let len = self.ring.get(self.sent)?.wr.op.frame_len();
        if !out.fits(len) || !self.rate_ok(now, len, c) {
            return None;
        }
        let f = self.ring.get_mut(self.sent)?;
        // A retransmission always asks for an ACK: recovery should not wait for the cadence.
        let n = out.build(&mut self.builder, &f.wr.op, f.psn, true)?;
        f.resent = true;
        self.sent += 1;
        self.since_ack_req = 0;
        c.retransmitted();
        self.account(now, n, c);
        Some(n)
    }
}
