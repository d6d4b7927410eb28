//! Frame offsets of RoCEv2 frames as dta sends and takes them on their fast paths (untagged Ethernet II,
//! IPv4 without options, UDP, BTH, extension headers): each header's start, computed from the header
//! lengths, plus the field's range from that header's `field` table (`bth::field`, `reth::field`, ...).
//! Nothing here is restated: the fast paths that read or patch raw frames (the responder's, the iCRC's
//! `Write8`, the ACK templates) index with these, and the tests check them against the views and against
//! frames scapy's RoCE layer built.

use core::ops::Range;

use crate::roce::{aeth, atomic_ack_eth, atomic_eth, bth, reth, ICRC_LEN};
use crate::udp::at::{shift, PAYLOAD};

/// Pad bytes that bring `len` to a multiple of 4 (BTH PadCnt: a payload is padded to whole 4-byte words).
pub const fn pad_for(len: usize) -> usize {
    (4 - len % 4) % 4
}

/// Where the BTH starts: right after the UDP header.
pub const BTH: usize = PAYLOAD;
/// BTH opcode.
pub const BTH_OPCODE: usize = BTH + bth::field::OPCODE;
/// BTH SE, MigReq, PadCnt and TVer.
pub const BTH_FLAGS: usize = BTH + bth::field::FLAGS;
/// BTH partition key.
pub const BTH_PKEY: Range<usize> = shift(bth::field::PKEY, BTH);
/// BTH FECN, BECN and reserved bits (masked in the iCRC).
pub const BTH_BECN_FECN: usize = BTH + bth::field::BECN_FECN;
/// BTH destination QP.
pub const BTH_DEST_QP: Range<usize> = shift(bth::field::DEST_QP, BTH);
/// BTH AckReq byte: the first of the AckReq/PSN word, where every per-frame byte of a QP's stream of one
/// shape starts (so where an [`IcrcPrefix`](crate::roce::IcrcPrefix)'s cached state ends).
pub const BTH_ACK_REQ: usize = BTH + bth::field::ACK_REQ;
/// BTH PSN.
pub const BTH_PSN: Range<usize> = shift(bth::field::PSN, BTH);

/// Where the extension header (RETH, AtomicETH, AETH) starts: right after the BTH.
pub const EXT: usize = BTH + bth::HEADER_LEN;

/// RETH virtual address.
pub const RETH_VA: Range<usize> = shift(reth::field::VA, EXT);
/// RETH R_Key.
pub const RETH_RKEY: Range<usize> = shift(reth::field::RKEY, EXT);
/// RETH DMA length.
pub const RETH_DMA_LEN: Range<usize> = shift(reth::field::DMA_LEN, EXT);
/// Where an RDMA WRITE ONLY's payload starts.
pub const WRITE_PAYLOAD: usize = EXT + reth::field::PAYLOAD.start;

/// AtomicETH virtual address.
pub const ATOMIC_VA: Range<usize> = shift(atomic_eth::field::VA, EXT);
/// AtomicETH R_Key.
pub const ATOMIC_RKEY: Range<usize> = shift(atomic_eth::field::RKEY, EXT);
/// AtomicETH swap or add data.
pub const ATOMIC_SWAP_ADD: Range<usize> = shift(atomic_eth::field::SWAP_ADD, EXT);
/// AtomicETH compare data.
pub const ATOMIC_COMPARE: Range<usize> = shift(atomic_eth::field::COMPARE, EXT);

/// AETH syndrome.
pub const AETH_SYNDROME: usize = EXT + aeth::field::SYNDROME;
/// AETH MSN.
pub const AETH_MSN: Range<usize> = shift(aeth::field::MSN, EXT);
/// AtomicAckETH original remote data, after the AETH of an ATOMIC ACKNOWLEDGE.
pub const ATOMIC_ACK_ORIG: Range<usize> =
    shift(atomic_ack_eth::field::ORIG, EXT + aeth::HEADER_LEN);

/// Length of an ACKNOWLEDGE frame: headers, BTH, AETH, iCRC.
pub const ACK_LEN: usize = EXT + aeth::HEADER_LEN + ICRC_LEN;
/// Length of an ATOMIC ACKNOWLEDGE frame: an ACKNOWLEDGE's parts and the AtomicAckETH.
pub const ATOMIC_ACK_LEN: usize = ATOMIC_ACK_ORIG.end + ICRC_LEN;
/// Length of a FETCH & ADD or COMPARE & SWAP frame.
pub const ATOMIC_LEN: usize = EXT + atomic_eth::HEADER_LEN + ICRC_LEN;

/// Length of an RDMA WRITE ONLY frame of `payload_len` bytes (pad included).
pub const fn write_only_len(payload_len: usize) -> usize {
    WRITE_PAYLOAD + payload_len + pad_for(payload_len) + ICRC_LEN
}

#[cfg(test)]
#[path = "at_tests.rs"]
pub(crate) mod tests;
