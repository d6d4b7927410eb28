use super::*;
use proptest::prelude::*;

/// The model of [`UdpFrame::parse`]: etherparse's slices, its reasons included.
fn etherparse_model(frame: &[u8]) -> Result<UdpFrame<'_>> {
    let eth = etherparse::Ethernet2Slice::from_slice_without_fcs(frame).map_err(|_| {
        Error::Truncated {
            header: "Ethernet",
            needed: ETH_HEADER_LEN,
            available: frame.len(),
        }
    })?;
    if eth.ether_type() != EtherType::IPV4 {
        return Err(Error::NotRoce("not IPv4"));
    }
    let ip = etherparse::Ipv4Slice::from_slice(eth.payload_slice())
        .map_err(|_| Error::NotRoce("malformed or truncated IPv4 header"))?;
    if ip.is_payload_fragmented() {
        return Err(Error::NotRoce("IPv4 fragment"));
    }
    let h = ip.header();
    if h.protocol() != IpNumber::UDP {
        return Err(Error::NotRoce("not UDP"));
    }
    let udp = etherparse::UdpSlice::from_slice(ip.payload().payload)
        .map_err(|_| Error::NotRoce("malformed or truncated UDP header"))?;
    let ip_offset = ETH_HEADER_LEN;
    let payload_offset = ip_offset + h.slice().len() + UDP_HEADER_LEN;
    Ok(UdpFrame {
        endpoints: UdpEndpoints {
            src_mac: eth.source(),
            dst_mac: eth.destination(),
            src_ip: h.source(),
            dst_ip: h.destination(),
            src_port: udp.source_port(),
            dst_port: udp.destination_port(),
            dscp: h.dcp().value(),
            ecn: h.ecn().value(),
            ip_id: h.identification(),
            ttl: h.ttl(),
        },
        ip_offset,
        payload_offset,
        payload: udp.payload(),
    })
}

/// Frames around a valid report frame: every header byte that a check reads may take any value.
fn frames() -> impl Strategy<Value = Vec<u8>> {
    (
        proptest::collection::vec(any::<u8>(), 0..40),
        any::<u16>(),
        0usize..8,
        prop::sample::select(vec![0u8, 0x40, 0x45, 0x46, 0x4f, 0x55, 0x35]),
        any::<u16>(),
        prop::sample::select(vec![0u16, 0x4000, 0x2000, 0x0001, 0x6001, 0x8000]),
        prop::sample::select(vec![17u8, 6, 51, 0]),
        any::<u16>(),
        (any::<u8>(), any::<u8>(), 0usize..3),
    )
        .prop_map(
            |(payload, tl, pad, vihl, udp_len, frag, proto, ethertype, (tos, ttl, which))| {
                let ep = UdpEndpoints {
                    dscp: tos >> 2,
                    ecn: tos & 3,
                    ttl,
                    ip_id: tl ^ 0x5a5a,
                    ..UdpEndpoints::new(
                        [1, 2, 3, 4, 5, 6],
                        [7, 8, 9, 10, 11, 12],
                        [10, 0, 0, 1],
                        [10, 0, 0, 2],
                        5000,
                        40040,
                    )
                };
                let mut f = vec![0u8; HEADERS_LEN + payload.len() + pad];
                ep.emit_frame(&mut f, &payload).unwrap();
                let ip = ETH_HEADER_LEN;
                // Mostly valid frames with one field bent, sometimes several.
                match which {
                    0 => {}
                    1 => {
                        f[ip] = vihl;
                        f[ip + 6..ip + 8].copy_from_slice(&frag.to_be_bytes());
                        f[ip + 9] = proto;
                    }
                    _ => {
                        f[12..14].copy_from_slice(
                            &(if ethertype & 1 == 0 {
                                0x0800
                            } else {
                                ethertype
                            })
                            .to_be_bytes(),
                        );
                        f[ip + 2..ip + 4].copy_from_slice(&(tl % 128).to_be_bytes());
                        f[ip + 24..ip + 26].copy_from_slice(&(udp_len % 96).to_be_bytes());
                    }
                }
                let cut = usize::from(tl) % (f.len() + 1);
                if tl & 0x8000 != 0 {
                    f.truncate(cut);
                }
                f
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]
    #[test]
    fn parse_equals_etherparse(f in frames()) {
        agrees(&f)?;
    }

    #[test]
    fn parse_of_any_bytes_equals_etherparse(f in proptest::collection::vec(any::<u8>(), 0..80)) {
        agrees(&f)?;
    }
}

/// Every IPv4 total length and UDP length around the headers and the frame's end (zero, below the
/// headers, within, past the total and the frame), in frames of several sizes: the parse's length
/// checks agree with etherparse's on each.
#[test]
fn length_fields_agree_exhaustively() {
    let ep = UdpEndpoints::new([1; 6], [2; 6], [10, 0, 0, 1], [10, 0, 0, 2], 5000, 40040);
    for payload in [0usize, 1, 7, 8, 20] {
        let mut f = vec![0u8; HEADERS_LEN + payload];
        ep.emit_frame(&mut f, &vec![0xAB; payload]).unwrap();
        for pad in [0usize, 3] {
            let mut g = f.clone();
            g.resize(f.len() + pad, 0);
            for tl in 0u16..80 {
                for udp_len in 0u16..70 {
                    g[ETH_HEADER_LEN + 2..ETH_HEADER_LEN + 4].copy_from_slice(&tl.to_be_bytes());
                    g[38..40].copy_from_slice(&udp_len.to_be_bytes());
                    agrees(&g).unwrap();
                }
            }
        }
    }
}

/// The parse accepts what etherparse accepts, with the same fields; a frame with one fault gets
/// etherparse's reason (with several, the parse may name another of them). The view, its common
/// path and the whole frame built from it agree with the parse.
fn agrees(f: &[u8]) -> std::result::Result<(), TestCaseError> {
    let model = etherparse_model(f);
    let parsed = UdpFrame::parse(f);
    match (&model, &parsed) {
        (Ok(a), Ok(b)) => prop_assert_eq!(a, b),
        (Err(_), Err(_)) => {}
        (a, b) => prop_assert!(false, "etherparse {:?}, parse {:?}", a, b),
    }
    let view = UdpView::parse(f);
    prop_assert_eq!(view, model.as_ref().ok().map(UdpView::of));
    if let Ok(common) = UdpView::parse_common(f) {
        prop_assert_eq!(common, view);
    }
    prop_assert_eq!(view.and_then(|v| v.frame(f)), model.ok());
    Ok(())
}

/// One fault at a time, each with etherparse's reason.
#[test]
fn reasons_of_single_faults() {
    let ep = UdpEndpoints::new([1; 6], [2; 6], [10, 0, 0, 1], [10, 0, 0, 2], 5000, 40040);
    let mut good = [0u8; HEADERS_LEN + 4];
    ep.emit_frame(&mut good, &[1, 2, 3, 4]).unwrap();
    let bent = |at: usize, v: &[u8]| {
        let mut f = good.to_vec();
        f[at..at + v.len()].copy_from_slice(v);
        f
    };
    let cases: [(Vec<u8>, Error); 9] = [
        (
            good[..13].to_vec(),
            Error::Truncated {
                header: "Ethernet",
                needed: 14,
                available: 13,
            },
        ),
        (bent(12, &[0x86, 0xdd]), Error::NotRoce("not IPv4")),
        (good[..30].to_vec(), IPV4_MALFORMED),
        (bent(14, &[0x65]), IPV4_MALFORMED),
        (bent(14, &[0x44]), IPV4_MALFORMED),
        // Total length 19 (below the header), then 60 (past the frame).
        (bent(16, &[0, 19]), IPV4_MALFORMED),
        (bent(16, &[0, 60]), IPV4_MALFORMED),
        (bent(20, &[0x20, 0x00]), Error::NotRoce("IPv4 fragment")),
        // UDP length 7 (below its header).
        (bent(38, &[0, 7]), UDP_MALFORMED),
    ];
    for (f, want) in cases {
        assert_eq!(UdpFrame::parse(&f), Err(want), "{f:02x?}");
        assert_eq!(etherparse_model(&f), Err(want), "{f:02x?}");
    }
    assert_eq!(
        UdpFrame::parse(&bent(23, &[6])),
        Err(Error::NotRoce("not UDP"))
    );
    // Total length 27: the IPv4 header fits, the UDP header does not.
    assert_eq!(UdpFrame::parse(&bent(16, &[0, 27])), Err(UDP_MALFORMED));
    assert_eq!(etherparse_model(&bent(16, &[0, 27])), Err(UDP_MALFORMED));
}

#[test]
fn emits_the_toolchain_vector_headers() {
    // The first 42 bytes of TOOLCHAIN.md's WRITE vector: TOS 2 (ECT(0)), ID 0x1234, DF, TTL 64,
    // UDP 49152 -> 4791, UDP payload 64 bytes.
    let ep = UdpEndpoints {
        ip_id: 0x1234,
        ..UdpEndpoints::new(
            [2, 0, 0, 0, 0, 2],
            [2, 0, 0, 0, 0, 1],
            [198, 18, 0, 1],
            [198, 18, 0, 2],
            49152,
            4791,
        )
    };
    // The vector's destination MAC is 02:00:00:00:00:02 and source 02:00:00:00:00:01.
    let ep = UdpEndpoints {
        src_mac: [2, 0, 0, 0, 0, 1],
        dst_mac: [2, 0, 0, 0, 0, 2],
        ..ep
    };
    let mut buf = [0u8; HEADERS_LEN];
    ep.emit_headers(&mut buf, 64).unwrap();
    let expected =
        "02000000000202000000000108004502005c1234400040119c33c6120001c6120002c00012b700480000";
    let hex: String = buf.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, expected);
}

#[test]
fn offsets_match_what_etherparse_writes() {
    let ep = UdpEndpoints {
        dscp: 0x2e,
        ecn: 0b01,
        ttl: 0x77,
        ..UdpEndpoints::new([1; 6], [2; 6], [10, 0, 0, 1], [10, 0, 0, 2], 1, 2)
    };
    let mut buf = [0u8; HEADERS_LEN];
    ep.emit_headers(&mut buf, 100).unwrap();
    let ip = &buf[ETH_HEADER_LEN..];
    let udp = &ip[IPV4_HEADER_LEN..];
    assert_eq!(ether_type(&buf), Some(ETHERTYPE_IPV4));
    assert_eq!(ether_type(&buf[..13]), None);
    assert_eq!(ip[offset::IPV4_VERSION_IHL], 0x45);
    assert_eq!(ip[offset::IPV4_TOS], 0x2e << 2 | 0b01);
    assert_eq!(
        &ip[offset::IPV4_TOTAL_LEN],
        &((IPV4_HEADER_LEN + UDP_HEADER_LEN + 100) as u16).to_be_bytes()
    );
    assert_eq!(ip[offset::IPV4_TTL], 0x77);
    let h = etherparse::Ipv4HeaderSlice::from_slice(ip).unwrap();
    assert_eq!(
        &ip[offset::IPV4_CHECKSUM],
        &h.header_checksum().to_be_bytes()
    );
    // dta sends UDP checksum 0; make it recognisable to find its offset.
    let mut d = etherparse::UdpHeaderSlice::from_slice(udp)
        .unwrap()
        .to_header();
    d.checksum = 0xBEEF;
    assert_eq!(&d.to_bytes()[offset::UDP_CHECKSUM], &[0xBE, 0xEF]);
}

/// Every offset of [`offset`], read from a frame etherparse wrote with a distinct value in each field,
/// and [`at`]'s frame offsets equal to the header's start plus the field's.
#[test]
fn every_offset_reads_what_etherparse_wrote() {
    let mut ip = Ipv4Header::new(
        0x0123,
        0x45,
        IpNumber::UDP,
        [10, 11, 12, 13],
        [20, 21, 22, 23],
    )
    .unwrap();
    ip.identification = 0xA1B2;
    ip.dont_fragment = true;
    ip.more_fragments = true;
    ip.fragment_offset = etherparse::IpFragOffset::try_new(0x0567).unwrap();
    ip.dscp = IpDscp::try_new(0x2e).unwrap();
    ip.ecn = IpEcn::try_new(0b01).unwrap();
    ip.header_checksum = ip.calc_header_checksum();
    let eth = Ethernet2Header {
        destination: [1, 2, 3, 4, 5, 6],
        source: [7, 8, 9, 10, 11, 12],
        ether_type: EtherType::IPV4,
    };
    let udp = UdpHeader {
        source_port: 0x1357,
        destination_port: 0x2468,
        length: 0x0AB0,
        checksum: 0xBEEF,
    };
    let mut frame = Vec::new();
    frame.extend_from_slice(&eth.to_bytes());
    frame.extend_from_slice(&ip.to_bytes());
    frame.extend_from_slice(&udp.to_bytes());
    assert_eq!(frame.len(), HEADERS_LEN);
    let (e, rest) = frame.split_at(ETH_HEADER_LEN);
    let (i, u) = rest.split_at(IPV4_HEADER_LEN);
    assert_eq!(e[offset::ETH_DST], [1, 2, 3, 4, 5, 6]);
    assert_eq!(e[offset::ETH_SRC], [7, 8, 9, 10, 11, 12]);
    assert_eq!(e[offset::ETH_TYPE], [0x08, 0x00]);
    assert_eq!(i[offset::IPV4_VERSION_IHL], 0x45);
    assert_eq!(i[offset::IPV4_TOS], 0x2e << 2 | 0b01);
    assert_eq!(i[offset::IPV4_TOTAL_LEN], (0x0123u16 + 20).to_be_bytes());
    assert_eq!(i[offset::IPV4_ID], [0xA1, 0xB2]);
    // DF 0x4000, MF 0x2000, offset 0x0567.
    assert_eq!(i[offset::IPV4_FLAGS_FRAGMENT], [0x65, 0x67]);
    assert_eq!(i[offset::IPV4_TTL], 0x45);
    assert_eq!(i[offset::IPV4_PROTOCOL], 17);
    assert_eq!(i[offset::IPV4_CHECKSUM], ip.header_checksum.to_be_bytes());
    assert_eq!(i[offset::IPV4_SRC], [10, 11, 12, 13]);
    assert_eq!(i[offset::IPV4_DST], [20, 21, 22, 23]);
    assert_eq!(u[offset::UDP_SRC_PORT], [0x13, 0x57]);
    assert_eq!(u[offset::UDP_DST_PORT], [0x24, 0x68]);
    assert_eq!(u[offset::UDP_LEN], [0x0A, 0xB0]);
    assert_eq!(u[offset::UDP_CHECKSUM], [0xBE, 0xEF]);
    // The same bytes through the frame offsets.
    assert_eq!(frame[at::ETH_DST], e[offset::ETH_DST]);
    assert_eq!(frame[at::ETH_SRC], e[offset::ETH_SRC]);
    assert_eq!(frame[at::ETH_TYPE], e[offset::ETH_TYPE]);
    assert_eq!(frame[at::IPV4_VERSION_IHL], 0x45);
    assert_eq!(frame[at::IPV4_TOS], i[offset::IPV4_TOS]);
    assert_eq!(frame[at::IPV4_TOTAL_LEN], i[offset::IPV4_TOTAL_LEN]);
    assert_eq!(frame[at::IPV4_ID], [0xA1, 0xB2]);
    assert_eq!(frame[at::IPV4_FLAGS_FRAGMENT], [0x65, 0x67]);
    assert_eq!(frame[at::IPV4_TTL], 0x45);
    assert_eq!(frame[at::IPV4_PROTOCOL], 17);
    assert_eq!(frame[at::IPV4_CHECKSUM], i[offset::IPV4_CHECKSUM]);
    assert_eq!(frame[at::IPV4_SRC], [10, 11, 12, 13]);
    assert_eq!(frame[at::IPV4_DST], [20, 21, 22, 23]);
    assert_eq!(frame[at::UDP_SRC_PORT], [0x13, 0x57]);
    assert_eq!(frame[at::UDP_DST_PORT], [0x24, 0x68]);
    assert_eq!(frame[at::UDP_LEN], [0x0A, 0xB0]);
    assert_eq!(frame[at::UDP_CHECKSUM], [0xBE, 0xEF]);
    assert_eq!(
        (at::IPV4, at::UDP, at::PAYLOAD),
        (14, 34, 42),
        "Ethernet 14, IPv4 20, UDP 8 bytes"
    );
    assert_eq!(&frame[at::IPV4..at::UDP], i);
    assert_eq!(&frame[at::UDP..at::PAYLOAD], u);
}

#[test]
fn parse_round_trip_and_rejections() {
    let ep = UdpEndpoints::new(
        [1; 6],
        [2; 6],
        [198, 18, 0, 1],
        [198, 18, 0, 2],
        1234,
        40040,
    );
    let mut buf = [0u8; 128];
    let n = ep.emit_frame(&mut buf, b"hello").unwrap();
    // Ethernet padding after the datagram is not part of the payload.
    let f = UdpFrame::parse(&buf[..n + 10]).unwrap();
    assert_eq!(f.endpoints, ep);
    assert_eq!(f.payload, b"hello");
    assert_eq!(f.payload_offset, HEADERS_LEN);
    for cut in 0..n - 5 {
        assert!(UdpFrame::parse(&buf[..cut]).is_err(), "prefix {cut}");
    }
    let mut arp = buf;
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    assert_eq!(UdpFrame::parse(&arp[..n]), Err(Error::NotRoce("not IPv4")));
    let mut tcp = buf;
    tcp[23] = 6;
    assert_eq!(UdpFrame::parse(&tcp[..n]), Err(Error::NotRoce("not UDP")));
}
