//! An in-memory pair of endpoints joined by two bounded queues: a cable for tests, with no OS involved.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::{FrameBatch, NetioError, RxBurst, RxStats, TxBurst, TxStats};

/// One direction of the pair: a ring of preallocated slots, so that moving frames never allocates.
struct Queue {
    slots: FrameBatch,
    /// Index of the oldest queued frame.
    head: usize,
    /// Number of queued frames.
    queued: usize,
}

impl Queue {
    fn new(depth: usize, slot_size: usize) -> Self {
        let mut slots = FrameBatch::new(depth, slot_size);
        // Every slot is addressable as a frame; `head`/`queued` say which ones are live.
        slots.set_len(depth);
        Queue {
            slots,
            head: 0,
            queued: 0,
        }
    }
}

type Shared = Arc<Mutex<Queue>>;

/// One end of an in-memory link made by [`pair`]. What one end sends, the other receives, in order; a frame
/// sent while the peer's queue is full is dropped and counted, as on a congested link. `Send`, so the two ends
/// can live on different threads.
pub struct MemoryPort {
    tx: Shared,
    rx: Shared,
    rx_stats: RxStats,
    tx_stats: TxStats,
}

/// Makes two connected endpoints; each direction queues up to `depth` frames of at most `slot_size` bytes.
///
/// # Panics
/// If `depth` or `slot_size` is 0.
pub fn pair(depth: usize, slot_size: usize) -> (MemoryPort, MemoryPort) {
    let a_to_b: Shared = Arc::new(Mutex::new(Queue::new(depth, slot_size)));
    let b_to_a: Shared = Arc::new(Mutex::new(Queue::new(depth, slot_size)));
    let a = MemoryPort {
        tx: a_to_b.clone(),
        rx: b_to_a.clone(),
        rx_stats: RxStats::default(),
        tx_stats: TxStats::default(),
    };
    let b = MemoryPort {
        tx: b_to_a,
        rx: a_to_b,
        rx_stats: RxStats::default(),
        tx_stats: TxStats::default(),
    };
    (a, b)
}

/// Locks a queue; a panic on the other end's thread must not hide this end's frames, so poisoning is ignored.
fn lock(q: &Shared) -> MutexGuard<'_, Queue> {
    q.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl MemoryPort {
    /// Frames waiting to be received by this end.
    pub fn pending(&self) -> usize {
        lock(&self.rx).queued
    }
}

impl RxBurst for MemoryPort {
    fn recv_burst(&mut self, batch: &mut FrameBatch) -> Result<usize, NetioError> {
        let mut q = lock(&self.rx);
        let depth = q.slots.capacity();
        let mut got = 0;
        while q.queued > 0 && batch.free() > 0 {
            let head = q.head;
            let (frame, stamp) = (q.slots.frame(head), q.slots.timestamp_ns(head));
            match batch.push_stamped(frame, stamp) {
                Ok(()) => {
                    got += 1;
                    self.rx_stats.frames += 1;
                    self.rx_stats.bytes += frame.len() as u64;
                }
                // The peer's slots may be larger than ours: drop, as a NIC drops a frame over its MTU.
                Err(NetioError::FrameTooLong { .. }) => self.rx_stats.dropped += 1,
                Err(e) => return Err(e),
            }
            q.head = (head + 1) % depth;
            q.queued -= 1;
        }
        Ok(got)
    }

    fn rx_stats(&self) -> RxStats {
        self.rx_stats
    }
}

impl TxBurst for MemoryPort {
    fn send_burst(&mut self, batch: &FrameBatch) -> Result<usize, NetioError> {
        let mut q = lock(&self.tx);
        let depth = q.slots.capacity();
        let slot_size = q.slots.slot_size();
        let mut sent = 0;
        for i in 0..batch.len() {
            let frame = batch.frame(i);
            if q.queued == depth || frame.len() > slot_size {
                self.tx_stats.dropped += 1;
                continue;
            }
            let tail = (q.head + q.queued) % depth;
            q.slots.slot_mut(tail)[..frame.len()].copy_from_slice(frame);
            q.slots.set_frame(tail, frame.len(), batch.timestamp_ns(i));
            q.queued += 1;
            sent += 1;
            self.tx_stats.frames += 1;
            self.tx_stats.bytes += frame.len() as u64;
        }
        Ok(sent)
    }

    fn tx_stats(&self) -> TxStats {
        self.tx_stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(n: u8, len: usize) -> Vec<u8> {
        (0..len).map(|i| n.wrapping_add(i as u8)).collect()
    }

    #[test]
    fn frames_cross_in_order_both_ways() {
        let (mut a, mut b) = pair(8, 128);
        let mut out = FrameBatch::new(4, 128);
        for n in 0..4u8 {
            out.push_stamped(&frame(n, 60 + n as usize), 1000 + n as u64)
                .unwrap();
        }
        assert_eq!(a.send_burst(&out).unwrap(), 4);
        assert_eq!(b.pending(), 4);
        assert_eq!(a.pending(), 0);

        let mut inb = FrameBatch::new(3, 128);
        assert_eq!(
            b.recv_burst(&mut inb).unwrap(),
            3,
            "limited by the batch's free slots"
        );
        assert_eq!(b.recv_burst(&mut inb).unwrap(), 0, "batch full");
        for n in 0..3u8 {
            assert_eq!(inb.frame(n as usize), &frame(n, 60 + n as usize)[..]);
            assert_eq!(inb.timestamp_ns(n as usize), 1000 + n as u64);
        }
        inb.clear();
        assert_eq!(b.recv_burst(&mut inb).unwrap(), 1);
        assert_eq!(inb.frame(0), &frame(3, 63)[..]);
        assert_eq!(
            b.rx_stats(),
            RxStats {
                frames: 4,
                bytes: 60 + 61 + 62 + 63,
                dropped: 0,
                missed: 0,
            }
        );

        // And back.
        assert_eq!(b.send_burst(&inb).unwrap(), 1);
        let mut back = FrameBatch::new(4, 128);
        assert_eq!(a.recv_burst(&mut back).unwrap(), 1);
        assert_eq!(back.frame(0), &frame(3, 63)[..]);
    }

    #[test]
    fn full_queue_drops_and_counts() {
        let (mut a, mut b) = pair(5, 64);
        let mut out = FrameBatch::new(3, 64);
        for n in 0..3u8 {
            out.push(&frame(n, 10)).unwrap();
        }
        assert_eq!(a.send_burst(&out).unwrap(), 3);
        assert_eq!(a.send_burst(&out).unwrap(), 2, "only two slots left");
        assert_eq!(
            a.tx_stats(),
            TxStats {
                frames: 5,
                bytes: 50,
                dropped: 1
            }
        );
        let mut inb = FrameBatch::new(8, 64);
        assert_eq!(b.recv_burst(&mut inb).unwrap(), 5);
        let firsts: Vec<u8> = inb.iter().map(|f| f[0]).collect();
        assert_eq!(firsts, vec![0, 1, 2, 0, 1]);
        // The ring wrapped: the queue takes frames again after draining.
        assert_eq!(a.send_burst(&out).unwrap(), 3);
        inb.clear();
        assert_eq!(b.recv_burst(&mut inb).unwrap(), 3);
        let firsts: Vec<u8> = inb.iter().map(|f| f[0]).collect();
        assert_eq!(firsts, vec![0, 1, 2]);
    }

    #[test]
    fn oversize_frames_are_dropped_on_both_sides() {
        let (mut a, mut b) = pair(4, 100);
        let mut out = FrameBatch::new(3, 200);
        out.push(&[1; 150]).unwrap();
        out.push(&[2; 100]).unwrap();
        out.push(&[3; 80]).unwrap();
        assert_eq!(a.send_burst(&out).unwrap(), 2);
        assert_eq!(a.tx_stats().dropped, 1);
        let mut small = FrameBatch::new(4, 90);
        assert_eq!(b.recv_burst(&mut small).unwrap(), 1);
        assert_eq!(small.frame(0), &[3; 80][..]);
        assert_eq!(
            b.rx_stats(),
            RxStats {
                frames: 1,
                bytes: 80,
                dropped: 1,
                missed: 0,
            }
        );
    }

    #[test]
    fn ends_work_across_threads() {
        let (mut a, mut b) = pair(64, 64);
        let sender = std::thread::spawn(move || {
            let mut out = FrameBatch::new(10, 64);
            let mut total = 0;
            for round in 0..10u8 {
                out.clear();
                for n in 0..10u8 {
                    out.push(&[round, n]).unwrap();
                }
                // Wait for room rather than drop: this test checks order, not drops.
                while lock(&a.tx).queued > 54 {
                    std::thread::yield_now();
                }
                total += a.send_burst(&out).unwrap();
            }
            total
        });
        let mut inb = FrameBatch::new(16, 64);
        let mut seen = Vec::new();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while seen.len() < 100 && std::time::Instant::now() < deadline {
            inb.clear();
            b.recv_burst(&mut inb).unwrap();
            seen.extend(inb.iter().map(|f| (f[0], f[1])));
        }
        assert_eq!(sender.join().unwrap(), 100);
        let expected: Vec<(u8, u8)> = (0..10).flat_map(|r| (0..10).map(move |n| (r, n))).collect();
        assert_eq!(seen, expected);
    }
}
