//! The responder proper: one request frame in, at most one response frame out.
//!
//! The order of checks follows rxe's responder (Linux 6.1 `rxe_resp.c`, and what
//! `dta-e2e-conformance` measured against it): iCRC, then the QP and its PSN (out of sequence: one NAK,
//! then silence; behind: a duplicate), then the opcode sequence and the opcode itself, receive resources,
//! R_Key and bounds, lengths, alignment, and only then memory. A remote access or invalid request error
//! NAKs the request's PSN and moves the QP to the error state, as a class C error does on an RC QP; a
//! request that needs a receive WQE earns an RNR NAK and leaves the QP as it was.

use std::cmp::Ordering;

use dta_protocol::roce::{
    NakCode, Psn, DEFAULT_PKEY, PKEY_PARTITION_MASK, QPN_MASK, ROCEV2_UDP_PORT,
};
use dta_protocol::udp::UdpFrame;

use super::bounds::Bounds;
use super::checks::{apply_atomic, checked_range, ones_sum, write_length_ok};
use super::qp::{CachedAtomic, Qp, QpStatus};
use super::qp_table::{QpTable, FIRST_QPN};
use super::reply::{Outcome, Reply};
use super::request::{self, Body};
use super::state::{Responder, ResponderConfig, ROCEV2_SOURCE_PORTS};
use super::stats::{DropReason, NakKind, Stats};
use crate::memory::RegionSlot;

/// RNR NAK timer code (12: 0.64 ms) sent for a request that needs a receive WQE: the value the ibverbs
/// backend sets as `min_rnr_timer` at RTR (`backend::connect_qp`), which rxe then sends, so both backends
/// answer alike.
pub const MIN_RNR_TIMER: u8 = 12;

/// The 802.1Q TPID, and the length of a tag.
const TPID_8021Q: [u8; 2] = [0x81, 0x00];
const VLAN_TAG_LEN: usize = 4;
const BROADCAST: [u8; 6] = [0xFF; 6];

/// Whether `frame` carries an 802.1Q tag after its MACs.
#[inline]
fn tagged(frame: &[u8]) -> bool {
    frame.len() >= 14 + VLAN_TAG_LEN && frame[12..14] == TPID_8021Q
}

/// What Linux checks of a RoCEv2 datagram before rxe sees it: the destination MAC (the NIC's filter), the
/// IPv4 header checksum, the UDP length against IPv4's, and a non-zero UDP checksum. Frames that are not
/// IPv4/UDP to port 4791 pass untouched, for the parser to call them what they are.
fn admit(config: &ResponderConfig, frame: &[u8]) -> Result<(), DropReason> {
    const IP: usize = 14;
    let Some(&version_ihl) = frame.get(IP) else {
        return Ok(());
    };
    let ihl = usize::from(version_ihl & 0x0F) * 4;
    let udp_at = IP + ihl;
    let (Some(ip), Some(udp)) = (frame.get(IP..udp_at), frame.get(udp_at..udp_at + 8)) else {
        return Ok(());
    };
    if frame[12..14] != [0x08, 0x00]
        || version_ihl >> 4 != 4
        || ihl < 20
        || ip[9] != 17
        || u16::from_be_bytes([ip[6], ip[7]]) & 0x3FFF != 0
        || u16::from_be_bytes([udp[2], udp[3]]) != ROCEV2_UDP_PORT
    {
        return Ok(());
    }
    if config
        .local_mac
        .is_some_and(|mac| frame[..6] != mac && frame[..6] != BROADCAST)
    {
        return Err(DropReason::ForeignMac);
    }
    if ones_sum(ip, 0) != 0xFFFF {
        return Err(DropReason::Ipv4Checksum);
    }
    let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    let udp_len = usize::from(u16::from_be_bytes([udp[4], udp[5]]));
    if udp_len < 8 || total < ihl || udp_len != total - ihl {
        return Err(DropReason::UdpLength);
    }
    if udp[6..8] != [0, 0] {
        // A datagram cut short is the parser's to refuse.
        let Some(datagram) = frame.get(udp_at..udp_at + udp_len) else {
            return Ok(());
        };
        let pseudo = ones_sum(&ip[12..20], 17 + udp_len as u32);
        if ones_sum(datagram, u32::from(pseudo)) != 0xFFFF {
            return Err(DropReason::UdpChecksum);
        }
    }
    Ok(())
}

/// The QPN the allocator tries after `qpn`: the next one on 24 bits, back to [`FIRST_QPN`] after 0xFFFFFF.
fn next_qpn_after(qpn: u32) -> u32 {
    match (qpn + 1) & QPN_MASK {
        q if q < FIRST_QPN => FIRST_QPN,
        q => q,
    }
}

impl Responder {
    /// A responder serving `slots` (offsets into the arena bytes that [`handle`](Self::handle) receives).
    pub fn new(config: ResponderConfig, slots: Vec<RegionSlot>) -> Self {
        Responder {
            config,
            bounds: Bounds::new(&slots),
            slots,
            qps: QpTable::default(),
            next_qpn: FIRST_QPN,
            stats: Stats::default(),
            untagged: Vec::new(),
        }
    }

    /// The settings.
    pub fn config(&self) -> &ResponderConfig {
        &self.config
    }

    /// Opens (or re-opens, resetting its state) QP `qpn`, connected to QP `peer_qpn` of the requester at
    /// IPv4 address `peer_ip`, expecting `start_psn` first. Requests from any other source address are
    /// dropped (see [`DropReason::WrongSource`]).
    pub fn open_qp(&mut self, qpn: u32, peer_ip: [u8; 4], peer_qpn: u32, start_psn: u32) {
        let qp = Qp::new(
            peer_ip,
            peer_qpn & QPN_MASK,
            start_psn,
            self.config.max_dest_rd_atomic as usize,
        );
        self.qps.insert(qpn & QPN_MASK, qp);
    }

    /// Opens a QP with a fresh QPN and returns that QPN, or `None` when every QPN from [`FIRST_QPN`] to
    /// 0xFFFFFF is in use. QPNs below [`FIRST_QPN`] are never handed out, not even after the counter wraps:
    /// 0 and 1 are the special QPs of InfiniBand (SMI and GSI), and a translator would take a QPN it
    /// sees once as the start of the 24-bit space.
    pub fn allocate_qp(&mut self, peer_ip: [u8; 4], peer_qpn: u32, start_psn: u32) -> Option<u32> {
        let usable = (QPN_MASK - FIRST_QPN + 1) as usize;
        if self.qps.usable() >= usable {
            return None;
        }
        loop {
            let qpn = self.next_qpn;
            self.next_qpn = next_qpn_after(qpn);
            if qpn >= FIRST_QPN && !self.qps.contains(qpn) {
                self.open_qp(qpn, peer_ip, peer_qpn, start_psn);
                return Some(qpn);
            }
        }
    }

    /// Closes QP `qpn`; its frames are dropped as unknown afterwards.
    pub fn close_qp(&mut self, qpn: u32) {
        self.qps.remove(qpn);
    }

    /// A snapshot of QP `qpn`.
    pub fn qp(&self, qpn: u32) -> Option<QpStatus> {
        self.qps.get(qpn).map(|q| q.status)
    }

    /// QPs open with a QPN the responder handed out ([`allocate_qp`](Self::allocate_qp)).
    pub fn allocated_qps(&self) -> usize {
        self.qps.usable()
    }

    /// The counters.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Handles one received frame against the arena bytes `mem`, writing any response into `out` (at least
    /// [`RESPONSE_MAX`](super::RESPONSE_MAX) bytes).
    ///
    /// The common case (an in-sequence WRITE ONLY or atomic that passes every check) takes the fast path of
    /// `fast.rs`; everything else, and anything the fast path is not sure of, takes the general path, which
    /// decides exactly as before. Both give the same outcome, counters, memory and response bytes
    /// (`fast.rs`'s tests compare them frame by frame).
    pub fn handle(&mut self, frame: &[u8], mem: &mut [u8], out: &mut [u8]) -> Outcome {
        if self.config.vlan.is_some() || tagged(frame) {
            return self.handle_tagged(frame, mem, out, true);
        }
        if let Some(outcome) = super::fast::handle(self, frame, mem, out) {
            return outcome;
        }
        self.handle_untagged(frame, mem, out)
    }

    /// The general path alone, frame by frame through `etherparse` and `FrameRepr`: what [`handle`](Self::handle)
    /// did before it had a fast path, kept public as the reference that tests and the fuzzer compare
    /// [`handle`](Self::handle) with.
    #[doc(hidden)]
    pub fn handle_general(&mut self, frame: &[u8], mem: &mut [u8], out: &mut [u8]) -> Outcome {
        if self.config.vlan.is_some() || tagged(frame) {
            return self.handle_tagged(frame, mem, out, false);
        }
        self.handle_untagged(frame, mem, out)
    }

    /// A frame of a responder on a VLAN, or a tagged one: taken as a NIC on that VLAN takes it (see
    /// [`ResponderConfig::vlan`]), handled without its tag, and answered with it.
    fn handle_tagged(
        &mut self,
        frame: &[u8],
        mem: &mut [u8],
        out: &mut [u8],
        fast: bool,
    ) -> Outcome {
        let tci = tagged(frame).then(|| [frame[14], frame[15]]);
        let vid = tci.map(|t| u16::from_be_bytes(t) & 0x0FFF);
        let taken = match (self.config.vlan, vid) {
            (Some(want), Some(vid)) => want == vid,
            (None, vid) => vid.unwrap_or(0) == 0,
            (Some(_), None) => false,
        };
        let Some(tci) = tci.filter(|_| taken) else {
            if taken {
                // Untagged on an untagged responder (not reached: `handle` takes those itself).
                return self.handle_untagged(frame, mem, out);
            }
            self.stats.drop(DropReason::Vlan);
            return Outcome::Dropped(DropReason::Vlan);
        };
        let mut inner = std::mem::take(&mut self.untagged);
        inner.clear();
        inner.extend_from_slice(&frame[..12]);
        inner.extend_from_slice(&frame[12 + VLAN_TAG_LEN..]);
        let outcome = match fast.then(|| super::fast::handle(self, &inner, mem, out)) {
            Some(Some(outcome)) => outcome,
            _ => self.handle_untagged(&inner, mem, out),
        };
        self.untagged = inner;
        match outcome {
            Outcome::Respond(n) if n + VLAN_TAG_LEN <= out.len() => {
                out.copy_within(12..n, 12 + VLAN_TAG_LEN);
                out[12..14].copy_from_slice(&TPID_8021Q);
                out[14..16].copy_from_slice(&tci);
                Outcome::Respond(n + VLAN_TAG_LEN)
            }
            o => o,
        }
    }

    fn handle_untagged(&mut self, frame: &[u8], mem: &mut [u8], out: &mut [u8]) -> Outcome {
        match self.handle_inner(frame, mem, out) {
            Ok(outcome) => outcome,
            Err(reason) => {
                self.stats.drop(reason);
                Outcome::Dropped(reason)
            }
        }
    }

    fn handle_inner(
        &mut self,
        frame: &[u8],
        mem: &mut [u8],
        out: &mut [u8],
    ) -> Result<Outcome, DropReason> {
        admit(&self.config, frame)?;
        let udp = UdpFrame::parse(frame).map_err(|_| DropReason::NotRoce)?;
        if udp.endpoints.dst_port != ROCEV2_UDP_PORT {
            return Err(DropReason::NotRoce);
        }
        if self
            .config
            .local_ip
            .is_some_and(|ip| ip != udp.endpoints.dst_ip)
        {
            return Err(DropReason::NotForUs);
        }
        let req = request::parse(&udp, frame, |op| {
            self.stats.frames_by_opcode[usize::from(op)] += 1;
        })?;
        // Only the default partition; the membership bit is not compared.
        if req.pkey & PKEY_PARTITION_MASK != DEFAULT_PKEY & PKEY_PARTITION_MASK {
            return Err(DropReason::PKey);
        }
        let max_atomic = self.config.max_dest_rd_atomic as usize;
        let qp = self.qps.get_mut(req.dest_qp).ok_or(DropReason::UnknownQp)?;
        // Only the QP's requester may use it (rxe's check_addr: the source address must be the QP's path).
        // The UDP source port carries ECMP entropy and may change per packet, so only its range is checked.
        if req.endpoints.src_ip != qp.status.peer_ip
            || !ROCEV2_SOURCE_PORTS.contains(&req.endpoints.src_port)
        {
            return Err(DropReason::WrongSource);
        }
        if qp.status.error {
            return Err(DropReason::QpError);
        }
        let reply = Reply::new(&req.endpoints, qp.status.peer_qpn);
        let psn = req.psn;
        // Ahead of, behind or at the expected PSN on the 24-bit circle; the PSN half the space away counts
        // as behind, as in rxe.
        match Psn::new(psn)
            .offset_from(Psn::new(qp.status.expected_psn))
            .cmp(&0)
        {
            Ordering::Greater => {
                if qp.status.nak_sent {
                    return Err(DropReason::OutOfSequence);
                }
                // Class B error: NAK once with the PSN we expect, so the requester goes back to it.
                qp.status.nak_sent = true;
                let (expected, msn) = (qp.status.expected_psn, qp.status.msn);
                self.stats.nak(NakKind::PsnSequence);
                return Ok(reply.nak(out, expected, msn, NakCode::PsnSequenceError));
            }
            Ordering::Less => {
                // A replay carries the MSN of now, not of the original answer: rxe builds every response
                // from the QP's current MSN.
                let msn = qp.status.msn;
                return match req.body {
                    Body::Atomic { .. } => match qp.cached_atomic(psn) {
                        Some(c) => {
                            self.stats.duplicate_atomics += 1;
                            self.stats.acks += 1;
                            Ok(reply.atomic_ack(out, c.psn, msn, c.orig))
                        }
                        None => Err(DropReason::StaleDuplicateAtomic),
                    },
                    // A READ is never carried out here, so there is no response to replay (rxe: class D,
                    // dropped).
                    Body::Read => Err(DropReason::DuplicateRead),
                    _ => {
                        // Re-ACK everything received so far (C9-105) without touching memory again.
                        self.stats.duplicate_writes += 1;
                        self.stats.acks += 1;
                        Ok(reply.ack(out, Psn::new(qp.status.expected_psn).prev().value(), msn))
                    }
                };
            }
            Ordering::Equal => qp.status.nak_sent = false,
        }
        let mtu = self.config.path_mtu as usize;
        let result = match req.body {
            Body::WriteOnly { reth, payload, pad } => {
                let len = reth.dma_len as usize;
                if len == 0 {
                    // A zero-length WRITE touches no memory, so its R_Key is not checked (C9-88; rxe).
                    Ok(None)
                } else {
                    // R_Key and bounds of the whole DMA length first, then whether the packet carries
                    // exactly that (rxe's check_rkey order): a bad key wins over a bad length.
                    match checked_range(&self.slots, mem.len(), reth.rkey, reth.va, len) {
                        Err(k) => Err(k),
                        Ok(_) if !write_length_ok(len, payload.len(), pad, mtu) => {
                            Err(NakKind::InvalidRequest)
                        }
                        Ok(at) => {
                            // A DMA length beyond the MTU with a full-MTU packet writes that packet.
                            let n = payload.len();
                            mem[at..at + n].copy_from_slice(payload);
                            self.stats.writes += 1;
                            self.stats.write_bytes += n as u64;
                            Ok(None)
                        }
                    }
                }
            }
            // No receive queue is ever posted: tell the requester to come back later, as rxe does with
            // an empty receive queue. The QP stays as it was.
            Body::NeedsReceive => {
                self.stats.nak(NakKind::ReceiverNotReady);
                let msn = qp.status.msn;
                return Ok(reply.rnr_nak(out, psn, msn, MIN_RNR_TIMER));
            }
            // The QP grants no remote read; a MIDDLE or LAST lacks its FIRST; a multi-packet WRITE is a
            // departure from rxe (which carries it out): dta never sends one, and refusing it loudly beats
            // half-supporting it.
            Body::Read | Body::MissingFirst | Body::WriteFirst => Err(NakKind::InvalidRequest),
            // Without responder resources an RC QP refuses atomics (max_dest_rd_atomic = 0).
            Body::Atomic { .. } if max_atomic == 0 => Err(NakKind::InvalidRequest),
            Body::Atomic { compare_swap, eth } => {
                match checked_range(&self.slots, mem.len(), eth.rkey, eth.va, 8) {
                    Err(k) => Err(k),
                    Ok(_) if eth.va % 8 != 0 => Err(NakKind::InvalidRequest),
                    Ok(at) => {
                        let orig = apply_atomic(compare_swap, &eth, &mut mem[at..at + 8]);
                        self.stats.atomics += 1;
                        Ok(Some(orig))
                    }
                }
            }
        };
        match result {
            Err(kind) => {
                qp.status.error = true;
                let code = match kind {
                    NakKind::RemoteAccess => NakCode::RemoteAccessError,
                    _ => NakCode::InvalidRequest,
                };
                let msn = qp.status.msn;
                self.stats.nak(kind);
                Ok(reply.nak(out, psn, msn, code))
            }
            Ok(Some(orig)) => {
                qp.complete();
                let msn = qp.status.msn;
                qp.remember_atomic(CachedAtomic { psn, orig }, max_atomic);
                self.stats.acks += 1;
                Ok(reply.atomic_ack(out, psn, msn, orig))
            }
            Ok(None) => {
                qp.complete();
                if req.ack_req {
                    self.stats.acks += 1;
                    Ok(reply.ack(out, psn, qp.status.msn))
                } else {
                    Ok(Outcome::Silent)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qpns_wrap_to_the_first_qpn_never_to_0_or_1_and_skip_those_in_use() {
        const IP: [u8; 4] = [198, 18, 0, 1];
        let mut r = Responder::new(ResponderConfig::default(), vec![]);
        assert_eq!(r.allocate_qp(IP, 0x11, 0), Some(FIRST_QPN));
        r.open_qp(FIRST_QPN + 1, IP, 0x12, 0);
        r.next_qpn = 0xFF_FFFE;
        assert_eq!(r.allocate_qp(IP, 0x13, 0), Some(0xFF_FFFE));
        assert_eq!(r.allocate_qp(IP, 0x14, 0), Some(0xFF_FFFF));
        // After the wrap: not 0, 1 or 2, and not 0x100 and 0x101, which are still open.
        assert_eq!(r.allocate_qp(IP, 0x15, 0), Some(FIRST_QPN + 2));
        r.close_qp(FIRST_QPN);
        r.next_qpn = 0xFF_FFFF;
        r.close_qp(0xFF_FFFF);
        let got: Vec<u32> = (0..3)
            .map(|i| r.allocate_qp(IP, 0x20 + i, 0).unwrap())
            .collect();
        assert_eq!(got, [0xFF_FFFF, FIRST_QPN, FIRST_QPN + 3]);
        for q in [0, 1, 2] {
            assert!(r.qp(q).is_none(), "QPN {q} handed out");
        }
        assert_eq!(r.qp(FIRST_QPN).unwrap().peer_qpn, 0x21);
    }
}
