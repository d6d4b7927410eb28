//! Bursts of new frames: [`transmit_burst`](Requester::transmit_burst), the frames a caller's
//! buffers take, new ones in one tight loop ([`burst`](Requester::burst)) over a [`BurstBuild`] of
//! the builder's last shape, anything else one at a time through `transmit`. The loop applies the
//! rules of every new frame through [`NewFrames`], as `transmit` does.

use super::build::{self, BurstBuild, FetchAdds, Frames, Writes, Writes8};
use super::new_frame::NewFrames;
use super::state::Requester;
use super::timer_table::Timer;
use crate::stats::Tally;
use crate::time::Instant;

impl Requester {
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
    /// changes). It picks the [`BurstBuild`] of the shape and runs [`burst`](Self::burst) with it.
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
                let fields = self.stage8.take().unwrap_or_else(build::stage8);
                let mut w = Writes8 { fields };
                let k = self.burst(now, c, (bufs, lens), frame_len, &mut w);
                self.stage8 = Some(w.fields);
                return k;
            }
            let mut writes = Writes { payload_len };
            return self.burst(now, c, (bufs, lens), frame_len, &mut writes);
        }
        if let Some(frame_len) = shape.fetch_add_len() {
            return self.burst(now, c, (bufs, lens), frame_len, &mut FetchAdds);
        }
        let frame_len = shape.frame_len();
        self.burst(now, c, (bufs, lens), frame_len, &mut Frames)
    }

    /// New frames of the builder's last shape, each `frame_len` bytes, built through `b`: the same
    /// frames, state and counters as [`transmit`](Self::transmit) called for each, in two passes. The
    /// first walks the work requests, the requester's state in a [`NewFrames`] (in registers), and
    /// stages each frame through `b` (writing it whole, or but for its iCRC, or only its fields); the
    /// second finishes the burst in one call (its iCRCs, or the whole frames), whose carry-less fold
    /// runs in its own loop. Every frame of the burst is an atomic (`B::ATOMIC`) or none is, so the
    /// responder's atomic limit is counted or stands as it is. It stops before the first work request
    /// of another shape or a buffer too short, leaving it untouched (for `transmit`).
    #[inline(always)]
    pub(super) fn burst<B: BurstBuild>(
        &mut self,
        now: Instant,
        c: &mut impl Tally,
        (bufs, lens): (&mut [&mut [u8]], &mut [usize]),
        frame_len: usize,
        b: &mut B,
    ) -> usize {
        let mut go = NewFrames::start(self);
        let Some(shape) = self.builder.last_shape() else {
            return 0;
        };
        let first = go.at();
        let (slots, head, mask) = self.ring.slots_mut();
        // The window's room, the queue and the rooms bound the burst, once, before the loop: it
        // carries fewer values then (callgrind saw it spill).
        let n = go.room().min(B::CAP).min(bufs.len()).min(lens.len());
        while go.count() < n {
            if go.atomic_limit(B::ATOMIC) {
                break;
            }
            let k = go.count();
            let slot = (head + first + k) & mask;
            let stalls = go.stalls(B::ATOMIC, || {
                slots
                    .get((slot + 1) & mask)
                    .is_some_and(|next| next.wr.op.is_atomic())
            });
            // A room too short ends the burst; only the builders that write frames at staging are
            // handed theirs.
            let frame: &mut [u8] = match bufs.get_mut(k).and_then(|b| b.get_mut(..frame_len)) {
                Some(room) if B::FRAMES_AT_STAGE => room,
                Some(_) => &mut [],
                None => break,
            };
            let Some(f) = slots.get_mut(slot) else {
                break;
            };
            let ack_req = go.ack_req(stalls);
            let Some(heap) = b.stage(shape, k, &f.wr.op, go.word(ack_req), frame) else {
                break;
            };
            go.sent(f, now, (B::ATOMIC, heap, ack_req), c);
        }
        let k = go.count();
        lens[..k].fill(frame_len);
        if k > 0 {
            if let Some(built) = bufs.get_mut(..k) {
                b.finish(shape, built, frame_len);
            }
            go.end(self, now, (k * frame_len) as u64, c);
        }
        k
    }
}
