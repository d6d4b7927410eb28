//! How [`Requester::burst_templated`](super::Requester) builds a burst of one frame shape: each frame's
//! fields are staged while the requester's state is walked, then the burst is finished in one call (its
//! iCRCs, or the whole frames), so that the carry-less fold runs in a loop of its own.

use dta_protocol::roce::short_crc::Write8Fields;

use dta_protocol::roce::PSN_MASK;

use super::transmit::atomic_limit_stalls;
use super::{ring, Requester};
use crate::frames::{Op, Shape};
use crate::psn;
use crate::stats::Tally;
use crate::time::Instant;

/// One way of building a burst of frames of one shape.
pub(super) trait BurstBuild {
    /// Whether every frame of the shape is an atomic (FETCH_ADD) or none is.
    const ATOMIC: bool;

    /// Whether [`stage`](Self::stage) writes the frame into its room (otherwise it is handed an empty
    /// room, and [`finish`](Self::finish) builds the frames).
    const FRAMES_AT_STAGE: bool = true;

    /// At most how many frames one burst takes.
    const CAP: usize = usize::MAX;

    /// Frame `k` of the burst, of work request `op` with the BTH's AckReq/PSN `word`, into `frame` (its
    /// room, exactly the frame's length, with [`FRAMES_AT_STAGE`](Self::FRAMES_AT_STAGE)) or staged for
    /// [`finish`](Self::finish): whether its payload is on the heap, or `None` (nothing done) for a work
    /// request of another shape.
    fn stage(
        &mut self,
        shape: &Shape,
        k: usize,
        op: &Op,
        word: u32,
        frame: &mut [u8],
    ) -> Option<bool>;

    /// Completes the burst's `built` frames, each `frame_len` bytes, once all are staged.
    fn finish(&mut self, shape: &Shape, built: &mut [&mut [u8]], frame_len: usize);
}

/// Short WRITE ONLY frames (payload `payload_len`): the frame is written at staging, its iCRC at the end.
pub(super) struct Writes {
    pub(super) payload_len: usize,
}

impl BurstBuild for Writes {
    const ATOMIC: bool = false;

    #[inline(always)]
    fn stage(&mut self, s: &Shape, _: usize, op: &Op, word: u32, frame: &mut [u8]) -> Option<bool> {
        let Op::Write { va, rkey, payload } = op else {
            return None;
        };
        let data: &[u8] = payload;
        if data.len() != self.payload_len {
            return None;
        }
        s.write_rdma_write_no_icrc(word, *va, *rkey, data, frame);
        Some(!ring::is_inline_data(payload, data))
    }

    #[inline(always)]
    fn finish(&mut self, s: &Shape, built: &mut [&mut [u8]], frame_len: usize) {
        s.fill_icrcs(built, frame_len);
    }
}

/// FETCH_ADD frames: as [`Writes`].
pub(super) struct FetchAdds;

impl BurstBuild for FetchAdds {
    const ATOMIC: bool = true;

    #[inline(always)]
    fn stage(&mut self, s: &Shape, _: usize, op: &Op, word: u32, frame: &mut [u8]) -> Option<bool> {
        let Op::FetchAdd { va, rkey, add } = *op else {
            return None;
        };
        s.write_fetch_add_no_icrc(word, va, rkey, add, frame);
        Some(false)
    }

    #[inline(always)]
    fn finish(&mut self, s: &Shape, built: &mut [&mut [u8]], frame_len: usize) {
        s.fill_icrcs(built, frame_len);
    }
}

/// Frames the most bursts of [`Writes8`] take: a transmit burst's usual size (a longer one goes on in
/// the next call).
const WRITES8_CAP: usize = 64;

/// WRITE ONLY frames of 8 payload bytes (the shape's [`Write8`](dta_protocol::roce::short_crc::Write8)
/// builder): only the fields are staged; the finish builds the whole frames.
///
/// Its staging area is the requester's, kept from burst to burst: a fresh one zeroed 1.5 KiB a burst
/// (callgrind: 3 instructions a report).
pub(super) struct Writes8 {
    pub(super) fields: Box<Stage8>,
}

/// [`Writes8`]' staging area.
pub(super) type Stage8 = [Write8Fields; WRITES8_CAP];

/// A staging area for [`Writes8`].
pub(super) fn stage8() -> Box<Stage8> {
    Box::new([Write8Fields::default(); WRITES8_CAP])
}

impl BurstBuild for Writes8 {
    const ATOMIC: bool = false;
    const FRAMES_AT_STAGE: bool = false;
    const CAP: usize = WRITES8_CAP;

    #[inline(always)]
    fn stage(&mut self, _: &Shape, k: usize, op: &Op, word: u32, _: &mut [u8]) -> Option<bool> {
        let Op::Write { va, rkey, payload } = op else {
            return None;
        };
        // An 8-byte payload on the heap (none is made so, but a caller could) stops the burst: the
        // general path sends it and counts its heap buffer.
        let (Some(bytes), Some(f)) = (payload.inline_array::<8>(), self.fields.get_mut(k)) else {
            return None;
        };
        *f = Write8Fields {
            word,
            va: *va,
            rkey: *rkey,
            payload: bytes,
        };
        Some(false)
    }

    #[inline(always)]
    fn finish(&mut self, s: &Shape, built: &mut [&mut [u8]], _: usize) {
        if let Some(w) = s.write8() {
            // Every room holds a frame (the staging checked each one's length), so it builds them all.
            let n = w.write_all(built, &self.fields[..built.len().min(WRITES8_CAP)]);
            debug_assert_eq!(n, built.len());
        }
    }
}

impl Requester {
    /// [`burst_new`](Self::burst_new) when the builder's last shape is a short WRITE ONLY (every
    /// Key-Write entry, Postcarding chunk and Append head word) or FETCH_ADD (Key-Increment): the same
    /// frames, state and counters, in two passes. The first walks the work requests, keeping the
    /// requester's state in locals, and stages each frame through `b` (writing it but for its iCRC, or
    /// only its fields); the second finishes the burst in one call (its iCRCs, or the whole frames),
    /// whose carry-less fold runs in its own loop. Every frame of the burst is an atomic
    /// (`B::ATOMIC`) or none is, so the responder's atomic limit is counted in a local or stands as it is.
    /// It stops, as `burst_new` does, before the first work request of another shape or a buffer too
    /// short, leaving it untouched.
    #[inline(always)]
    pub(super) fn burst_templated<B: BurstBuild>(
        &mut self,
        now: Instant,
        c: &mut impl Tally,
        (bufs, lens): (&mut [&mut [u8]], &mut [usize]),
        frame_len: usize,
        b: &mut B,
    ) -> usize {
        let Some(shape) = self.builder.last_shape() else {
            return 0;
        };
        let cwnd = self.cwnd as usize;
        let (max_atomics, ack_every) = (self.p.max_atomics, self.p.cfg.ack_every);
        let first = self.win;
        // A frame is the window's last, or the queue's, when the next element is past this (AckReq).
        let last = cwnd.min(self.ring.len());
        let (slots, head, mask) = self.ring.slots_mut();
        // The AckReq cadence as the burst index of the next frame to ask: `since_ack_req` frames went
        // since the last ask, so frame `ack_every - 1 - since_ack_req` asks (the first, if that is
        // negative), and each ask puts the next one `ack_every` frames on. One compare a frame where a
        // count took an add, a compare and a select.
        let ack_every = ack_every as usize;
        let mut next_ack = ack_every
            .saturating_sub(1)
            .saturating_sub(self.since_ack_req as usize);
        // A 24-bit PSN from here on (`psn::add` keeps it one), so the word below takes it as it is.
        let mut psn = self.next_psn & PSN_MASK;
        let mut atomics = self.atomics;
        let mut heap = 0;
        let mut k = 0;
        // The window's room, the queue and the rooms bound the burst, as `burst_new`'s per-frame checks
        // do, but once, before the loop: it carries fewer values then (callgrind saw it spill).
        let room = last.saturating_sub(first);
        let n = room.min(B::CAP).min(bufs.len()).min(lens.len());
        while k < n {
            if B::ATOMIC && atomics >= max_atomics {
                break;
            }
            let at = first + k;
            let slot = (head + at) & mask;
            let stalls = k + 1 >= room
                || atomic_limit_stalls(B::ATOMIC, atomics, max_atomics, || {
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
            let ack_req = k >= next_ack || stalls;
            let word = u32::from(ack_req) << 31 | psn;
            let Some(on_heap) = b.stage(shape, k, &f.wr.op, word, frame) else {
                break;
            };
            heap += usize::from(on_heap);
            f.psn = psn;
            f.answered = false;
            f.sent_at = now;
            f.resent = false;
            c.first_sent(f.wr.tag);
            if ack_req {
                next_ack = k + ack_every;
            }
            psn = psn::add(psn, 1);
            atomics += u32::from(B::ATOMIC);
            k += 1;
        }
        lens[..k].fill(frame_len);
        if k > 0 {
            if let Some(built) = bufs.get_mut(..k) {
                b.finish(shape, built, frame_len);
            }
            // Frames sent since the last ask: the burst's `k` after the last one that asked (`next_ack` is
            // `ack_every` past it), or the `since_ack_req` before it and all `k` when none asked.
            let since = (k + ack_every).saturating_sub(1).saturating_sub(next_ack);
            self.since_ack_req = u32::try_from(since).unwrap_or(u32::MAX);
            self.atomics = atomics;
            self.heap_in_win += heap;
            self.win += k;
            self.sent += k;
            self.burst_sent(now, c, psn, k, (k * frame_len) as u64);
        }
        k
    }
}
