//! The responder's fast path: an in-sequence RDMA WRITE ONLY, FETCH & ADD or COMPARE & SWAP that passes
//! every check, which is nearly every frame a translator sends.
//!
//! It reads the fixed Ethernet/IPv4/UDP/BTH offsets directly instead of going through `etherparse`,
//! verifies the iCRC from a per-QP cached state over the invariant headers, and answers from a per-QP
//! template (`template.rs`). It makes every check the general path makes, but it does not explain a
//! refusal: at the first thing that is not the common case (IPv4 options, another opcode, a bad key, a
//! PSN out of sequence, a bad iCRC, ...) it returns `None` *before changing anything*, and the general
//! path in `core.rs` handles the frame from scratch, drops and NAKs with their counters included.

use dta_protocol::roce::bth::opcode as op;
use dta_protocol::roce::{
    atomic_eth, bth, reth, AtomicEthRepr, DEFAULT_PKEY, ICRC_LEN, PKEY_PARTITION_MASK,
    ROCEV2_UDP_PORT,
};
use dta_protocol::udp::{UdpEndpoints, ETHERTYPE_IPV4, ETH_HEADER_LEN, IPV4_HEADER_LEN};

use super::checks::{apply_atomic, ipv4_header_ok, write_length_ok};
use super::qp::{CachedAtomic, Qp};
use super::reply::{Outcome, Reply};
use super::state::{Responder, ROCEV2_SOURCE_PORTS};
use super::template::{icrc_ok, reply_key, AckTemplate, BTH_AT, EXT_AT};

/// The IPv4 header.
const IP: usize = ETH_HEADER_LEN;
/// The UDP header.
const UDP: usize = IP + IPV4_HEADER_LEN;
/// IPv4 version 4, IHL 5: no options (the general path drops options as malformed).
const VERSION_IHL: u8 = 0x45;
/// IPv4 flags and fragment offset without DF: MF and the offset, which make a fragment.
const FRAGMENT_BITS: u16 = 0x3FFF;
const IP_PROTO_UDP: u8 = 17;
/// The shortest RoCE packet in IPv4: IPv4, UDP, BTH, iCRC.
const MIN_TOTAL_LEN: usize = IPV4_HEADER_LEN + 8 + bth::HEADER_LEN + ICRC_LEN;

#[inline]
fn be16(h: &[u8; EXT_AT], at: usize) -> u16 {
    u16::from_be_bytes([h[at], h[at + 1]])
}

#[inline]
fn be24(h: &[u8; EXT_AT], at: usize) -> u32 {
    u32::from_be_bytes([0, h[at], h[at + 1], h[at + 2]])
}

#[inline]
fn ip4(h: &[u8; EXT_AT], at: usize) -> [u8; 4] {
    [h[at], h[at + 1], h[at + 2], h[at + 3]]
}

/// Reads a big-endian integer of `N` bytes from a slice that the caller sized.
#[inline]
fn be_bytes<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[at..at + N]);
    a
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
    // What `UdpFrame::parse` accepts with its payload right after a 20-byte IPv4 header.
    if be16(h, 12) != ETHERTYPE_IPV4
        || h[IP] != VERSION_IHL
        || be16(h, IP + 6) & FRAGMENT_BITS != 0
        || h[IP + 9] != IP_PROTO_UDP
    {
        return None;
    }
    let total = usize::from(be16(h, IP + 2));
    let end = IP + total;
    // The general path's RoCE packet ends where UDP's length says, the iCRC where IPv4's does: only take
    // frames where the two agree.
    if end > frame.len()
        || total < MIN_TOTAL_LEN
        || usize::from(be16(h, UDP + 4)) != total - IPV4_HEADER_LEN
        || be16(h, UDP + 2) != ROCEV2_UDP_PORT
    {
        return None;
    }
    // What Linux checks before rxe: our MAC (broadcast is rare: the general path), the IPv4 header
    // checksum, and no UDP checksum (a non-zero one, rare from a RoCE sender, is the general path's to
    // verify).
    if r.config.local_mac.is_some_and(|mac| h[..6] != mac)
        || !h[IP..UDP].try_into().is_ok_and(ipv4_header_ok)
        || be16(h, UDP + 6) != 0
    {
        return None;
    }
    let (src_ip, dst_ip) = (ip4(h, IP + 12), ip4(h, IP + 16));
    if r.config.local_ip.is_some_and(|ip| ip != dst_ip) {
        return None;
    }
    let opcode = h[BTH_AT];
    if !matches!(opcode, op::WRITE_ONLY | op::FETCH_ADD | op::COMPARE_SWAP)
        || be16(h, BTH_AT + 2) & PKEY_PARTITION_MASK != DEFAULT_PKEY & PKEY_PARTITION_MASK
    {
        return None;
    }
    let pad = (h[BTH_AT + 1] >> 4) & 0x3;
    let dest_qp = be24(h, BTH_AT + 5);
    let ack_req = h[BTH_AT + 8] & 0x80 != 0;
    let psn = be24(h, BTH_AT + 9);

    let Responder {
        config,
        bounds,
        qps,
        stats,
        ..
    } = r;
    let qp = qps.get_mut(dest_qp)?;
    if qp.status.peer_ip != src_ip
        || !ROCEV2_SOURCE_PORTS.contains(&be16(h, UDP))
        || qp.status.error
        || psn != qp.status.expected_psn
    {
        return None;
    }
    let icrc_at = end - ICRC_LEN;
    let rest = frame.get(EXT_AT..icrc_at)?;
    let mem_len = mem.len();
    let max_atomic = config.max_dest_rd_atomic as usize;
    let work = if opcode == op::WRITE_ONLY {
        let e = rest.get(..reth::HEADER_LEN)?;
        let va = u64::from_be_bytes(be_bytes(e, 0));
        let rkey = u32::from_be_bytes(be_bytes(e, 8));
        let len = u32::from_be_bytes(be_bytes(e, 12)) as usize;
        let data = &rest[reth::HEADER_LEN..];
        let payload = data.get(..data.len().checked_sub(usize::from(pad))?)?;
        // A zero-length WRITE skips the R_Key check: rare, left to the general path.
        if len == 0 {
            return None;
        }
        let at = bounds.resolve(mem_len, rkey, va, len)?;
        if !write_length_ok(len, payload.len(), pad, config.path_mtu as usize) {
            return None;
        }
        // `resolve` vouched for `len` bytes at `at`, and the payload is at most `len` long.
        let target = mem.get_mut(at..at + payload.len())?;
        Work::Write { target, payload }
    } else {
        if max_atomic == 0 {
            return None;
        }
        let e = rest.get(..atomic_eth::HEADER_LEN)?;
        let eth = AtomicEthRepr {
            va: u64::from_be_bytes(be_bytes(e, 0)),
            rkey: u32::from_be_bytes(be_bytes(e, 8)),
            swap_add: u64::from_be_bytes(be_bytes(e, 12)),
            compare: u64::from_be_bytes(be_bytes(e, 20)),
        };
        let at = bounds.resolve(mem_len, eth.rkey, eth.va, 8)?;
        if eth.va % 8 != 0 {
            return None;
        }
        let target = mem.get_mut(at..at + 8)?;
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
    let tos = h[IP + 1];
    UdpEndpoints {
        dst_mac: [h[0], h[1], h[2], h[3], h[4], h[5]],
        src_mac: [h[6], h[7], h[8], h[9], h[10], h[11]],
        src_ip: ip4(h, IP + 12),
        dst_ip: ip4(h, IP + 16),
        src_port: be16(h, UDP),
        dst_port: be16(h, UDP + 2),
        dscp: tos >> 2,
        ecn: tos & 0x3,
        ip_id: be16(h, IP + 4),
        ttl: h[IP + 8],
    }
}

#[cfg(test)]
#[path = "fast_tests.rs"]
mod tests;
