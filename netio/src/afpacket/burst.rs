//! Bursts: `recvmmsg` into a batch's slots with the VLAN tag put back, `sendmmsg` out of them.

use std::os::fd::AsRawFd;

use crate::{batch::now_ns, FrameBatch, NetioError, RxBurst, RxStats, TxBurst, TxStats};

use super::messages::VLAN_TAG_LEN;
use super::socket::AfPacket;

fn would_block(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EAGAIN) | Some(libc::EINTR) | Some(libc::ENOBUFS)
    )
}

impl RxBurst for AfPacket {
    fn recv_burst(&mut self, batch: &mut FrameBatch) -> Result<usize, NetioError> {
        let n = batch.free().min(self.msgs.hdrs.len());
        if n == 0 {
            return Ok(0);
        }
        let base = batch.len();
        let slot_size = batch.slot_size();
        for k in 0..n {
            let p = batch.slot_ptr(base + k);
            self.msgs.set_rx(k, p, slot_size);
        }
        // MSG_TRUNC makes msg_len the frame's real length, so an oversize frame is recognised, not cut.
        // SAFETY: n messages, each pointing at one whole free slot of `batch`, which outlives the call.
        let r = unsafe {
            libc::recvmmsg(
                self.fd.as_raw_fd(),
                self.msgs.hdrs.as_mut_ptr(),
                n as u32,
                libc::MSG_DONTWAIT | libc::MSG_TRUNC,
                std::ptr::null_mut(),
            )
        };
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if would_block(&e) {
                return Ok(0);
            }
            return Err(NetioError::io(
                format!("AF_PACKET {}: recvmmsg", self.ifname),
                e,
            ));
        }
        // One clock read per burst: the frames of a burst arrived within microseconds of each other.
        let stamp = now_ns();
        let mut kept = base;
        for k in 0..r as usize {
            let mut len = self.msgs.hdrs[k].msg_len as usize;
            let truncated = self.msgs.hdrs[k].msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
            let tag = self.msgs.vlan_tag(k);
            let wire_len = len + tag.map_or(0, |_| VLAN_TAG_LEN);
            // Over the slot (a jumbo frame into standard slots), or too short to hold a tag after the MACs.
            if truncated || wire_len > slot_size || (tag.is_some() && len < 12) {
                self.rx_stats.dropped += 1;
                continue;
            }
            if kept != base + k {
                batch.move_slot(base + k, kept, len);
            }
            if let Some((tpid, tci)) = tag {
                let slot = batch.slot_mut(kept);
                slot.copy_within(12..len, 12 + VLAN_TAG_LEN);
                slot[12..14].copy_from_slice(&tpid.to_be_bytes());
                slot[14..16].copy_from_slice(&tci.to_be_bytes());
                len = wire_len;
            }
            batch.set_frame(kept, len, stamp);
            kept += 1;
            self.rx_stats.frames += 1;
            self.rx_stats.bytes += len as u64;
        }
        batch.set_len(kept);
        Ok(kept - base)
    }

    fn rx_stats(&self) -> RxStats {
        RxStats {
            missed: self.kernel_drops(),
            ..self.rx_stats
        }
    }
}

impl TxBurst for AfPacket {
    fn send_burst(&mut self, batch: &FrameBatch) -> Result<usize, NetioError> {
        let mut i = 0;
        let mut sent = 0;
        while i < batch.len() {
            let n = (batch.len() - i).min(self.msgs.hdrs.len());
            for k in 0..n {
                let f = batch.frame(i + k);
                // The kernel only reads from a send iovec; the cast to *mut is what iovec's type demands.
                self.msgs.set(k, f.as_ptr().cast_mut(), f.len());
            }
            // SAFETY: n messages pointing at frames of `batch`, which outlives the call.
            let r = unsafe {
                libc::sendmmsg(
                    self.fd.as_raw_fd(),
                    self.msgs.hdrs.as_mut_ptr(),
                    n as u32,
                    libc::MSG_DONTWAIT,
                )
            };
            if r > 0 {
                for k in 0..r as usize {
                    self.tx_stats.bytes += batch.frame(i + k).len() as u64;
                }
                self.tx_stats.frames += r as u64;
                sent += r as usize;
                i += r as usize;
                continue;
            }
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                // The socket buffer or the device queue is full: the rest of the burst is dropped, as a full
                // NIC ring would drop it.
                Some(libc::EAGAIN) | Some(libc::ENOBUFS) => {
                    self.tx_stats.dropped += (batch.len() - i) as u64;
                    break;
                }
                // This frame alone is unsendable (too long for the MTU, shorter than a header): skip it.
                Some(libc::EMSGSIZE) | Some(libc::EINVAL) => {
                    log::debug!(
                        "AF_PACKET {}: dropped a {}-byte frame: {e}",
                        self.ifname,
                        batch.frame(i).len()
                    );
                    self.tx_stats.dropped += 1;
                    i += 1;
                }
                _ => {
                    return Err(NetioError::io(
                        format!("AF_PACKET {}: sendmmsg", self.ifname),
                        e,
                    ))
                }
            }
        }
        Ok(sent)
    }

    fn tx_stats(&self) -> TxStats {
        self.tx_stats
    }
}
