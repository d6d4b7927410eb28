use super::*;
use crate::contract::layout_bytes;
use crate::int::test_bits::pack;

/// A switch-local report written field by field from fabric-tna's header declarations.
fn local_vector(inner: &[u8]) -> Vec<u8> {
    let mut v = pack(&[
        (0, 4),            // ver
        (2, 4),            // nproto: switch-local
        (0b001, 3),        // d=0 q=0 f=1
        (0, 15),           // rsvd
        (1, 6),            // hw_id
        (0x0102_0304, 32), // seq_no
        (0xA0B0_C0D0, 32), // ig_tstamp
        (7, 32),           // switch_id
        (0, 7),
        (0x1FE, 9), // ig_port
        (0, 7),
        (0x101, 9), // eg_port
        (0, 3),
        (0x1B, 5), // queue_id
        (0, 5),
        (0x7_FFFE, 19),    // queue_occupancy
        (0x0BAD_CAFE, 32), // eg_tstamp
    ]);
    v.extend_from_slice(inner);
    v
}

#[test]
fn layouts_match_the_lengths() {
    assert_eq!(layout_bytes(LAYOUT_FIXED), FIXED_LEN);
    assert_eq!(layout_bytes(LAYOUT_COMMON), COMMON_LEN);
    assert_eq!(layout_bytes(LAYOUT_DROP), DROP_LEN);
    assert_eq!(layout_bytes(LAYOUT_LOCAL), LOCAL_LEN);
    // fabric-tna's own constants: fixed 12, common + drop 12, common + local 16.
    assert_eq!(COMMON_LEN + DROP_LEN, 12);
    assert_eq!(COMMON_LEN + LOCAL_LEN, 16);
}

#[test]
fn switch_local_report_parses_and_round_trips() {
    let inner = [0xEE; 20];
    let bytes = local_vector(&inner);
    let r = ReportRepr::parse(&bytes).unwrap();
    assert_eq!(
        r,
        ReportRepr {
            dropped: false,
            congested: false,
            tracked_flow: true,
            hw_id: 1,
            seq_no: 0x0102_0304,
            ig_tstamp: 0xA0B0_C0D0,
            body: Body::Local {
                common: CommonRepr {
                    switch_id: 7,
                    ig_port: 0x1FE,
                    eg_port: 0x101,
                    queue_id: 0x1B
                },
                queue_occupancy: 0x7_FFFE,
                eg_tstamp: 0x0BAD_CAFE,
            },
            inner: &inner,
        }
    );
    let mut out = vec![0xAA; r.buffer_len()];
    r.emit(&mut out).unwrap();
    assert_eq!(out, bytes);
}

#[test]
fn drop_report_parses_and_round_trips() {
    let mut bytes = pack(&[
        (0, 4),
        (1, 4),     // nproto: drop
        (0b101, 3), // d=1 q=0 f=1
        (0, 15),
        (1, 6),
        (9, 32),
        (10, 32),
        (0xFFFF_FFFF, 32), // switch_id
        (0, 7),
        (3, 9),
        (0, 7),
        (4, 9),
        (0, 3),
        (5, 5),
        (0xA0, 8), // drop_reason
        (0, 16),
    ]);
    bytes.extend_from_slice(&[1, 2, 3]);
    let r = ReportRepr::parse(&bytes).unwrap();
    assert!(r.dropped && r.tracked_flow && !r.congested);
    assert_eq!(
        r.body,
        Body::Drop {
            common: CommonRepr {
                switch_id: u32::MAX,
                ig_port: 3,
                eg_port: 4,
                queue_id: 5
            },
            reason: 0xA0
        }
    );
    assert_eq!(r.inner, &[1, 2, 3]);
    let mut out = vec![0; r.buffer_len()];
    r.emit(&mut out).unwrap();
    assert_eq!(out, bytes);
}

#[test]
fn bad_reports_are_errors() {
    let bytes = local_vector(&[]);
    for cut in 0..FIXED_LEN + COMMON_LEN + LOCAL_LEN {
        assert!(
            matches!(
                ReportRepr::parse(&bytes[..cut]),
                Err(Error::Truncated { .. })
            ),
            "cut at {cut}"
        );
    }
    let mut v = bytes.clone();
    v[0] = 0x23; // version 2, nproto 3
    assert!(matches!(
        ReportRepr::parse(&v),
        Err(Error::InvalidField { field: "ver", .. })
    ));
    v[0] = 0x03; // nproto 3
    assert!(matches!(
        ReportRepr::parse(&v),
        Err(Error::InvalidField {
            field: "nproto",
            ..
        })
    ));
}

#[test]
fn accessors_read_the_layout_fields() {
    // Every field at its all-ones value, the rest zero: each accessor sees exactly its bits.
    let ones = pack(&[
        (0, 4),
        (0xF, 4),
        (0b111, 3),
        (0, 15),
        (0x3F, 6),
        (0, 32),
        (0, 32),
    ]);
    let p = FixedPacket::new_checked(&ones[..]).unwrap();
    assert_eq!((p.version(), p.nproto(), p.hw_id()), (0, 0xF, 0x3F));
    assert!(p.dropped() && p.congested() && p.tracked_flow());
    let pads = pack(&[
        (0, 32),
        (0x7F, 7),
        (0, 9),
        (0x7F, 7),
        (0, 9),
        (0x7, 3),
        (0, 5),
    ]);
    let c = CommonPacket::new_checked(&pads[..]).unwrap();
    assert_eq!((c.ig_port(), c.eg_port(), c.queue_id()), (0, 0, 0));
}
