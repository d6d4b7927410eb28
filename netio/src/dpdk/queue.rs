//! One RX/TX queue pair of a started port, as a burst endpoint.

use std::mem::MaybeUninit;
use std::sync::Arc;

use super::burst::MbufBurst;
use super::ffi::{self, rte_mbuf};
use super::mbuf;
use super::shared::PortShared;
use crate::{FrameBatch, NetioError, RxBurst, RxStats, TxBurst, TxStats};

/// How often a partially accepted TX burst is offered again before the rest is dropped: enough to ride out a
/// TX ring that the NIC is draining, few enough that a stuck link costs microseconds, not a stall.
const TX_RETRIES: u32 = 8;

/// Most mbufs [`DpdkQueue::send_burst_in_place`] hands its builder at once (its rooms are on the stack).
const TX_ROOMS: usize = DpdkQueue::TX_ROOMS;

/// Queue pair `queue_id` of a port. Through the burst traits, frames are copied between the caller's batch
/// and mbufs (a copy of a report-sized frame costs a few nanoseconds and keeps one batch type for every
/// backend); [`send_in_place`](Self::send_in_place) and [`recv_in_place`](Self::recv_in_place) skip the copy.
/// Received frames carry no timestamp (0): the NIC's clock is not the engine's. Owned by one thread at a
/// time; send it to the worker that polls it (and call [`register_thread`](super::register_thread) there).
pub struct DpdkQueue {
    port: Arc<PortShared>,
    queue_id: u16,
    /// Scratch array of mbuf pointers for one burst, allocated once.
    mbufs: Box<[*mut rte_mbuf]>,
    /// Mbufs [`send_burst_in_place`](Self::send_burst_in_place) allocated but its builder left unused,
    /// kept for the next burst (freeing and allocating them again cost a bulk free and a bulk alloc a
    /// burst when the engine builds fewer frames than it had pending: FETCH_ADDs held by the atomic limit).
    /// Untouched since allocation but for bytes in their data rooms, so as fresh as a new one.
    spare: Box<[*mut rte_mbuf]>,
    spare_len: usize,
    rx_stats: RxStats,
    tx_stats: TxStats,
}

// SAFETY: the mbuf pointers in `mbufs` are scratch, only valid during a call on `&mut self`, and those in
// `spare` are owned by this queue alone; DPDK allows a queue to be polled (and an mbuf freed) from any
// thread as long as one thread at a time does, which `&mut self` guarantees.
unsafe impl Send for DpdkQueue {}

impl Drop for DpdkQueue {
    /// Gives the spare mbufs back to the pool (before `port`, which holds the pool, is dropped).
    fn drop(&mut self) {
        if self.spare_len > 0 {
            // SAFETY: the spares are ours, allocated from the live pool, and referenced nowhere else.
            unsafe { ffi::rte_pktmbuf_free_bulk(self.spare.as_mut_ptr(), self.spare_len as u32) };
            self.spare_len = 0;
        }
    }
}

impl DpdkQueue {
    /// Most mbufs [`send_burst_in_place`](Self::send_burst_in_place) hands its builder at once (their rooms
    /// are an array on the stack).
    pub const TX_ROOMS: usize = 64;

    pub(crate) fn new(port: Arc<PortShared>, queue_id: u16, max_burst: u16) -> Self {
        DpdkQueue {
            port,
            queue_id,
            mbufs: vec![std::ptr::null_mut(); max_burst as usize].into_boxed_slice(),
            spare: vec![std::ptr::null_mut(); TX_ROOMS].into_boxed_slice(),
            spare_len: 0,
            rx_stats: RxStats::default(),
            tx_stats: TxStats::default(),
        }
    }

    pub fn port_id(&self) -> u16 {
        self.port.port_id
    }

    /// Mbufs held for the next [`send_burst_in_place`](Self::send_burst_in_place) (at most
    /// [`TX_ROOMS`](Self::TX_ROOMS)); they count as in use in the pool until then or until the queue is
    /// dropped.
    pub fn spare_mbufs(&self) -> usize {
        self.spare_len
    }

    /// The port's mbuf pool (a copy that must outlive the received frame takes its buffer from it).
    pub fn pool(&self) -> &super::Mempool {
        &self.port.pool
    }

    pub fn queue_id(&self) -> u16 {
        self.queue_id
    }

    /// Whether the port's link is up now (`rte_eth_link_get_nowait`: a read of the device's state, no
    /// wait); `None` if the device cannot say. A `net_memif` port is up while its peer is connected.
    pub fn link_up(&self) -> Option<bool> {
        let mut l = ffi::rte_eth_link::default();
        // SAFETY: valid port id and out pointer; reading the link state does not touch the queues.
        let r = unsafe { ffi::rte_eth_link_get_nowait(self.port.port_id, &mut l) };
        (r == 0).then(|| l.link_status() != 0)
    }
}

impl RxBurst for DpdkQueue {
    fn recv_burst(&mut self, batch: &mut FrameBatch) -> Result<usize, NetioError> {
        let want = batch.free().min(self.mbufs.len());
        if want == 0 {
            return Ok(0);
        }
        let n = self.receive_into_scratch(want);
        let mut got = 0;
        for &m in &self.mbufs[..n] {
            // SAFETY: m was just received and is ours until freed below.
            match unsafe { mbuf::data(m) } {
                Some(frame) if frame.len() <= batch.slot_size() => {
                    batch.push_stamped(frame, 0)?;
                    got += 1;
                    self.rx_stats.frames += 1;
                    self.rx_stats.bytes += frame.len() as u64;
                }
                _ => self.rx_stats.dropped += 1,
            }
        }
        if n > 0 {
            // SAFETY: the n received mbufs are ours and no longer referenced.
            unsafe { ffi::rte_pktmbuf_free_bulk(self.mbufs.as_mut_ptr(), n as u32) };
        }
        Ok(got)
    }

    /// `missed` is the whole port's `imissed + rx_nombuf` (the device does not split them per queue);
    /// PMDs that cannot see their losses report 0 (DPDK 22.11's `net_af_packet` does not read the kernel's
    /// ring drops).
    fn rx_stats(&self) -> RxStats {
        let mut s = ffi::rte_eth_stats::default();
        // SAFETY: valid port id and out pointer; reading counters does not touch the queues.
        let r = unsafe { ffi::rte_eth_stats_get(self.port.port_id, &mut s) };
        RxStats {
            missed: if r == 0 { s.imissed + s.rx_nombuf } else { 0 },
            ..self.rx_stats
        }
    }
}

impl TxBurst for DpdkQueue {
    fn send_burst(&mut self, batch: &FrameBatch) -> Result<usize, NetioError> {
        let mut sent = 0;
        let chunk = self.mbufs.len();
        let mut start = 0;
        while start < batch.len() {
            let end = (start + chunk).min(batch.len());
            sent += self.send_chunk(batch, start, end);
            start = end;
        }
        Ok(sent)
    }

    fn tx_stats(&self) -> TxStats {
        self.tx_stats
    }
}

impl DpdkQueue {
    /// Sends frames `start..end` of `batch` (at most one scratch array); returns how many the device took.
    fn send_chunk(&mut self, batch: &FrameBatch, start: usize, end: usize) -> usize {
        self.build_and_send(end - start, |k, room| {
            let frame = batch.frame(start + k);
            // An oversize frame is reported by its length alone; build_and_send drops and counts it.
            if frame.len() <= room.len() {
                room[..frame.len()].copy_from_slice(frame);
            }
            frame.len()
        })
    }

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

    /// Receives up to `max_burst` frames and hands each to `f` where it lies in its mbuf, without copying; the
    /// mbufs go back to the pool when `f` has seen them all. Returns how many frames `f` saw.
    pub fn recv_in_place(&mut self, mut f: impl FnMut(&[u8])) -> usize {
        let n = self.receive_into_scratch(self.mbufs.len());
        let mut seen = 0;
        for &m in &self.mbufs[..n] {
            // SAFETY: m was just received and stays ours until freed below.
            match unsafe { mbuf::data(m) } {
                Some(frame) => {
                    f(frame);
                    seen += 1;
                    self.rx_stats.frames += 1;
                    self.rx_stats.bytes += frame.len() as u64;
                }
                None => self.rx_stats.dropped += 1,
            }
        }
        if n > 0 {
            // SAFETY: the n received mbufs are ours and no longer referenced.
            unsafe { ffi::rte_pktmbuf_free_bulk(self.mbufs.as_mut_ptr(), n as u32) };
        }
        seen
    }

    /// Receives up to `max_burst` frames and sends them straight back out of this queue, untouched (what
    /// testpmd's io forwarding does on one queue): the machine's packet rate through this crate's pool
    /// and bursts, the benchmarks' like-for-like baseline. Frames the device does not take are freed and
    /// counted as dropped; bytes are not counted (that would read every mbuf). Returns how many left.
    pub fn reflect_burst(&mut self) -> usize {
        let n = self.receive_into_scratch(self.mbufs.len());
        if n == 0 {
            return 0;
        }
        // SAFETY: the n received mbufs are ours; the device takes ownership of the accepted ones.
        let Some(sent) = (unsafe {
            self.port
                .tx(self.queue_id, self.mbufs.as_mut_ptr(), n as u16)
        }) else {
            // The driver faulted: the mbufs are gone (leaked, never freed twice).
            self.rx_stats.frames += n as u64;
            self.tx_stats.dropped += n as u64;
            return 0;
        };
        self.drop_refused(sent, n);
        self.rx_stats.frames += n as u64;
        self.tx_stats.frames += sent as u64;
        sent
    }

    /// Receives up to `burst`'s free room (and `max_burst`) frames onto the end of `burst`, which owns them
    /// from then on: the zero-copy receive of a run-to-completion worker. Returns how many.
    pub fn recv_mbufs(&mut self, burst: &mut MbufBurst) -> usize {
        let want = burst.free().min(self.mbufs.len());
        if want == 0 {
            return 0;
        }
        // SAFETY: started port, our queue; the burst's tail has room for `want` pointers, which become its.
        let n = unsafe { self.port.rx(self.queue_id, burst.tail_ptr(), want as u16) };
        let start = burst.len();
        burst.grow(n);
        let mut bytes = 0;
        for &m in burst.held().get(start..).unwrap_or(&[]) {
            // SAFETY: just received, ours.
            bytes += unsafe { mbuf::len(m) };
        }
        self.rx_stats.frames += n as u64;
        self.rx_stats.bytes += bytes as u64;
        n
    }

    /// Sends every mbuf of `burst` (holes are closed first) out of this queue and empties
    /// it; what the device still refuses after a few offers is freed and counted as dropped. Mbufs of any
    /// pool may go (a frame received on another port is forwarded as it is). Returns how many left.
    pub fn send_mbufs(&mut self, burst: &mut MbufBurst) -> usize {
        // Holes (frames moved out or freed) are closed first: the device must never see a null entry.
        burst.compact();
        let held = burst.held();
        let n = held.len();
        let mut bytes = 0;
        for &m in held.iter() {
            // SAFETY: an owned mbuf of the burst.
            bytes += unsafe { mbuf::len(m) };
        }
        let mut done = 0;
        for _ in 0..TX_RETRIES {
            if done == n {
                break;
            }
            // SAFETY: started port, our queue; the device takes ownership of the accepted mbufs.
            let taken = unsafe {
                self.port
                    .tx(self.queue_id, held[done..].as_mut_ptr(), (n - done) as u16)
            };
            let Some(taken) = taken else {
                // The driver faulted: what it had not taken is gone too (leaked, never freed twice); the
                // bytes of this burst are not counted.
                burst.consume_front(n);
                self.tx_stats.dropped += (n - done) as u64;
                self.tx_stats.frames += done as u64;
                return done;
            };
            done += taken;
        }
        for &m in &held[done..] {
            // SAFETY: refused, still ours.
            bytes -= unsafe { mbuf::len(m) };
        }
        burst.consume_front(done);
        self.tx_stats.dropped += burst.len() as u64;
        burst.clear();
        self.tx_stats.frames += done as u64;
        self.tx_stats.bytes += bytes as u64;
        done
    }

    /// Takes the mbufs of `burst` whose frames the caller is done with (reports the engine has read) as
    /// rooms for the next [`send_burst_in_place`](Self::send_burst_in_place), up to its
    /// [`TX_ROOMS`](Self::TX_ROOMS) spares, and frees the rest: a report's mbuf carries its RoCE frame out
    /// instead of going back to its pool while a fresh one comes out of this port's. Only plain mbufs are
    /// taken (one segment, one reference), reset as a fresh allocation would be. Empties `burst`.
    pub fn reuse_as_spares(&mut self, burst: &mut MbufBurst) {
        let mut spares = self.spare_len;
        let mut left = false;
        for slot in burst.held().iter_mut() {
            let m = *slot;
            if m.is_null() {
                continue;
            }
            let Some(dst) = self.spare.get_mut(spares) else {
                left = true;
                break;
            };
            // SAFETY: a non-null entry is an mbuf the burst owns; reset only if it is plain.
            if !unsafe { mbuf::reset_plain(m) } {
                left = true;
                continue;
            }
            *dst = m;
            spares += 1;
            *slot = std::ptr::null_mut();
        }
        self.spare_len = spares;
        if left {
            burst.clear();
        } else {
            burst.forget();
        }
    }

    /// Receives up to `max` (at most the scratch array's length) mbufs into the scratch array.
    #[inline(always)]
    fn receive_into_scratch(&mut self, max: usize) -> usize {
        let max = max.min(self.mbufs.len());
        // SAFETY: started port, our queue, scratch array of at least `max` entries.
        unsafe {
            self.port
                .rx(self.queue_id, self.mbufs.as_mut_ptr(), max as u16)
        }
    }

    /// Frees the scratch array's mbufs `from..to`, which the device did not take, as dropped frames.
    #[inline(always)]
    fn drop_refused(&mut self, from: usize, to: usize) {
        if let Some(refused) = self.mbufs.get_mut(from..to).filter(|r| !r.is_empty()) {
            // SAFETY: the device refused these; they are still ours.
            unsafe { ffi::rte_pktmbuf_free_bulk(refused.as_mut_ptr(), refused.len() as u32) };
            self.tx_stats.dropped += refused.len() as u64;
        }
    }

    fn build_and_send(
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

    /// Hands the first `ready` mbufs of the scratch array (lengths set, `bytes` long together) to the device,
    /// retrying a partial burst; frees and counts as dropped what it refused. Returns how many it took.
    fn transmit_ready(&mut self, ready: usize, bytes: usize) -> usize {
        let mut done = 0;
        for _ in 0..TX_RETRIES {
            if done == ready {
                break;
            }
            // SAFETY: started port, our queue; the device takes ownership of the accepted mbufs.
            let taken = unsafe {
                self.port.tx(
                    self.queue_id,
                    self.mbufs[done..].as_mut_ptr(),
                    (ready - done) as u16,
                )
            };
            let Some(taken) = taken else {
                // The driver faulted: what it had not taken is gone too (leaked, never freed twice); the
                // bytes of this burst are not counted.
                self.tx_stats.dropped += (ready - done) as u64;
                self.tx_stats.frames += done as u64;
                return done;
            };
            done += taken;
        }
        let mut sent_bytes = bytes;
        // The bytes sent are those of the burst less the refused frames', read from their mbufs before
        // they are freed (the accepted ones are the device's now, not to be read).
        for &m in self.mbufs.get(done..ready).unwrap_or(&[]) {
            // SAFETY: the device refused m; it is still ours, its length set above.
            sent_bytes -= unsafe { mbuf::len(m) };
        }
        self.drop_refused(done, ready);
        self.tx_stats.frames += done as u64;
        self.tx_stats.bytes += sent_bytes as u64;
        done
    }
}
