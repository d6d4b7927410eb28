//! The burst traits: frames copied between the caller's batch and mbufs.

use crate::dpdk::ffi;
use crate::dpdk::free;
use crate::dpdk::mbuf;
use crate::{FrameBatch, NetioError, RxBurst, RxStats, TxBurst, TxStats};

use super::DpdkQueue;

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
            unsafe { free::free_bulk(&mut self.mbufs[..n]) };
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
}
