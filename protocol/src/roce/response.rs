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
        return Err(M::refuse(|| mismatch("RoCEv2 packet", exact, len)));
    }
    let Some(b) = roce.first_chunk::<{ bth::HEADER_LEN }>() else {
        return Err(M::refuse(|| truncated("BTH", bth::HEADER_LEN, len)));
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
            truncated("RoCEv2 packet", bth::HEADER_LEN + ICRC_LEN, len)
        }));
    };
    let Some(aeth) = after.first_chunk::<{ aeth::HEADER_LEN }>() else {
        return Err(M::refuse(|| {
            truncated("AETH", aeth::HEADER_LEN, after.len())
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
                    truncated("AtomicAckETH", atomic_ack_eth::HEADER_LEN, rest.len())
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
    ensure::<M>(pad <= body, || mismatch("BTH pad count", pad, body))?;
    ensure::<M>(body == 0, || mismatch("RoCEv2 packet", 0, body))?;
    let Some(head) = roce.first_chunk::<ACK_LEN>() else {
        return Err(M::refuse(|| mismatch("RoCEv2 packet", exact, len)));
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

fn truncated(header: &'static str, needed: usize, available: usize) -> Error {
    Error::Truncated {
        header,
        needed,
        available,
    }
}

fn mismatch(header: &'static str, expected: usize, actual: usize) -> Error {
    Error::LengthMismatch {
        header,
        expected,
        actual,
    }
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
mod tests {
    use super::*;
    use crate::roce::NakCode;
    use crate::udp::UdpEndpoints;
    use proptest::prelude::*;

    fn responses() -> Vec<Vec<u8>> {
        let ep = UdpEndpoints::new([2; 6], [4; 6], [10, 0, 0, 2], [10, 0, 0, 1], 49152, 4791);
        let kinds = [
            AckKind::Ack { credits: 31 },
            AckKind::RnrNak { timer: 3 },
            AckKind::Nak(NakCode::PsnSequenceError),
            AckKind::Nak(NakCode::RemoteAccessError),
        ];
        let mut out = Vec::new();
        for (k, kind) in kinds.into_iter().enumerate() {
            let aeth = AethRepr {
                kind,
                msn: 0xAB_CDEF - k as u32,
            };
            let psn = 0xFF_FFF0 + k as u32;
            for f in [
                FrameRepr::acknowledge(ep, 0x11, psn, aeth),
                FrameRepr::atomic_acknowledge(ep, 0x11, psn, aeth, 0x0123_4567_89AB_CDEF),
            ] {
                let mut buf = vec![0u8; f.buffer_len()];
                f.emit(&mut buf).unwrap();
                out.push(buf);
            }
        }
        for f in [
            FrameRepr::cnp(ep, 0x11),
            FrameRepr::write_only(ep, 0x11, 5, true, 0x1000, 7, &[1, 2, 3, 4, 5]),
            FrameRepr::fetch_add(ep, 0x11, 6, false, 0x2000, 7, 9),
        ] {
            let mut buf = vec![0u8; f.buffer_len()];
            f.emit(&mut buf).unwrap();
            out.push(buf);
        }
        out
    }

    /// The model of a response's parse: the UDP layer, port, options and iCRC as `parse` takes them, then
    /// the packet read through the checked views (BTH, AETH, AtomicAckETH) with their errors, in the order
    /// the headers are layered. `None` for a packet that is not a response by its opcode byte.
    fn model(frame: &[u8]) -> Option<Result<FrameRepr<'_>>> {
        let udp = match UdpFrame::parse(frame) {
            Ok(u) => u,
            Err(e) => return Some(Err(e)),
        };
        if udp.endpoints.dst_port != ROCEV2_UDP_PORT {
            return Some(Err(Error::NotRoce("UDP destination port is not 4791")));
        }
        if udp.payload_offset != HEADERS_LEN {
            return Some(Err(Error::NotRoce("IPv4 options")));
        }
        if let Err(e) = icrc::verify(frame) {
            return Some(Err(e));
        }
        let roce = udp.payload;
        match roce.first() {
            Some(&bth::opcode::ACKNOWLEDGE | &bth::opcode::ATOMIC_ACKNOWLEDGE) => {
                Some(layered(udp.endpoints, roce))
            }
            _ => None,
        }
    }

    fn layered(endpoints: UdpEndpoints, roce: &[u8]) -> Result<FrameRepr<'_>> {
        let bth = BthRepr::parse(&bth::Packet::new_checked(roce)?)?;
        let after = roce
            .get(bth::HEADER_LEN..roce.len().saturating_sub(ICRC_LEN))
            .ok_or(Error::Truncated {
                header: "RoCEv2 packet",
                needed: bth::HEADER_LEN + ICRC_LEN,
                available: roce.len(),
            })?;
        let a = AethRepr::parse(&aeth::Packet::new_checked(after)?)?;
        let (ext, ext_len) = match bth.opcode {
            BthOpcode::Acknowledge => (Extension::Aeth(a), aeth::HEADER_LEN),
            _ => {
                let o = AtomicAckEthRepr::parse(&atomic_ack_eth::Packet::new_checked(
                    &after[aeth::HEADER_LEN..],
                )?)?;
                (
                    Extension::AtomicAck(a, o),
                    aeth::HEADER_LEN + atomic_ack_eth::HEADER_LEN,
                )
            }
        };
        let body = &after[ext_len..];
        let pad = usize::from(bth.pad_count);
        if pad > body.len() {
            return Err(Error::LengthMismatch {
                header: "BTH pad count",
                expected: pad,
                actual: body.len(),
            });
        }
        if !body.is_empty() {
            return Err(Error::LengthMismatch {
                header: "RoCEv2 packet",
                expected: 0,
                actual: body.len(),
            });
        }
        Ok(FrameRepr {
            endpoints,
            bth,
            ext,
            payload: &[],
        })
    }

    #[test]
    fn well_formed_responses_read_as_the_model() {
        for f in responses() {
            let udp = UdpFrame::parse(&f).unwrap();
            let want = FrameRepr::parse(&f).unwrap();
            assert_eq!(FrameRepr::parse_udp(&f, &udp), Ok(want));
            let direct = read::<Quiet>(udp.payload).map(|r| r.map(|r| r.repr(udp.endpoints)));
            match model(&f) {
                Some(m) => {
                    assert_eq!(m, Ok(want));
                    assert_eq!(direct, Some(Ok(want)));
                }
                None => assert!(direct.is_none()),
            }
        }
    }

    /// A response with one fault at a time gets the reason the views give.
    #[test]
    fn reasons_of_single_faults() {
        let ack = &responses()[0];
        let bent = |at: usize, v: u8, cut: usize, extra: usize| {
            let mut f = ack.clone();
            f[at] = v;
            f.truncate(f.len() - cut);
            f.extend(std::iter::repeat_n(0, extra));
            let ip = (f.len() - 14) as u16;
            f[16..18].copy_from_slice(&ip.to_be_bytes());
            f[38..40].copy_from_slice(&(ip - 20).to_be_bytes());
            icrc::fill(&mut f).unwrap();
            f
        };
        let flags = HEADERS_LEN + bth::field::FLAGS;
        let syndrome = HEADERS_LEN + bth::HEADER_LEN;
        let cases = [
            // Transport version 1, and 4 bytes too long: the version first.
            (
                bent(flags, 0x01, 0, 4),
                Error::InvalidField {
                    header: "BTH",
                    field: "transport version",
                    value: 1,
                },
            ),
            // Syndrome 0x40 (reserved), and 4 bytes too long: the syndrome first.
            (
                bent(syndrome, 0x40, 0, 4),
                Error::InvalidField {
                    header: "AETH",
                    field: "syndrome",
                    value: 0x40,
                },
            ),
            // Pad count 1 with no payload.
            (
                bent(flags, 0x10, 0, 0),
                Error::LengthMismatch {
                    header: "BTH pad count",
                    expected: 1,
                    actual: 0,
                },
            ),
            // Two AETH bytes.
            (
                bent(flags, 0x00, 2, 0),
                Error::Truncated {
                    header: "AETH",
                    needed: 4,
                    available: 2,
                },
            ),
            // Four bytes of payload.
            (
                bent(flags, 0x00, 0, 4),
                Error::LengthMismatch {
                    header: "RoCEv2 packet",
                    expected: 0,
                    actual: 4,
                },
            ),
        ];
        for (f, want) in cases {
            assert_eq!(FrameRepr::parse(&f), Err(want), "{f:02x?}");
            assert_eq!(model(&f), Some(Err(want)), "{f:02x?}");
            let udp = UdpFrame::parse(&f).unwrap();
            let mut cache = ResponseIcrc::new();
            assert_eq!(
                FrameRepr::parse_ack_cached(&f, udp.payload_offset, udp.payload, &mut cache),
                None
            );
        }
    }

    proptest! {
        /// Any response (or request) with up to four bytes changed, cut or extended, its iCRC recomputed or
        /// not: every parse of it gives what the model gives, errors included.
        #[test]
        fn parses_equal_the_model(
            which in 0usize..11,
            edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..4),
            cut in 0usize..6,
            extra in 0usize..6,
            fix_icrc: bool,
            fix_lengths: bool,
        ) {
            let mut f = responses()[which].clone();
            for (at, v) in edits {
                let at = at % f.len();
                f[at] = v;
            }
            f.truncate(f.len() - cut);
            f.extend(std::iter::repeat_n(0x5A, extra));
            if fix_lengths && f.len() >= 42 {
                // Keep the IPv4 and UDP lengths in step with the frame, so the RoCE checks are reached.
                let ip = (f.len() - 14) as u16;
                f[16..18].copy_from_slice(&ip.to_be_bytes());
                f[38..40].copy_from_slice(&(ip - 20).to_be_bytes());
            }
            if fix_icrc {
                let _ = icrc::fill(&mut f);
            }
            let general = FrameRepr::parse(&f);
            let model = model(&f);
            if let Some(m) = model {
                prop_assert_eq!(general, m);
            }
            if let Ok(udp) = UdpFrame::parse(&f) {
                prop_assert_eq!(FrameRepr::parse_udp(&f, &udp), general);
                let mut cache = ResponseIcrc::new();
                for _ in 0..2 {
                    prop_assert_eq!(FrameRepr::parse_udp_cached(&f, &udp, &mut cache), general);
                    // The fields-only path answers for every well-formed response, as the model does.
                    if udp.endpoints.dst_port == ROCEV2_UDP_PORT {
                        let fast = FrameRepr::parse_ack_cached(
                            &f,
                            udp.payload_offset,
                            udp.payload,
                            &mut cache,
                        );
                        match (fast, model) {
                            (Some(fast), Some(m)) => {
                                prop_assert_eq!(fast, m.map(|g| AckFields::of(&g).unwrap()));
                            }
                            (None, Some(Ok(m))) => prop_assert!(false, "{:?} not taken", m),
                            (Some(fast), None) => prop_assert!(false, "{:?} taken", fast),
                            _ => {}
                        }
                    }
                }
            }
        }
    }
}
