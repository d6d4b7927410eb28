//! A burst of received mbufs that the caller owns: what a run-to-completion worker classifies and hands on
//! without copying a byte (to the other port's TX queue, to another worker's handoff ring, back out of the
//! port it came from) or reads in place and frees.

use super::ffi::{self, rte_mbuf};
use super::free;
use super::mbuf;

/// Up to `capacity` mbufs, owned: dropping or [`clear`](Self::clear)ing the burst frees those still in it.
/// [`move_to`](Self::move_to) hands one mbuf to another burst and leaves a hole, which
/// [`compact`](Self::compact) closes; a hole reads as an empty frame.
pub struct MbufBurst {
    mbufs: Box<[*mut rte_mbuf]>,
    len: usize,
}

// SAFETY: the burst owns its mbufs (no one else refers to them), and DPDK lets an mbuf be read, sent or freed
// from any thread; `&mut self` keeps one thread at a time on it.
unsafe impl Send for MbufBurst {}

impl Drop for MbufBurst {
    fn drop(&mut self) {
        self.clear();
    }
}

impl std::fmt::Debug for MbufBurst {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MbufBurst")
            .field("len", &self.len)
            .field("capacity", &self.mbufs.len())
            .finish()
    }
}

impl MbufBurst {
    /// An empty burst with room for `capacity` mbufs.
    pub fn with_capacity(capacity: usize) -> Self {
        MbufBurst {
            mbufs: vec![std::ptr::null_mut(); capacity].into_boxed_slice(),
            len: 0,
        }
    }

    /// Mbufs held, holes included.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn capacity(&self) -> usize {
        self.mbufs.len()
    }

    /// Room left.
    pub fn free(&self) -> usize {
        self.mbufs.len() - self.len
    }

    /// The frame in mbuf `i`; empty for a hole, an index past the end, or a chained mbuf (dta never enables
    /// scatter, so a chain is an oversize frame, which every reader drops as malformed).
    #[inline]
    pub fn frame(&self, i: usize) -> &[u8] {
        match self.mbufs.get(i) {
            // SAFETY: a non-null entry is an mbuf we own until it leaves the burst (`&self` borrows it).
            Some(&m) if !m.is_null() => unsafe { mbuf::data(m) }.unwrap_or(&[]),
            _ => &[],
        }
    }

    /// The frame in mbuf `i`, writable in place (an ARP request turned into its reply).
    pub fn frame_mut(&mut self, i: usize) -> &mut [u8] {
        match self.mbufs.get(i) {
            // SAFETY: as in `frame`; `&mut self` makes this the only reference.
            Some(&m) if !m.is_null() => unsafe { mbuf::data_mut(m) }.unwrap_or(&mut []),
            _ => &mut [],
        }
    }

    /// The whole data room of mbuf `i` from its data offset (where a device writes a received frame);
    /// empty for a hole or a chained mbuf.
    pub fn room_mut(&mut self, i: usize) -> &mut [u8] {
        match self.mbufs.get(i) {
            // SAFETY: as in `frame_mut`.
            Some(&m) if !m.is_null() && unsafe { (*m).nb_segs } == 1 => unsafe {
                mbuf::room_mut(m)
            },
            _ => &mut [],
        }
    }

    /// The frames in order, holes as empty slices.
    pub fn frames(&self) -> impl ExactSizeIterator<Item = &[u8]> + '_ {
        // Straight over the held pointers: no index to check per frame.
        self.mbufs[..self.len].iter().map(|&m| {
            if m.is_null() {
                return &[][..];
            }
            // SAFETY: as in `frame`.
            unsafe { mbuf::data(m) }.unwrap_or(&[])
        })
    }

    /// The DPDK port id mbuf `i` was received on (the field the PMD sets), or `None` for a hole.
    pub fn port(&self, i: usize) -> Option<u16> {
        match self.mbufs.get(i) {
            // SAFETY: as in `frame`.
            Some(&m) if !m.is_null() => Some(unsafe { (*m).port }),
            _ => None,
        }
    }

    /// Moves mbuf `i` to the end of `to`, leaving a hole here. False (nothing moved) when `to` is full or
    /// `i` is a hole.
    #[inline]
    pub fn move_to(&mut self, i: usize, to: &mut MbufBurst) -> bool {
        let Some(slot) = self.mbufs.get_mut(i).filter(|m| !m.is_null()) else {
            return false;
        };
        let Some(dst) = to.mbufs.get_mut(to.len) else {
            return false;
        };
        *dst = std::mem::replace(slot, std::ptr::null_mut());
        to.len += 1;
        true
    }

    /// Frees mbuf `i` now, leaving a hole.
    pub fn free_one(&mut self, i: usize) {
        if let Some(slot) = self.mbufs.get_mut(i).filter(|m| !m.is_null()) {
            // SAFETY: ours, and no longer referenced once the slot is a hole.
            unsafe { ffi::rte_pktmbuf_free(std::mem::replace(slot, std::ptr::null_mut())) };
        }
    }

    /// Closes the holes, keeping the order of the mbufs left.
    pub fn compact(&mut self) {
        let mut kept = 0;
        for i in 0..self.len {
            let m = self.mbufs[i];
            if !m.is_null() {
                self.mbufs[kept] = m;
                kept += 1;
            }
        }
        self.mbufs[kept..self.len].fill(std::ptr::null_mut());
        self.len = kept;
    }

    /// Makes mbuf `i` carry `bytes` instead of its frame (a frame turned into what another worker needs of
    /// it, in the buffer it already owns): `bytes` are written in the last bytes of its buffer, behind the
    /// frame, and the data offset moved there. The frame's own bytes stay as they were: a pool that hands
    /// out mbufs without writing them (`net_null` with `copy=0`, pre-filled, as `make bench` runs it)
    /// still holds a received frame in each, whether the mbuf is sent or freed; on a NIC, which writes
    /// every frame it receives, it makes no difference. False, and nothing changed, for a hole, an mbuf
    /// that is not plain (chained, shared, attached: its buffer is not this frame's alone) or `bytes` that
    /// do not fit behind the frame.
    pub fn rewrite(&mut self, i: usize, bytes: &[u8]) -> bool {
        let Some(&m) = self.mbufs.get(i).filter(|m| !m.is_null()) else {
            return false;
        };
        // SAFETY: a non-null entry is an mbuf we own; `&mut self` makes this the only reference.
        let mb = unsafe { &mut *m };
        if !super::free::plain(mb) {
            return false;
        }
        let end = usize::from(mb.buf_len);
        let frame_end = usize::from(mb.data_off) + usize::from(mb.data_len);
        let Some(start) = end.checked_sub(bytes.len()).filter(|&s| s >= frame_end) else {
            return false;
        };
        mb.data_off = start as u16;
        // SAFETY: plain and ours; `room_mut` now starts at `start`, `end - start == bytes.len()` bytes.
        let room = unsafe { mbuf::room_mut(m) };
        room[..bytes.len()].copy_from_slice(bytes);
        // SAFETY: `bytes.len()` bytes were written within its room.
        unsafe { mbuf::set_len(m, bytes.len()) };
        true
    }

    /// Appends a copy of `frame` in a fresh mbuf of `pool`; false when the burst is full, the pool is empty
    /// or the frame is longer than an mbuf's room.
    pub fn push_copy(&mut self, pool: &super::Mempool, frame: &[u8]) -> bool {
        if self.free() == 0 {
            return false;
        }
        // SAFETY: live pool.
        let m = unsafe { ffi::rte_pktmbuf_alloc(pool.as_ptr()) };
        if m.is_null() {
            return false;
        }
        // SAFETY: a fresh mbuf of ours.
        let room = unsafe { mbuf::room_mut(m) };
        let Some(dst) = room.get_mut(..frame.len()) else {
            // SAFETY: ours, never handed out.
            unsafe { ffi::rte_pktmbuf_free(m) };
            return false;
        };
        dst.copy_from_slice(frame);
        // SAFETY: ours; `frame.len()` bytes were written within its room.
        unsafe { mbuf::set_len(m, frame.len()) };
        self.mbufs[self.len] = m;
        self.len += 1;
        true
    }

    /// Frees every mbuf still in the burst.
    pub fn clear(&mut self) {
        if self.len == 0 {
            return;
        }
        // `free_bulk` skips NULL entries, so the holes need no compaction first.
        // SAFETY: the non-null entries are ours and referenced nowhere else.
        unsafe { free::free_bulk(&mut self.mbufs[..self.len]) };
        self.mbufs[..self.len].fill(std::ptr::null_mut());
        self.len = 0;
    }

    /// Empties the burst of entries the caller has taken (every one a hole now), freeing nothing.
    pub(crate) fn forget(&mut self) {
        debug_assert!(self.mbufs[..self.len].iter().all(|m| m.is_null()));
        self.len = 0;
    }

    /// The empty tail where a receive or dequeue writes up to [`free`](Self::free) pointers.
    pub(crate) fn tail_ptr(&mut self) -> *mut *mut rte_mbuf {
        self.mbufs[self.len..].as_mut_ptr()
    }

    /// Records that `n` mbufs were written at the tail.
    pub(crate) fn grow(&mut self, n: usize) {
        debug_assert!(n <= self.free());
        self.len += n.min(self.free());
    }

    /// The held mbufs (holes included) for a transmit or enqueue, which takes a prefix of them.
    pub(crate) fn held(&mut self) -> &mut [*mut rte_mbuf] {
        &mut self.mbufs[..self.len]
    }

    /// Drops the first `n` entries, which the caller handed away (sent, enqueued), keeping the rest in
    /// order at the front.
    pub(crate) fn consume_front(&mut self, n: usize) {
        let n = n.min(self.len);
        self.mbufs.copy_within(n..self.len, 0);
        let left = self.len - n;
        self.mbufs[left..self.len].fill(std::ptr::null_mut());
        self.len = left;
    }
}
