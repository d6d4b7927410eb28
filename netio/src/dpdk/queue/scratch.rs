//! The scratch array's traffic with the device: a receive into it, the hand-over of its ready mbufs with
//! retries, and the refused ones freed.

use crate::dpdk::ffi;
use crate::dpdk::mbuf;

use super::{DpdkQueue, TX_RETRIES};

impl DpdkQueue {
    /// Receives up to `max` (at most the scratch array's length) mbufs into the scratch array.
    #[inline(always)]
    pub(super) fn receive_into_scratch(&mut self, max: usize) -> usize {
        let max = max.min(self.mbufs.len());
        // SAFETY: started port, our queue, scratch array of at least `max` entries.
        unsafe {
            self.port
                .rx(self.queue_id, self.mbufs.as_mut_ptr(), max as u16)
        }
    }

    /// Frees the scratch array's mbufs `from..to`, which the device did not take, as dropped frames.
    #[inline(always)]
    pub(super) fn drop_refused(&mut self, from: usize, to: usize) {
        if let Some(refused) = self.mbufs.get_mut(from..to).filter(|r| !r.is_empty()) {
            // SAFETY: the device refused these; they are still ours.
            unsafe { ffi::rte_pktmbuf_free_bulk(refused.as_mut_ptr(), refused.len() as u32) };
            self.tx_stats.dropped += refused.len() as u64;
        }
    }

    /// Hands the first `ready` mbufs of the scratch array (lengths set, `bytes` long together) to the device,
    /// retrying a partial burst; frees and counts as dropped what it refused. Returns how many it took.
    pub(super) fn transmit_ready(&mut self, ready: usize, bytes: usize) -> usize {
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
