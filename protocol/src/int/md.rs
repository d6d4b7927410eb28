//! INT-MD (INT 2.1, p4lang/p4-applications `telemetry/specs/INT.mdk`) over TCP or UDP: the shim, the
//! metadata header and the per-hop metadata stack, newest hop first. A sink report carries them in its
//! truncated inner packet, and with them the whole path.
//!
//! Shim for TCP/UDP, 4 bytes: `Type:4 (1 = INT-MD), NPT:2, R:2, Length:8, then 16 bits whose meaning
//! NPT gives` (0: the INT header follows the L4 header, DSCP marks the packet; 1: the original UDP
//! destination port; 2: 8 reserved bits and the original IP protocol). `Length` counts the words of the
//! metadata header and the stack, not the shim.
//!
//! Metadata header, 12 bytes:
//!
//! | field                | bits | notes |
//! |----------------------|------|-------|
//! | Ver                  | 4    | 2 |
//! | D, E, M              | 3    | discard, max hop count exceeded, MTU exceeded |
//! | R                    | 12   | |
//! | Hop ML               | 5    | words each hop adds |
//! | Remaining Hop Count  | 8    | |
//! | Instruction Bitmap   | 16   | see [`metadata`](super::metadata) |
//! | Domain Specific ID   | 16   | |
//! | DS Instruction       | 16   | |
//! | DS Flags             | 16   | |
//!
//! The stack (`Length` - 3 words) holds one `Hop ML`-word entry per hop.

use crate::error::{check_len, Error};
use crate::field::get_u16;
use crate::int::metadata::{self, Bitmap, Metadata};
use crate::Result;

/// Length of the shim.
pub const SHIM_LEN: usize = 4;
/// Length of the metadata header.
pub const HEADER_LEN: usize = 12;
/// Shim type of INT-MD.
pub const TYPE_MD: u8 = 1;
/// The metadata header version this module reads.
pub const VERSION: u8 = 2;

const H: &str = "INT-MD";

/// What the shim's last 16 bits hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NextProtocol {
    /// NPT 0: DSCP marks the packet; the INT headers follow the L4 header, whose ports are the flow's.
    AfterL4,
    /// NPT 1: INT over UDP; the original UDP destination port.
    UdpPort(u16),
    /// NPT 2: INT over UDP; the original IP protocol (the original L4 header follows the stack).
    IpProtocol(u8),
}

/// The shim, the metadata header and the stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IntMdRepr<'a> {
    /// What the shim says about the original packet.
    pub next: NextProtocol,
    /// Discard (the sink must drop the packet: it is a copy).
    pub discard: bool,
    /// A hop could not add its metadata: the hop count was exceeded.
    pub hop_count_exceeded: bool,
    /// A hop could not add its metadata: the MTU would have been exceeded.
    pub mtu_exceeded: bool,
    /// Words each hop adds.
    pub hop_ml: u8,
    /// Hops that may still add metadata.
    pub remaining_hop_count: u8,
    /// Which metadata each hop adds.
    pub instructions: u16,
    /// INT domain.
    pub domain_specific_id: u16,
    /// Domain-specific instructions.
    pub ds_instruction: u16,
    /// Domain-specific flags.
    pub ds_flags: u16,
    /// The per-hop entries, newest first.
    pub stack: &'a [u8],
}

impl<'a> IntMdRepr<'a> {
    /// Parses the shim at the start of `bytes`; returns the headers and the bytes after the stack.
    pub fn parse(bytes: &'a [u8]) -> Result<(Self, &'a [u8])> {
        check_len(H, bytes, SHIM_LEN + HEADER_LEN)?;
        let ty = bytes[0] >> 4;
        if ty != TYPE_MD {
            return Err(Error::InvalidField {
                header: H,
                field: "shim type",
                value: ty.into(),
            });
        }
        let npt = (bytes[0] >> 2) & 0x3;
        let next = match npt {
            0 => NextProtocol::AfterL4,
            1 => NextProtocol::UdpPort(get_u16(&bytes[2..4])),
            2 => NextProtocol::IpProtocol(bytes[3]),
            other => {
                return Err(Error::InvalidField {
                    header: H,
                    field: "shim NPT",
                    value: other.into(),
                })
            }
        };
        let words = usize::from(bytes[1]);
        let end = SHIM_LEN + 4 * words;
        if words < HEADER_LEN / 4 {
            return Err(Error::InvalidField {
                header: H,
                field: "shim length",
                value: words as u64,
            });
        }
        check_len(H, bytes, end)?;
        let h = &bytes[SHIM_LEN..SHIM_LEN + HEADER_LEN];
        let ver = h[0] >> 4;
        if ver != VERSION {
            return Err(Error::InvalidField {
                header: H,
                field: "ver",
                value: ver.into(),
            });
        }
        let hop_ml = h[2] & 0x1F;
        let instructions = get_u16(&h[4..6]);
        let stack = &bytes[SHIM_LEN + HEADER_LEN..end];
        let per_hop = 4 * usize::from(hop_ml);
        // Each entry must hold what the instructions ask for; the stack must be whole entries.
        if (per_hop == 0 && !stack.is_empty())
            || (per_hop != 0 && stack.len() % per_hop != 0)
            || metadata::length(instructions) > per_hop
        {
            return Err(Error::LengthMismatch {
                header: H,
                expected: per_hop.max(metadata::length(instructions)),
                actual: stack.len(),
            });
        }
        Ok((
            IntMdRepr {
                next,
                discard: h[0] & 0x08 != 0,
                hop_count_exceeded: h[0] & 0x04 != 0,
                mtu_exceeded: h[0] & 0x02 != 0,
                hop_ml,
                remaining_hop_count: h[3],
                instructions,
                domain_specific_id: get_u16(&h[6..8]),
                ds_instruction: get_u16(&h[8..10]),
                ds_flags: get_u16(&h[10..12]),
                stack,
            },
            &bytes[end..],
        ))
    }

    /// Hops in the stack.
    pub fn hop_count(&self) -> usize {
        match self.hop_ml {
            0 => 0,
            ml => self.stack.len() / (4 * usize::from(ml)),
        }
    }

    /// The hops' metadata, newest (the hop nearest the sink) first.
    pub fn hops(&self) -> impl Iterator<Item = Metadata> + 'a {
        let per_hop = 4 * usize::from(self.hop_ml.max(1));
        let instructions = self.instructions;
        self.stack.chunks_exact(per_hop).map(move |entry| {
            // `parse` validated that every entry holds what the instructions select.
            Metadata::parse(instructions, Bitmap::IntInstruction, entry)
                .map(|(m, _)| m)
                .unwrap_or_default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::int::test_bits::pack;

    /// The shim, header and stack of the report specification's example "Embedded INT-MD in a TCP Packet":
    /// node id and queue occupancy per hop, two hops, Remaining Hop Count 6.
    fn spec_example() -> Vec<u8> {
        pack(&[
            (1, 4), // Type = 1
            (2, 2), // NPT = 2 (IP protocol)
            (0, 2),
            (7, 8), // Length = 7 words (3 header + 4 stack)
            (0, 8),
            (6, 8), // IP proto = TCP
            (2, 4), // Ver = 2
            (0, 3), // D E M
            (0, 12),
            (2, 5),                      // Hop ML = 2
            (6, 8),                      // Remaining Hop Count
            (0b1001_0000_0000_0000, 16), // node id, queue
            (0, 16),
            (0, 16),
            (0, 16),
            (0x0000_0002, 32), // node id of hop2
            (0x0300_0040, 32), // queue id 3, occupancy 64 of hop2
            (0x0000_0001, 32), // node id of hop1
            (0x0100_0010, 32), // queue id 1, occupancy 16 of hop1
        ])
    }

    #[test]
    fn spec_example_stack() {
        let mut bytes = spec_example();
        bytes.extend([0xAB; 20]); // the original TCP header
        let (md, rest) = IntMdRepr::parse(&bytes).unwrap();
        assert_eq!(md.next, NextProtocol::IpProtocol(6));
        assert_eq!((md.hop_ml, md.remaining_hop_count), (2, 6));
        assert_eq!(md.hop_count(), 2);
        let hops: Vec<_> = md.hops().collect();
        assert_eq!(hops[0].node_id, Some(2));
        assert_eq!(hops[0].queue, Some((3, 0x40)));
        assert_eq!(hops[1].node_id, Some(1));
        assert_eq!(hops[1].queue, Some((1, 0x10)));
        assert_eq!(rest, &[0xAB; 20]);
    }

    #[test]
    fn malformed_stacks_are_errors() {
        let good = spec_example();
        for cut in 0..good.len() {
            assert!(IntMdRepr::parse(&good[..cut]).is_err(), "cut at {cut}");
        }
        let mut v = good.clone();
        v[1] = 6; // Length 6: a stack of 3 words, not whole 2-word entries
        assert!(matches!(
            IntMdRepr::parse(&v),
            Err(Error::LengthMismatch { .. })
        ));
        let mut v = good.clone();
        v[6] = (v[6] & !0x1F) | 1; // Hop ML 1 cannot hold node id + queue
        assert!(matches!(
            IntMdRepr::parse(&v),
            Err(Error::LengthMismatch { .. })
        ));
        let mut v = good.clone();
        v[0] = 0x2 << 4; // shim type 2
        assert!(IntMdRepr::parse(&v).is_err());
        let mut v = good.clone();
        v[1] = 2; // shorter than the header
        assert!(IntMdRepr::parse(&v).is_err());
        let mut v = good;
        v[4] = 0x10; // header version 1
        assert!(IntMdRepr::parse(&v).is_err());
    }
}
