//! ACK Extended Transport Header (IBA 9.3.5), 4 bytes: `syndrome:8, MSN:24`.
//!
//! The syndrome's top three bits say what the response is: `000` ACK (low five bits: credit count),
//! `001` RNR NAK (low five bits: the RNR timer code), `011` NAK (low five bits: the NAK code). `010` and a
//! set top bit are reserved and rejected.

use crate::error::{check_len, check_room};
use crate::field::{f, FieldSpec};
use crate::field::{get_u24, set_u24, Field};
use crate::roce::PSN_MASK;
use crate::{Error, Result};

/// Byte offsets of the fields, relative to the start of this header: the one statement of where each
/// lies, which the view reads and the fast paths shift to frame or report offsets.
pub mod field {
    use super::Field;
    /// Syndrome: ACK, RNR NAK or NAK and its five-bit value.
    pub const SYNDROME: usize = 0;
    /// Message sequence number.
    pub const MSN: Field = 1..4;
}

/// Length of the AETH.
pub const HEADER_LEN: usize = field::MSN.end;

/// Field table of the AETH, in wire order.
pub const LAYOUT: &[FieldSpec] = &[f("syndrome", 8), f("msn", 24)];

/// Why a responder refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NakCode {
    /// The PSN was not the expected one: retransmit from the NAK's PSN (go-back-N).
    PsnSequenceError,
    /// Malformed or unsupported request (for example a misaligned atomic).
    InvalidRequest,
    /// R_Key, bounds or access rights refused.
    RemoteAccessError,
    /// The responder failed to carry out a valid request.
    RemoteOperationalError,
    /// Invalid RD request (reliable datagram only; never sent on RC, kept for completeness).
    InvalidRdRequest,
}

impl NakCode {
    /// The five-bit NAK code.
    pub const fn code(self) -> u8 {
        match self {
            NakCode::PsnSequenceError => 0,
            NakCode::InvalidRequest => 1,
            NakCode::RemoteAccessError => 2,
            NakCode::RemoteOperationalError => 3,
            NakCode::InvalidRdRequest => 4,
        }
    }
}

/// The decoded syndrome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AckKind {
    /// Positive acknowledgement with a credit count (31 means credits are not tracked).
    Ack {
        /// Five-bit credit count.
        credits: u8,
    },
    /// Receiver not ready: retry after the timer.
    RnrNak {
        /// Five-bit RNR timer code; see [`rnr_timer_ns`].
        timer: u8,
    },
    /// Negative acknowledgement.
    Nak(NakCode),
}

impl AckKind {
    /// Decodes a syndrome byte.
    pub fn from_syndrome(s: u8) -> Result<Self> {
        let low = s & 0x1F;
        let bad = || Error::InvalidField {
            header: "AETH",
            field: "syndrome",
            value: s.into(),
        };
        Ok(match s >> 5 {
            0b000 => AckKind::Ack { credits: low },
            0b001 => AckKind::RnrNak { timer: low },
            0b011 => AckKind::Nak(match low {
                0 => NakCode::PsnSequenceError,
                1 => NakCode::InvalidRequest,
                2 => NakCode::RemoteAccessError,
                3 => NakCode::RemoteOperationalError,
                4 => NakCode::InvalidRdRequest,
                _ => return Err(bad()),
            }),
            _ => return Err(bad()),
        })
    }

    /// Encodes the syndrome byte.
    pub const fn syndrome(self) -> u8 {
        match self {
            AckKind::Ack { credits } => credits & 0x1F,
            AckKind::RnrNak { timer } => 0x20 | (timer & 0x1F),
            AckKind::Nak(code) => 0x60 | code.code(),
        }
    }
}

/// The minimum RNR NAK timer for a five-bit code (IBA table 45), in nanoseconds.
pub const fn rnr_timer_ns(code: u8) -> u64 {
    // Hundredths of a millisecond, i.e. units of 10 µs.
    const TABLE: [u64; 32] = [
        65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024,
        1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152,
    ];
    TABLE[(code & 0x1F) as usize] * 10_000
}

/// A read/write view of an AETH.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking its length.
    pub const fn new_unchecked(buffer: T) -> Self {
        Packet { buffer }
    }
    /// Wraps a buffer that must hold a whole AETH.
    pub fn new_checked(buffer: T) -> Result<Self> {
        check_len("AETH", buffer.as_ref(), HEADER_LEN)?;
        Ok(Packet { buffer })
    }
    /// The raw syndrome byte.
    pub fn syndrome(&self) -> u8 {
        self.buffer.as_ref()[field::SYNDROME]
    }
    /// Message sequence number (24 bits).
    pub fn msn(&self) -> u32 {
        get_u24(&self.buffer.as_ref()[field::MSN])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the syndrome byte.
    pub fn set_syndrome(&mut self, v: u8) {
        self.buffer.as_mut()[field::SYNDROME] = v;
    }
    /// Sets the MSN (low 24 bits).
    pub fn set_msn(&mut self, v: u32) {
        set_u24(&mut self.buffer.as_mut()[field::MSN], v);
    }
}

/// A parsed AETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AethRepr {
    /// What the response says.
    pub kind: AckKind,
    /// Message sequence number.
    pub msn: u32,
}

impl AethRepr {
    /// Reads an AETH; reserved syndromes are an error.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Self> {
        Ok(AethRepr {
            kind: AckKind::from_syndrome(packet.syndrome())?,
            msn: packet.msn(),
        })
    }
    /// Bytes [`emit`](Self::emit) writes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }
    /// Writes the AETH into the first [`HEADER_LEN`] bytes of `buf`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        check_room(buf, HEADER_LEN)?;
        if self.msn & !PSN_MASK != 0 {
            return Err(Error::InvalidField {
                header: "AETH",
                field: "msn",
                value: self.msn.into(),
            });
        }
        let mut p = Packet::new_unchecked(&mut buf[..HEADER_LEN]);
        p.set_syndrome(self.kind.syndrome());
        p.set_msn(self.msn);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::layout_check::{case, check};

    #[test]
    fn layout_matches_accessors() {
        check(
            LAYOUT,
            HEADER_LEN,
            &[
                case(
                    "syndrome",
                    |b| Packet::new_unchecked(b).set_syndrome(0xFF),
                    |b| Packet::new_unchecked(b).syndrome() == 0xFF,
                ),
                case(
                    "msn",
                    |b| Packet::new_unchecked(b).set_msn(0xFF_FFFF),
                    |b| Packet::new_unchecked(b).msn() == 0xFF_FFFF,
                ),
            ],
        );
    }

    #[test]
    fn golden_bytes_from_the_iba_layout() {
        // IBA 9.3.5 / table 41: byte 0 is the syndrome (bits 7..5 the kind: 000 ACK, 001 RNR NAK, 011 NAK;
        // bits 4..0 credits, timer or NAK code), bytes 1..4 the MSN, most significant byte first.
        let cases: [(AckKind, u32, [u8; 4]); 4] = [
            (
                AckKind::Ack { credits: 31 },
                0x12_3456,
                [0x1F, 0x12, 0x34, 0x56],
            ),
            (AckKind::RnrNak { timer: 14 }, 1, [0x2E, 0x00, 0x00, 0x01]),
            (
                AckKind::Nak(NakCode::InvalidRequest),
                0xFF_FFFF,
                [0x61, 0xFF, 0xFF, 0xFF],
            ),
            (
                AckKind::Nak(NakCode::RemoteAccessError),
                0x80_0000,
                [0x62, 0x80, 0x00, 0x00],
            ),
        ];
        for (kind, msn, bytes) in cases {
            let r = AethRepr { kind, msn };
            let mut out = [0u8; HEADER_LEN];
            r.emit(&mut out).unwrap();
            assert_eq!(out, bytes, "{kind:?}");
            assert_eq!(
                AethRepr::parse(&Packet::new_checked(&bytes[..]).unwrap()),
                Ok(r)
            );
        }
        let too_wide = AethRepr {
            kind: AckKind::Ack { credits: 0 },
            msn: 1 << 24,
        };
        assert!(too_wide.emit(&mut [0u8; HEADER_LEN]).is_err());
    }

    #[test]
    fn decodes_syndromes() {
        assert_eq!(
            AckKind::from_syndrome(0x1F),
            Ok(AckKind::Ack { credits: 31 })
        );
        assert_eq!(
            AckKind::from_syndrome(0x00),
            Ok(AckKind::Ack { credits: 0 })
        );
        assert_eq!(
            AckKind::from_syndrome(0x2E),
            Ok(AckKind::RnrNak { timer: 14 })
        );
        assert_eq!(
            AckKind::from_syndrome(0x60),
            Ok(AckKind::Nak(NakCode::PsnSequenceError))
        );
        assert_eq!(
            AckKind::from_syndrome(0x61),
            Ok(AckKind::Nak(NakCode::InvalidRequest))
        );
        assert_eq!(
            AckKind::from_syndrome(0x62),
            Ok(AckKind::Nak(NakCode::RemoteAccessError))
        );
        assert_eq!(
            AckKind::from_syndrome(0x63),
            Ok(AckKind::Nak(NakCode::RemoteOperationalError))
        );
        for reserved in [0x40u8, 0x5F, 0x65, 0x7F, 0x80, 0xFF] {
            assert!(AckKind::from_syndrome(reserved).is_err(), "{reserved:#x}");
        }
        for s in 0..=0xFFu8 {
            if let Ok(k) = AckKind::from_syndrome(s) {
                assert_eq!(k.syndrome(), s);
            }
        }
    }

    #[test]
    fn rnr_timer_table() {
        assert_eq!(rnr_timer_ns(0), 655_360_000);
        assert_eq!(rnr_timer_ns(1), 10_000);
        assert_eq!(rnr_timer_ns(14), 1_280_000);
        assert_eq!(rnr_timer_ns(31), 491_520_000);
    }

    #[test]
    fn exact_bytes() {
        let r = AethRepr {
            kind: AckKind::Nak(NakCode::PsnSequenceError),
            msn: 0x0A0B0C,
        };
        let mut out = [0u8; 4];
        r.emit(&mut out).unwrap();
        assert_eq!(out, [0x60, 0x0A, 0x0B, 0x0C]);
        assert_eq!(
            AethRepr::parse(&Packet::new_checked(&out[..]).unwrap()).unwrap(),
            r
        );
        assert!(Packet::new_checked(&out[..3]).is_err());
    }
}
