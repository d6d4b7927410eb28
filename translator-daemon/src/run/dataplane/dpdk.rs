//! The data path's DPDK side: mbufs moved between queues and workers without a copy, the engine's frames
//! built into the received reports' own mbufs.

use dta_netio::dpdk::{
    handoff, DpdkQueue, Eal, HandoffRx as RingRx, HandoffTx as RingTx, MbufBurst,
};
use dta_netio::{NetioError, RxBurst, RxStats, TxBurst, TxStats};
use dta_translator::{Engine, Instant};

use super::io::{Burst, HandoffRx, HandoffTx, Queue};
use super::{handoff_capacity, WorkerRings};

impl Burst for MbufBurst {
    fn with_capacity(capacity: usize) -> Self {
        MbufBurst::with_capacity(capacity)
    }
    #[inline]
    fn len(&self) -> usize {
        MbufBurst::len(self)
    }
    fn room(&self) -> usize {
        self.free()
    }
    #[inline]
    fn frame(&self, i: usize) -> &[u8] {
        MbufBurst::frame(self, i)
    }
    #[inline]
    fn frames(&self) -> impl ExactSizeIterator<Item = &[u8]> + '_ {
        MbufBurst::frames(self)
    }
    fn frame_mut(&mut self, i: usize) -> &mut [u8] {
        MbufBurst::frame_mut(self, i)
    }
    fn rewrite(&mut self, i: usize, bytes: &[u8]) -> bool {
        MbufBurst::rewrite(self, i, bytes)
    }
    fn origin(&self, i: usize) -> Option<u16> {
        self.port(i)
    }
    #[inline]
    fn move_to(&mut self, i: usize, to: &mut Self) -> bool {
        MbufBurst::move_to(self, i, to)
    }
    fn drop_one(&mut self, i: usize) {
        self.free_one(i);
    }
    fn compact(&mut self) {
        MbufBurst::compact(self);
    }
    fn clear(&mut self) {
        MbufBurst::clear(self);
    }
}

impl Queue for DpdkQueue {
    type Burst = MbufBurst;
    type HandoffTx = RingTx;
    type HandoffRx = RingRx;

    fn port_id(&self) -> u16 {
        DpdkQueue::port_id(self)
    }
    #[inline]
    fn recv(&mut self, burst: &mut MbufBurst) -> usize {
        self.recv_mbufs(burst)
    }
    fn send(&mut self, burst: &mut MbufBurst) {
        self.send_mbufs(burst);
    }
    #[inline]
    fn send_from_engine(&mut self, e: &mut Engine, now: Instant, want: usize) -> (usize, usize) {
        let mut built = 0;
        let sent = self.send_burst_in_place(want, |rooms, lens| {
            built = e.poll_transmit_burst(now, rooms, lens);
            built
        });
        (built, sent)
    }
    fn send_nacks(&mut self, e: &mut Engine, now: Instant, n: usize) {
        self.send_in_place(n, |_, room| e.poll_transmit_into(now, room).unwrap_or(0));
    }
    fn push_bytes(&self, bytes: &[u8], to: &mut MbufBurst) -> bool {
        to.push_copy(self.pool(), bytes)
    }
    #[inline]
    fn recycle(&mut self, burst: &mut MbufBurst) {
        self.reuse_as_spares(burst);
    }
    fn stats(&self) -> (RxStats, TxStats) {
        let mut rx = self.rx_stats();
        // The device's misses are the port's, read alike by every queue: queue 0 reports them.
        if self.queue_id() != 0 {
            rx.missed = 0;
        }
        (rx, self.tx_stats())
    }
    fn tx_burst(&self) -> usize {
        DpdkQueue::TX_ROOMS
    }
    fn link_up(&self) -> Option<bool> {
        DpdkQueue::link_up(self)
    }
}

impl HandoffTx<MbufBurst> for RingTx {
    #[inline]
    fn offer(&mut self, burst: &mut MbufBurst) {
        self.send(burst);
    }
}

impl HandoffRx<MbufBurst> for RingRx {
    #[inline]
    fn take(&mut self, burst: &mut MbufBurst) -> usize {
        self.recv(burst)
    }
}

/// The handoff rings of `workers` DPDK workers: SP/SC `rte_ring`s of mbuf pointers named
/// `{prefix}_{from}_{to}` (unique in the process), of [`handoff_capacity`] each.
pub fn handoff_mesh(
    eal: &Eal,
    prefix: &str,
    workers: usize,
) -> Result<Vec<WorkerRings<DpdkQueue>>, NetioError> {
    super::mesh::<DpdkQueue, _>(workers, |j, k| {
        handoff(eal, &format!("{prefix}_{j}_{k}"), handoff_capacity(workers))
    })
}
