//! What an output takes: a generator that writes its next frame into a buffer it is given (an mbuf, a
//! scratch buffer), so the DTA and INT workloads share the pcap, UDP and DPDK outputs.

use crate::fast::FastGenerator;
use crate::int::IntGenerator;

/// A sequence of frames.
pub trait FrameSource {
    /// Writes the next frame at the start of `out` and returns its length, or `None` (drawing nothing)
    /// when `out` is too short for the longest frame.
    fn next_frame(&mut self, out: &mut [u8]) -> Option<usize>;

    /// Frames generated so far.
    fn index(&self) -> u64;
}

impl FrameSource for FastGenerator {
    // Inlined into the output's per-frame loop: the call and its register saves were ~20 instructions
    // a frame.
    #[inline(always)]
    fn next_frame(&mut self, out: &mut [u8]) -> Option<usize> {
        FastGenerator::next_frame(self, out)
    }

    fn index(&self) -> u64 {
        FastGenerator::index(self)
    }
}

impl FrameSource for IntGenerator {
    fn next_frame(&mut self, out: &mut [u8]) -> Option<usize> {
        IntGenerator::next_frame(self, out)
    }

    fn index(&self) -> u64 {
        IntGenerator::index(self)
    }
}
