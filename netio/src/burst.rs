//! The burst traits every backend implements, and the counters they keep.

use crate::{FrameBatch, NetioError};

/// Receives frames in bursts into a caller-owned, reusable [`FrameBatch`].
pub trait RxBurst {
    /// Appends up to `batch.free()` received frames to `batch` and returns how many were appended.
    ///
    /// Never blocks: returns `Ok(0)` when nothing is waiting (or, for a file, at its end). Frames longer than the
    /// batch's slot size are dropped and counted in [`RxStats::dropped`], never truncated, because a cut frame
    /// would fail parsing later with a misleading reason. The usual loop clears the batch before each call.
    fn recv_burst(&mut self, batch: &mut FrameBatch) -> Result<usize, NetioError>;

    /// Counters since this endpoint was opened.
    fn rx_stats(&self) -> RxStats;
}

/// Sends bursts of frames from a [`FrameBatch`].
pub trait TxBurst {
    /// Sends every frame of `batch`, in order, and returns how many the backend accepted.
    ///
    /// Frames not accepted (queue or socket buffer full) are dropped and counted in [`TxStats::dropped`], like a
    /// link would drop them; the batch is left untouched so that the caller can reuse it. Callers that must not
    /// lose a frame (none in dta: RoCE go-back-N and DTA NACKs recover losses) compare the return value with
    /// `batch.len()`.
    fn send_burst(&mut self, batch: &FrameBatch) -> Result<usize, NetioError>;

    /// Counters since this endpoint was opened.
    fn tx_stats(&self) -> TxStats;
}

/// Receive counters of one endpoint.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RxStats {
    /// Frames delivered to the caller.
    pub frames: u64,
    /// Bytes of the delivered frames (Ethernet header to the end of the payload, no FCS).
    pub bytes: u64,
    /// Frames received but not delivered (longer than the batch's slot size).
    pub dropped: u64,
    /// Frames lost before they could be received, where the backend can tell: the kernel's socket buffer
    /// was full (AF_PACKET `PACKET_STATISTICS`), or the NIC had no free descriptor (DPDK `imissed`).
    pub missed: u64,
}

/// Transmit counters of one endpoint.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxStats {
    /// Frames accepted for transmission.
    pub frames: u64,
    /// Bytes of the accepted frames.
    pub bytes: u64,
    /// Frames dropped because the queue, ring or socket buffer was full (or the frame was refused).
    pub dropped: u64,
}

/// Counters of several endpoints of one port (a worker's queue each) add up to the port's.
impl std::ops::AddAssign for RxStats {
    fn add_assign(&mut self, o: RxStats) {
        self.frames += o.frames;
        self.bytes += o.bytes;
        self.dropped += o.dropped;
        self.missed += o.missed;
    }
}

impl std::ops::AddAssign for TxStats {
    fn add_assign(&mut self, o: TxStats) {
        self.frames += o.frames;
        self.bytes += o.bytes;
        self.dropped += o.dropped;
    }
}
