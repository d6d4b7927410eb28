//! Per-QP responder state: expected PSN, message sequence number, the PSN-NAK latch and the atomic
//! response cache.

use std::collections::VecDeque;

use dta_protocol::roce::{Psn, PSN_MASK};

use super::template::{AckTemplate, RxIcrcCache};

/// A public snapshot of one QP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpStatus {
    /// The requester's IPv4 address: the only source the QP accepts requests from.
    pub peer_ip: [u8; 4],
    /// The translator's QPN that responses go to.
    pub peer_qpn: u32,
    /// The PSN the responder accepts next.
    pub expected_psn: u32,
    /// Messages completed (24 bits, carried in every AETH).
    pub msn: u32,
    /// Whether a PSN-sequence NAK is outstanding (further out-of-order frames are dropped silently).
    pub nak_sent: bool,
    /// Whether the QP hit a remote access or invalid request error and refuses everything until it is
    /// re-opened over the control channel (what an RC QP in the error state does).
    pub error: bool,
}

/// The answer an atomic gave, kept so that a retransmitted duplicate gets the same answer without the
/// atomic running again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CachedAtomic {
    pub psn: u32,
    pub orig: u64,
}

#[derive(Debug)]
pub(crate) struct Qp {
    pub status: QpStatus,
    /// Most recent atomics, oldest first, at most `max_dest_rd_atomic` of them (rxe's responder resources).
    pub atomics: VecDeque<CachedAtomic>,
    /// The fast path's caches (`template.rs`): derived from bytes only, never part of the QP's state.
    pub cache: QpCache,
}

/// What the fast path keeps per QP so that a frame like the previous one costs little.
#[derive(Debug, Default)]
pub(crate) struct QpCache {
    /// iCRC states over the invariant headers of the last two request shapes.
    pub rx_icrc: RxIcrcCache,
    /// The last ACKNOWLEDGE and ATOMIC ACKNOWLEDGE built, to patch.
    pub ack: Option<Box<AckTemplate>>,
    pub atomic_ack: Option<Box<AckTemplate>>,
}

impl Qp {
    pub fn new(peer_ip: [u8; 4], peer_qpn: u32, start_psn: u32, max_dest_rd_atomic: usize) -> Self {
        Qp {
            status: QpStatus {
                peer_ip,
                peer_qpn,
                expected_psn: Psn::new(start_psn).value(),
                msn: 0,
                nak_sent: false,
                error: false,
            },
            atomics: VecDeque::with_capacity(max_dest_rd_atomic),
            cache: QpCache::default(),
        }
    }

    /// Records that a request completed: the next PSN is expected and the MSN counts it.
    pub fn complete(&mut self) {
        self.status.expected_psn = Psn::new(self.status.expected_psn).next().value();
        self.status.msn = (self.status.msn + 1) & PSN_MASK;
    }

    pub fn remember_atomic(&mut self, entry: CachedAtomic, capacity: usize) {
        if capacity == 0 {
            return;
        }
        while self.atomics.len() >= capacity {
            self.atomics.pop_front();
        }
        self.atomics.push_back(entry);
    }

    pub fn cached_atomic(&self, psn: u32) -> Option<CachedAtomic> {
        self.atomics.iter().rev().find(|a| a.psn == psn).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_cache_keeps_the_newest() {
        let mut qp = Qp::new([10, 0, 0, 1], 1, 0, 2);
        for psn in 0..3 {
            qp.remember_atomic(
                CachedAtomic {
                    psn,
                    orig: u64::from(psn) * 10,
                },
                2,
            );
        }
        assert_eq!(qp.cached_atomic(0), None);
        assert_eq!(qp.cached_atomic(2).unwrap().orig, 20);
        assert_eq!(qp.atomics.len(), 2);
    }
}
