//! The templates against frames scapy built and against the general emit path.

use super::*;
use crate::roce::at::tests::{unhex, SCAPY_ACK, SCAPY_ATOMIC_ACK, SCAPY_WRITE};
use crate::roce::{icrc, AckKind, AethRepr};
use crate::udp::UdpEndpoints;
use proptest::prelude::*;

/// `frame` with the PSN, MSN and (`Some`) original value replaced and the iCRC computed afresh by the
/// general path.
fn patched(frame: &[u8], psn: u32, msn: u32, orig: Option<u64>) -> Vec<u8> {
    let mut f = frame.to_vec();
    f[at::BTH_PSN].copy_from_slice(&psn.to_be_bytes()[1..]);
    f[at::AETH_MSN].copy_from_slice(&msn.to_be_bytes()[1..]);
    if let Some(o) = orig {
        f[at::ATOMIC_ACK_ORIG].copy_from_slice(&o.to_be_bytes());
    }
    icrc::fill(&mut f).unwrap();
    f
}

#[test]
fn scapys_acknowledges_byte_for_byte() {
    for (hex, atomic) in [(SCAPY_ACK, false), (SCAPY_ATOMIC_ACK, true)] {
        let s = unhex(hex);
        let t = AckTemplate::new(&s).unwrap();
        assert_eq!(
            (t.is_atomic(), t.len(), t.frame()),
            (atomic, s.len(), &s[..])
        );
        let mut out = [0u8; 128];
        // The values scapy was given give scapy's frame, iCRC included.
        let (psn, msn) = if atomic {
            (0xfe_dcbb, 0xa5_b6c8)
        } else {
            (0xfe_dcba, 0xa5_b6c7)
        };
        assert_eq!(
            t.write(&mut out, psn, msn, 0xdead_beef_0102_0304),
            Some(s.len())
        );
        assert_eq!(&out[..s.len()], &s[..]);
        // Others (beyond 24 bits too: the low 24 are kept) what the general path gives.
        for (psn, msn, orig) in [
            (0, 0, 0),
            (0xFF_FFFF, 1, u64::MAX),
            (0x1FF_0001, 0xFF00_0002, 7),
        ] {
            let want = patched(&s, psn, msn, atomic.then_some(orig));
            assert_eq!(t.write(&mut out, psn, msn, orig), Some(s.len()));
            assert_eq!(&out[..s.len()], &want[..]);
            assert_eq!(
                out[s.len()..],
                [0u8; 128][s.len()..],
                "nothing written past the frame"
            );
        }
        assert_eq!(t.write(&mut out[..s.len() - 1], 1, 1, 1), None);
    }
}

#[test]
fn refuses_what_is_not_an_acknowledge() {
    assert!(matches!(
        AckTemplate::new(&unhex(SCAPY_WRITE)),
        Err(Error::InvalidField {
            field: "BTH opcode",
            value: 0x0a,
            ..
        })
    ));
    let mut padded = unhex(SCAPY_ACK);
    padded.extend_from_slice(&[0; 4]);
    assert!(matches!(
        AckTemplate::new(&padded),
        Err(Error::LengthMismatch {
            expected: 62,
            actual: 66,
            ..
        })
    ));
    let mut bad = unhex(SCAPY_ACK);
    bad[at::AETH_MSN.start] ^= 1;
    assert!(matches!(
        AckTemplate::new(&bad),
        Err(Error::IcrcMismatch { .. })
    ));
}

proptest! {
    /// A template's frames are byte for byte `FrameRepr`'s, for any requester, QP, syndrome, PSN, MSN and
    /// original value.
    #[test]
    fn templates_equal_the_emit_path(
        b in any::<[u8; 24]>(), qpn in 0u32..1 << 24, credits in 0u8..32,
        psn in 0u32..1 << 24, msn in 0u32..1 << 24, orig in any::<u64>(), atomic in any::<bool>(),
    ) {
        let ep = UdpEndpoints {
            dscp: b[20] & 0x3F,
            ip_id: u16::from(b[23]),
            ..UdpEndpoints::new(
                [b[0], b[1], b[2], b[3], b[4], b[5]],
                [b[6], b[7], b[8], b[9], b[10], b[11]],
                [b[12], b[13], b[14], b[15]],
                [b[16], b[17], b[18], b[19]],
                u16::from_be_bytes([b[21], b[22]]),
                crate::roce::ROCEV2_UDP_PORT,
            )
        };
        let aeth = |msn| AethRepr { kind: AckKind::Ack { credits }, msn };
        let repr = |psn, msn, orig| match atomic {
            true => FrameRepr::atomic_acknowledge(ep, qpn, psn, aeth(msn), orig),
            false => FrameRepr::acknowledge(ep, qpn, psn, aeth(msn)),
        };
        let t = AckTemplate::from_repr(&repr(0, 0, 0)).unwrap();
        let mut want = [0u8; ACK_TEMPLATE_MAX];
        let n = repr(psn, msn, orig).emit(&mut want).unwrap();
        let mut out = [0u8; ACK_TEMPLATE_MAX];
        prop_assert_eq!(t.write(&mut out, psn, msn, orig), Some(n));
        prop_assert_eq!(&out[..n], &want[..n]);
    }
}
