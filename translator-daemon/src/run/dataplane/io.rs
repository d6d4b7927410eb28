//! What the data path needs of a port queue, a burst of received frames and a handoff ring, so that one
//! worker loop ([`DataPlane`](super::DataPlane)) runs over DPDK (mbufs, moved without copying:
//! [`dpdk`](super::dpdk)) and over AF_PACKET (sockets in a PACKET_FANOUT group, frames in slots:
//! [`afpacket`](super::afpacket)).

use dta_netio::{RxStats, TxStats};
use dta_translator::{Engine, Instant};

/// Frames received on a queue (or handed over by another worker), owned by the worker until it sends,
/// hands on or drops them. Moving a frame out leaves a hole, which reads as an empty frame until
/// [`compact`](Self::compact).
pub trait Burst: Send + Sized {
    /// An empty burst with room for `capacity` frames.
    fn with_capacity(capacity: usize) -> Self;
    /// Frames held, holes included.
    fn len(&self) -> usize;
    /// Frames it can still take.
    fn room(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Frame `i`; empty for a hole.
    fn frame(&self, i: usize) -> &[u8];
    /// The frames in order, holes as empty frames (what the engine takes as a burst).
    fn frames(&self) -> impl ExactSizeIterator<Item = &[u8]> + '_ {
        (0..self.len()).map(|i| self.frame(i))
    }
    /// Frame `i`, writable in place.
    fn frame_mut(&mut self, i: usize) -> &mut [u8];
    /// Replaces frame `i` with `bytes` in its own buffer; false, frame unchanged, for a hole or bytes
    /// longer than its buffer.
    fn rewrite(&mut self, i: usize, bytes: &[u8]) -> bool;
    /// The id of the port frame `i` came in on (`None` for a hole).
    fn origin(&self, i: usize) -> Option<u16>;
    /// Moves frame `i` to the end of `to`, leaving a hole; false when nothing moved (`to` full, a hole).
    fn move_to(&mut self, i: usize, to: &mut Self) -> bool;
    /// Drops frame `i` now, leaving a hole.
    fn drop_one(&mut self, i: usize);
    /// Closes the holes, keeping the order.
    fn compact(&mut self);
    /// Drops every frame.
    fn clear(&mut self);
}

/// One queue pair of a port, owned by one worker.
pub trait Queue: Send {
    /// Its frames.
    type Burst: Burst;
    /// The sending end of a handoff ring between two workers.
    type HandoffTx: HandoffTx<Self::Burst>;
    /// The receiving end.
    type HandoffRx: HandoffRx<Self::Burst>;
    /// The port's id, as [`Burst::origin`] gives it.
    fn port_id(&self) -> u16;
    /// Receives up to `burst`'s room onto its end; how many.
    fn recv(&mut self, burst: &mut Self::Burst) -> usize;
    /// Sends every frame of `burst` (no holes) and empties it; what the device refuses is dropped and counted.
    fn send(&mut self, burst: &mut Self::Burst);
    /// Builds up to `want` of the engine's frames and sends them: (built, sent).
    fn send_from_engine(&mut self, e: &mut Engine, now: Instant, want: usize) -> (usize, usize);
    /// Builds the engine's `n` waiting DTA NACKs and sends them.
    fn send_nacks(&mut self, e: &mut Engine, now: Instant, n: usize);
    /// Appends `bytes` as a frame to `to`, in a buffer of this queue's; false when `to` is full or no
    /// buffer is free.
    fn push_bytes(&self, bytes: &[u8], to: &mut Self::Burst) -> bool;
    /// Takes back a burst whose frames the engine has read (DPDK: their buffers carry the next frames
    /// out), emptying it.
    fn recycle(&mut self, burst: &mut Self::Burst);
    /// Counters of this queue. `missed` counts only where this queue sees its own losses, so that the
    /// queues' sum is the port's.
    fn stats(&self) -> (RxStats, TxStats);
    /// Most engine frames one [`send_from_engine`](Self::send_from_engine) builds.
    /// Whether the port's link is up, where the queue can tell (a DPDK port); `None` otherwise.
    fn link_up(&self) -> Option<bool> {
        None
    }
    fn tx_burst(&self) -> usize;
    /// Empty polls in a row before an idle worker starts sleeping between polls (some microseconds of
    /// spinning on DPDK, where a poll is a few loads; fewer where it is a system call, AF_PACKET). Busy, a
    /// worker never sleeps. The trade: a worker that spun thousands of polls held its core even when idle,
    /// which on a machine shared with the collector took the CPU the collector needed to acknowledge; one
    /// that sleeps after a short pause may find its NIC ring full after a 50 us sleep at line rate (a
    /// 1,024-descriptor ring holds 69 us at 14.9 Mpps), counted as the port's misses.
    fn idle_spin(&self) -> u32 {
        64
    }
    /// An idle worker's wait between polls, on all of its `queues`: at most `timeout`. By default a short
    /// sleep (a DPDK queue cannot wake a thread); a socket queue blocks until a frame arrives.
    fn idle_wait(queues: &[Self], timeout: std::time::Duration)
    where
        Self: Sized,
    {
        let _ = queues;
        std::thread::sleep(timeout.min(std::time::Duration::from_micros(50)));
    }
}

/// The sending end of a handoff ring.
pub trait HandoffTx<B>: Send {
    /// Hands over as many frames of `burst` (no holes) as the ring has room for, from the front, and leaves
    /// the rest in `burst` in order.
    fn offer(&mut self, burst: &mut B);
}

/// The receiving end of a handoff ring.
pub trait HandoffRx<B>: Send {
    /// Takes what waits into `burst` (empty when called); how many.
    fn take(&mut self, burst: &mut B) -> usize;
}
