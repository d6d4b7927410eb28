//! A QP's frames of one opcode and payload length: the template, its hashed iCRC prefix, and the writers
//! that copy and patch it.

use dta_protocol::roce::short_crc::Write8;
use dta_protocol::roce::{BthOpcode, IcrcPrefix, ICRC_LEN, PSN_MASK};

use super::copy::{copy_bytes, copy_payload, copy_short};
use super::patch::{patch_atomic_eth, patch_reth, patch_short, ATOMIC_END, PAYLOAD_AT};
use super::Op;

pub(crate) struct Shape {
    pub(super) opcode: BthOpcode,
    pub(super) payload_len: usize,
    pub(super) template: Vec<u8>,
    pub(super) prefix: IcrcPrefix,
    /// For an RDMA WRITE ONLY of 8 payload bytes (Key-Write's entry for 4-byte values) on a CPU with the
    /// carry-less multiply: the builder that puts a burst's frames together in registers.
    pub(super) write8: Option<Write8>,
}
impl Shape {
    /// Whether `op`'s frames have this shape.
    #[inline(always)]
    pub(crate) fn fits(&self, op: &Op) -> bool {
        match op {
            Op::Write { payload, .. } => {
                self.opcode == BthOpcode::RdmaWriteOnly && self.payload_len == payload.len()
            }
            Op::FetchAdd { .. } => self.opcode == BthOpcode::FetchAdd,
        }
    }
}

impl Shape {
    /// For a WRITE ONLY shape whose frames [`write_rdma_write_no_icrc`](Self::write_rdma_write_no_icrc)
    /// builds (template and payload lengths its short copies take): its frame and payload lengths.
    /// `None` for other shapes, which are built one frame at a time.
    #[inline]
    pub(crate) fn short_write_lens(&self) -> Option<(usize, usize)> {
        let (len, p) = (self.template.len(), self.payload_len);
        let copies = |n: usize| n == 0 || (4..=128).contains(&n);
        (self.opcode == BthOpcode::RdmaWriteOnly
            && copies(len)
            && copies(p)
            && PAYLOAD_AT + p + ICRC_LEN == len)
            .then_some((len, p))
    }

    /// A WRITE frame of this shape (one [`short_write_lens`](Self::short_write_lens) gave `Some`, whose
    /// payload length `payload` has) at the start of `frame` (exactly the frame's length), without its
    /// iCRC: [`fill_icrcs`](Self::fill_icrcs) writes a burst's at once. `word` is the BTH's AckReq/PSN
    /// word. The bytes are [`write_rdma_write`](Self::write_rdma_write)'s (the requester's model test
    /// compares the frames).
    #[inline(always)]
    pub(crate) fn write_rdma_write_no_icrc(
        &self,
        word: u32,
        va: u64,
        rkey: u32,
        payload: &[u8],
        frame: &mut [u8],
    ) {
        copy_short(frame, &self.template);
        patch_reth(frame, word, va, rkey);
        if let Some(p) = frame.get_mut(PAYLOAD_AT..PAYLOAD_AT + payload.len()) {
            copy_payload(p, payload);
        }
    }

    /// For a FETCH_ADD shape: its frame length (every FETCH_ADD frame has the template's). `None` for
    /// other shapes.
    #[inline]
    pub(crate) fn fetch_add_len(&self) -> Option<usize> {
        let len = self.template.len();
        (self.opcode == BthOpcode::FetchAdd && ATOMIC_END + ICRC_LEN == len).then_some(len)
    }

    /// A FETCH_ADD frame of this shape (one [`fetch_add_len`](Self::fetch_add_len) gave `Some`) at the
    /// start of `frame` (exactly the frame's length), without its iCRC, as
    /// [`write_rdma_write_no_icrc`](Self::write_rdma_write_no_icrc) is for WRITEs.
    #[inline(always)]
    pub(crate) fn write_fetch_add_no_icrc(
        &self,
        word: u32,
        va: u64,
        rkey: u32,
        add: u64,
        frame: &mut [u8],
    ) {
        copy_short(frame, &self.template);
        patch_atomic_eth(frame, word, va, rkey, add);
    }

    /// The length of every frame of this shape (its template's).
    #[inline]
    pub(crate) fn frame_len(&self) -> usize {
        self.template.len()
    }

    /// The [`Write8`] builder of this shape's frames, if it has one.
    #[inline]
    pub(crate) fn write8(&self) -> Option<&Write8> {
        self.write8.as_ref()
    }

    /// The iCRCs of the `frame_len`-byte frames of this shape at the start of `rooms`.
    #[inline]
    pub(crate) fn fill_icrcs(&self, rooms: &mut [&mut [u8]], frame_len: usize) {
        self.prefix.fill_all(rooms, frame_len);
    }

    /// The frame of a WRITE `op` of this shape (what [`FrameBuilder::build_into`](super::FrameBuilder::build_into) writes for it) at the
    /// start of `buf`: its length, or `None` (nothing written) if `buf` is too short. The caller has
    /// read out its VA, R_Key and payload bytes (a burst reads them once for several uses; the
    /// payload's inline-or-heap test each time it is looked at was a few instructions).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn write_rdma_write(
        &self,
        op: &Op,
        va: u64,
        rkey: u32,
        payload: &[u8],
        psn: u32,
        ack_req: bool,
        buf: &mut [u8],
    ) -> Option<usize> {
        // `write_frame` with `patch_short`'s WRITE arm spelt out.
        let len = self.template.len();
        let frame = buf.get_mut(..len)?;
        if copy_short(frame, &self.template) {
            let word = u32::from(ack_req) << 31 | (psn & PSN_MASK);
            patch_reth(frame, word, va, rkey);
            if frame
                .get_mut(PAYLOAD_AT..PAYLOAD_AT + payload.len())
                .is_some_and(|p| copy_payload(p, payload))
            {
                self.prefix.fill(frame);
                return Some(len);
            }
        }
        write_frame_long(self, op, psn, ack_req, frame)
    }
}

/// Writes the frame of `op` (of `shape`) at the start of `buf`: the template, patched. Its length, or
/// `None` if `buf` is too short (then `buf` is left as it was).
#[inline(always)]
pub(super) fn write_frame(
    shape: &Shape,
    op: &Op,
    psn: u32,
    ack_req: bool,
    buf: &mut [u8],
) -> Option<usize> {
    // The template is a frame of this shape: its length is the frame's.
    let len = shape.template.len();
    let frame = buf.get_mut(..len)?;
    // Frames up to 128 bytes (every Key-Write, Key-Increment and Postcarding one) inline, without a
    // libc call; a template that short leaves at most 58 bytes of payload, which `copy_short` takes too.
    if copy_short(frame, &shape.template) && patch_short(op, psn, ack_req, frame) {
        shape.prefix.fill(frame);
        return Some(len);
    }
    write_frame_long(shape, op, psn, ack_req, frame)
}

/// [`write_frame`] of a longer frame (or payload), with `copy_from_slice`: out of line, so the short
/// frames' path holds nothing across a libc call (and saves fewer registers).
#[inline(never)]
fn write_frame_long(
    shape: &Shape,
    op: &Op,
    psn: u32,
    ack_req: bool,
    frame: &mut [u8],
) -> Option<usize> {
    frame.copy_from_slice(&shape.template);
    patch(shape, op, psn, ack_req, frame);
    Some(frame.len())
}

/// Patches the per-packet fields of `op` into `frame`, a copy of `shape`'s template, and fills in the iCRC.
///
/// The fields are stored at their fixed offsets as whole big-endian words into the frame's headers taken
/// as one fixed-size array (one length check for all of them: the template is a whole frame of this
/// shape, so every field is in bounds; `template_path_equals_full_emit` checks the bytes against a full
/// emit). Through the header views' setters, the 3-byte PSN store alone was an out-of-line call.
#[inline(always)]
pub(super) fn patch(shape: &Shape, op: &Op, psn: u32, ack_req: bool, frame: &mut [u8]) {
    // Only AckReq and the PSN differ in the BTH (the rest is the template's prefix and is in its iCRC
    // state). Their word: AckReq, 7 reserved bits (zero, as the BTH's emit writes them), the PSN.
    let word = u32::from(ack_req) << 31 | (psn & PSN_MASK);
    match op {
        Op::Write { va, rkey, payload } => {
            patch_reth(frame, word, *va, *rkey);
            if let Some(p) = frame.get_mut(PAYLOAD_AT..PAYLOAD_AT + payload.len()) {
                copy_bytes(p, payload);
            }
        }
        Op::FetchAdd { va, rkey, add } => patch_atomic_eth(frame, word, *va, *rkey, *add),
    }
    shape.prefix.fill(frame);
}
