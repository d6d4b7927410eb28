//! How a burst of new frames of one shape is built (the requester's `burst` walks its state and hands
//! each frame to a [`BurstBuild`]): each frame is written, or its fields staged, while the requester's
//! state is walked, then the burst is finished in one call (its iCRCs, or the whole frames), so that
//! the carry-less fold runs in a loop of its own. One implementation per kind of shape; which one a
//! burst takes is `burst_new`'s choice.

use dta_protocol::roce::short_crc::Write8Fields;
use dta_protocol::roce::PSN_MASK;

use super::ring;
use crate::frames::{Op, Shape};

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

/// WRITE ONLY frames of any other shape (longer than the short copies take): each frame whole, iCRC
/// included, at staging, as [`FrameBuilder::build_into`](crate::frames::FrameBuilder::build_into)
/// writes it; nothing to finish.
pub(super) struct Frames;

impl BurstBuild for Frames {
    const ATOMIC: bool = false;

    #[inline(always)]
    fn stage(&mut self, s: &Shape, _: usize, op: &Op, word: u32, frame: &mut [u8]) -> Option<bool> {
        let Op::Write { va, rkey, payload } = op else {
            return None;
        };
        if !s.fits(op) {
            return None;
        }
        // The payload's bytes read out once, for the build and the heap test.
        let data: &[u8] = payload;
        let (psn, ack_req) = (word & PSN_MASK, word >> 31 != 0);
        s.write_rdma_write(op, *va, *rkey, data, psn, ack_req, frame)?;
        Some(!ring::is_inline_data(payload, data))
    }

    #[inline(always)]
    fn finish(&mut self, _: &Shape, _: &mut [&mut [u8]], _: usize) {}
}
