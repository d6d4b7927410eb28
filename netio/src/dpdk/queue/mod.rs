//! One RX/TX queue pair of a started port, as a burst endpoint.
//!
//! One job a file: this root (the queue, its spares and accessors), `copy` (the burst traits, copying),
//! `in_place` (zero-copy transmit), `mbufs` (zero-copy receive and mbuf bursts) and `scratch` (the
//! scratch array's receive and transmit with the device).

mod copy;
mod in_place;
mod mbufs;
mod scratch;

use std::sync::Arc;

use super::ffi::{self, rte_mbuf};
use super::shared::PortShared;
use crate::{RxStats, TxStats};

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
