//! The frame builder of one QP: finds or makes the shape of each operation and writes its frame.

use dta_protocol::roce::{BthOpcode, FrameRepr, IcrcPrefix};
use dta_protocol::udp::UdpEndpoints;

use super::shape::{patch, write_frame, Shape};
use super::Op;

/// Shapes kept per QP; Append and Sketch flushes of every length stay well below this.
pub(super) const MAX_SHAPES: usize = 64;
/// Builds the frames of one QP.
pub struct FrameBuilder {
    endpoints: UdpEndpoints,
    dest_qp: u32,
    pub(super) shapes: Vec<Shape>,
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
    pub(super) fn repr<'a>(&self, op: &'a Op, psn: u32, ack_req: bool) -> FrameRepr<'a> {
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
    /// once and builds every frame of that shape with its writers, inline.
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
