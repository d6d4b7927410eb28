//! Positive ACKNOWLEDGE and ATOMIC ACKNOWLEDGE frames from a template: a responder (the collector's
//! software responder, or a harness standing in for a collector's RNIC) answers one requester with frames
//! that differ only in the PSN, the MSN, an ATOMIC ACKNOWLEDGE's original value and the iCRC, so it builds
//! the frame once and patches those at [`at`]'s offsets, with the iCRC continued from the state over the
//! invariant headers ([`IcrcPrefix`]).

use crate::roce::short_crc::Crc32Short;
use crate::roce::{at, bth, FrameRepr, IcrcPrefix, ICRC_LEN};
use crate::{Error, Result};

/// The longest frame a template writes (an ATOMIC ACKNOWLEDGE); a buffer this long takes either kind.
pub const ACK_TEMPLATE_MAX: usize = at::ATOMIC_ACK_LEN;

/// Bytes of a CRC block.
const BLOCK: usize = 16;
/// An ATOMIC ACKNOWLEDGE's iCRC tail (the AckReq/PSN word, the AETH and the original value), one block.
const ATOMIC_TAIL: core::ops::Range<usize> = at::BTH_ACK_REQ..at::ATOMIC_ACK_LEN - ICRC_LEN;
const _: () = assert!(ATOMIC_TAIL.end - ATOMIC_TAIL.start == BLOCK);

/// An ACKNOWLEDGE or ATOMIC ACKNOWLEDGE for one requester and QP (untagged Ethernet II, IPv4 without
/// options), whose PSN, MSN and original value are patched in per response.
#[derive(Debug, Clone)]
pub struct AckTemplate {
    /// The frame, in a fixed-size array: a copy of it is a few vector moves, not a `memcpy` call.
    frame: [u8; ACK_TEMPLATE_MAX],
    atomic: bool,
    prefix: IcrcPrefix,
    short: Crc32Short,
    /// For an ATOMIC ACKNOWLEDGE, whose iCRC tail is one 16-byte block: the raw register its invariant
    /// prefix reaches over 16 zero bytes, to which the block's own part is added (the CRC is linear),
    /// without the prefix's general tail path.
    one_block: u32,
}

impl AckTemplate {
    /// The template of `frame`, a whole ACKNOWLEDGE or ATOMIC ACKNOWLEDGE without IPv4 options or Ethernet
    /// padding, as [`FrameRepr::parse`] accepts it (iCRC included). Its syndrome and everything but the
    /// PSN, the MSN and the original value are kept in every frame written.
    pub fn new(frame: &[u8]) -> Result<Self> {
        let repr = FrameRepr::parse(frame)?;
        let (atomic, len) = match repr.bth.opcode {
            bth::BthOpcode::Acknowledge => (false, at::ACK_LEN),
            bth::BthOpcode::AtomicAcknowledge => (true, at::ATOMIC_ACK_LEN),
            other => {
                return Err(Error::InvalidField {
                    header: "ACK template",
                    field: "BTH opcode",
                    value: other.code().into(),
                })
            }
        };
        if frame.len() != len {
            return Err(Error::LengthMismatch {
                header: "ACK template",
                expected: len,
                actual: frame.len(),
            });
        }
        let mut t = [0u8; ACK_TEMPLATE_MAX];
        t[..len].copy_from_slice(frame);
        let prefix = IcrcPrefix::new(frame)?;
        let short = Crc32Short::detect();
        // The template's iCRC is !(zeros ^ linear(tail)), so zeros follows from its own iCRC and tail.
        let one_block = match <&[u8; BLOCK]>::try_from(&t[ATOMIC_TAIL]) {
            Ok(tail) if atomic => !prefix.finish(frame, len - ICRC_LEN) ^ short.linear_block(tail),
            _ => 0,
        };
        Ok(AckTemplate {
            frame: t,
            atomic,
            prefix,
            short,
            one_block,
        })
    }

    /// The template of an ACKNOWLEDGE or ATOMIC ACKNOWLEDGE `repr` ([`FrameRepr::acknowledge`],
    /// [`FrameRepr::atomic_acknowledge`]).
    pub fn from_repr(repr: &FrameRepr) -> Result<Self> {
        let mut buf = [0u8; ACK_TEMPLATE_MAX];
        let n = repr.emit(&mut buf)?;
        Self::new(&buf[..n])
    }

    /// Whether this is an ATOMIC ACKNOWLEDGE.
    pub const fn is_atomic(&self) -> bool {
        self.atomic
    }

    /// Bytes of each frame written: [`at::ACK_LEN`] or [`at::ATOMIC_ACK_LEN`].
    pub const fn len(&self) -> usize {
        if self.atomic {
            at::ATOMIC_ACK_LEN
        } else {
            at::ACK_LEN
        }
    }

    /// Always false: a template is a whole frame. Present for clippy's `len_without_is_empty`.
    pub const fn is_empty(&self) -> bool {
        false
    }

    /// The template frame as built (PSN, MSN and original value those of the frame it was made from).
    pub fn frame(&self) -> &[u8] {
        &self.frame[..self.len()]
    }

    /// Writes the response for `psn` and `msn` (their low 24 bits) and, in an ATOMIC ACKNOWLEDGE, `orig`
    /// (ignored in an ACKNOWLEDGE) at the start of `out`, iCRC included; its length, or `None` if `out`
    /// is shorter than [`len`](Self::len).
    #[inline]
    pub fn write(&self, out: &mut [u8], psn: u32, msn: u32, orig: u64) -> Option<usize> {
        // Two copies of constant length rather than one of a variable one: the compiler inlines those.
        if self.atomic {
            let out: &mut [u8; at::ATOMIC_ACK_LEN] =
                out.get_mut(..at::ATOMIC_ACK_LEN)?.try_into().ok()?;
            *out = self.frame;
            out[at::ATOMIC_ACK_ORIG].copy_from_slice(&orig.to_be_bytes());
            patch(out, psn, msn);
            let tail: &[u8; BLOCK] = out[ATOMIC_TAIL].try_into().ok()?;
            let crc = !(self.one_block ^ self.short.linear_block(tail));
            out[ATOMIC_TAIL.end..].copy_from_slice(&crc.to_le_bytes());
            Some(at::ATOMIC_ACK_LEN)
        } else {
            let out = out.get_mut(..at::ACK_LEN)?;
            out.copy_from_slice(&self.frame[..at::ACK_LEN]);
            patch(out, psn, msn);
            self.prefix.fill(out);
            Some(at::ACK_LEN)
        }
    }
}

/// Writes the low 24 bits of `psn` and `msn` into a response frame.
#[inline(always)]
fn patch(out: &mut [u8], psn: u32, msn: u32) {
    out[at::BTH_PSN].copy_from_slice(&psn.to_be_bytes()[1..]);
    out[at::AETH_MSN].copy_from_slice(&msn.to_be_bytes()[1..]);
}

#[cfg(test)]
#[path = "ack_template_tests.rs"]
mod tests;
