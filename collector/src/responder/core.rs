//! The responder proper: one request frame in, at most one response frame out.
//!
//! The order of checks follows rxe's responder: iCRC, then the QP and its PSN (out of sequence: one NAK,
//! then silence; behind: a duplicate), then lengths, R_Key and bounds, alignment, and only then memory.
//! A remote access or invalid request error NAKs the request's PSN and moves the QP to the error state,
//! as a class C error does on an RC QP.

use std::cmp::Ordering;
use std::collections::HashMap;

use dta_protocol::roce::{
    AckKind, AethRepr, AtomicEthRepr, BthOpcode, Extension, FrameRepr, NakCode, PSN_MASK,
    ROCEV2_UDP_PORT,
};
use dta_protocol::udp::{UdpEndpoints, UdpFrame};
use dta_protocol::Error as WireError;

use super::qp::{psn_cmp, psn_prev, CachedAtomic, Qp, QpStatus};
use super::stats::{DropReason, NakKind, Stats};
use crate::memory::{resolve, RegionSlot, Resolve};

/// Credit field of every ACK: 31 means "credits not tracked", what rxe sends (AETH_ACK_UNLIMITED).
const UNLIMITED_CREDITS: u8 = 31;
/// Bytes an output buffer needs for any response (ATOMIC ACKNOWLEDGE is the longest: 42 + 12 + 4 + 8 + 4).
pub const RESPONSE_MAX: usize = 128;
/// Default P_Key; only its low 15 bits are compared, as the top bit is the membership type.
const PKEY_MASK: u16 = 0x7FFF;

/// Settings of the responder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponderConfig {
    /// Atomics answered from the cache per QP; 0 refuses every atomic. Advertised to the translator.
    pub max_dest_rd_atomic: u32,
    /// Largest WRITE payload accepted (the advertised path MTU).
    pub path_mtu: u32,
    /// When set, frames to another IPv4 address are dropped (an AF_PACKET socket sees all traffic).
    pub local_ip: Option<[u8; 4]>,
}

impl Default for ResponderConfig {
    fn default() -> Self {
        ResponderConfig {
            max_dest_rd_atomic: 16,
            path_mtu: 1024,
            local_ip: None,
        }
    }
}

/// What became of one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A response of this many bytes is in the output buffer.
    Respond(usize),
    /// The request was carried out and needs no response (a WRITE without AckReq).
    Silent,
    /// Dropped without a response, counted under this reason.
    Dropped(DropReason),
}

/// The software RoCEv2 responder.
#[derive(Debug)]
pub struct Responder {
    config: ResponderConfig,
    slots: Vec<RegionSlot>,
    qps: HashMap<u32, Qp>,
    next_qpn: u32,
    stats: Stats,
}

/// First QPN handed out; QPNs 0 and 1 are special in InfiniBand.
const FIRST_QPN: u32 = 0x100;

impl Responder {
    /// A responder serving `slots` (offsets into the arena bytes that [`handle`](Self::handle) receives).
    pub fn new(config: ResponderConfig, slots: Vec<RegionSlot>) -> Self {
        Responder {
            config,
            slots,
            qps: HashMap::new(),
            next_qpn: FIRST_QPN,
            stats: Stats::default(),
        }
    }

    /// The settings.
    pub fn config(&self) -> &ResponderConfig {
        &self.config
    }

    /// Opens (or re-opens, resetting its state) QP `qpn`, connected to the translator's `peer_qpn`, expecting
    /// `start_psn` first.
    pub fn open_qp(&mut self, qpn: u32, peer_qpn: u32, start_psn: u32) {
        let qp = Qp::new(
            peer_qpn & PSN_MASK,
            start_psn,
            self.config.max_dest_rd_atomic as usize,
        );
        self.qps.insert(qpn & PSN_MASK, qp);
    }

    /// Opens a QP with a fresh QPN and returns that QPN.
    pub fn allocate_qp(&mut self, peer_qpn: u32, start_psn: u32) -> u32 {
        while self.qps.contains_key(&self.next_qpn) {
            self.next_qpn = (self.next_qpn + 1) & PSN_MASK;
            if self.next_qpn < FIRST_QPN {
                self.next_qpn = FIRST_QPN;
            }
        }
        let qpn = self.next_qpn;
        self.open_qp(qpn, peer_qpn, start_psn);
        self.next_qpn = (qpn + 1) & PSN_MASK;
        qpn
    }

    /// Closes QP `qpn`; its frames are dropped as unknown afterwards.
    pub fn close_qp(&mut self, qpn: u32) {
        self.qps.remove(&qpn);
    }

    /// A snapshot of QP `qpn`.
    pub fn qp(&self, qpn: u32) -> Option<QpStatus> {
        self.qps.get(&qpn).map(|q| q.status)
    }

    /// The counters.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Handles one received frame against the arena bytes `mem`, writing any response into `out` (at least
    /// [`RESPONSE_MAX`] bytes).
    pub fn handle(&mut self, frame: &[u8], mem: &mut [u8], out: &mut [u8]) -> Outcome {
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
        let req = FrameRepr::parse(frame).map_err(|e| match e {
            WireError::IcrcMismatch { .. } => DropReason::Icrc,
            WireError::UnsupportedBthOpcode(_) => DropReason::UnsupportedOpcode,
            _ => DropReason::Malformed,
        })?;
        self.stats.frames_by_opcode[usize::from(req.bth.opcode.code())] += 1;
        if !req.bth.opcode.is_request() {
            return Err(DropReason::NotRequest);
        }
        if req.bth.pkey & PKEY_MASK != PKEY_MASK {
            return Err(DropReason::PKey);
        }
        let max_atomic = self.config.max_dest_rd_atomic as usize;
        let qp = self
            .qps
            .get_mut(&req.bth.dest_qp)
            .ok_or(DropReason::UnknownQp)?;
        if qp.status.error {
            return Err(DropReason::QpError);
        }
        let reply = Reply::new(&req, qp.status.peer_qpn);
        let psn = req.bth.psn;
        match psn_cmp(psn, qp.status.expected_psn) {
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
                return match req.ext {
                    Extension::Atomic(_) => match qp.cached_atomic(psn) {
                        Some(c) => {
                            self.stats.duplicate_atomics += 1;
                            self.stats.acks += 1;
                            Ok(reply.atomic_ack(out, c.psn, c.msn, c.orig))
                        }
                        None => Err(DropReason::StaleDuplicateAtomic),
                    },
                    _ => {
                        // Re-ACK everything received so far (C9-105) without touching memory again.
                        self.stats.duplicate_writes += 1;
                        self.stats.acks += 1;
                        let (last, msn) = (psn_prev(qp.status.expected_psn), qp.status.msn);
                        Ok(reply.ack(out, last, msn))
                    }
                };
            }
            Ordering::Equal => qp.status.nak_sent = false,
        }
        let result = match req.ext {
            Extension::Reth(reth) => {
                let len = req.payload.len();
                if len > self.config.path_mtu as usize {
                    Err(NakKind::InvalidRequest)
                } else if len == 0 {
                    // A zero-length WRITE touches no memory, so its R_Key is not checked (IBA o9-...; rxe).
                    Ok(None)
                } else {
                    match checked_range(&self.slots, mem.len(), reth.rkey, reth.va, len) {
                        Ok(at) => {
                            mem[at..at + len].copy_from_slice(req.payload);
                            self.stats.writes += 1;
                            self.stats.write_bytes += len as u64;
                            Ok(None)
                        }
                        Err(k) => Err(k),
                    }
                }
            }
            // No receive queue: a WRITE with immediate would consume a receive WQE that we never post.
            Extension::RethImm(..) => Err(NakKind::InvalidRequest),
            // Without responder resources an RC QP refuses atomics (max_dest_rd_atomic = 0).
            Extension::Atomic(_) if max_atomic == 0 => Err(NakKind::InvalidRequest),
            Extension::Atomic(a) => match checked_range(&self.slots, mem.len(), a.rkey, a.va, 8) {
                Err(k) => Err(k),
                Ok(_) if a.va % 8 != 0 => Err(NakKind::InvalidRequest),
                Ok(at) => {
                    let orig = apply_atomic(req.bth.opcode, &a, &mut mem[at..at + 8]);
                    self.stats.atomics += 1;
                    Ok(Some(orig))
                }
            },
            // is_request() admitted only the four request opcodes above.
            _ => Err(NakKind::InvalidRequest),
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
                qp.remember_atomic(CachedAtomic { psn, orig, msn }, max_atomic);
                self.stats.acks += 1;
                Ok(reply.atomic_ack(out, psn, msn, orig))
            }
            Ok(None) => {
                qp.complete();
                if req.bth.ack_req {
                    self.stats.acks += 1;
                    Ok(reply.ack(out, psn, qp.status.msn))
                } else {
                    Ok(Outcome::Silent)
                }
            }
        }
    }
}

/// Resolves a request's target, mapping a refusal to the NAK it earns.
fn checked_range(
    slots: &[RegionSlot],
    mem_len: usize,
    rkey: u32,
    va: u64,
    len: usize,
) -> Result<usize, NakKind> {
    match resolve(slots, rkey, va, len as u64) {
        // The table and the arena come from the same layout; the second check only guards against a
        // responder handed a different buffer than its table describes.
        Resolve::Ok(at) if at.checked_add(len).is_some_and(|end| end <= mem_len) => Ok(at),
        _ => Err(NakKind::RemoteAccess),
    }
}

/// Runs FETCH_ADD or COMPARE_SWAP on a native-order u64 (what an RDMA NIC does on the host's memory) and
/// returns the value it held before.
fn apply_atomic(opcode: BthOpcode, a: &AtomicEthRepr, target: &mut [u8]) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(target);
    let orig = u64::from_ne_bytes(word);
    let new = match opcode {
        BthOpcode::CompareSwap if orig == a.compare => a.swap_add,
        BthOpcode::CompareSwap => orig,
        _ => orig.wrapping_add(a.swap_add),
    };
    target.copy_from_slice(&new.to_ne_bytes());
    orig
}

/// Builds responses back to the requester of one frame.
struct Reply {
    endpoints: UdpEndpoints,
    dest_qp: u32,
}

impl Reply {
    fn new(req: &FrameRepr<'_>, peer_qpn: u32) -> Self {
        let e = &req.endpoints;
        // Back to the sender, to UDP 4791, from the request's source port so the flow keeps its ECMP path.
        let endpoints = UdpEndpoints {
            dscp: e.dscp,
            ..UdpEndpoints::new(
                e.dst_mac,
                e.src_mac,
                e.dst_ip,
                e.src_ip,
                e.src_port,
                ROCEV2_UDP_PORT,
            )
        };
        Reply {
            endpoints,
            dest_qp: peer_qpn,
        }
    }

    fn emit(&self, out: &mut [u8], f: FrameRepr<'_>) -> Outcome {
        match f.emit(out) {
            Ok(n) => Outcome::Respond(n),
            // Only a too-small output buffer fails here, which is a bug in the caller, not in the frame.
            Err(_) => Outcome::Dropped(DropReason::Malformed),
        }
    }

    fn ack(&self, out: &mut [u8], psn: u32, msn: u32) -> Outcome {
        let aeth = AethRepr {
            kind: AckKind::Ack {
                credits: UNLIMITED_CREDITS,
            },
            msn,
        };
        self.emit(
            out,
            FrameRepr::acknowledge(self.endpoints, self.dest_qp, psn, aeth),
        )
    }

    fn nak(&self, out: &mut [u8], psn: u32, msn: u32, code: NakCode) -> Outcome {
        let aeth = AethRepr {
            kind: AckKind::Nak(code),
            msn,
        };
        self.emit(
            out,
            FrameRepr::acknowledge(self.endpoints, self.dest_qp, psn, aeth),
        )
    }

    fn atomic_ack(&self, out: &mut [u8], psn: u32, msn: u32, orig: u64) -> Outcome {
        let aeth = AethRepr {
            kind: AckKind::Ack {
                credits: UNLIMITED_CREDITS,
            },
            msn,
        };
        let f = FrameRepr::atomic_acknowledge(self.endpoints, self.dest_qp, psn, aeth, orig);
        self.emit(out, f)
    }
}
