//! The RDMA operations a QP sends, and the length of the frame each becomes.

use dta_protocol::roce::frame::pad_for;
use dta_protocol::roce::{atomic_eth, bth, reth, BthOpcode, ICRC_LEN};
use dta_protocol::udp::HEADERS_LEN;

use super::Payload;

/// An RDMA operation, as the primitives ask for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// RDMA WRITE ONLY of `payload` at `va`.
    Write {
        /// Remote virtual address.
        va: u64,
        /// Remote key.
        rkey: u32,
        /// The bytes to write (at most the path MTU).
        payload: Payload,
    },
    /// FETCH_ADD of `add` on the u64 at `va` (8-byte aligned).
    FetchAdd {
        /// Remote virtual address.
        va: u64,
        /// Remote key.
        rkey: u32,
        /// The addend.
        add: u64,
    },
}

impl Op {
    /// Whether the responder answers this with an ATOMIC ACKNOWLEDGE.
    pub const fn is_atomic(&self) -> bool {
        matches!(self, Op::FetchAdd { .. })
    }

    pub(super) fn opcode(&self) -> BthOpcode {
        match self {
            Op::Write { .. } => BthOpcode::RdmaWriteOnly,
            Op::FetchAdd { .. } => BthOpcode::FetchAdd,
        }
    }

    pub(super) fn payload(&self) -> &[u8] {
        match self {
            Op::Write { payload, .. } => payload,
            Op::FetchAdd { .. } => &[],
        }
    }

    /// Length of the whole Ethernet frame this op becomes.
    pub fn frame_len(&self) -> usize {
        let ext = match self {
            Op::Write { .. } => reth::HEADER_LEN,
            Op::FetchAdd { .. } => atomic_eth::HEADER_LEN,
        };
        let p = self.payload().len();
        HEADERS_LEN + bth::HEADER_LEN + ext + p + pad_for(p) + ICRC_LEN
    }
}
