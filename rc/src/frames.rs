//! RoCEv2 frames of one QP, built from per-shape templates.
//!
//! Every frame of a QP with the same opcode and payload length shares its bytes up to the BTH's
//! AckReq/PSN word, so each shape is emitted once through [`FrameRepr`] (the general, checked path), its
//! iCRC prefix is hashed once, and every later frame is a copy of the template with the PSN, the RETH or
//! AtomicETH and the payload patched in, plus an iCRC over only those bytes.

use std::cell::RefCell;
use std::fmt;
use std::ops::{Deref, DerefMut};

use dta_protocol::roce::frame::pad_for;
use dta_protocol::roce::short_crc::Write8;
use dta_protocol::roce::{
    atomic_eth, bth, reth, BthOpcode, FrameRepr, IcrcPrefix, ICRC_LEN, PSN_MASK,
};
use dta_protocol::udp::{UdpEndpoints, HEADERS_LEN};
use smallvec::SmallVec;

/// Payload bytes a [`Payload`] holds without a heap buffer: the largest Key-Write entry (32 bytes), a
/// Postcarding chunk (`CHUNK_STRIDE`, 32) and the Append head word (8).
pub const INLINE_PAYLOAD: usize = 32;

/// Heap buffers kept for reuse per thread (each at most a path MTU, so at most 1 MiB at 4 KiB).
const POOL_MAX: usize = 256;
/// Least capacity of a pooled buffer, so buffers of different batch sizes mostly fit each other.
const POOL_MIN_CAPACITY: usize = 256;

thread_local! {
    /// Buffers of dropped large payloads (Append and Sketch-Merge batches), reused by the next ones: the
    /// work request is dropped deep in the requester when its ACK retires it, so the buffer comes back
    /// here, not to the primitive that filled it.
    static POOL: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// The bytes of a WRITE. Up to [`INLINE_PAYLOAD`] bytes (Key-Write entries, Postcarding chunks, Append
/// head words) live inline in the work request; longer ones (Append and Sketch-Merge batches, at most a
/// path MTU) take a heap buffer from a per-thread pool and give it back when dropped, so the steady state
/// allocates nothing per report either way.
pub struct Payload(SmallVec<[u8; INLINE_PAYLOAD]>);

impl Payload {
    /// An empty payload with room for `n` bytes.
    pub fn with_capacity(n: usize) -> Self {
        if n <= INLINE_PAYLOAD {
            return Payload(SmallVec::new());
        }
        let mut v = POOL
            .try_with(|p| p.borrow_mut().pop())
            .ok()
            .flatten()
            .unwrap_or_default();
        v.clear();
        v.reserve(n.max(POOL_MIN_CAPACITY));
        // The capacity is above the inline capacity, so this keeps `v`'s buffer.
        Payload(SmallVec::from_vec(v))
    }

    /// A payload of `n` bytes written by `fill` (given them zeroed): one memset and the caller's stores,
    /// instead of an append per field (measurably slower for a sketch column's many 4-byte counters).
    pub fn filled(n: usize, fill: impl FnOnce(&mut [u8])) -> Self {
        let mut p = Self::with_capacity(n);
        if p.0.spilled() {
            // The pooled Vec behind the SmallVec: resize is a memset there.
            let mut v = std::mem::take(&mut p.0).into_vec();
            v.resize(n, 0);
            p.0 = SmallVec::from_vec(v);
        } else {
            p.0.extend_from_slice(&[0u8; INLINE_PAYLOAD][..n]);
        }
        fill(&mut p.0);
        p
    }

    /// A payload holding a copy of `bytes`.
    pub fn from_slice(bytes: &[u8]) -> Self {
        if bytes.len() <= INLINE_PAYLOAD {
            return Payload(SmallVec::from_slice(bytes));
        }
        let mut p = Self::with_capacity(bytes.len());
        p.0.extend_from_slice(bytes);
        p
    }

    /// The first `len` bytes of `buf` (at most [`INLINE_PAYLOAD`]), moved in as the inline buffer: no copy
    /// loop, for a payload assembled on the stack (a Key-Write entry). `None` if `len` is too long.
    #[inline]
    pub fn from_array(buf: [u8; INLINE_PAYLOAD], len: usize) -> Option<Self> {
        (len <= INLINE_PAYLOAD).then(|| Payload(SmallVec::from_buf_and_len(buf, len)))
    }

    /// Appends `bytes` (within the capacity asked for, this does not allocate).
    pub fn extend_from_slice(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }
}

impl Drop for Payload {
    // Inline: the check for an inline payload (every Key-Write and Key-Increment one) is a compare, cheaper
    // than the call a retired window of work requests made per entry.
    #[inline]
    fn drop(&mut self) {
        if !self.0.spilled() {
            return;
        }
        let v = std::mem::take(&mut self.0).into_vec();
        let _ = POOL.try_with(|p| {
            if let Ok(mut p) = p.try_borrow_mut() {
                if p.len() < POOL_MAX {
                    p.push(v);
                }
            }
        });
    }
}

impl Payload {
    /// The payload's bytes when they are exactly `N` and inline (not on the heap): one test of the
    /// inline length, for the burst builders of short WRITEs, whose heap count then stays as it is.
    #[inline(always)]
    pub(crate) fn inline_array<const N: usize>(&self) -> Option<[u8; N]> {
        if self.0.spilled() {
            return None;
        }
        <[u8; N]>::try_from(self.0.as_slice()).ok()
    }
}

impl Deref for Payload {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl DerefMut for Payload {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.0
    }
}

impl Clone for Payload {
    fn clone(&self) -> Self {
        Payload::from_slice(self)
    }
}

impl PartialEq for Payload {
    fn eq(&self, other: &Self) -> bool {
        self[..] == other[..]
    }
}

impl Eq for Payload {}

impl fmt::Debug for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self[..], f)
    }
}

impl From<&[u8]> for Payload {
    fn from(bytes: &[u8]) -> Self {
        Payload::from_slice(bytes)
    }
}

/// An RDMA operation, as the primitives ask for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// RDMA WRITE ONLY of `payload` at `va`.
    Write {
        /// Remote virtual address.
        va: u64,
        /// Remote key.
        rkey: u32,
        /// The bytes to write (at most the path MTU).
        payload: Payload,
    },
    /// FETCH_ADD of `add` on the u64 at `va` (8-byte aligned).
    FetchAdd {
        /// Remote virtual address.
        va: u64,
        /// Remote key.
        rkey: u32,
        /// The addend.
        add: u64,
    },
}

impl Op {
    /// Whether the responder answers this with an ATOMIC ACKNOWLEDGE.
    pub const fn is_atomic(&self) -> bool {
        matches!(self, Op::FetchAdd { .. })
    }

    fn opcode(&self) -> BthOpcode {
        match self {
            Op::Write { .. } => BthOpcode::RdmaWriteOnly,
            Op::FetchAdd { .. } => BthOpcode::FetchAdd,
        }
    }

    fn payload(&self) -> &[u8] {
        match self {
            Op::Write { payload, .. } => payload,
            Op::FetchAdd { .. } => &[],
        }
    }

    /// Length of the whole Ethernet frame this op becomes.
    pub fn frame_len(&self) -> usize {
        let ext = match self {
            Op::Write { .. } => reth::HEADER_LEN,
            Op::FetchAdd { .. } => atomic_eth::HEADER_LEN,
        };
        let p = self.payload().len();
        HEADERS_LEN + bth::HEADER_LEN + ext + p + pad_for(p) + ICRC_LEN
    }
}

/// Where the BTH and the extension header start in a frame (dta emits no IPv4 options).
const BTH_AT: usize = HEADERS_LEN;
const EXT_AT: usize = BTH_AT + bth::HEADER_LEN;
const ACK_PSN_AT: usize = BTH_AT + bth::ACK_PSN_OFFSET;
/// Where a WRITE's payload starts (after the RETH), and where a FETCH_ADD's AtomicETH ends.
const PAYLOAD_AT: usize = EXT_AT + reth::HEADER_LEN;
const ATOMIC_END: usize = EXT_AT + atomic_eth::HEADER_LEN;
/// Shapes kept per QP; Append and Sketch flushes of every length stay well below this.
const MAX_SHAPES: usize = 64;

pub(crate) struct Shape {
    opcode: BthOpcode,
    payload_len: usize,
    template: Vec<u8>,
    prefix: IcrcPrefix,
    /// For an RDMA WRITE ONLY of 8 payload bytes (Key-Write's entry for 4-byte values) on a CPU with the
    /// carry-less multiply: the builder that puts a burst's frames together in registers.
    write8: Option<Write8>,
}

/// Builds the frames of one QP.
pub struct FrameBuilder {
    endpoints: UdpEndpoints,
    dest_qp: u32,
    shapes: Vec<Shape>,
    /// The shape used last.
    last: usize,
}

impl FrameBuilder {
    /// A builder for frames from `endpoints` to the responder QP `dest_qp`.
    pub fn new(endpoints: UdpEndpoints, dest_qp: u32) -> Self {
        FrameBuilder {
            endpoints,
            dest_qp,
            shapes: Vec::new(),
            last: 0,
        }
    }

    /// The responder QP frames go to.
    pub fn dest_qp(&self) -> u32 {
        self.dest_qp
    }

    /// The frames' addresses.
    pub fn endpoints(&self) -> &UdpEndpoints {
        &self.endpoints
    }

    /// The general path: a full, checked emit (also what templates are made of).
    fn repr<'a>(&self, op: &'a Op, psn: u32, ack_req: bool) -> FrameRepr<'a> {
        let mut f = match op {
            Op::Write { va, rkey, payload } => FrameRepr::write_only(
                self.endpoints,
                self.dest_qp,
                psn,
                ack_req,
                *va,
                *rkey,
                payload,
            ),
            Op::FetchAdd { va, rkey, add } => {
                FrameRepr::fetch_add(self.endpoints, self.dest_qp, psn, ack_req, *va, *rkey, *add)
            }
        };
        // DESIGN.md section 4: MigReq 1, as the RC requesters of real NICs send it.
        f.bth.mig_req = true;
        f
    }

    #[inline]
    fn shape(&mut self, op: &Op) -> Option<usize> {
        let (opcode, len) = (op.opcode(), op.payload().len());
        // Most QPs send one shape after another (Key-Write entries, full Append batches): try the last one
        // first, inline; the search and the template's creation are out of line.
        if let Some(s) = self.shapes.get(self.last) {
            if s.opcode == opcode && s.payload_len == len {
                return Some(self.last);
            }
        }
        self.find_shape(op, opcode, len)
    }

    #[cold]
    #[inline(never)]
    fn find_shape(&mut self, op: &Op, opcode: BthOpcode, len: usize) -> Option<usize> {
        if let Some(i) = self
            .shapes
            .iter()
            .position(|s| s.opcode == opcode && s.payload_len == len)
        {
            self.last = i;
            return Some(i);
        }
        if self.shapes.len() >= MAX_SHAPES {
            return None;
        }
        let mut template = vec![0u8; op.frame_len()];
        self.repr(op, 0, false).emit(&mut template).ok()?;
        let prefix = IcrcPrefix::new(&template).ok()?;
        let write8 = prefix.write8(&template);
        self.shapes.push(Shape {
            opcode,
            payload_len: len,
            template,
            prefix,
            write8,
        });
        self.last = self.shapes.len() - 1;
        Some(self.last)
    }

    /// Writes the frame of `op` with `psn` and `ack_req` into `out` (cleared first). Returns false only if
    /// the frame cannot be emitted at all (a payload beyond the UDP length limit), which the engine's MTU
    /// cap rules out.
    pub fn build(&mut self, op: &Op, psn: u32, ack_req: bool, out: &mut Vec<u8>) -> bool {
        out.clear();
        let Some(i) = self.shape(op) else {
            out.resize(op.frame_len(), 0);
            return self.repr(op, psn, ack_req).emit(out).is_ok();
        };
        let shape = &self.shapes[i];
        out.extend_from_slice(&shape.template);
        patch(shape, op, psn, ack_req, out);
        true
    }

    /// [`build`](Self::build) straight into `buf` (an mbuf's data room, say), so the frame is written once
    /// where it is sent instead of into a `Vec` and then copied. Returns the frame's length, or `None` when
    /// `buf` is shorter than [`Op::frame_len`] or the frame cannot be emitted; `buf` past the frame is
    /// left as it was.
    pub fn build_into(
        &mut self,
        op: &Op,
        psn: u32,
        ack_req: bool,
        buf: &mut [u8],
    ) -> Option<usize> {
        // Most QPs send one shape after another: the last one is tried here, with nothing else in the
        // function (so the hot path saves few registers); the rest is out of line.
        if let Some(shape) = self.shapes.get(self.last) {
            if shape.fits(op) {
                return write_frame(shape, op, psn, ack_req, buf);
            }
        }
        self.build_into_other(op, psn, ack_req, buf)
    }

    /// The shape [`build_into`](Self::build_into) tries first (the last one used): a burst looks it up
    /// once and builds every frame of that shape with [`Shape::write`], inline.
    #[inline]
    pub(crate) fn last_shape(&self) -> Option<&Shape> {
        self.shapes.get(self.last)
    }

    /// [`build_into`](Self::build_into) for an op of another shape than the last one's.
    #[inline(never)]
    fn build_into_other(
        &mut self,
        op: &Op,
        psn: u32,
        ack_req: bool,
        buf: &mut [u8],
    ) -> Option<usize> {
        let Some(i) = self.shape(op) else {
            let frame = buf.get_mut(..op.frame_len())?;
            frame.fill(0);
            return self.repr(op, psn, ack_req).emit(frame).ok();
        };
        write_frame(self.shapes.get(i)?, op, psn, ack_req, buf)
    }
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

    /// [`write`](Self::write) of a WRITE `op` whose VA, R_Key and payload bytes the caller has read out
    /// (a burst reads them once for several uses; the payload's inline-or-heap test each time it is
    /// looked at was a few instructions).
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

    /// What [`FrameBuilder::build_into`] writes for `op` (which [`fits`](Self::fits) this shape, its last
    /// shape): the frame's length, or `None` (nothing written) if `buf` is too short.
    #[inline(always)]
    pub(crate) fn write(&self, op: &Op, psn: u32, ack_req: bool, buf: &mut [u8]) -> Option<usize> {
        write_frame(self, op, psn, ack_req, buf)
    }
}

/// Writes the frame of `op` (of `shape`) at the start of `buf`: the template, patched. Its length, or
/// `None` if `buf` is too short (then `buf` is left as it was).
#[inline(always)]
fn write_frame(shape: &Shape, op: &Op, psn: u32, ack_req: bool, buf: &mut [u8]) -> Option<usize> {
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
fn patch(shape: &Shape, op: &Op, psn: u32, ack_req: bool, frame: &mut [u8]) {
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

/// The BTH's AckReq/PSN `word` and the RETH's VA and R_Key; the DMA length is part of the shape and
/// already in the template.
#[inline(always)]
fn patch_reth(frame: &mut [u8], word: u32, va: u64, rkey: u32) {
    if let Some(h) = frame.first_chunk_mut::<PAYLOAD_AT>() {
        h[ACK_PSN_AT..ACK_PSN_AT + 4].copy_from_slice(&word.to_be_bytes());
        h[EXT_AT..EXT_AT + 8].copy_from_slice(&va.to_be_bytes());
        h[EXT_AT + 8..EXT_AT + 12].copy_from_slice(&rkey.to_be_bytes());
    }
}

/// The BTH's AckReq/PSN `word` and the AtomicETH's VA, R_Key and addend; compare is 0 for FETCH & ADD
/// and already in the template.
#[inline(always)]
fn patch_atomic_eth(frame: &mut [u8], word: u32, va: u64, rkey: u32, add: u64) {
    if let Some(h) = frame.first_chunk_mut::<ATOMIC_END>() {
        h[ACK_PSN_AT..ACK_PSN_AT + 4].copy_from_slice(&word.to_be_bytes());
        h[EXT_AT..EXT_AT + 8].copy_from_slice(&va.to_be_bytes());
        h[EXT_AT + 8..EXT_AT + 12].copy_from_slice(&rkey.to_be_bytes());
        h[EXT_AT + 12..EXT_AT + 20].copy_from_slice(&add.to_be_bytes());
    }
}

/// [`patch`] with the payload copied by [`copy_short`], and without the iCRC; false (the payload not
/// copied) if the payload's length is not one `copy_short` takes.
#[inline(always)]
fn patch_short(op: &Op, psn: u32, ack_req: bool, frame: &mut [u8]) -> bool {
    let word = u32::from(ack_req) << 31 | (psn & PSN_MASK);
    match op {
        Op::Write { va, rkey, payload } => {
            patch_reth(frame, word, *va, *rkey);
            frame
                .get_mut(PAYLOAD_AT..PAYLOAD_AT + payload.len())
                .is_some_and(|p| copy_payload(p, payload))
        }
        Op::FetchAdd { va, rkey, add } => {
            patch_atomic_eth(frame, word, *va, *rkey, *add);
            true
        }
    }
}

/// Copies `src` into `dst` (of the same length, as `copy_from_slice`, which it falls back to).
#[inline]
fn copy_bytes(dst: &mut [u8], src: &[u8]) {
    if !copy_short(dst, src) {
        dst.copy_from_slice(src);
    }
}

/// Copies `src` into `dst` if both have the same length, from 4 to 128 bytes (the lengths of dta's
/// frames and payloads) or none, with two overlapping fixed-size moves: the libc call `copy_from_slice`
/// makes of a length known only at run time cost ~48 instructions a frame. False (nothing copied) for
/// other lengths. Frames' lengths (65..=128) are tried first.
#[inline(always)]
fn copy_short(dst: &mut [u8], src: &[u8]) -> bool {
    let n = src.len();
    if dst.len() != n {
        return false;
    }
    if n > 64 && n <= 128 {
        copy_overlapping::<64>(dst, src);
        return true;
    }
    copy_small(dst, src)
}

/// [`copy_short`] with payloads' lengths tried first: a Key-Write entry (4..=8 bytes for 4-byte
/// values, up to 32), a Postcarding chunk (32).
#[inline(always)]
fn copy_payload(dst: &mut [u8], src: &[u8]) -> bool {
    if dst.len() != src.len() {
        return false;
    }
    copy_small(dst, src) || copy_short(dst, src)
}

/// The lengths up to 64 of [`copy_short`] (`dst` and `src` of one length), shortest first.
#[inline(always)]
fn copy_small(dst: &mut [u8], src: &[u8]) -> bool {
    let n = src.len();
    if (4..=8).contains(&n) {
        copy_overlapping::<4>(dst, src);
    } else if n > 8 && n <= 16 {
        copy_overlapping::<8>(dst, src);
    } else if n > 16 && n <= 32 {
        copy_overlapping::<16>(dst, src);
    } else if n > 32 && n <= 64 {
        copy_overlapping::<32>(dst, src);
    } else {
        return n == 0;
    }
    true
}

/// `dst` = `src` for lengths from `K` to `2K`: the first `K` bytes and the last `K` (which overlap).
#[inline]
fn copy_overlapping<const K: usize>(dst: &mut [u8], src: &[u8]) {
    if let (Some(d), Some(s)) = (dst.first_chunk_mut::<K>(), src.first_chunk::<K>()) {
        *d = *s;
    }
    if let (Some(d), Some(s)) = (dst.last_chunk_mut::<K>(), src.last_chunk::<K>()) {
        *d = *s;
    }
}

/// Where the requester writes a frame: a `Vec` (resized to it) or a caller's buffer (written in place).
pub trait FrameOut {
    /// Whether a frame of `len` bytes fits (checked before a work request leaves the queue, so a buffer
    /// too short loses nothing).
    fn fits(&self, len: usize) -> bool;
    /// Builds the frame; its length, or `None` if it could not be emitted.
    fn build(&mut self, b: &mut FrameBuilder, op: &Op, psn: u32, ack_req: bool) -> Option<usize>;
}

impl FrameOut for Vec<u8> {
    fn fits(&self, _: usize) -> bool {
        true
    }
    fn build(&mut self, b: &mut FrameBuilder, op: &Op, psn: u32, ack_req: bool) -> Option<usize> {
        b.build(op, psn, ack_req, self).then_some(self.len())
    }
}

impl FrameOut for [u8] {
    fn fits(&self, len: usize) -> bool {
        len <= self.len()
    }
    fn build(&mut self, b: &mut FrameBuilder, op: &Op, psn: u32, ack_req: bool) -> Option<usize> {
        b.build_into(op, psn, ack_req, self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dta_protocol::roce::{Extension, ROCEV2_UDP_PORT};

    fn builder() -> FrameBuilder {
        let ep = UdpEndpoints::new(
            [2, 0, 0, 0, 0, 1],
            [2, 0, 0, 0, 0, 2],
            [198, 18, 0, 1],
            [198, 18, 0, 2],
            49152,
            ROCEV2_UDP_PORT,
        );
        FrameBuilder::new(ep, 0x11)
    }

    #[test]
    fn template_path_equals_full_emit() {
        let mut b = builder();
        let ops = [
            Op::Write {
                va: 0x7f00_0000_1000,
                rkey: 0x1234,
                payload: Payload::from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]),
            },
            Op::Write {
                va: 0x20,
                rkey: 9,
                payload: Payload::from_slice(&[9; 40]),
            },
            Op::FetchAdd {
                va: 0x7f00_0000_2000,
                rkey: 0x1234,
                add: 0xdead_beef_0000_0001,
            },
        ];
        let mut out = Vec::new();
        for (k, op) in ops.iter().enumerate() {
            for (psn, ack) in [
                (0u32, false),
                (0xFF_FFFF, true),
                (0x123456 + k as u32, false),
            ] {
                assert!(b.build(op, psn, ack, &mut out));
                let mut want = vec![0u8; op.frame_len()];
                b.repr(op, psn, ack).emit(&mut want).unwrap();
                assert_eq!(out, want);
                // Straight into a larger, dirty buffer: the same bytes, the rest untouched.
                let mut room = vec![0xA5u8; 2048];
                assert_eq!(b.build_into(op, psn, ack, &mut room), Some(want.len()));
                assert_eq!(&room[..want.len()], &want[..]);
                assert!(room[want.len()..].iter().all(|&x| x == 0xA5));
                assert_eq!(
                    b.build_into(op, psn, ack, &mut room[..want.len() - 1]),
                    None
                );
                let f = FrameRepr::parse(&out).unwrap();
                assert_eq!((f.bth.psn, f.bth.ack_req, f.bth.mig_req), (psn, ack, true));
                assert_eq!(f.bth.dest_qp, 0x11);
                match (op, f.ext) {
                    (Op::Write { va, payload, .. }, Extension::Reth(r)) => {
                        assert_eq!((r.va, r.dma_len as usize), (*va, payload.len()));
                        assert_eq!(f.payload, &payload[..]);
                    }
                    (Op::FetchAdd { add, .. }, Extension::Atomic(a)) => {
                        assert_eq!((a.swap_add, a.compare), (*add, 0))
                    }
                    other => panic!("wrong extension {other:?}"),
                }
            }
        }
        assert_eq!(b.shapes.len(), 3);
    }

    /// xorshift64: deterministic random inputs without a test dependency.
    fn next(seed: &mut u64) -> u64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    }

    #[test]
    fn copy_bytes_equals_copy_from_slice() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for n in 0..300usize {
            let src: Vec<u8> = (0..n).map(|_| next(&mut seed) as u8).collect();
            // Into a dirty buffer, at an offset: the same bytes, nothing around them touched.
            let mut got = vec![0xA5u8; n + 16];
            copy_bytes(&mut got[8..8 + n], &src);
            let mut want = vec![0xA5u8; n + 16];
            want[8..8 + n].copy_from_slice(&src);
            assert_eq!(got, want, "{n}");
            // The inline copies: the same bytes for the lengths they take, nothing written otherwise.
            let takes = n == 0 || (4..=128).contains(&n);
            for copy in [copy_short, copy_payload] {
                let mut got = vec![0xA5u8; n + 16];
                assert_eq!(copy(&mut got[8..8 + n], &src), takes, "{n}");
                if takes {
                    assert_eq!(got, want, "{n}");
                } else {
                    assert!(got.iter().all(|&b| b == 0xA5), "{n}");
                }
            }
        }
    }

    /// Random WRITEs (payloads of 0..200 bytes, inline and pooled) and FETCH_ADDs, PSNs and AckReq,
    /// through one builder (shapes made, found again and reused in any order, and past `MAX_SHAPES` the
    /// general path): every frame written, into a `Vec` or a dirty buffer, equals a full emit.
    #[test]
    fn template_path_equals_full_emit_random() {
        let mut b = builder();
        let mut seed = 0x0123_4567_89ab_cdefu64;
        let mut out = Vec::new();
        for _ in 0..3000 {
            let r = next(&mut seed);
            let op = if r % 5 == 0 {
                Op::FetchAdd {
                    va: next(&mut seed),
                    rkey: next(&mut seed) as u32,
                    add: next(&mut seed),
                }
            } else {
                let n = (next(&mut seed) % 200) as usize;
                let bytes: Vec<u8> = (0..n).map(|_| next(&mut seed) as u8).collect();
                Op::Write {
                    va: next(&mut seed),
                    rkey: next(&mut seed) as u32,
                    payload: Payload::from_slice(&bytes),
                }
            };
            let (psn, ack) = (next(&mut seed) as u32 & PSN_MASK, r & 2 != 0);
            let mut want = vec![0u8; op.frame_len()];
            b.repr(&op, psn, ack).emit(&mut want).unwrap();
            assert!(b.build(&op, psn, ack, &mut out));
            assert_eq!(out, want);
            let mut room = vec![next(&mut seed) as u8; want.len() + 64];
            let fill = room[0];
            assert_eq!(b.build_into(&op, psn, ack, &mut room), Some(want.len()));
            assert_eq!(&room[..want.len()], &want[..]);
            assert!(room[want.len()..].iter().all(|&x| x == fill));
        }
        assert_eq!(b.shapes.len(), MAX_SHAPES);
    }

    /// `inline_array` gives the bytes of an inline payload of exactly N bytes, and nothing for another
    /// length or a payload on the heap, however short.
    #[test]
    fn inline_arrays_are_exact_and_inline() {
        let bytes = [1, 2, 3, 4, 5, 6, 7, 8];
        assert_eq!(Payload::from_slice(&bytes).inline_array::<8>(), Some(bytes));
        assert_eq!(Payload::from_slice(&bytes[..7]).inline_array::<8>(), None);
        assert_eq!(Payload::from_slice(&bytes).inline_array::<4>(), None);
        let mut heap = Payload::with_capacity(100);
        heap.extend_from_slice(&bytes);
        assert!(heap.0.spilled());
        assert_eq!(heap.inline_array::<8>(), None);
    }

    #[test]
    fn payloads_inline_or_pooled() {
        let small = Payload::from_slice(&[1; INLINE_PAYLOAD]);
        assert!(!small.0.spilled());
        assert_eq!(small.clone(), small);
        let mut big = Payload::with_capacity(100);
        big.extend_from_slice(&[7; 60]);
        big.extend_from_slice(&[8; 40]);
        assert!(big.0.spilled());
        assert_eq!(big.len(), 100);
        assert_eq!((big[59], big[60]), (7, 8));
        let mut buf = [0u8; INLINE_PAYLOAD];
        buf[..5].copy_from_slice(&[1, 2, 3, 4, 5]);
        assert_eq!(
            Payload::from_array(buf, 5),
            Some(Payload::from_slice(&[1, 2, 3, 4, 5]))
        );
        assert_eq!(Payload::from_array(buf, INLINE_PAYLOAD + 1), None);
        let at = big.as_ptr();
        drop(big);
        // The buffer comes back from the pool for the next large payload.
        let again = Payload::from_slice(&[3; 200]);
        assert_eq!(again.as_ptr(), at);
        assert_eq!(&again[..], &[3; 200][..]);
        assert_ne!(again.clone().as_ptr(), at);
    }
}
