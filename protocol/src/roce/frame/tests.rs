use super::*;
use crate::roce::{AckKind, NakCode, ROCEV2_UDP_PORT};

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

const WRITE: &str = "02000000000202000000000108004502005c1234400040119c33c6120001c6120002c00012b7004800000a00ffff000000118000010000007f00000010000000123400000020000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f921b9b06";

fn vector_endpoints() -> UdpEndpoints {
    UdpEndpoints {
        ip_id: 0x1234,
        ..UdpEndpoints::new(
            [2, 0, 0, 0, 0, 1],
            [2, 0, 0, 0, 0, 2],
            [198, 18, 0, 1],
            [198, 18, 0, 2],
            49152,
            ROCEV2_UDP_PORT,
        )
    }
}

#[test]
fn write_vector_byte_for_byte() {
    let payload: Vec<u8> = (0..32).collect();
    let f = FrameRepr::write_only(
        vector_endpoints(),
        0x11,
        0x100,
        true,
        0x7f00_0000_1000,
        0x1234,
        &payload,
    );
    let mut buf = [0u8; 200];
    let n = f.emit(&mut buf).unwrap();
    assert_eq!(&buf[..n], &unhex(WRITE)[..]);
    assert_eq!(FrameRepr::parse(&buf[..n]).unwrap(), f);
}

#[test]
fn fetch_add_vector_icrc() {
    let f = FrameRepr::fetch_add(
        vector_endpoints(),
        0x11,
        0x101,
        true,
        0x7f00_0000_2000,
        0x1234,
        1,
    );
    let mut buf = [0u8; 200];
    let n = f.emit(&mut buf).unwrap();
    assert_eq!(n, 14 + 20 + 8 + 12 + 28 + 4);
    assert_eq!(&buf[n - 4..n], &[0x84, 0x55, 0x45, 0x66]);
    assert_eq!(FrameRepr::parse(&buf[..n]).unwrap(), f);
}

#[test]
fn pads_odd_payloads() {
    let f = FrameRepr::write_only(vector_endpoints(), 7, 9, false, 0x1000, 1, b"abcde");
    let mut buf = [0u8; 200];
    let n = f.emit(&mut buf).unwrap();
    assert_eq!(n, 42 + 12 + 16 + 5 + 3 + 4);
    assert_eq!(buf[43] >> 4 & 3, 3, "pad count 3 in BTH byte 1");
    assert_eq!(&buf[42 + 28 + 5..42 + 28 + 8], &[0, 0, 0]);
    let back = FrameRepr::parse(&buf[..n]).unwrap();
    assert_eq!(back.payload, b"abcde");
    assert_eq!(back.bth.pad_count, 3);
}

#[test]
fn responses_round_trip() {
    // Responses go to UDP 4791 as well; only the source port is free.
    let ep = UdpEndpoints {
        src_port: 50000,
        ..vector_endpoints().reversed()
    };
    let ep = UdpEndpoints {
        dst_port: ROCEV2_UDP_PORT,
        ..ep
    };
    let nak = AethRepr {
        kind: AckKind::Nak(NakCode::PsnSequenceError),
        msn: 5,
    };
    let frames = [
        FrameRepr::acknowledge(
            ep,
            0x22,
            0x100,
            AethRepr {
                kind: AckKind::Ack { credits: 31 },
                msn: 1,
            },
        ),
        FrameRepr::acknowledge(ep, 0x22, 0x100, nak),
        FrameRepr::atomic_acknowledge(
            ep,
            0x22,
            0x101,
            AethRepr {
                kind: AckKind::Ack { credits: 31 },
                msn: 2,
            },
            41,
        ),
    ];
    for f in frames {
        let mut buf = [0u8; 128];
        let n = f.emit(&mut buf).unwrap();
        assert_eq!(FrameRepr::parse(&buf[..n]).unwrap(), f);
        icrc::verify(&buf[..n]).unwrap();
    }
}

#[test]
fn cnp_matches_the_captured_shape() {
    // Same shape as scapy's ConnectX-4 Lx capture (icrc.rs): 74 bytes, opcode 0x81, BECN, P_Key
    // 0xFFFF, 16 reserved zero bytes, valid iCRC.
    let ep = UdpEndpoints {
        dst_port: ROCEV2_UDP_PORT,
        ..vector_endpoints()
    };
    let f = FrameRepr::cnp(ep, 0x118);
    let mut buf = [0u8; 128];
    let n = f.emit(&mut buf).unwrap();
    assert_eq!(n, 74);
    assert_eq!(
        &buf[42..54],
        &[0x81, 0, 0xff, 0xff, 0x40, 0, 0x01, 0x18, 0, 0, 0, 0]
    );
    assert_eq!(&buf[54..70], &[0u8; 16]);
    assert_eq!(FrameRepr::parse(&buf[..n]).unwrap(), f);
}

#[test]
fn rejects_mismatched_extension_and_bad_lengths() {
    let mut f = FrameRepr::write_only(vector_endpoints(), 1, 1, false, 0, 1, b"abcd");
    f.ext = Extension::Cnp;
    assert!(f.emit(&mut [0u8; 200]).is_err());
    let mut frame = unhex(WRITE);
    // Claim 31 bytes in the RETH, then fix the iCRC so only the length is wrong.
    frame[42 + 12 + 15] = 31;
    icrc::fill(&mut frame).unwrap();
    assert!(matches!(
        FrameRepr::parse(&frame),
        Err(Error::LengthMismatch { .. })
    ));
    let mut frame = unhex(WRITE);
    frame[60] ^= 1;
    assert!(matches!(
        FrameRepr::parse(&frame),
        Err(Error::IcrcMismatch { .. })
    ));
    assert!(FrameRepr::parse(&frame[..60]).is_err());
    assert!(f.emit(&mut [0u8; 10]).is_err());
}
