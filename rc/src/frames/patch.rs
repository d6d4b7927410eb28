//! The per-frame fields (the BTH's AckReq/PSN word, the RETH or AtomicETH) stored at their fixed offsets
//! into a copy of a shape's template.

use dta_protocol::roce::{atomic_eth, bth, reth, PSN_MASK};
use dta_protocol::udp::HEADERS_LEN;

use super::copy::copy_payload;
use super::Op;

/// Where the BTH and the extension header start in a frame (dta emits no IPv4 options).
const BTH_AT: usize = HEADERS_LEN;
const EXT_AT: usize = BTH_AT + bth::HEADER_LEN;
const ACK_PSN_AT: usize = BTH_AT + bth::ACK_PSN_OFFSET;
/// Where a WRITE's payload starts (after the RETH), and where a FETCH_ADD's AtomicETH ends.
pub(super) const PAYLOAD_AT: usize = EXT_AT + reth::HEADER_LEN;
pub(super) const ATOMIC_END: usize = EXT_AT + atomic_eth::HEADER_LEN;
/// The BTH's AckReq/PSN `word` and the RETH's VA and R_Key; the DMA length is part of the shape and
/// already in the template.
#[inline(always)]
pub(super) fn patch_reth(frame: &mut [u8], word: u32, va: u64, rkey: u32) {
    if let Some(h) = frame.first_chunk_mut::<PAYLOAD_AT>() {
        h[ACK_PSN_AT..ACK_PSN_AT + 4].copy_from_slice(&word.to_be_bytes());
        h[EXT_AT..EXT_AT + 8].copy_from_slice(&va.to_be_bytes());
        h[EXT_AT + 8..EXT_AT + 12].copy_from_slice(&rkey.to_be_bytes());
    }
}

/// The BTH's AckReq/PSN `word` and the AtomicETH's VA, R_Key and addend; compare is 0 for FETCH & ADD
/// and already in the template.
#[inline(always)]
pub(super) fn patch_atomic_eth(frame: &mut [u8], word: u32, va: u64, rkey: u32, add: u64) {
    if let Some(h) = frame.first_chunk_mut::<ATOMIC_END>() {
        h[ACK_PSN_AT..ACK_PSN_AT + 4].copy_from_slice(&word.to_be_bytes());
        h[EXT_AT..EXT_AT + 8].copy_from_slice(&va.to_be_bytes());
        h[EXT_AT + 8..EXT_AT + 12].copy_from_slice(&rkey.to_be_bytes());
        h[EXT_AT + 12..EXT_AT + 20].copy_from_slice(&add.to_be_bytes());
    }
}

/// [`patch`] with the payload copied by [`copy_short`], and without the iCRC; false (the payload not
/// copied) if the payload's length is not one `copy_short` takes.
#[inline(always)]
pub(super) fn patch_short(op: &Op, psn: u32, ack_req: bool, frame: &mut [u8]) -> bool {
    let word = u32::from(ack_req) << 31 | (psn & PSN_MASK);
    match op {
        Op::Write { va, rkey, payload } => {
            patch_reth(frame, word, *va, *rkey);
            frame
                .get_mut(PAYLOAD_AT..PAYLOAD_AT + payload.len())
                .is_some_and(|p| copy_payload(p, payload))
        }
        Op::FetchAdd { va, rkey, add } => {
            patch_atomic_eth(frame, word, *va, *rkey, *add);
            true
        }
    }
}
