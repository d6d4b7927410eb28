use super::*;
use crate::contract::layout_bytes;
use crate::int::test_bits::pack;

/// A truncated IPv4/TCP packet: 5 words of IP header and 5 of TCP, as the spec's examples assume.
fn ipv4_tcp() -> Vec<u8> {
    let mut p = pack(&[
        (4, 4),
        (5, 4),
        (0, 8),
        (40, 16),
        (0, 16),
        (0, 16),
        (61, 8), // ttl
        (6, 8),  // TCP
        (0, 16),
        (0x0A00_0001, 32),
        (0x0A00_0002, 32),
    ]);
    p.extend(pack(&[
        (1234, 16),
        (80, 16),
        (0, 32),
        (0, 32),
        (5, 4),
        (0, 12),
        (0, 32),
        (0, 16),
    ]));
    assert_eq!(p.len(), 40);
    p
}

#[test]
fn layouts_match_the_lengths() {
    assert_eq!(layout_bytes(LAYOUT_GROUP), GROUP_LEN);
    assert_eq!(layout_bytes(LAYOUT_INDIVIDUAL), INDIVIDUAL_LEN);
    assert_eq!(layout_bytes(LAYOUT_INT_MAIN), INT_MAIN_LEN);
}

/// The specification's first example ("Baseline Metadata and Truncated IPv4"): RepType 1, InType 4,
/// MD Length 2 (level 1 interface ids, queue occupancy), Report Length 14, F set.
#[test]
fn spec_example_one() {
    let mut bytes = pack(&[
        (2, 4),            // Ver
        (5, 6),            // hw_id
        (0x2A_BCDE, 22),   // sequence number
        (0xC0A8_0001, 32), // node id
        (0b0001, 4),       // RepType INT
        (0b0100, 4),       // InType IPv4
        (14, 8),           // Report Length
        (2, 8),            // MD Length
        (0b0010, 4),       // D Q F I
        (0, 4),
        (0b0101_0000_0000_0000, 16), // RepMdBits: bits 1 and 3
        (0, 16),                     // Domain Specific ID
        (0, 16),                     // DSMdBits
        (0, 16),                     // DSMdStatus
        (11, 16),                    // ingress interface
        (12, 16),                    // egress interface
        (3, 8),                      // queue id
        (0x00_1000, 24),             // queue occupancy
    ]);
    bytes.extend(ipv4_tcp());
    let (g, mut reports) = GroupRepr::parse(&bytes).unwrap();
    assert_eq!(
        g,
        GroupRepr {
            hw_id: 5,
            seq_no: 0x2A_BCDE,
            node_id: 0xC0A8_0001
        }
    );
    let r = reports.next().unwrap().unwrap();
    assert!(reports.next().is_none());
    assert_eq!(r.rep_type(), RepType::Int);
    assert_eq!(r.in_type, InType::Ipv4);
    assert!(r.tracked_flow && !r.dropped && !r.congested && !r.intermediate);
    let int = r.int.unwrap();
    assert_eq!(int.metadata.l1_ports, Some((11, 12)));
    assert_eq!(int.metadata.queue, Some((3, 0x1000)));
    assert_eq!(int.ds_metadata, &[] as &[u8]);
    assert_eq!(r.inner, &ipv4_tcp()[..]);
    // The encoder writes the same bytes.
    let mut out = vec![0; bytes.len()];
    g.emit(&mut out).unwrap();
    let md = pack(&[(11, 16), (12, 16), (3, 8), (0x00_1000, 24)]);
    let n = emit_int_report(
        &mut out[GROUP_LEN..],
        InType::Ipv4,
        (false, false, true, false),
        0b0101_0000_0000_0000,
        0,
        &md,
        &ipv4_tcp(),
    )
    .unwrap();
    assert_eq!(n, bytes.len() - GROUP_LEN);
    assert_eq!(out, bytes);
}

#[test]
fn several_reports_and_inner_only() {
    let mut bytes = vec![0; GROUP_LEN];
    GroupRepr {
        hw_id: 0,
        seq_no: SEQ_MASK,
        node_id: 1,
    }
    .emit(&mut bytes)
    .unwrap();
    // An inner-only report of 2 words, then an INT report with a drop (RepMdBits bit 15).
    bytes.extend(pack(&[(0, 4), (3, 4), (2, 8), (0, 8), (0, 8)]));
    bytes.extend([0xEE; 8]);
    let md = pack(&[(2, 8), (0x55, 8), (0, 16)]);
    let mut int = vec![0; 64];
    let n = emit_int_report(
        &mut int,
        InType::None,
        (true, false, false, false),
        1,
        7,
        &md,
        &[],
    )
    .unwrap();
    bytes.extend(&int[..n]);
    let (g, reports) = GroupRepr::parse(&bytes).unwrap();
    assert_eq!(g.seq_no, SEQ_MASK);
    let all: Vec<_> = reports.collect::<Result<_>>().unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].rep_type(), RepType::InnerOnly);
    assert_eq!(all[0].inner, &[0xEE; 8]);
    assert!(all[1].dropped);
    let main = all[1].int.unwrap();
    assert_eq!(main.domain_specific_id, 7);
    assert_eq!(main.metadata.drop, Some((2, 0x55)));
}

/// A group whose reports this module does not all read: each is delimited by its Report Length, so
/// one it cannot read costs that report only.
#[test]
fn reports_not_understood_are_skipped_by_their_length() {
    let mut bytes = pack(&[(2, 4), (0, 6), (9, 22), (77, 32)]);
    // Inner only, IPv4, 2 words.
    bytes.extend(pack(&[(0, 4), (4, 4), (2, 8), (0, 8), (0, 8)]));
    bytes.extend([0xA1; 8]);
    // IOAM (RepType 2), 3 words of contents this specification does not define yet.
    bytes.extend(pack(&[(2, 4), (4, 4), (3, 8), (0, 8), (0, 8)]));
    bytes.extend([0x04; 12]);
    // A reserved InType (7), 1 word.
    bytes.extend(pack(&[(0, 4), (7, 4), (1, 8), (0, 8), (0, 8)]));
    bytes.extend([0x11; 4]);
    // INT whose MD Length (5 words) runs past its Report Length (3 words).
    bytes.extend(pack(&[(1, 4), (4, 4), (3, 8), (5, 8), (0, 8)]));
    bytes.extend([0; 12]);
    // Inner only, Ethernet, 1 word.
    bytes.extend(pack(&[(0, 4), (3, 4), (1, 8), (0, 8), (0, 8)]));
    bytes.extend([0xB2; 4]);
    let (_, reports) = GroupRepr::parse(&bytes).unwrap();
    let all: Vec<_> = reports.collect();
    assert_eq!(all.len(), 5);
    assert_eq!(all[0].as_ref().unwrap().inner, &[0xA1; 8]);
    assert!(matches!(
        all[1],
        Err(Error::InvalidField {
            field: "rep_type",
            value: 2,
            ..
        })
    ));
    assert!(matches!(
        all[2],
        Err(Error::InvalidField {
            field: "in_type",
            value: 7,
            ..
        })
    ));
    assert!(matches!(all[3], Err(Error::LengthMismatch { .. })));
    let last = all[4].as_ref().unwrap();
    assert_eq!(
        (last.in_type, last.inner),
        (InType::Ethernet, &[0xB2; 4][..])
    );
}

/// Report Length 0xFF: the report runs to the end of the payload, whatever its length, and nothing
/// after 255 words is read as another report (here: report-shaped bytes in the inner packet).
#[test]
fn report_length_ff_runs_to_the_end_of_the_payload() {
    let mut bytes = pack(&[(2, 4), (0, 6), (1, 22), (77, 32)]);
    bytes.extend(pack(&[(0, 4), (4, 4), (0xFF, 8), (0, 8), (0, 8)]));
    let mut inner = vec![0xEE; 1300];
    // At 1020 bytes into the inner packet (4 + 4 * 255 into the report): an inner-only report header.
    inner[1020..1024].copy_from_slice(&pack(&[(0, 4), (4, 4), (1, 8), (0, 8), (0, 8)]));
    bytes.extend(&inner);
    let (_, reports) = GroupRepr::parse(&bytes).unwrap();
    let all: Vec<_> = reports.collect::<Result<_>>().unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].inner, &inner[..]);
    assert_eq!(
        IndividualRepr::parse(&bytes[GROUP_LEN..]).unwrap().1,
        4 + 1300
    );
    // Shorter than 255 words too: the end of the payload is the end.
    let short = &bytes[..GROUP_LEN + 4 + 40];
    let (_, reports) = GroupRepr::parse(short).unwrap();
    let all: Vec<_> = reports.collect::<Result<_>>().unwrap();
    assert_eq!((all.len(), all[0].inner.len()), (1, 40));
    // The encoder writes 0xFF for a report of 255 words or more.
    let mut out = vec![0; 2048];
    let n = emit_int_report(
        &mut out,
        InType::Ipv4,
        (false, false, false, false),
        0,
        0,
        &[],
        &inner,
    )
    .unwrap();
    assert_eq!((out[1], n), (0xFF, 4 + 8 + 1300));
}

#[test]
fn lengths_that_lie_are_errors() {
    let mut bytes = vec![0; GROUP_LEN];
    GroupRepr {
        hw_id: 0,
        seq_no: 1,
        node_id: 1,
    }
    .emit(&mut bytes)
    .unwrap();
    // Report Length 3 words, 2 present.
    let mut short = bytes.clone();
    short.extend(pack(&[(0, 4), (3, 4), (3, 8), (0, 16)]));
    short.extend([0; 8]);
    let (_, mut r) = GroupRepr::parse(&short).unwrap();
    assert!(matches!(r.next(), Some(Err(Error::Truncated { .. }))));
    assert!(r.next().is_none());
    // MD Length larger than the report.
    let mut md = bytes.clone();
    md.extend(pack(&[(1, 4), (0, 4), (2, 8), (1, 8), (0, 8)]));
    md.extend([0; 8]);
    let (_, mut r) = GroupRepr::parse(&md).unwrap();
    assert!(matches!(r.next(), Some(Err(Error::LengthMismatch { .. }))));
    // RepMdBits selecting more than MD Length holds.
    let mut bits = bytes.clone();
    bits.extend(pack(&[(1, 4), (0, 4), (3, 8), (1, 8), (0, 8)]));
    bits.extend(pack(&[(0b0000_1000_0000_0000, 16), (0, 48), (0, 32)]));
    let (_, mut r) = GroupRepr::parse(&bits).unwrap();
    assert!(matches!(r.next(), Some(Err(Error::LengthMismatch { .. }))));
    // Unknown RepType and InType.
    for first in [0x20u8, 0x06] {
        let mut t = bytes.clone();
        t.extend([first, 0, 0, 0]);
        let (_, mut r) = GroupRepr::parse(&t).unwrap();
        assert!(matches!(r.next(), Some(Err(Error::InvalidField { .. }))));
    }
    // Version 0 is not v2.0.
    let mut v = bytes.clone();
    v[0] = 0;
    assert!(GroupRepr::parse(&v).is_err());
}
