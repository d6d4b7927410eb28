use super::*;
use crate::roce::NakCode;
use crate::udp::UdpEndpoints;
use proptest::prelude::*;

fn responses() -> Vec<Vec<u8>> {
    let ep = UdpEndpoints::new([2; 6], [4; 6], [10, 0, 0, 2], [10, 0, 0, 1], 49152, 4791);
    let kinds = [
        AckKind::Ack { credits: 31 },
        AckKind::RnrNak { timer: 3 },
        AckKind::Nak(NakCode::PsnSequenceError),
        AckKind::Nak(NakCode::RemoteAccessError),
    ];
    let mut out = Vec::new();
    for (k, kind) in kinds.into_iter().enumerate() {
        let aeth = AethRepr {
            kind,
            msn: 0xAB_CDEF - k as u32,
        };
        let psn = 0xFF_FFF0 + k as u32;
        for f in [
            FrameRepr::acknowledge(ep, 0x11, psn, aeth),
            FrameRepr::atomic_acknowledge(ep, 0x11, psn, aeth, 0x0123_4567_89AB_CDEF),
        ] {
            let mut buf = vec![0u8; f.buffer_len()];
            f.emit(&mut buf).unwrap();
            out.push(buf);
        }
    }
    for f in [
        FrameRepr::cnp(ep, 0x11),
        FrameRepr::write_only(ep, 0x11, 5, true, 0x1000, 7, &[1, 2, 3, 4, 5]),
        FrameRepr::fetch_add(ep, 0x11, 6, false, 0x2000, 7, 9),
    ] {
        let mut buf = vec![0u8; f.buffer_len()];
        f.emit(&mut buf).unwrap();
        out.push(buf);
    }
    out
}

/// The model of a response's parse: the UDP layer, port, options and iCRC as `parse` takes them, then
/// the packet read through the checked views (BTH, AETH, AtomicAckETH) with their errors, in the order
/// the headers are layered. `None` for a packet that is not a response by its opcode byte.
fn model(frame: &[u8]) -> Option<Result<FrameRepr<'_>>> {
    let udp = match UdpFrame::parse(frame) {
        Ok(u) => u,
        Err(e) => return Some(Err(e)),
    };
    if udp.endpoints.dst_port != ROCEV2_UDP_PORT {
        return Some(Err(Error::NotRoce("UDP destination port is not 4791")));
    }
    if udp.payload_offset != HEADERS_LEN {
        return Some(Err(Error::NotRoce("IPv4 options")));
    }
    if let Err(e) = icrc::verify(frame) {
        return Some(Err(e));
    }
    let roce = udp.payload;
    match roce.first() {
        Some(&bth::opcode::ACKNOWLEDGE | &bth::opcode::ATOMIC_ACKNOWLEDGE) => {
            Some(layered(udp.endpoints, roce))
        }
        _ => None,
    }
}

fn layered(endpoints: UdpEndpoints, roce: &[u8]) -> Result<FrameRepr<'_>> {
    let bth = BthRepr::parse(&bth::Packet::new_checked(roce)?)?;
    let after = roce
        .get(bth::HEADER_LEN..roce.len().saturating_sub(ICRC_LEN))
        .ok_or(Error::Truncated {
            header: "RoCEv2 packet",
            needed: bth::HEADER_LEN + ICRC_LEN,
            available: roce.len(),
        })?;
    let a = AethRepr::parse(&aeth::Packet::new_checked(after)?)?;
    let (ext, ext_len) = match bth.opcode {
        BthOpcode::Acknowledge => (Extension::Aeth(a), aeth::HEADER_LEN),
        _ => {
            let o = AtomicAckEthRepr::parse(&atomic_ack_eth::Packet::new_checked(
                &after[aeth::HEADER_LEN..],
            )?)?;
            (
                Extension::AtomicAck(a, o),
                aeth::HEADER_LEN + atomic_ack_eth::HEADER_LEN,
            )
        }
    };
    let body = &after[ext_len..];
    let pad = usize::from(bth.pad_count);
    if pad > body.len() {
        return Err(Error::LengthMismatch {
            header: "BTH pad count",
            expected: pad,
            actual: body.len(),
        });
    }
    if !body.is_empty() {
        return Err(Error::LengthMismatch {
            header: "RoCEv2 packet",
            expected: 0,
            actual: body.len(),
        });
    }
    Ok(FrameRepr {
        endpoints,
        bth,
        ext,
        payload: &[],
    })
}

#[test]
fn well_formed_responses_read_as_the_model() {
    for f in responses() {
        let udp = UdpFrame::parse(&f).unwrap();
        let want = FrameRepr::parse(&f).unwrap();
        assert_eq!(FrameRepr::parse_udp(&f, &udp), Ok(want));
        let direct = read::<Quiet>(udp.payload).map(|r| r.map(|r| r.repr(udp.endpoints)));
        match model(&f) {
            Some(m) => {
                assert_eq!(m, Ok(want));
                assert_eq!(direct, Some(Ok(want)));
            }
            None => assert!(direct.is_none()),
        }
    }
}

/// A response with one fault at a time gets the reason the views give.
#[test]
fn reasons_of_single_faults() {
    let ack = &responses()[0];
    let bent = |at: usize, v: u8, cut: usize, extra: usize| {
        let mut f = ack.clone();
        f[at] = v;
        f.truncate(f.len() - cut);
        f.extend(std::iter::repeat_n(0, extra));
        let ip = (f.len() - 14) as u16;
        f[16..18].copy_from_slice(&ip.to_be_bytes());
        f[38..40].copy_from_slice(&(ip - 20).to_be_bytes());
        icrc::fill(&mut f).unwrap();
        f
    };
    let flags = HEADERS_LEN + bth::field::FLAGS;
    let syndrome = HEADERS_LEN + bth::HEADER_LEN;
    let cases = [
        // Transport version 1, and 4 bytes too long: the version first.
        (
            bent(flags, 0x01, 0, 4),
            Error::InvalidField {
                header: "BTH",
                field: "transport version",
                value: 1,
            },
        ),
        // Syndrome 0x40 (reserved), and 4 bytes too long: the syndrome first.
        (
            bent(syndrome, 0x40, 0, 4),
            Error::InvalidField {
                header: "AETH",
                field: "syndrome",
                value: 0x40,
            },
        ),
        // Pad count 1 with no payload.
        (
            bent(flags, 0x10, 0, 0),
            Error::LengthMismatch {
                header: "BTH pad count",
                expected: 1,
                actual: 0,
            },
        ),
        // Two AETH bytes.
        (
            bent(flags, 0x00, 2, 0),
            Error::Truncated {
                header: "AETH",
                needed: 4,
                available: 2,
            },
        ),
        // Four bytes of payload.
        (
            bent(flags, 0x00, 0, 4),
            Error::LengthMismatch {
                header: "RoCEv2 packet",
                expected: 0,
                actual: 4,
            },
        ),
    ];
    for (f, want) in cases {
        assert_eq!(FrameRepr::parse(&f), Err(want), "{f:02x?}");
        assert_eq!(model(&f), Some(Err(want)), "{f:02x?}");
        let udp = UdpFrame::parse(&f).unwrap();
        let mut cache = ResponseIcrc::new();
        assert_eq!(
            FrameRepr::parse_ack_cached(&f, udp.payload_offset, udp.payload, &mut cache),
            None
        );
    }
}

proptest! {
    /// Any response (or request) with up to four bytes changed, cut or extended, its iCRC recomputed or
    /// not: every parse of it gives what the model gives, errors included.
    #[test]
    fn parses_equal_the_model(
        which in 0usize..11,
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..4),
        cut in 0usize..6,
        extra in 0usize..6,
        fix_icrc: bool,
        fix_lengths: bool,
    ) {
        let mut f = responses()[which].clone();
        for (at, v) in edits {
            let at = at % f.len();
            f[at] = v;
        }
        f.truncate(f.len() - cut);
        f.extend(std::iter::repeat_n(0x5A, extra));
        if fix_lengths && f.len() >= 42 {
            // Keep the IPv4 and UDP lengths in step with the frame, so the RoCE checks are reached.
            let ip = (f.len() - 14) as u16;
            f[16..18].copy_from_slice(&ip.to_be_bytes());
            f[38..40].copy_from_slice(&(ip - 20).to_be_bytes());
        }
        if fix_icrc {
            let _ = icrc::fill(&mut f);
        }
        let general = FrameRepr::parse(&f);
        let model = model(&f);
        if let Some(m) = model {
            prop_assert_eq!(general, m);
        }
        if let Ok(udp) = UdpFrame::parse(&f) {
            prop_assert_eq!(FrameRepr::parse_udp(&f, &udp), general);
            let mut cache = ResponseIcrc::new();
            for _ in 0..2 {
                prop_assert_eq!(FrameRepr::parse_udp_cached(&f, &udp, &mut cache), general);
                // The fields-only path answers for every well-formed response, as the model does.
                if udp.endpoints.dst_port == ROCEV2_UDP_PORT {
                    let fast = FrameRepr::parse_ack_cached(
                        &f,
                        udp.payload_offset,
                        udp.payload,
                        &mut cache,
                    );
                    match (fast, model) {
                        (Some(fast), Some(m)) => {
                            prop_assert_eq!(fast, m.map(|g| AckFields::of(&g).unwrap()));
                        }
                        (None, Some(Ok(m))) => prop_assert!(false, "{:?} not taken", m),
                        (Some(fast), None) => prop_assert!(false, "{:?} taken", fast),
                        _ => {}
                    }
                }
            }
        }
    }
}
