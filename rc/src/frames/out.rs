//! Where the requester writes a frame: a `Vec` or a caller's buffer.

use super::{FrameBuilder, Op};

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
