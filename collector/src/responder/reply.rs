//! Responses built field by field through `FrameRepr`: the general path, for every answer the responder
//! gives (NAKs, RNR NAKs, replayed ACKs) and the reference the per-QP templates of `template.rs` are tested
//! against.

use dta_protocol::roce::{AckKind, AethRepr, FrameRepr, NakCode, ROCEV2_UDP_PORT};
use dta_protocol::udp::UdpEndpoints;

use super::stats::DropReason;

/// Bytes an output buffer needs for any response (ATOMIC ACKNOWLEDGE is the longest: 42 + 12 + 4 + 8 + 4).
pub const RESPONSE_MAX: usize = 128;

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

/// Credit field of every ACK: 31 means "credits not tracked", what rxe sends (AETH_ACK_UNLIMITED).
pub(crate) const UNLIMITED_CREDITS: u8 = 31;

/// Builds responses back to the requester of one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reply {
    pub endpoints: UdpEndpoints,
    pub dest_qp: u32,
}

impl Reply {
    pub fn new(e: &UdpEndpoints, peer_qpn: u32) -> Self {
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

    pub fn ack(&self, out: &mut [u8], psn: u32, msn: u32) -> Outcome {
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

    pub fn nak(&self, out: &mut [u8], psn: u32, msn: u32, code: NakCode) -> Outcome {
        let aeth = AethRepr {
            kind: AckKind::Nak(code),
            msn,
        };
        self.emit(
            out,
            FrameRepr::acknowledge(self.endpoints, self.dest_qp, psn, aeth),
        )
    }

    pub fn rnr_nak(&self, out: &mut [u8], psn: u32, msn: u32, timer: u8) -> Outcome {
        let aeth = AethRepr {
            kind: AckKind::RnrNak { timer },
            msn,
        };
        self.emit(
            out,
            FrameRepr::acknowledge(self.endpoints, self.dest_qp, psn, aeth),
        )
    }

    pub fn atomic_ack(&self, out: &mut [u8], psn: u32, msn: u32, orig: u64) -> Outcome {
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
