//! Zero-copy receive and bursts of mbufs: received in place, reflected, owned by an [`MbufBurst`], sent
//! from one, or kept as spare rooms.

use crate::dpdk::burst::MbufBurst;
use crate::dpdk::free;
use crate::dpdk::mbuf;

use super::{DpdkQueue, TX_RETRIES};

impl DpdkQueue {
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
            unsafe { free::free_bulk(&mut self.mbufs[..n]) };
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
}
