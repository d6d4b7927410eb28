//! Reading a request frame the way rxe's receive path does: the iCRC and the BTH first, then only the
//! headers the opcode needs. Lengths are *not* judged here (a WRITE whose payload differs from its RETH
//! DMA length is a request to refuse with a NAK, not a frame to drop), which is why the responder does not
//! use `FrameRepr::parse`: that is the strict parser for frames dta itself sends and consumes.

use dta_protocol::roce::bth::opcode as op;
use dta_protocol::roce::frame::IMM_LEN;
use dta_protocol::roce::{
    atomic_eth, bth, icrc, reth, AtomicEthRepr, RethRepr, ICRC_LEN, QPN_MASK,
};
use dta_protocol::udp::{UdpEndpoints, UdpFrame, HEADERS_LEN};

use super::stats::DropReason;

/// What a request asks for, as far as the responder's decisions go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Body<'a> {
    /// RDMA WRITE ONLY: its RETH, the payload without pad, and the BTH pad count.
    WriteOnly {
        reth: RethRepr,
        payload: &'a [u8],
        pad: u8,
    },
    /// FETCH & ADD or COMPARE & SWAP.
    Atomic {
        compare_swap: bool,
        eth: AtomicEthRepr,
    },
    /// RDMA READ REQUEST. The collector grants no remote read.
    Read,
    /// A request that consumes a receive WQE (SEND FIRST or ONLY, WRITE ONLY with immediate). The
    /// collector never posts receives.
    NeedsReceive,
    /// The MIDDLE or LAST packet of a SEND or WRITE without its FIRST (the responder never accepts a FIRST,
    /// so every MIDDLE and LAST is one).
    MissingFirst,
    /// RDMA WRITE FIRST: the start of a multi-packet write, which dta never sends (DESIGN.md section 4).
    WriteFirst,
}

/// A request frame's BTH and body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Request<'a> {
    pub endpoints: UdpEndpoints,
    pub opcode: u8,
    pub pkey: u16,
    pub dest_qp: u32,
    pub ack_req: bool,
    pub psn: u32,
    pub body: Body<'a>,
}

/// Parses a RoCEv2 frame addressed to us (UDP already checked) into a request, or says why it is dropped.
/// `count` sees the opcode of every frame whose iCRC and BTH are sound.
pub(crate) fn parse<'a>(
    udp: &UdpFrame<'a>,
    frame: &'a [u8],
    mut count: impl FnMut(u8),
) -> Result<Request<'a>, DropReason> {
    if udp.payload_offset != HEADERS_LEN {
        // IPv4 options: never sent by a RoCEv2 requester.
        return Err(DropReason::Malformed);
    }
    match icrc::verify(frame) {
        Ok(()) => {}
        Err(dta_protocol::Error::IcrcMismatch { .. }) => return Err(DropReason::Icrc),
        Err(_) => return Err(DropReason::Malformed),
    }
    let roce = udp.payload;
    if roce.len() < bth::HEADER_LEN + ICRC_LEN {
        return Err(DropReason::Malformed);
    }
    let b = bth::Packet::new_unchecked(roce);
    let opcode = b.opcode();
    count(opcode);
    let rest = &roce[bth::HEADER_LEN..roce.len() - ICRC_LEN];
    let need = |n: usize| {
        if rest.len() < n {
            Err(DropReason::Malformed)
        } else {
            Ok(())
        }
    };
    let body = match opcode {
        op::WRITE_ONLY => {
            let r = RethRepr::parse(
                &reth::Packet::new_checked(rest).map_err(|_| DropReason::Malformed)?,
            )
            .map_err(|_| DropReason::Malformed)?;
            let data = &rest[reth::HEADER_LEN..];
            let pad = b.pad_count();
            if usize::from(pad) > data.len() {
                return Err(DropReason::Malformed);
            }
            Body::WriteOnly {
                reth: r,
                payload: &data[..data.len() - usize::from(pad)],
                pad,
            }
        }
        op::FETCH_ADD | op::COMPARE_SWAP => {
            let eth = AtomicEthRepr::parse(
                &atomic_eth::Packet::new_checked(rest).map_err(|_| DropReason::Malformed)?,
            )
            .map_err(|_| DropReason::Malformed)?;
            Body::Atomic {
                compare_swap: opcode == op::COMPARE_SWAP,
                eth,
            }
        }
        op::READ_REQUEST => {
            need(reth::HEADER_LEN)?;
            Body::Read
        }
        op::WRITE_FIRST => {
            need(reth::HEADER_LEN)?;
            Body::WriteFirst
        }
        op::WRITE_ONLY_IMM => {
            need(reth::HEADER_LEN + IMM_LEN)?;
            Body::NeedsReceive
        }
        op::SEND_FIRST | op::SEND_ONLY => Body::NeedsReceive,
        op::SEND_ONLY_IMM | op::SEND_ONLY_INV => {
            need(IMM_LEN)?;
            Body::NeedsReceive
        }
        op::SEND_MIDDLE | op::SEND_LAST | op::WRITE_MIDDLE | op::WRITE_LAST => Body::MissingFirst,
        op::SEND_LAST_IMM | op::SEND_LAST_INV | op::WRITE_LAST_IMM => {
            need(IMM_LEN)?;
            Body::MissingFirst
        }
        op::READ_RESPONSE_FIRST..=op::ATOMIC_ACKNOWLEDGE | op::CNP => {
            return Err(DropReason::NotRequest)
        }
        // Other transports (UC, UD, ...) and reserved opcodes: an RC QP drops them, as rxe does.
        _ => return Err(DropReason::UnsupportedOpcode),
    };
    Ok(Request {
        endpoints: udp.endpoints,
        opcode,
        pkey: b.pkey(),
        dest_qp: b.dest_qp() & QPN_MASK,
        ack_req: b.ack_req(),
        psn: b.psn(),
        body,
    })
}
