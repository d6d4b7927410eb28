//! Property tests for the RoCEv2 headers and frames: round trips, prefixes and single-bit flips.

use dta_protocol::roce::{
    aeth, atomic_ack_eth, atomic_eth, bth, icrc, reth, AckKind, AethRepr, AtomicAckEthRepr,
    AtomicEthRepr, BthOpcode, BthRepr, FrameRepr, NakCode, RethRepr, ROCEV2_UDP_PORT,
};
use dta_protocol::udp::UdpEndpoints;
use proptest::prelude::*;

fn opcode() -> impl Strategy<Value = BthOpcode> {
    prop_oneof![
        Just(BthOpcode::RdmaWriteOnly),
        Just(BthOpcode::RdmaWriteOnlyImm),
        Just(BthOpcode::Acknowledge),
        Just(BthOpcode::AtomicAcknowledge),
        Just(BthOpcode::CompareSwap),
        Just(BthOpcode::FetchAdd),
        Just(BthOpcode::Cnp),
    ]
}

prop_compose! {
    fn bth_repr()(opcode in opcode(), solicited: bool, mig_req: bool, pad_count in 0u8..4, pkey: u16,
                  fecn: bool, becn: bool, dest_qp in 0u32..1 << 24, ack_req: bool, psn in 0u32..1 << 24)
                  -> BthRepr {
        BthRepr { opcode, solicited, mig_req, pad_count, pkey, fecn, becn, dest_qp, ack_req, psn }
    }
}

fn ack_kind() -> impl Strategy<Value = AckKind> {
    prop_oneof![
        (0u8..32).prop_map(|credits| AckKind::Ack { credits }),
        (0u8..32).prop_map(|timer| AckKind::RnrNak { timer }),
        prop_oneof![
            Just(NakCode::PsnSequenceError),
            Just(NakCode::InvalidRequest),
            Just(NakCode::RemoteAccessError),
            Just(NakCode::RemoteOperationalError),
            Just(NakCode::InvalidRdRequest),
        ]
        .prop_map(AckKind::Nak),
    ]
}

prop_compose! {
    fn endpoints()(src_mac: [u8; 6], dst_mac: [u8; 6], src_ip: [u8; 4], dst_ip: [u8; 4], src_port: u16,
                   dscp in 0u8..64, ecn in 0u8..4, ip_id: u16, ttl: u8) -> UdpEndpoints {
        UdpEndpoints { src_mac, dst_mac, src_ip, dst_ip, src_port, dst_port: ROCEV2_UDP_PORT, dscp, ecn, ip_id, ttl }
    }
}

/// A random valid frame, emitted.
fn frame_bytes() -> impl Strategy<Value = Vec<u8>> {
    (
        endpoints(),
        0u32..1 << 24,
        0u32..1 << 24,
        any::<bool>(),
        any::<u64>(),
        any::<u32>(),
        proptest::collection::vec(any::<u8>(), 0..96),
        ack_kind(),
        0u8..4,
    )
        .prop_map(|(ep, qp, psn, ack_req, va, rkey, payload, kind, which)| {
            let aeth = AethRepr { kind, msn: psn };
            let f = match which {
                0 => FrameRepr::write_only(ep, qp, psn, ack_req, va, rkey, &payload),
                1 => FrameRepr::fetch_add(ep, qp, psn, ack_req, va & !7, rkey, va),
                2 => FrameRepr::acknowledge(ep, qp, psn, aeth),
                _ => FrameRepr::atomic_acknowledge(ep, qp, psn, aeth, va),
            };
            let mut buf = vec![0u8; f.buffer_len()];
            let n = f.emit(&mut buf).expect("valid frame emits");
            assert_eq!(n, buf.len());
            buf
        })
}

/// Bytes of an untagged IPv4 RoCE frame that the iCRC masks out: TOS, TTL, IPv4 checksum, UDP checksum,
/// BTH byte 4.
const MASKED: [usize; 7] = [15, 22, 24, 25, 40, 41, 46];

proptest! {
    #[test]
    fn bth_round_trip(r in bth_repr()) {
        let mut buf = [0u8; bth::HEADER_LEN];
        r.emit(&mut buf).unwrap();
        prop_assert_eq!(BthRepr::parse(&bth::Packet::new_checked(&buf[..]).unwrap()).unwrap(), r);
    }

    #[test]
    fn extension_headers_round_trip(va: u64, rkey: u32, dma_len: u32, add: u64, cmp: u64,
                                    kind in ack_kind(), msn in 0u32..1 << 24, orig: u64) {
        let r = RethRepr { va, rkey, dma_len };
        let mut b = [0u8; reth::HEADER_LEN];
        r.emit(&mut b).unwrap();
        prop_assert_eq!(RethRepr::parse(&reth::Packet::new_checked(&b[..]).unwrap()).unwrap(), r);

        let a = AtomicEthRepr { va, rkey, swap_add: add, compare: cmp };
        let mut b = [0u8; atomic_eth::HEADER_LEN];
        a.emit(&mut b).unwrap();
        prop_assert_eq!(AtomicEthRepr::parse(&atomic_eth::Packet::new_checked(&b[..]).unwrap()).unwrap(), a);

        let e = AethRepr { kind, msn };
        let mut b = [0u8; aeth::HEADER_LEN];
        e.emit(&mut b).unwrap();
        prop_assert_eq!(AethRepr::parse(&aeth::Packet::new_checked(&b[..]).unwrap()).unwrap(), e);

        let o = AtomicAckEthRepr { orig_remote_data: orig };
        let mut b = [0u8; atomic_ack_eth::HEADER_LEN];
        o.emit(&mut b).unwrap();
        prop_assert_eq!(AtomicAckEthRepr::parse(&atomic_ack_eth::Packet::new_checked(&b[..]).unwrap()).unwrap(), o);
    }

    #[test]
    fn frame_round_trip(f in frame_bytes()) {
        let parsed = FrameRepr::parse(&f).unwrap();
        let mut again = vec![0u8; parsed.buffer_len()];
        parsed.emit(&mut again).unwrap();
        prop_assert_eq!(again, f);
    }

    #[test]
    fn every_prefix_is_rejected(f in frame_bytes()) {
        for cut in 0..f.len() {
            prop_assert!(FrameRepr::parse(&f[..cut]).is_err(), "prefix of {} bytes parsed", cut);
            prop_assert!(icrc::verify(&f[..cut]).is_err(), "prefix of {} bytes verified", cut);
        }
    }

    #[test]
    fn every_covered_bit_flip_fails_the_icrc(f in frame_bytes()) {
        prop_assert!(icrc::verify(&f).is_ok());
        for byte in 14..f.len() {
            for bit in 0..8 {
                let mut g = f.clone();
                g[byte] ^= 1 << bit;
                if MASKED.contains(&byte) {
                    // Fields that routers may rewrite are outside the iCRC by design.
                    prop_assert!(icrc::verify(&g).is_ok(), "masked byte {} bit {}", byte, bit);
                } else {
                    prop_assert!(icrc::verify(&g).is_err(), "byte {} bit {} went unnoticed", byte, bit);
                    prop_assert!(FrameRepr::parse(&g).is_err(), "byte {} bit {} parsed", byte, bit);
                }
            }
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..160)) {
        let _ = FrameRepr::parse(&data);
        let _ = icrc::verify(&data);
    }
}
