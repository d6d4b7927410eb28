//! RoCE responses at fixed offsets: the one reading of an ACKNOWLEDGE or ATOMIC ACKNOWLEDGE.
//!
//! A requester sees one ACKNOWLEDGE per AckReq and one ATOMIC ACKNOWLEDGE per FETCH_ADD (Key-Increment:
//! one per report), so a response's few fields are read straight from their offsets ([`read`]) instead
//! of through the checked views. Every parse of a response comes here: [`FrameRepr::parse`] and
//! [`FrameRepr::parse_udp`] (through `parse_roce`, with the reason of a refusal) and the requester's
//! [`FrameRepr::parse_ack_cached`] (its fields only, without the reason). A test compares them with a
//! model that reads responses through the views.

use crate::field::{get_u16, get_u64};
use crate::refusal::{ensure, Quiet, Refusal};
use crate::roce::{
    aeth, atomic_ack_eth, bth, icrc, AckKind, AethRepr, AtomicAckEthRepr, BthOpcode, BthRepr,
    Extension, FrameRepr, ResponseIcrc, ICRC_LEN, PSN_MASK, QPN_MASK, ROCEV2_UDP_PORT,
};
use crate::udp::{UdpEndpoints, UdpFrame, HEADERS_LEN};
use crate::{Error, Result};

/// Bytes after the UDP header of a well-formed ACKNOWLEDGE: BTH, AETH, iCRC.
const ACK_LEN: usize = bth::HEADER_LEN + aeth::HEADER_LEN + ICRC_LEN;
/// ... and of an ATOMIC ACKNOWLEDGE: BTH, AETH, AtomicAckETH, iCRC.
const ATOMIC_ACK_LEN: usize = ACK_LEN + atomic_ack_eth::HEADER_LEN;

// Where `read` and `repr` read, from the headers' field tables (offsets in the UDP payload).
/// The big-endian word ending with the BTH's destination QP (its top byte is the FECN/BECN byte).
const QP_WORD: usize = bth::field::DEST_QP.end - 4;
/// The AckReq/PSN word (AckReq in the top bit).
const PSN_WORD: usize = bth::field::ACK_REQ;
/// The AtomicAckETH's original remote data.
const ORIG: core::ops::Range<usize> = crate::udp::at::shift(
    atomic_ack_eth::field::ORIG,
    bth::HEADER_LEN + aeth::HEADER_LEN,
);
/// Transport version and pad count, both 0 in a response (it carries no payload to pad).
const TVER_PAD_MASK: u8 =
    bth::field::TVER_MASK | bth::field::PAD_COUNT_MASK << bth::field::PAD_COUNT_SHIFT;
/// AckReq in the AckReq/PSN word.
const ACK_REQ_WORD_BIT: u32 = (bth::field::ACK_REQ_BIT as u32) << 24;
const _: () = {
    assert!(bth::field::DEST_QP.end - bth::field::DEST_QP.start == 3);
    assert!(PSN_WORD == QP_WORD + 4 && bth::field::PSN.end == PSN_WORD + 4);
    // The AETH read as one word: the syndrome in the top byte, the MSN below.
    assert!(aeth::field::SYNDROME == 0 && aeth::field::MSN.start == 1 && aeth::HEADER_LEN == 4);
    // `read` finds the AtomicAckETH where an ACKNOWLEDGE's iCRC would be: right after the AETH.
    assert!(ORIG.start == ACK_LEN - ICRC_LEN && ORIG.end + ICRC_LEN == ATOMIC_ACK_LEN);
};

impl<'a> FrameRepr<'a> {
    /// [`parse`](Self::parse) of `frame` whose UDP layer the caller has already parsed into `udp` (with
    /// [`UdpFrame::parse`]), so it is not parsed twice.
    pub fn parse_udp(frame: &'a [u8], udp: &UdpFrame<'a>) -> Result<Self> {
        Self::parse_udp_with(frame, udp, icrc::verify)
    }

    /// [`parse_udp`](Self::parse_udp) with the iCRC verified through `icrc`, which remembers the CRC of
    /// the responder's constant headers: the same result.
    #[inline]
    pub fn parse_udp_cached(
        frame: &'a [u8],
        udp: &UdpFrame<'a>,
        icrc: &mut ResponseIcrc,
    ) -> Result<Self> {
        Self::parse_udp_with(frame, udp, |f| icrc.verify(f))
    }

    #[inline]
    fn parse_udp_with(
        frame: &'a [u8],
        udp: &UdpFrame<'a>,
        verify: impl FnOnce(&[u8]) -> Result<()>,
    ) -> Result<Self> {
        if udp.endpoints.dst_port != ROCEV2_UDP_PORT {
            return Err(Error::NotRoce("UDP destination port is not 4791"));
        }
        if udp.payload_offset != HEADERS_LEN {
            return Err(Error::NotRoce("IPv4 options"));
        }
        verify(frame)?;
        Self::parse_roce(udp.endpoints, udp.payload)
    }
}

/// The fields of a well-formed ACKNOWLEDGE or ATOMIC ACKNOWLEDGE that a requester acts on: what
/// [`FrameRepr::parse_ack_cached`] hands out instead of a whole [`FrameRepr`] (its BTH's destination QP
/// and PSN, its AETH, and an ATOMIC ACKNOWLEDGE's original remote data).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AckFields {
    /// The BTH's destination QP.
    pub dest_qp: u32,
    /// The BTH's PSN.
    pub psn: u32,
    /// The AETH.
    pub aeth: AethRepr,
    /// An ATOMIC ACKNOWLEDGE's original remote data; `None` for an ACKNOWLEDGE.
    pub orig: Option<u64>,
}

impl AckFields {
    /// The fields of `f`, when it is an ACKNOWLEDGE or ATOMIC ACKNOWLEDGE (for tests and callers that
    /// compare both paths).
    pub fn of(f: &FrameRepr<'_>) -> Option<Self> {
        let (aeth, orig) = match (f.bth.opcode, f.ext) {
            (BthOpcode::Acknowledge, Extension::Aeth(a)) => (a, None),
            (BthOpcode::AtomicAcknowledge, Extension::AtomicAck(a, o)) => {
                (a, Some(o.orig_remote_data))
            }
            _ => return None,
        };
        Some(AckFields {
            dest_qp: f.bth.dest_qp,
            psn: f.bth.psn,
            aeth,
            orig,
        })
    }
}

impl FrameRepr<'_> {
    /// [`parse_udp_cached`](Self::parse_udp_cached) of a RoCEv2 datagram (UDP destination port 4791,
    /// which the caller has checked) whose UDP payload `roce` starts at `payload_offset` of `frame`, for
    /// a well-formed ACKNOWLEDGE or ATOMIC ACKNOWLEDGE only: `Some` of its result (its fields, or the
    /// iCRC error), without building the UDP layer's endpoints or the whole repr; `None` for any other
    /// frame, which `parse_udp_cached` then answers. A property test checks that whenever this answers,
    /// `parse_udp_cached` answers the same.
    #[inline]
    pub fn parse_ack_cached(
        frame: &[u8],
        payload_offset: usize,
        roce: &[u8],
        icrc: &mut ResponseIcrc,
    ) -> Option<Result<AckFields>> {
        // `parse_udp_with`'s order is: options, iCRC, response; reading the response before the iCRC
        // changes nothing, since a frame that does not read is left to it (which verifies first).
        if payload_offset != HEADERS_LEN {
            return None;
        }
        let r = read::<Quiet>(roce)?.ok()?;
        if let Err(e) = icrc.verify(frame) {
            return Some(Err(e));
        }
        // The destination QP and AckReq/PSN words in one load.
        let (dest_qp, ack_psn) = be32_pair(r.head, QP_WORD);
        Some(Ok(AckFields {
            dest_qp: dest_qp & QPN_MASK,
            psn: ack_psn & PSN_MASK,
            aeth: r.aeth,
            orig: match r.opcode {
                BthOpcode::Acknowledge => None,
                _ => Some(r.orig),
            },
        }))
    }
}

/// What [`read`] found in a well-formed response: everything [`Fixed::repr`] needs, checked.
#[derive(Clone, Copy)]
pub(super) struct Fixed<'a> {
    opcode: BthOpcode,
    head: &'a [u8; ACK_LEN],
    aeth: AethRepr,
    /// The AtomicAckETH's original remote data (ATOMIC ACKNOWLEDGE only).
    orig: u64,
}

/// The response in the UDP payload `roce`, a RoCE packet whose iCRC is the caller's to verify: `None`
/// when it is not an ACKNOWLEDGE or ATOMIC ACKNOWLEDGE (by its opcode byte), else the response or why it
/// is malformed (`M`).
///
/// The checks are the layered ones of the views, in their order (BTH length, transport version, the
/// packet's length, AETH length, syndrome, AtomicAckETH length, pad count, no payload), so the reason is
/// the first a reading through the views finds. Without reasons the exact length goes first, which
/// folds every later length test away: a response is then its opcode and length, one flags byte and a
/// syndrome. The fields are read as whole big-endian words from fixed-size arrays (no bounds checks):
/// the header views' 3-byte getters were out-of-line calls here.
#[inline(always)]
pub(super) fn read<M: Refusal>(roce: &[u8]) -> Option<core::result::Result<Fixed<'_>, M::Err>> {
    // One specialisation per opcode, so that each one's lengths are constants.
    Some(match roce.first().copied()? {
        bth::opcode::ACKNOWLEDGE => fixed::<M, false>(roce),
        bth::opcode::ATOMIC_ACKNOWLEDGE => fixed::<M, true>(roce),
        _ => return None,
    })
}

/// [`read`] of an ACKNOWLEDGE, or with `ATOMIC` an ATOMIC ACKNOWLEDGE.
#[inline(always)]
fn fixed<M: Refusal, const ATOMIC: bool>(roce: &[u8]) -> core::result::Result<Fixed<'_>, M::Err> {
    let (opcode, exact) = match ATOMIC {
        true => (BthOpcode::AtomicAcknowledge, ATOMIC_ACK_LEN),
        false => (BthOpcode::Acknowledge, ACK_LEN),
    };
    let len = roce.len();
    // Without reasons, what a well-formed response must be comes first: its exact length, transport
    // version 0 and pad count 0 (it carries no payload to pad), so that the layered tests below fold.
    if !M::REASONS && len != exact {
        return Err(M::refuse(|| Error::mismatch("RoCEv2 packet", exact, len)));
    }
    let Some(b) = roce.first_chunk::<{ bth::HEADER_LEN }>() else {
        return Err(M::refuse(|| Error::truncated("BTH", bth::HEADER_LEN, len)));
    };
    let flags = b[bth::field::FLAGS];
    if !M::REASONS && flags & TVER_PAD_MASK != 0 {
        return Err(M::refuse(|| Error::InvalidField {
            header: "BTH",
            field: "transport version or pad count",
            value: flags.into(),
        }));
    }
    let tver = flags & bth::field::TVER_MASK;
    ensure::<M>(tver == 0, || Error::InvalidField {
        header: "BTH",
        field: "transport version",
        value: tver.into(),
    })?;
    // The packet after the BTH, less the iCRC.
    let Some(after) = roce.get(bth::HEADER_LEN..len.saturating_sub(ICRC_LEN)) else {
        return Err(M::refuse(|| {
            Error::truncated("RoCEv2 packet", bth::HEADER_LEN + ICRC_LEN, len)
        }));
    };
    let Some(aeth) = after.first_chunk::<{ aeth::HEADER_LEN }>() else {
        return Err(M::refuse(|| {
            Error::truncated("AETH", aeth::HEADER_LEN, after.len())
        }));
    };
    let aeth_word = u32::from_be_bytes(*aeth);
    let syndrome = (aeth_word >> 24) as u8;
    let kind = if syndrome >> 5 == 0 {
        // An ACK, every response but a NAK: `from_syndrome`'s first case without its match.
        AckKind::Ack { credits: syndrome }
    } else {
        AckKind::from_syndrome(syndrome).map_err(|e| M::refuse(|| e))?
    };
    let (ext_len, orig) = match ATOMIC {
        true => {
            // The AtomicAckETH starts where an ACKNOWLEDGE's iCRC would.
            let rest = &after[aeth::HEADER_LEN..];
            let Some(o) = rest.first_chunk::<{ atomic_ack_eth::HEADER_LEN }>() else {
                return Err(M::refuse(|| {
                    Error::truncated("AtomicAckETH", atomic_ack_eth::HEADER_LEN, rest.len())
                }));
            };
            (ACK_LEN - ICRC_LEN + atomic_ack_eth::HEADER_LEN, get_u64(o))
        }
        false => (ACK_LEN - ICRC_LEN, 0),
    };
    // What follows the extension headers (before the iCRC): nothing, as a response carries no payload,
    // and so no pad either.
    let body = len - ICRC_LEN - ext_len;
    let pad = usize::from((flags >> bth::field::PAD_COUNT_SHIFT) & bth::field::PAD_COUNT_MASK);
    ensure::<M>(pad <= body, || Error::mismatch("BTH pad count", pad, body))?;
    ensure::<M>(body == 0, || Error::mismatch("RoCEv2 packet", 0, body))?;
    let Some(head) = roce.first_chunk::<ACK_LEN>() else {
        return Err(M::refuse(|| Error::mismatch("RoCEv2 packet", exact, len)));
    };
    Ok(Fixed {
        opcode,
        head,
        aeth: AethRepr {
            kind,
            msn: aeth_word & PSN_MASK,
        },
        orig,
    })
}

impl Fixed<'_> {
    /// The repr of the response, with the envelope `endpoints`.
    // Always inlined: out of line, the ~90-byte `FrameRepr` went back through two more copies.
    #[inline(always)]
    pub(super) fn repr<'a>(self, endpoints: UdpEndpoints) -> FrameRepr<'a> {
        let head = self.head;
        let ext = match self.opcode {
            BthOpcode::Acknowledge => Extension::Aeth(self.aeth),
            _ => Extension::AtomicAck(
                self.aeth,
                AtomicAckEthRepr {
                    orig_remote_data: self.orig,
                },
            ),
        };
        let (flags, becn_fecn) = (head[bth::field::FLAGS], head[bth::field::BECN_FECN]);
        let ack_psn = be32(head, PSN_WORD);
        FrameRepr {
            endpoints,
            bth: BthRepr {
                opcode: self.opcode,
                solicited: flags & bth::field::SOLICITED_BIT != 0,
                mig_req: flags & bth::field::MIG_REQ_BIT != 0,
                pad_count: 0,
                pkey: get_u16(&head[bth::field::PKEY]),
                fecn: becn_fecn & bth::field::FECN_BIT != 0,
                becn: becn_fecn & bth::field::BECN_BIT != 0,
                dest_qp: be32(head, QP_WORD) & QPN_MASK,
                ack_req: ack_psn & ACK_REQ_WORD_BIT != 0,
                psn: ack_psn & PSN_MASK,
            },
            ext,
            payload: &[],
        }
    }
}

/// The big-endian word at `at` of a response's fixed part.
#[inline(always)]
fn be32(b: &[u8; ACK_LEN], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The big-endian words at `at` and `at + 4` of a response's fixed part, in one 8-byte load (two
/// masked words read apart were narrowed to byte and half-word loads, ~6 instructions each).
#[inline(always)]
fn be32_pair(b: &[u8; ACK_LEN], at: usize) -> (u32, u32) {
    let w = u64::from_be_bytes([
        b[at],
        b[at + 1],
        b[at + 2],
        b[at + 3],
        b[at + 4],
        b[at + 5],
        b[at + 6],
        b[at + 7],
    ]);
    ((w >> 32) as u32, w as u32)
}

#[cfg(test)]
mod tests;
