use super::*;

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// TOOLCHAIN.md's 106-byte RC RDMA WRITE ONLY frame, iCRC 0x069b1b92.
const WRITE: &str = "02000000000202000000000108004502005c1234400040119c33c6120001c6120002c00012b7004800000a00ffff000000118000010000007f00000010000000123400000020000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f921b9b06";

#[test]
fn write_vector() {
    let f = unhex(WRITE);
    assert_eq!(f.len(), 106);
    assert_eq!(compute(&f), Ok(0x069b_1b92));
    assert_eq!(verify(&f), Ok(()));
    let p = IcrcPrefix::new(&f).unwrap();
    assert_eq!(p.finish(&f, f.len() - 4), 0x069b_1b92);
}

#[test]
fn scapy_cnp_vector() {
    // scapy's test/contrib/roce.uts: a CNP captured on a ConnectX-4 Lx, ending in 82 fd 00 2a.
    // Its BTH byte 4 has BECN set and its TOS is 0xc2: both masked out of the iCRC.
    let f = unhex(concat!(
        "e41d2dab2bc27cfe90643b32080045c2003c718c4000401191610a0011010a001201000012b700280000",
        "8100ffff40000118000000000000000000000000000000000000000082fd002a"
    ));
    assert_eq!(
        compute(&f),
        Ok(u32::from_le_bytes([0x82, 0xfd, 0x00, 0x2a]))
    );
    assert_eq!(verify(&f), Ok(()));
}

#[test]
fn masked_fields_do_not_matter_and_others_do() {
    let f = unhex(WRITE);
    // TOS, TTL, IP checksum, UDP checksum, BTH byte 4: all masked.
    for at in [15usize, 22, 24, 25, 40, 41, 46] {
        let mut g = f.clone();
        g[at] ^= 0x5A;
        assert_eq!(verify(&g), Ok(()), "byte {at} should be masked");
    }
    // Every other byte is covered.
    for at in 14..f.len() - 4 {
        if [15usize, 22, 24, 25, 40, 41, 46].contains(&at) || (16..18).contains(&at) {
            continue; // total length changes where the packet ends: checked separately
        }
        let mut g = f.clone();
        g[at] ^= 0x01;
        assert!(verify(&g).is_err(), "byte {at} should be covered");
    }
}

/// A frame template: a FETCH_ADD, or a WRITE ONLY of `payload_len` zero bytes, at PSN 0.
fn template(payload_len: usize, fetch_add: bool) -> Vec<u8> {
    let ep =
        crate::udp::UdpEndpoints::new([2; 6], [4; 6], [10, 0, 0, 1], [10, 0, 0, 2], 49152, 4791);
    let payload = vec![0u8; payload_len];
    let repr = if fetch_add {
        crate::roce::FrameRepr::fetch_add(ep, 0x11, 0, false, 0, 0, 0)
    } else {
        crate::roce::FrameRepr::write_only(ep, 0x11, 0, false, 0, 0, &payload)
    };
    let mut t = vec![0u8; repr.buffer_len()];
    repr.emit(&mut t).unwrap();
    t
}

proptest::proptest! {
    /// The prefix state plus the table CRC of the rest equals the one-pass iCRC, for any frame whose
    /// bytes after the prefix (PSN word, extension headers, payload) are anything.
    #[test]
    fn prefix_finish_equals_compute(
        psn_word in proptest::prelude::any::<[u8; 4]>(),
        rest in proptest::collection::vec(proptest::prelude::any::<u8>(), 1..300),
        payload_len in 0usize..300,
        fetch_add: bool,
    ) {
        // Templates of many lengths, WRITEs and FETCH_ADDs.
        let t = template(payload_len, fetch_add);
        let prefix = IcrcPrefix::new(&t).unwrap();
        // A frame of the template's length whose variable bytes are random (the template's total
        // length stays, so the prefix is the same).
        let mut f = t.clone();
        let at = 14 + 20 + 8 + bth::ACK_PSN_OFFSET;
        f[at..at + 4].copy_from_slice(&psn_word);
        for (b, r) in f[at + 4..t.len() - 4].iter_mut().zip(rest.iter().cycle()) {
            *b = *r;
        }
        proptest::prop_assert_eq!(prefix.finish(&f, f.len() - 4), compute(&f).unwrap());
        let mut g = f.clone();
        proptest::prop_assert_eq!(prefix.fill(&mut g), compute(&f).unwrap());
        proptest::prop_assert_eq!(verify(&g), Ok(()));
    }

    /// `fill_all` over a burst of rooms (frames of the template's shape with random variable bytes,
    /// in rooms longer than the frame) writes each frame's one-pass iCRC, and nothing past it.
    #[test]
    fn fill_all_equals_compute_per_frame(
        payload_len in 0usize..120,
        fetch_add: bool,
        frames in proptest::collection::vec(
            (proptest::prelude::any::<[u8; 4]>(), proptest::collection::vec(proptest::prelude::any::<u8>(), 1..64)),
            1..20,
        ),
        spare in 0usize..40,
        table_only: bool,
    ) {
        let t = template(payload_len, fetch_add);
        let mut prefix = IcrcPrefix::new(&t).unwrap();
        if table_only {
            prefix.tail = TailCrc::new(Crc32Short::table_only(), prefix.tail.len());
        }
        let at = 14 + 20 + 8 + bth::ACK_PSN_OFFSET;
        let mut rooms: Vec<Vec<u8>> = frames
            .iter()
            .map(|(psn_word, rest)| {
                let mut f = t.clone();
                f[at..at + 4].copy_from_slice(psn_word);
                let n = t.len() - 4;
                for (b, r) in f[at + 4..n].iter_mut().zip(rest.iter().cycle()) {
                    *b = *r;
                }
                f.extend(std::iter::repeat_n(0xA5, spare));
                f
            })
            .collect();
        let want: Vec<u32> = rooms.iter().map(|r| compute(&r[..t.len()]).unwrap()).collect();
        let mut views: Vec<&mut [u8]> = rooms.iter_mut().map(Vec::as_mut_slice).collect();
        prefix.fill_all(&mut views, t.len());
        for (r, w) in rooms.iter().zip(want) {
            proptest::prop_assert_eq!(&r[t.len() - 4..t.len()], &w.to_le_bytes()[..]);
            proptest::prop_assert!(r[t.len()..].iter().all(|&b| b == 0xA5));
            proptest::prop_assert_eq!(verify(&r[..t.len()]), Ok(()));
        }
    }
}

proptest::proptest! {
    /// `Write8` frames (template head, window built in registers, iCRC folded from them) are byte for
    /// byte `FrameRepr::write_only`'s emit, whose iCRC is the one-pass crc32fast one, over random
    /// fields and QPs; rooms longer than the frame keep their bytes past it, a short room ends the
    /// burst.
    #[test]
    fn write8_equals_full_emit(
        qp in 0u32..0x100_0000,
        frames in proptest::collection::vec(
            (0u32..0x100_0000, proptest::prelude::any::<bool>(), proptest::prelude::any::<u64>(),
             proptest::prelude::any::<u32>(), proptest::prelude::any::<[u8; 8]>()),
            1..40,
        ),
        short_at in proptest::option::of(0usize..40),
    ) {
        let ep = crate::udp::UdpEndpoints::new([2; 6], [4; 6], [10, 0, 0, 1], [10, 0, 0, 2], 49152, 4791);
        let t = {
            let r = crate::roce::FrameRepr::write_only(ep, qp, 0, false, 0, 0, &[0; 8]);
            let mut t = vec![0u8; r.buffer_len()];
            r.emit(&mut t).unwrap();
            t
        };
        let Some(w) = IcrcPrefix::new(&t).unwrap().write8(&t) else {
            // No carry-less multiply on this CPU: nothing to compare.
            return Ok(());
        };
        let fields: Vec<_> = frames
            .iter()
            .map(|&(psn, ack_req, va, rkey, payload)| crate::roce::short_crc::Write8Fields {
                word: u32::from(ack_req) << 31 | psn,
                va,
                rkey,
                payload,
            })
            .collect();
        let mut rooms: Vec<Vec<u8>> = (0..frames.len())
            .map(|k| vec![0xA5; if Some(k) == short_at { 81 } else { 100 }])
            .collect();
        let mut views: Vec<&mut [u8]> = rooms.iter_mut().map(Vec::as_mut_slice).collect();
        let n = w.write_all(&mut views, &fields);
        proptest::prop_assert_eq!(n, short_at.map_or(frames.len(), |s| s.min(frames.len())));
        for (k, &(psn, ack_req, va, rkey, payload)) in frames.iter().enumerate().take(n) {
            let r = crate::roce::FrameRepr::write_only(ep, qp, psn, ack_req, va, rkey, &payload);
            let mut want = vec![0u8; r.buffer_len()];
            r.emit(&mut want).unwrap();
            proptest::prop_assert_eq!(&rooms[k][..82], &want[..]);
            proptest::prop_assert!(rooms[k][82..].iter().all(|&b| b == 0xA5));
        }
        for room in &rooms[n..] {
            proptest::prop_assert!(room.iter().all(|&b| b == 0xA5));
        }
    }
}

/// Templates `write8` does not take: another payload length, a FETCH_ADD, IPv4 options.
#[test]
fn write8_only_for_its_frame() {
    let ep = crate::udp::UdpEndpoints::new([2; 6], [4; 6], [10, 0, 0, 1], [10, 0, 0, 2], 1, 4791);
    for payload_len in [0usize, 4, 12, 16] {
        let t = template(payload_len, false);
        assert!(
            IcrcPrefix::new(&t).unwrap().write8(&t).is_none(),
            "{payload_len}"
        );
    }
    let t = template(0, true);
    assert!(IcrcPrefix::new(&t).unwrap().write8(&t).is_none());
    let r = crate::roce::FrameRepr::write_only(ep, 1, 0, false, 0, 0, &[0; 4]);
    let mut t = vec![0u8; r.buffer_len()];
    r.emit(&mut t).unwrap();
    // Same length as a Write8 frame (82), but an IPv4 header of 24 bytes and a 4-byte payload.
    let mut opts = t[..14].to_vec();
    opts.push(0x46);
    opts.extend_from_slice(&t[15..16]);
    opts.extend_from_slice(&((t.len() - 14 + 4) as u16).to_be_bytes());
    opts.extend_from_slice(&t[18..34]);
    opts.extend_from_slice(&[1, 1, 1, 1]);
    opts.extend_from_slice(&t[34..]);
    assert_eq!(opts.len(), 82);
    let p = IcrcPrefix::new(&opts).unwrap();
    assert!(p.write8(&opts).is_none());
}

/// The iCRC as the annex describes it, byte by byte: the reference for [`compute`]'s paths.
fn reference(frame: &[u8]) -> u32 {
    let o = locate(frame).unwrap();
    let mut covered = vec![0xFFu8; LRH_LEN];
    covered.extend_from_slice(&frame[o.ip..o.icrc]);
    let (ip, udp, bth) = (LRH_LEN, LRH_LEN + o.udp - o.ip, LRH_LEN + o.bth - o.ip);
    for at in [ip + 1, ip + 8, ip + 10, ip + 11, udp + 6, udp + 7, bth + 4] {
        covered[at] = 0xFF;
    }
    crc32fast::hash(&covered)
}

#[test]
fn lrh_state_is_eight_ones() {
    assert_eq!(LRH_CRC, crc32fast::hash(&[0xFF; LRH_LEN]));
}

proptest::proptest! {
    /// Both paths of `compute` (no IPv4 options and a short tail; anything else) equal the reference
    /// over random frames with and without options and of every tail length around the boundary.
    #[test]
    fn compute_equals_reference(
        bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 120),
        ihl in 5u8..8,
        tail in 0usize..40,
    ) {
        let ip_len = usize::from(ihl) * 4;
        let len = ETH_LEN + ip_len + UDP_LEN + bth::HEADER_LEN + tail + ICRC_LEN;
        let mut f = bytes[..len.min(bytes.len())].to_vec();
        f.resize(len, 0xC3);
        f[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        f[ETH_LEN] = 0x40 | ihl;
        f[ETH_LEN + 2..ETH_LEN + 4].copy_from_slice(&((len - ETH_LEN) as u16).to_be_bytes());
        proptest::prop_assert_eq!(compute(&f), Ok(reference(&f)));
    }
}

#[test]
fn ethernet_padding_is_ignored() {
    let mut f = unhex(WRITE);
    f.extend_from_slice(&[0u8; 6]);
    assert_eq!(verify(&f), Ok(()));
}

#[test]
fn rejects_non_roce() {
    let f = unhex(WRITE);
    assert!(matches!(compute(&f[..40]), Err(Error::Truncated { .. })));
    let mut g = f.clone();
    g[12] = 0x86;
    assert_eq!(compute(&g), Err(Error::NotRoce("EtherType is not IPv4")));
    let mut g = f.clone();
    g[17] = 0xFF; // total length past the end of the frame
    assert!(matches!(
        compute(&g),
        Err(Error::Truncated { needed: 269, .. })
    ));
    let mut g = f.clone();
    g[17] = 19; // total length shorter than the IPv4 header
    assert!(matches!(compute(&g), Err(Error::InvalidField { .. })));
}
