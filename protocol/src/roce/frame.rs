//! Whole RoCEv2 frames: Ethernet / IPv4 / UDP:4791 / BTH / extension header / payload / pad / iCRC.
//!
//! [`FrameRepr::emit`] writes a complete, valid frame (IPv4 checksum, UDP and IPv4 lengths, pad count and
//! iCRC); [`FrameRepr::parse`] checks all of that on the way in. This is the general-purpose path for
//! tests, tools and the responder; a hot path that sends the same shape of frame again and again patches a
//! pre-built frame and uses [`IcrcPrefix`](crate::roce::IcrcPrefix) instead.

use crate::error::check_room;
use crate::refusal::Explain;
use crate::roce::{
    aeth, atomic_ack_eth, atomic_eth, bth, icrc, response, reth, AethRepr, AtomicAckEthRepr,
    AtomicEthRepr, BthOpcode, BthRepr, RethRepr, DEFAULT_PKEY, ICRC_LEN,
};
use crate::udp::{UdpEndpoints, UdpFrame, HEADERS_LEN};
use crate::{Error, Result};

/// Length of the reserved field that follows the BTH in a CNP.
pub const CNP_RESERVED_LEN: usize = 16;
/// Length of the immediate data of a WRITE ONLY with immediate (the IETH of a SEND with invalidate is as
/// long).
pub const IMM_LEN: usize = 4;

/// The headers between the BTH and the payload; which one a frame has follows from its BTH opcode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Extension {
    /// RDMA WRITE ONLY.
    Reth(RethRepr),
    /// RDMA WRITE ONLY with immediate: RETH, then 4 bytes of immediate data (big-endian).
    RethImm(RethRepr, u32),
    /// FETCH & ADD or COMPARE & SWAP.
    Atomic(AtomicEthRepr),
    /// ACKNOWLEDGE.
    Aeth(AethRepr),
    /// ATOMIC ACKNOWLEDGE.
    AtomicAck(AethRepr, AtomicAckEthRepr),
    /// Congestion notification: 16 reserved bytes, sent as zeros.
    Cnp,
}

impl Extension {
    /// Bytes the extension headers take.
    pub const fn len(&self) -> usize {
        match self {
            Extension::Reth(_) => reth::HEADER_LEN,
            Extension::RethImm(..) => reth::HEADER_LEN + IMM_LEN,
            Extension::Atomic(_) => atomic_eth::HEADER_LEN,
            Extension::Aeth(_) => aeth::HEADER_LEN,
            Extension::AtomicAck(..) => aeth::HEADER_LEN + atomic_ack_eth::HEADER_LEN,
            Extension::Cnp => CNP_RESERVED_LEN,
        }
    }

    /// Always false: every dta opcode has an extension header. Present for clippy's `len_without_is_empty`.
    pub const fn is_empty(&self) -> bool {
        false
    }

    /// Whether this extension belongs after a BTH with `opcode`.
    pub const fn fits(&self, opcode: BthOpcode) -> bool {
        matches!(
            (self, opcode),
            (Extension::Reth(_), BthOpcode::RdmaWriteOnly)
                | (Extension::RethImm(..), BthOpcode::RdmaWriteOnlyImm)
                | (
                    Extension::Atomic(_),
                    BthOpcode::FetchAdd | BthOpcode::CompareSwap
                )
                | (Extension::Aeth(_), BthOpcode::Acknowledge)
                | (Extension::AtomicAck(..), BthOpcode::AtomicAcknowledge)
                | (Extension::Cnp, BthOpcode::Cnp)
        )
    }

    fn emit(&self, buf: &mut [u8]) -> Result<()> {
        match self {
            Extension::Reth(r) => r.emit(buf),
            Extension::RethImm(r, imm) => {
                r.emit(buf)?;
                buf[reth::HEADER_LEN..reth::HEADER_LEN + IMM_LEN]
                    .copy_from_slice(&imm.to_be_bytes());
                Ok(())
            }
            Extension::Atomic(a) => a.emit(buf),
            Extension::Aeth(a) => a.emit(buf),
            Extension::AtomicAck(a, o) => {
                a.emit(buf)?;
                o.emit(&mut buf[aeth::HEADER_LEN..])
            }
            Extension::Cnp => {
                buf[..CNP_RESERVED_LEN].fill(0);
                Ok(())
            }
        }
    }

    fn parse(opcode: BthOpcode, buf: &[u8]) -> Result<Self> {
        Ok(match opcode {
            BthOpcode::RdmaWriteOnly => {
                Extension::Reth(RethRepr::parse(&reth::Packet::new_checked(buf)?)?)
            }
            BthOpcode::RdmaWriteOnlyImm => {
                let r = RethRepr::parse(&reth::Packet::new_checked(buf)?)?;
                let imm = buf
                    .get(reth::HEADER_LEN..reth::HEADER_LEN + IMM_LEN)
                    .ok_or(Error::Truncated {
                        header: "ImmDt",
                        needed: reth::HEADER_LEN + IMM_LEN,
                        available: buf.len(),
                    })?;
                Extension::RethImm(r, u32::from_be_bytes([imm[0], imm[1], imm[2], imm[3]]))
            }
            BthOpcode::FetchAdd | BthOpcode::CompareSwap => Extension::Atomic(
                AtomicEthRepr::parse(&atomic_eth::Packet::new_checked(buf)?)?,
            ),
            // `parse_roce` reads responses through `response::read` before it gets here.
            BthOpcode::Acknowledge | BthOpcode::AtomicAcknowledge => {
                return Err(Error::UnsupportedBthOpcode(opcode.code()))
            }
            BthOpcode::Cnp => {
                if buf.len() < CNP_RESERVED_LEN {
                    return Err(Error::Truncated {
                        header: "CNP",
                        needed: CNP_RESERVED_LEN,
                        available: buf.len(),
                    });
                }
                Extension::Cnp
            }
        })
    }
}

/// A complete RoCEv2 frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameRepr<'a> {
    /// Ethernet and IPv4 addresses, UDP ports and IPv4 settings. `dst_port` is 4791 for RoCEv2.
    pub endpoints: UdpEndpoints,
    /// The BTH. On emit, its `pad_count` is ignored and computed from the payload length.
    pub bth: BthRepr,
    /// The extension headers matching the BTH opcode.
    pub ext: Extension,
    /// The payload, without pad (WRITE data; empty for the other opcodes).
    pub payload: &'a [u8],
}

/// Pad bytes that bring `len` to a multiple of 4 (defined with the frame offsets, which need it).
pub use super::at::pad_for;

fn bth(opcode: BthOpcode, dest_qp: u32, psn: u32, ack_req: bool) -> BthRepr {
    BthRepr {
        opcode,
        solicited: false,
        mig_req: false,
        pad_count: 0,
        pkey: DEFAULT_PKEY,
        fecn: false,
        becn: false,
        dest_qp,
        ack_req,
        psn,
    }
}

impl<'a> FrameRepr<'a> {
    /// An RC RDMA WRITE ONLY of `payload` to `va`.
    pub fn write_only(
        endpoints: UdpEndpoints,
        dest_qp: u32,
        psn: u32,
        ack_req: bool,
        va: u64,
        rkey: u32,
        payload: &'a [u8],
    ) -> Self {
        let mut bth = bth(BthOpcode::RdmaWriteOnly, dest_qp, psn, ack_req);
        bth.pad_count = pad_for(payload.len()) as u8;
        let dma_len = payload.len() as u32;
        FrameRepr {
            endpoints,
            bth,
            ext: Extension::Reth(RethRepr { va, rkey, dma_len }),
            payload,
        }
    }

    /// An RC FETCH & ADD of `add` at `va` (which a responder requires to be 8-byte aligned).
    pub fn fetch_add(
        endpoints: UdpEndpoints,
        dest_qp: u32,
        psn: u32,
        ack_req: bool,
        va: u64,
        rkey: u32,
        add: u64,
    ) -> Self {
        let ext = Extension::Atomic(AtomicEthRepr {
            va,
            rkey,
            swap_add: add,
            compare: 0,
        });
        FrameRepr {
            endpoints,
            bth: bth(BthOpcode::FetchAdd, dest_qp, psn, ack_req),
            ext,
            payload: &[],
        }
    }

    /// An ACKNOWLEDGE (ACK, RNR NAK or NAK, per `aeth.kind`) for `psn`.
    pub fn acknowledge(endpoints: UdpEndpoints, dest_qp: u32, psn: u32, aeth: AethRepr) -> Self {
        let ext = Extension::Aeth(aeth);
        FrameRepr {
            endpoints,
            bth: bth(BthOpcode::Acknowledge, dest_qp, psn, false),
            ext,
            payload: &[],
        }
    }

    /// An ATOMIC ACKNOWLEDGE carrying the value the target held before the atomic.
    pub fn atomic_acknowledge(
        endpoints: UdpEndpoints,
        dest_qp: u32,
        psn: u32,
        aeth: AethRepr,
        orig_remote_data: u64,
    ) -> Self {
        let ext = Extension::AtomicAck(aeth, AtomicAckEthRepr { orig_remote_data });
        let bth = bth(BthOpcode::AtomicAcknowledge, dest_qp, psn, false);
        FrameRepr {
            endpoints,
            bth,
            ext,
            payload: &[],
        }
    }

    /// A RoCEv2 congestion notification packet to QP `dest_qp`, as a notification point (the collector
    /// NIC) sends it to a requester whose ECN-capable frames arrived marked: BECN set, PSN 0.
    pub fn cnp(endpoints: UdpEndpoints, dest_qp: u32) -> Self {
        let bth = BthRepr {
            becn: true,
            ..bth(BthOpcode::Cnp, dest_qp, 0, false)
        };
        FrameRepr {
            endpoints,
            bth,
            ext: Extension::Cnp,
            payload: &[],
        }
    }

    /// Bytes [`emit`](Self::emit) writes.
    pub const fn buffer_len(&self) -> usize {
        HEADERS_LEN + self.roce_len()
    }

    /// Bytes of the UDP payload: BTH, extension, payload, pad and iCRC.
    const fn roce_len(&self) -> usize {
        bth::HEADER_LEN
            + self.ext.len()
            + self.payload.len()
            + pad_for(self.payload.len())
            + ICRC_LEN
    }

    /// Writes the whole frame, iCRC included, and returns its length.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let len = self.buffer_len();
        check_room(buf, len)?;
        if !self.ext.fits(self.bth.opcode) {
            return Err(Error::InvalidField {
                header: "BTH",
                field: "opcode for this extension header",
                value: self.bth.opcode.code().into(),
            });
        }
        let pad = pad_for(self.payload.len());
        let frame = &mut buf[..len];
        self.endpoints.emit_headers(frame, self.roce_len())?;
        let mut at = HEADERS_LEN;
        BthRepr {
            pad_count: pad as u8,
            ..self.bth
        }
        .emit(&mut frame[at..])?;
        at += bth::HEADER_LEN;
        self.ext.emit(&mut frame[at..])?;
        at += self.ext.len();
        frame[at..at + self.payload.len()].copy_from_slice(self.payload);
        at += self.payload.len();
        frame[at..at + pad].fill(0);
        icrc::fill(frame)?;
        Ok(len)
    }

    /// Parses a frame and verifies its iCRC, lengths and pad count.
    pub fn parse(frame: &'a [u8]) -> Result<Self> {
        Self::parse_udp(frame, &UdpFrame::parse(frame)?)
    }

    /// The checks of [`parse`](Self::parse) after the iCRC: BTH, extension headers, pad count and lengths of
    /// `roce`, a UDP payload whose iCRC was verified.
    pub(crate) fn parse_roce(endpoints: UdpEndpoints, roce: &'a [u8]) -> Result<Self> {
        // Responses have their one reading (`response.rs`), the one the requester's per-ACK path takes.
        if let Some(r) = response::read::<Explain>(roce) {
            return r.map(|r| r.repr(endpoints));
        }
        let bth_view = bth::Packet::new_checked(roce)?;
        let bth = BthRepr::parse(&bth_view)?;
        // A UDP length shorter than the IPv4 packet (whose end the iCRC is read from) can leave less than a
        // BTH and an iCRC here: refused, not sliced.
        let after_bth = roce
            .get(bth::HEADER_LEN..roce.len().saturating_sub(ICRC_LEN))
            .ok_or(Error::Truncated {
                header: "RoCEv2 packet",
                needed: bth::HEADER_LEN + ICRC_LEN,
                available: roce.len(),
            })?;
        let ext = Extension::parse(bth.opcode, after_bth)?;
        let body = &after_bth[ext.len()..];
        let pad = usize::from(bth.pad_count);
        if pad > body.len() {
            return Err(Error::LengthMismatch {
                header: "BTH pad count",
                expected: pad,
                actual: body.len(),
            });
        }
        let payload = &body[..body.len() - pad];
        let carries_payload = matches!(ext, Extension::Reth(_) | Extension::RethImm(..));
        if !carries_payload && !body.is_empty() {
            return Err(Error::LengthMismatch {
                header: "RoCEv2 packet",
                expected: 0,
                actual: body.len(),
            });
        }
        if let Extension::Reth(r) | Extension::RethImm(r, _) = ext {
            if r.dma_len as usize != payload.len() {
                return Err(Error::LengthMismatch {
                    header: "RETH DMA length",
                    expected: r.dma_len as usize,
                    actual: payload.len(),
                });
            }
        }
        Ok(FrameRepr {
            endpoints,
            bth,
            ext,
            payload,
        })
    }
}

#[cfg(test)]
mod tests;
