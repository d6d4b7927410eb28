//! A started port's state that the [`Port`](super::Port) and its queues share: defined below both, so that
//! `port.rs` (which starts the port and hands out queues) and `queue.rs` (which polls it) each depend on it
//! and not on each other.

use super::error::strerror;
use super::ffi;
use super::Mempool;

/// What the queues of a port share. Dropped after the last queue: drains the RX queues (a looped-back or
/// ring device may still hold mbufs of our pool), stops the port, then frees the pool.
pub(crate) struct PortShared {
    pub(crate) port_id: u16,
    pub(crate) name: String,
    pub(crate) queues: u16,
    pub(crate) pool: Mempool,
    /// Whether its bursts run under the fault guard ([`super::guard`]): a driver over a peer's shared memory.
    pub(crate) guarded: bool,
}

impl PortShared {
    /// `rte_eth_rx_burst` on queue `queue`, guarded where the driver needs it; 0 after a fault.
    ///
    /// # Safety
    /// A queue this thread alone polls, room for `n` pointers at `pkts`.
    #[inline(always)]
    pub(crate) unsafe fn rx(&self, queue: u16, pkts: *mut *mut ffi::rte_mbuf, n: u16) -> usize {
        // SAFETY: the caller's promise.
        unsafe { super::guard::rx(self.guarded, &self.name, self.port_id, queue, pkts, n) }
    }

    /// `rte_eth_tx_burst` on queue `queue`, guarded where the driver needs it: how many the device took,
    /// `None` after a fault (every mbuf offered is gone then, and must be neither freed nor read).
    ///
    /// # Safety
    /// A queue this thread alone polls, `n` owned mbufs at `pkts`.
    #[inline(always)]
    pub(crate) unsafe fn tx(
        &self,
        queue: u16,
        pkts: *mut *mut ffi::rte_mbuf,
        n: u16,
    ) -> Option<usize> {
        // SAFETY: the caller's promise.
        unsafe { super::guard::tx(self.guarded, &self.name, self.port_id, queue, pkts, n) }
    }
}

impl Drop for PortShared {
    fn drop(&mut self) {
        let mut mbufs = [std::ptr::null_mut::<ffi::rte_mbuf>(); 64];
        for q in 0..self.queues {
            // Bounded: a device that keeps receiving (a live NIC) must not hold up the drop.
            for _ in 0..1024 {
                // SAFETY: the port is started and no queue object exists any more, so nobody else polls it.
                let n = unsafe { self.rx(q, mbufs.as_mut_ptr(), 64) };
                if n == 0 {
                    break;
                }
                // SAFETY: the n mbufs were just received and are ours.
                unsafe { ffi::rte_pktmbuf_free_bulk(mbufs.as_mut_ptr(), n as u32) };
            }
        }
        // SAFETY: valid port id.
        let r = unsafe { ffi::rte_eth_dev_stop(self.port_id) };
        if r < 0 {
            log::warn!("rte_eth_dev_stop({}): {}", self.name, strerror(-r));
        }
    }
}
