//! The metadata a 16-bit bitmap selects: Telemetry Report v2.0's `RepMdBits` and INT 2.1's instruction
//! bitmap share bits 1 to 8; bit 0 and bit 15 differ.
//!
//! Bit 0 is the most significant bit (`0x8000`). Fields follow in bit order, 4 bytes per bit except 8 for
//! bits 4, 5 and 6:
//!
//! | bit | bytes | RepMdBits (report v2.0)               | INT-MD instruction (INT 2.1)    |
//! |-----|-------|---------------------------------------|---------------------------------|
//! | 0   | 4     | reserved                              | node id                         |
//! | 1   | 4     | level 1 ingress (16) + egress (16) interface ids | same                 |
//! | 2   | 4     | hop latency                           | same                            |
//! | 3   | 4     | queue id (8) + queue occupancy (24)   | same                            |
//! | 4   | 8     | ingress timestamp                     | same                            |
//! | 5   | 8     | egress timestamp                      | same                            |
//! | 6   | 8     | level 2 ingress (32) + egress (32) interface ids | same                 |
//! | 7   | 4     | egress port tx utilization            | same                            |
//! | 8   | 4     | buffer id (8) + buffer occupancy (24) | same                            |
//! | 9-14| 4     | reserved                              | reserved                        |
//! | 15  | 4     | queue id (8) + drop reason (8) + pad (16) | checksum complement         |
//!
//! A node that cannot supply a requested value sends all ones in its place (both specifications); the
//! values here are the raw fields, and [`NOT_AVAILABLE`] names that marker for the 32-bit ones.

use crate::error::{check_len, Error};
use crate::field::{get_u16, get_u24, get_u32, get_u64};
use crate::Result;

/// The all-ones value a node sends for metadata it cannot supply (32-bit fields).
pub const NOT_AVAILABLE: u32 = u32::MAX;

/// Which bitmap selects the metadata: the meaning of bits 0 and 15 depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bitmap {
    /// Telemetry Report v2.0 `RepMdBits`: bit 0 reserved, bit 15 queue id + drop reason.
    ReportMd,
    /// INT 2.1 instruction bitmap: bit 0 node id, bit 15 checksum complement.
    IntInstruction,
}

/// Baseline metadata: each field present when its bit is set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Metadata {
    /// Node id (INT instruction bit 0).
    pub node_id: Option<u32>,
    /// Level 1 ingress and egress interface ids (bit 1).
    pub l1_ports: Option<(u16, u16)>,
    /// Hop latency (bit 2), in the node's time unit (nanoseconds in practice).
    pub hop_latency: Option<u32>,
    /// Queue id and 24-bit queue occupancy (bit 3).
    pub queue: Option<(u8, u32)>,
    /// Ingress timestamp (bit 4).
    pub ingress_timestamp: Option<u64>,
    /// Egress timestamp (bit 5).
    pub egress_timestamp: Option<u64>,
    /// Level 2 ingress and egress interface ids (bit 6).
    pub l2_ports: Option<(u32, u32)>,
    /// Egress port tx utilization (bit 7).
    pub tx_utilization: Option<u32>,
    /// Buffer id and 24-bit buffer occupancy (bit 8).
    pub buffer: Option<(u8, u32)>,
    /// Queue id and drop reason (RepMdBits bit 15).
    pub drop: Option<(u8, u8)>,
    /// Checksum complement (INT instruction bit 15).
    pub checksum_complement: Option<u32>,
}

/// Bytes of metadata bit `bit` (0 = most significant) selects.
const fn width(bit: u32) -> usize {
    match bit {
        4..=6 => 8,
        _ => 4,
    }
}

/// Bytes of metadata `bits` select.
pub const fn length(bits: u16) -> usize {
    let mut n = 0;
    let mut bit = 0;
    while bit < 16 {
        if bits & (0x8000 >> bit) != 0 {
            n += width(bit);
        }
        bit += 1;
    }
    n
}

impl Metadata {
    /// Reads the metadata `bits` select from the start of `bytes`; returns it and the bytes it took.
    pub fn parse(bits: u16, kind: Bitmap, bytes: &[u8]) -> Result<(Metadata, usize)> {
        let total = length(bits);
        check_len("INT metadata", bytes, total)?;
        let mut m = Metadata::default();
        let mut at = 0;
        for bit in 0..16u32 {
            if bits & (0x8000 >> bit) == 0 {
                continue;
            }
            let b = &bytes[at..at + width(bit)];
            match (bit, kind) {
                (0, Bitmap::IntInstruction) => m.node_id = Some(get_u32(b)),
                (1, _) => m.l1_ports = Some((get_u16(b), get_u16(&b[2..]))),
                (2, _) => m.hop_latency = Some(get_u32(b)),
                (3, _) => m.queue = Some((b[0], get_u24(&b[1..]))),
                (4, _) => m.ingress_timestamp = Some(get_u64(b)),
                (5, _) => m.egress_timestamp = Some(get_u64(b)),
                (6, _) => m.l2_ports = Some((get_u32(b), get_u32(&b[4..]))),
                (7, _) => m.tx_utilization = Some(get_u32(b)),
                (8, _) => m.buffer = Some((b[0], get_u24(&b[1..]))),
                (15, Bitmap::ReportMd) => m.drop = Some((b[0], b[1])),
                (15, Bitmap::IntInstruction) => m.checksum_complement = Some(get_u32(b)),
                // Reserved bits: their 4 bytes are there, their meaning is not defined.
                _ => {}
            }
            at += width(bit);
        }
        debug_assert_eq!(at, total);
        Ok((m, total))
    }
}

/// Checks that `md_words` 4-byte words can hold the metadata `bits` select (domain-specific metadata may
/// follow it inside the same length).
pub fn check_fits(header: &'static str, bits: u16, md_words: usize) -> Result<()> {
    let need = length(bits);
    if need > md_words * 4 {
        return Err(Error::LengthMismatch {
            header,
            expected: need,
            actual: md_words * 4,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::int::test_bits::pack;

    #[test]
    fn lengths_follow_the_table() {
        assert_eq!(length(0), 0);
        // Bits 1 and 3: the spec's first example (MD Length = 2 words).
        assert_eq!(length(0b0101_0000_0000_0000), 8);
        // Bits 4, 5, 6 are 8 bytes each.
        assert_eq!(length(0b0000_1110_0000_0000), 24);
        assert_eq!(length(0xFFFF), 4 * 13 + 8 * 3);
    }

    #[test]
    fn every_bit_lands_in_its_field() {
        let bytes = pack(&[
            (0x0A0B_0C0D, 32),           // bit 0: node id (INT) / reserved (report)
            (7, 16),                     // bit 1: l1 ingress
            (9, 16),                     //        l1 egress
            (1500, 32),                  // bit 2: hop latency
            (3, 8),                      // bit 3: queue id
            (0x01_0203, 24),             //        occupancy
            (0x1122_3344_5566_7788, 64), // bit 4: ingress timestamp
            (0x99AA_BBCC_DDEE_FF00, 64), // bit 5: egress timestamp
            (0xDEAD_BEEF, 32),           // bit 6: l2 ingress
            (0xCAFE_F00D, 32),           //        l2 egress
            (42, 32),                    // bit 7: tx utilization
            (5, 8),                      // bit 8: buffer id
            (0xABCDEF, 24),              //        buffer occupancy
            (0xFFFF_FFFF, 32),           // bit 9: reserved
            (6, 8),                      // bit 15: queue id (report) ...
            (17, 8),                     //         drop reason
            (0, 16),                     //         padding
        ]);
        let bits = 0b1111_1111_1100_0001;
        let (m, n) = Metadata::parse(bits, Bitmap::ReportMd, &bytes).unwrap();
        assert_eq!(n, bytes.len());
        assert_eq!(m.node_id, None, "bit 0 is reserved in RepMdBits");
        assert_eq!(m.l1_ports, Some((7, 9)));
        assert_eq!(m.hop_latency, Some(1500));
        assert_eq!(m.queue, Some((3, 0x01_0203)));
        assert_eq!(m.ingress_timestamp, Some(0x1122_3344_5566_7788));
        assert_eq!(m.egress_timestamp, Some(0x99AA_BBCC_DDEE_FF00));
        assert_eq!(m.l2_ports, Some((0xDEAD_BEEF, 0xCAFE_F00D)));
        assert_eq!(m.tx_utilization, Some(42));
        assert_eq!(m.buffer, Some((5, 0xABCDEF)));
        assert_eq!(m.drop, Some((6, 17)));
        let (m, _) = Metadata::parse(bits, Bitmap::IntInstruction, &bytes).unwrap();
        assert_eq!(m.node_id, Some(0x0A0B_0C0D));
        assert_eq!(m.drop, None);
        assert_eq!(m.checksum_complement, Some(0x0611_0000));
    }

    #[test]
    fn short_metadata_is_an_error() {
        // Bit 4 (ingress timestamp) needs 8 bytes.
        let err = Metadata::parse(0b0000_1000_0000_0000, Bitmap::ReportMd, &[0; 4]).unwrap_err();
        assert!(matches!(
            err,
            Error::Truncated {
                needed: 8,
                available: 4,
                ..
            }
        ));
        assert!(check_fits("x", 0b0101_0000_0000_0000, 1).is_err());
        assert!(check_fits("x", 0b0101_0000_0000_0000, 2).is_ok());
    }
}
