//! The responder's fast path: an in-sequence RDMA WRITE ONLY, FETCH & ADD or COMPARE & SWAP that passes
//! every check, which is nearly every frame a translator sends.
//!
//! It takes the envelope through the common case of the one UDP parse (`UdpView::parse_common`), reads
//! the fixed BTH offsets directly, verifies the iCRC from a per-QP cached state over the invariant
//! headers, and answers from a per-QP template (`template.rs`). It makes every check the general path makes, but it does not explain a
//! refusal: at the first thing that is not the common case (IPv4 options, another opcode, a bad key, a
//! PSN out of sequence, a bad iCRC, ...) it returns `None` *before changing anything*, and the general
//! path in `core.rs` handles the frame from scratch, drops and NAKs with their counters included.

use std::ops::Range;

use dta_protocol::roce::bth::opcode as op;
use dta_protocol::roce::{
    at, atomic_eth, bth, reth, AtomicEthRepr, DEFAULT_PKEY, ICRC_LEN, PKEY_PARTITION_MASK,
    ROCEV2_UDP_PORT,
};
use dta_protocol::udp::at as env;
use dta_protocol::udp::{UdpEndpoints, UdpView, IPV4_HEADER_LEN};

use super::checks::{apply_atomic, ipv4_header_ok, write_length_ok};
use super::qp::{CachedAtomic, Qp};
use super::reply::{Outcome, Reply};
use super::state::{Responder, ROCEV2_SOURCE_PORTS};
use super::template::{icrc_ok, reply_key, AckTemplate, EXT_AT};

/// An atomic's target: one aligned `u64`.
const ATOMIC_WORD: usize = core::mem::size_of::<u64>();
/// The shortest RoCE packet in IPv4: IPv4, UDP, BTH, iCRC.
const MIN_TOTAL_LEN: usize = at::EXT - env::IPV4 + ICRC_LEN;

/// The `N` bytes of `h` at `r` (a constant range of `N` bytes: the copy's length check folds away).
#[inline(always)]
fn bytes<const N: usize>(h: &[u8], r: Range<usize>) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&h[r]);
    a
}

#[inline(always)]
fn be16(h: &[u8; EXT_AT], r: Range<usize>) -> u16 {
    u16::from_be_bytes(bytes(h, r))
}

/// What a request will do to memory, decided before anything changes.
enum Work<'m> {
    Write {
        target: &'m mut [u8],
        payload: &'m [u8],
    },
    Atomic {
        target: &'m mut [u8],
        compare_swap: bool,
        eth: AtomicEthRepr,
    },
}

/// Handles `frame` if it is the common case, or returns `None` having changed nothing.
pub(super) fn handle(
    r: &mut Responder,
    frame: &[u8],
    mem: &mut [u8],
    out: &mut [u8],
) -> Option<Outcome> {
    // Every fixed header at once: Ethernet, IPv4 without options, UDP, BTH.
    let h: &[u8; EXT_AT] = frame.get(..EXT_AT)?.try_into().ok()?;
    let total = usize::from(be16(h, env::IPV4_TOTAL_LEN));
    let end = env::IPV4 + total;
    // The general path's RoCE packet ends where UDP's length says, the iCRC where IPv4's does: only take
    // frames where the two agree. Tested before the UDP parse, whose own length tests then fold away.
    if total < MIN_TOTAL_LEN || usize::from(be16(h, env::UDP_LEN)) != total - IPV4_HEADER_LEN {
        return None;
    }
    // What `UdpFrame::parse` accepts, through its common case: IPv4 without options.
    let Ok(Some(udp)) = UdpView::parse_common(frame) else {
        return None;
    };
    if udp.dst_port != ROCEV2_UDP_PORT {
        return None;
    }
    // What Linux checks before rxe: our MAC (broadcast is rare: the general path), the IPv4 header
    // checksum, and no UDP checksum (a non-zero one, rare from a RoCE sender, is the general path's to
    // verify).
    if r.config.local_mac.is_some_and(|mac| h[env::ETH_DST] != mac)
        || !h[env::IPV4..env::UDP].try_into().is_ok_and(ipv4_header_ok)
        || be16(h, env::UDP_CHECKSUM) != 0
    {
        return None;
    }
    let (src_ip, dst_ip) = (udp.src_ip, udp.dst_ip);
    if r.config.local_ip.is_some_and(|ip| ip != dst_ip) {
        return None;
    }
    // The BTH through its view, over a slice of constant length: its accessors' checks fold away.
    let bth = bth::Packet::new_unchecked(&h[at::BTH..at::EXT]);
    let opcode = bth.opcode();
    if !matches!(opcode, op::WRITE_ONLY | op::FETCH_ADD | op::COMPARE_SWAP)
        || bth.pkey() & PKEY_PARTITION_MASK != DEFAULT_PKEY & PKEY_PARTITION_MASK
    {
        return None;
    }
    let pad = bth.pad_count();
    let dest_qp = bth.dest_qp();
    let ack_req = bth.ack_req();
    let psn = bth.psn();

    let Responder {
        config,
        bounds,
        qps,
        stats,
        ..
    } = r;
    let qp = qps.get_mut(dest_qp)?;
    if qp.status.peer_ip != src_ip
        || !ROCEV2_SOURCE_PORTS.contains(&udp.src_port)
        || qp.status.error
        || psn != qp.status.expected_psn
    {
        return None;
    }
    let icrc_at = end - ICRC_LEN;
    let rest = frame.get(at::EXT..icrc_at)?;
    let mem_len = mem.len();
    let max_atomic = config.max_dest_rd_atomic as usize;
    let work = if opcode == op::WRITE_ONLY {
        let (e, data) = rest.split_first_chunk::<{ reth::HEADER_LEN }>()?;
        let e = reth::Packet::new_unchecked(e);
        let (va, rkey, len) = (e.va(), e.rkey(), e.dma_len() as usize);
        let payload = data.get(..data.len().checked_sub(usize::from(pad))?)?;
        // A zero-length WRITE skips the R_Key check: rare, left to the general path.
        if len == 0 {
            return None;
        }
        let addr = bounds.resolve(mem_len, rkey, va, len)?;
        if !write_length_ok(len, payload.len(), pad, config.path_mtu as usize) {
            return None;
        }
        // `resolve` vouched for `len` bytes at `addr`, and the payload is at most `len` long.
        let target = mem.get_mut(addr..addr + payload.len())?;
        Work::Write { target, payload }
    } else {
        if max_atomic == 0 {
            return None;
        }
        let e =
            atomic_eth::Packet::new_unchecked(rest.first_chunk::<{ atomic_eth::HEADER_LEN }>()?);
        let eth = AtomicEthRepr {
            va: e.va(),
            rkey: e.rkey(),
            swap_add: e.swap_add(),
            compare: e.compare(),
        };
        let addr = bounds.resolve(mem_len, eth.rkey, eth.va, ATOMIC_WORD)?;
        if eth.va % ATOMIC_WORD as u64 != 0 {
            return None;
        }
        let target = mem.get_mut(addr..addr + ATOMIC_WORD)?;
        Work::Atomic {
            target,
            compare_swap: opcode == op::COMPARE_SWAP,
            eth,
        }
    };
    // Last of the checks, as it is the dearest; the general path checks it first, which only matters for
    // which reason a frame with several faults is dropped under, and such a frame is not handled here.
    if !icrc_ok(&mut qp.cache.rx_icrc, frame, icrc_at) {
        return None;
    }

    // Decided: from here on the request is carried out, exactly as the general path does.
    stats.frames_by_opcode[usize::from(opcode)] += 1;
    qp.status.nak_sent = false;
    Some(match work {
        Work::Write { target, payload } => {
            // One 8-byte entry is the common WRITE (Key-Write, N = 1, D = 4): a move, not a memcpy call.
            match (
                <&mut [u8; 8]>::try_from(&mut *target),
                <&[u8; 8]>::try_from(payload),
            ) {
                (Ok(t), Ok(p)) => *t = *p,
                _ => target.copy_from_slice(payload),
            }
            stats.writes += 1;
            stats.write_bytes += payload.len() as u64;
            qp.complete();
            if ack_req {
                stats.acks += 1;
                let msn = qp.status.msn;
                respond(qp, h, out, false, psn, msn, 0)
            } else {
                Outcome::Silent
            }
        }
        Work::Atomic {
            target,
            compare_swap,
            eth,
        } => {
            let orig = apply_atomic(compare_swap, &eth, target);
            stats.atomics += 1;
            qp.complete();
            let msn = qp.status.msn;
            qp.remember_atomic(CachedAtomic { psn, orig }, max_atomic);
            stats.acks += 1;
            respond(qp, h, out, true, psn, msn, orig)
        }
    })
}

/// Writes the ACK (or ATOMIC ACK) from the QP's template, building the template first when this
/// requester's addresses differ from the last one's.
fn respond(
    qp: &mut Qp,
    h: &[u8; EXT_AT],
    out: &mut [u8],
    atomic: bool,
    psn: u32,
    msn: u32,
    orig: u64,
) -> Outcome {
    let peer_qpn = qp.status.peer_qpn;
    let slot = match atomic {
        true => &mut qp.cache.atomic_ack,
        false => &mut qp.cache.ack,
    };
    if let Some(t) = slot.as_deref() {
        if t.fits(h, atomic) {
            return t.write(out, psn, msn, orig);
        }
    }
    let key = reply_key(h);
    let reply = Reply::new(&request_endpoints(h), peer_qpn);
    match key.and_then(|k| AckTemplate::new(k, &reply, atomic)) {
        Some(t) => {
            let o = t.write(out, psn, msn, orig);
            *slot = Some(Box::new(t));
            o
        }
        None if atomic => reply.atomic_ack(out, psn, msn, orig),
        None => reply.ack(out, psn, msn),
    }
}

/// The request's envelope, as `UdpFrame::parse` reads it (only for building a template).
fn request_endpoints(h: &[u8; EXT_AT]) -> UdpEndpoints {
    let tos = h[env::IPV4_TOS];
    UdpEndpoints {
        dst_mac: bytes(h, env::ETH_DST),
        src_mac: bytes(h, env::ETH_SRC),
        src_ip: bytes(h, env::IPV4_SRC),
        dst_ip: bytes(h, env::IPV4_DST),
        src_port: be16(h, env::UDP_SRC_PORT),
        dst_port: be16(h, env::UDP_DST_PORT),
        dscp: tos >> DSCP_SHIFT,
        ecn: tos & ECN_MASK,
        ip_id: be16(h, env::IPV4_ID),
        ttl: h[env::IPV4_TTL],
    }
}

/// The TOS byte: DSCP in the high six bits, ECN in the low two.
const DSCP_SHIFT: u32 = 2;
const ECN_MASK: u8 = 0x3;

#[cfg(test)]
#[path = "fast_tests.rs"]
mod tests;
