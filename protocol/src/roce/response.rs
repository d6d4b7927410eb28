//! RoCE responses at fixed offsets: the requester's per-ACK parse.
//!
//! [`FrameRepr::parse`] is the general path: it parses the UDP layer again (the engine already did, to
//! route the frame) and walks the BTH and extension headers through their checked views. A requester sees
//! one ACKNOWLEDGE per AckReq and one ATOMIC ACKNOWLEDGE per FETCH_ADD (Key-Increment: one per report), so
//! [`FrameRepr::parse_udp`] takes the UDP layer the caller has and reads a well-formed response's few
//! fields straight from their offsets; anything else (requests, CNPs, any malformed field) goes the
//! general way for its exact error. A property test checks both give the same result, errors included.

use crate::field::{get_u16, get_u64};
use crate::roce::{
    aeth, atomic_ack_eth, bth, icrc, AckKind, AethRepr, AtomicAckEthRepr, BthOpcode, BthRepr,
    Extension, FrameRepr, ResponseIcrc, ICRC_LEN, PSN_MASK, QPN_MASK, ROCEV2_UDP_PORT,
};
use crate::udp::{UdpFrame, HEADERS_LEN};
use crate::{Error, Result};

/// Bytes after the UDP header of a well-formed ACKNOWLEDGE: BTH, AETH, iCRC.
const ACK_LEN: usize = bth::HEADER_LEN + aeth::HEADER_LEN + ICRC_LEN;
/// ... and of an ATOMIC ACKNOWLEDGE: BTH, AETH, AtomicAckETH, iCRC.
const ATOMIC_ACK_LEN: usize = ACK_LEN + atomic_ack_eth::HEADER_LEN;

// Where `classify` and `response` read, from the headers' field tables (offsets in the UDP payload).
/// The big-endian word ending with the BTH's destination QP (its top byte is the FECN/BECN byte).
const QP_WORD: usize = bth::field::DEST_QP.end - 4;
/// The AckReq/PSN word (AckReq in the top bit).
const PSN_WORD: usize = bth::field::ACK_REQ;
/// The AETH, as one word: the syndrome in the top byte, the MSN below.
const AETH_WORD: usize = bth::HEADER_LEN + aeth::field::SYNDROME;
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
    assert!(aeth::field::MSN.start == aeth::field::SYNDROME + 1 && aeth::HEADER_LEN == 4);
    // `classify` reads the AtomicAckETH where an ACKNOWLEDGE's iCRC would be: right after the AETH.
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
        let roce = udp.payload;
        // Classified first, then built straight into the result: an `Option<FrameRepr>` turned into a
        // `Result` was one more copy of the ~90-byte repr per response.
        if let Some(r) = classify(roce) {
            return Ok(response(udp, r));
        }
        Self::parse_roce(udp.endpoints, roce)
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
        // `parse_udp_with`'s order is: options, iCRC, classification; classifying before the iCRC
        // changes nothing, since a frame that does not classify is left to it (which verifies first).
        if payload_offset != HEADERS_LEN {
            return None;
        }
        let r = classify(roce)?;
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

/// What [`classify`] found in a well-formed response: everything [`response`] needs, checked.
#[derive(Clone, Copy)]
struct Fixed<'a> {
    opcode: BthOpcode,
    head: &'a [u8; ACK_LEN],
    aeth: AethRepr,
    /// The AtomicAckETH's original remote data (ATOMIC ACKNOWLEDGE only).
    orig: u64,
}

/// A well-formed ACKNOWLEDGE or ATOMIC ACKNOWLEDGE (exact length, transport version 0, no pad, a valid
/// syndrome), read at fixed offsets; `None` for anything else, which the general parse then handles (and
/// refuses with the reason, if it is malformed).
#[inline(always)]
fn classify(roce: &[u8]) -> Option<Fixed<'_>> {
    // The fields at their offsets (IBA 9.2: BTH; 9.3.5: AETH; 9.5.3: AtomicAckETH), as whole big-endian
    // words from fixed-size arrays (no bounds checks): the header views' 3-byte getters were
    // out-of-line calls here. Each response's arrays are taken in its own arm, where its length is
    // known: taken after the match, the AtomicAckETH's bounds were checked again (~8 instructions).
    let (opcode, head, orig) = match (roce.first().copied()?, roce.len()) {
        (bth::opcode::ACKNOWLEDGE, ACK_LEN) => {
            (BthOpcode::Acknowledge, roce.first_chunk::<ACK_LEN>()?, 0)
        }
        (bth::opcode::ATOMIC_ACKNOWLEDGE, ATOMIC_ACK_LEN) => {
            let all = roce.first_chunk::<ATOMIC_ACK_LEN>()?;
            // The AtomicAckETH starts where an ACKNOWLEDGE's iCRC would.
            let orig = get_u64(&all[ORIG]);
            (
                BthOpcode::AtomicAcknowledge,
                all.first_chunk::<ACK_LEN>()?,
                orig,
            )
        }
        _ => return None,
    };
    // Transport version 0 and pad count 0 (a response carries no payload to pad).
    if head[bth::field::FLAGS] & TVER_PAD_MASK != 0 {
        return None;
    }
    let aeth_word = be32(head, AETH_WORD);
    let syndrome = (aeth_word >> 24) as u8;
    let kind = if syndrome >> 5 == 0 {
        // An ACK, every response but a NAK: `from_syndrome`'s first case without its match.
        AckKind::Ack { credits: syndrome }
    } else {
        AckKind::from_syndrome(syndrome).ok()?
    };
    let aeth = AethRepr {
        kind,
        msn: aeth_word & PSN_MASK,
    };
    Some(Fixed {
        opcode,
        head,
        aeth,
        orig,
    })
}

/// The repr of a response [`classify`] accepted.
// Always inlined: out of line, the ~90-byte `FrameRepr` went back through two more copies.
#[inline(always)]
fn response<'a>(udp: &UdpFrame<'a>, r: Fixed<'_>) -> FrameRepr<'a> {
    let head = r.head;
    let ext = match r.opcode {
        BthOpcode::Acknowledge => Extension::Aeth(r.aeth),
        _ => Extension::AtomicAck(
            r.aeth,
            AtomicAckEthRepr {
                orig_remote_data: r.orig,
            },
        ),
    };
    let (flags, becn_fecn) = (head[bth::field::FLAGS], head[bth::field::BECN_FECN]);
    let ack_psn = be32(head, PSN_WORD);
    FrameRepr {
        endpoints: udp.endpoints,
        bth: BthRepr {
            opcode: r.opcode,
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

    #[test]
    fn well_formed_responses_take_the_direct_path() {
        for f in responses() {
            let udp = UdpFrame::parse(&f).unwrap();
            let want = FrameRepr::parse(&f).unwrap();
            assert_eq!(FrameRepr::parse_udp(&f, &udp), Ok(want));
            let direct = classify(udp.payload).map(|r| response(&udp, r));
            if matches!(
                want.bth.opcode,
                BthOpcode::Acknowledge | BthOpcode::AtomicAcknowledge
            ) {
                assert_eq!(direct, Some(want));
            } else {
                assert_eq!(direct, None);
            }
        }
    }

    proptest! {
        /// Any response (or request) with up to four bytes changed, cut or extended, its iCRC recomputed or
        /// not: the direct parse gives what the general parse gives, errors included.
        #[test]
        fn direct_parse_equals_general_parse(
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
            if let Ok(udp) = UdpFrame::parse(&f) {
                prop_assert_eq!(FrameRepr::parse_udp(&f, &udp), general);
                let mut cache = ResponseIcrc::new();
                for _ in 0..2 {
                    prop_assert_eq!(FrameRepr::parse_udp_cached(&f, &udp, &mut cache), general);
                    // The fields-only path, where it answers, answers as the full one does.
                    if udp.endpoints.dst_port == ROCEV2_UDP_PORT {
                        let fast = FrameRepr::parse_ack_cached(
                            &f,
                            udp.payload_offset,
                            udp.payload,
                            &mut cache,
                        );
                        if let Some(fast) = fast {
                            let want = general.map(|g| AckFields::of(&g));
                            prop_assert_eq!(fast.map(Some), want);
                        }
                    }
                }
            }
        }
    }
}
