//! Zero-copy transmit: frames built in place in fresh (or spare) mbufs by the caller's builder.

use std::mem::MaybeUninit;

use crate::dpdk::ffi::{self, rte_mbuf};
use crate::dpdk::mbuf;

use super::{DpdkQueue, TX_ROOMS};

impl DpdkQueue {
    /// Builds up to `n` frames (at most `max_burst`) in place in fresh mbufs and sends them: `build(k, room)`
    /// writes frame `k` into `room` (the mbuf's whole data room) and returns its length. 0 sends nothing for
    /// that `k`; a length larger than `room` counts as a dropped oversize frame. Returns how many frames the
    /// device took. This is the zero-copy path for an engine that writes its output frames into caller buffers.
    pub fn send_in_place(
        &mut self,
        n: usize,
        build: impl FnMut(usize, &mut [u8]) -> usize,
    ) -> usize {
        self.build_and_send(n.min(self.mbufs.len()), build)
    }

    /// [`send_in_place`](Self::send_in_place) for a builder that fills a whole burst in one call: allocates
    /// `n` mbufs (at most `max_burst` and [`TX_ROOMS`](Self::TX_ROOMS)) and calls `build(rooms, lens)` once with their data
    /// rooms; `build` writes frames into `rooms[..k]`, their lengths into `lens[..k]`, and returns `k`.
    /// Those `k` frames are sent (a length of 0 or beyond its room drops that one, counted as dropped if
    /// not 0), the other mbufs are kept for the next call (see [`spare_mbufs`](Self::spare_mbufs)). Returns
    /// how many frames the device took. One call for
    /// the whole burst instead of one per frame: the engine checks its state once a burst.
    pub fn send_burst_in_place(
        &mut self,
        n: usize,
        build: impl FnOnce(&mut [&mut [u8]], &mut [usize]) -> usize,
    ) -> usize {
        let n = n.min(self.mbufs.len()).min(TX_ROOMS);
        if n == 0 {
            return 0;
        }
        // The spare mbufs of earlier bursts first, then fresh ones.
        let reuse = self.spare_len.min(n);
        let pool = self.port.pool.as_ptr();
        if reuse < n {
            let fresh = self.mbufs[reuse..n].as_mut_ptr();
            // SAFETY: live pool; the scratch array has room for the n - reuse pointers from `reuse`.
            let r = unsafe { ffi::rte_pktmbuf_alloc_bulk(pool, fresh, (n - reuse) as u32) };
            if r != 0 {
                // The pool is empty (frames stuck in rings): drop the burst like a NIC without
                // descriptors (the spares stay spare).
                self.tx_stats.dropped += n as u64;
                return 0;
            }
        }
        // (Both copies of spares are skipped when empty: a zero-length copy is still a `memcpy` call, and
        // most bursts neither take nor leave a spare.)
        if reuse > 0 {
            let from = self.spare_len - reuse;
            self.mbufs[..reuse].copy_from_slice(&self.spare[from..self.spare_len]);
            self.spare_len = from;
        }
        // The lengths, zeroed for this burst only (a whole array cost a 512-byte memset a burst, which
        // bursts of a frame or two, Append's and Sketch-Merge's, noticed).
        let mut lens_buf = [MaybeUninit::<usize>::uninit(); TX_ROOMS];
        lens_buf[..n].fill(MaybeUninit::new(0));
        // SAFETY: the first n elements were initialised just above (n <= TX_ROOMS), and
        // `MaybeUninit<usize>` has the layout of `usize`.
        let lens: &mut [usize] =
            unsafe { std::slice::from_raw_parts_mut(lens_buf.as_mut_ptr().cast(), n) };
        // The rooms, uninitialised past the burst (an array of empty slices cost a 1 KiB copy a burst).
        let mut rooms = [const { MaybeUninit::<&mut [u8]>::uninit() }; TX_ROOMS];
        for (room, &m) in rooms[..n].iter_mut().zip(&self.mbufs[..n]) {
            // SAFETY: m is freshly allocated (or a spare, as fresh) and ours; each mbuf's room is a
            // distinct buffer, and the slices are used only until the frames are handed over below.
            room.write(unsafe { mbuf::room_mut(m) });
        }
        // SAFETY: the first n elements were initialised just above (n <= TX_ROOMS), and
        // `MaybeUninit<T>` has the layout of `T`.
        let rooms: &mut [&mut [u8]] =
            unsafe { std::slice::from_raw_parts_mut(rooms.as_mut_ptr().cast(), n) };
        let built = build(rooms, lens).min(n);
        // One pass sets the lengths in place while every frame fits its room (the rule); `len - 1 < room`
        // rejects both a 0 and an overrun in one comparison. The first frame that breaks the rule sends
        // the rest of the burst through the packing path below; the frames before it stay where they are.
        let (lens, rooms) = (&lens[..built], &rooms[..built]);
        let mut bytes = 0;
        let mut ready = 0;
        for ((&len, room), &m) in lens.iter().zip(rooms).zip(&self.mbufs[..built]) {
            if len.wrapping_sub(1) >= room.len() {
                break;
            }
            // SAFETY: ours, and `len` bytes were written within its room.
            unsafe { mbuf::set_len(m, len) };
            bytes += len;
            ready += 1;
        }
        // Keep the frames that fit their rooms, packed at the front (this moves no mbuf past `built`); the
        // rest go back to the pool.
        let first_bad = ready;
        for k in first_bad..built {
            let (m, len) = (self.mbufs[k], lens[k]);
            // SAFETY: m is the k-th mbuf allocated above, ours, and `ready <= k`.
            if unsafe { self.keep_or_free(m, len, rooms[k].len(), ready) } {
                bytes += len;
                ready += 1;
            }
        }
        // Mbufs `built..n` are ours, unused, and were not moved by the packing above: kept for the next
        // burst. They fit: the spares left plus these are at most the spares before (when some stayed) or
        // n (when all were taken), both at most TX_ROOMS.
        let unused = n - built;
        if unused > 0 {
            self.spare[self.spare_len..self.spare_len + unused]
                .copy_from_slice(&self.mbufs[built..n]);
            self.spare_len += unused;
        }
        self.transmit_ready(ready, bytes)
    }

    pub(super) fn build_and_send(
        &mut self,
        n: usize,
        mut build: impl FnMut(usize, &mut [u8]) -> usize,
    ) -> usize {
        debug_assert!(n <= self.mbufs.len());
        let pool = self.port.pool.as_ptr();
        // SAFETY: live pool; the scratch array has room for n pointers.
        let r = unsafe { ffi::rte_pktmbuf_alloc_bulk(pool, self.mbufs.as_mut_ptr(), n as u32) };
        if r != 0 {
            // The pool is empty (frames stuck in rings): drop the chunk like a NIC without descriptors.
            self.tx_stats.dropped += n as u64;
            return 0;
        }
        // Build the frames, packing the mbufs we keep at the front of the array.
        let mut ready = 0;
        let mut bytes = 0;
        for k in 0..n {
            let m = self.mbufs[k];
            // SAFETY: m is freshly allocated and ours.
            let room = unsafe { mbuf::room_mut(m) };
            let len = build(k, room);
            let room = room.len();
            // SAFETY: m is the k-th mbuf allocated above, ours, and `ready <= k`.
            if unsafe { self.keep_or_free(m, len, room, ready) } {
                bytes += len;
                ready += 1;
            }
        }
        self.transmit_ready(ready, bytes)
    }

    /// Keeps mbuf `m`, whose builder wrote a `len`-byte frame into its `room`-byte data room, at position
    /// `ready` of the scratch arrays (packing the kept ones at the front), or frees it when nothing was
    /// written or the frame overran its room (counted as dropped then). Returns whether it was kept.
    ///
    /// # Safety
    /// `m` must be ours and not yet handed to the device, and `ready` at most its own position in the
    /// scratch array (so no mbuf still to be looked at is overwritten).
    unsafe fn keep_or_free(
        &mut self,
        m: *mut rte_mbuf,
        len: usize,
        room: usize,
        ready: usize,
    ) -> bool {
        if len == 0 || len > room {
            if len > 0 {
                self.tx_stats.dropped += 1;
            }
            // SAFETY: ours, not handed to the device (the caller's promise).
            unsafe { ffi::rte_pktmbuf_free(m) };
            return false;
        }
        // SAFETY: ours, and `len` bytes were written within its room.
        unsafe { mbuf::set_len(m, len) };
        self.mbufs[ready] = m;
        true
    }
}
