use super::*;
use proptest::prelude::*;

fn record(node: u32) -> HopRecord {
    HopRecord {
        node,
        hop_latency: 0x0102_0304,
        queue_id: 7,
        queue_occupancy: 0x00AB_CDEF,
    }
}

/// The bytes of a message of all three kinds, written out by hand from the layout in the module's
/// comment.
#[test]
fn emits_the_documented_bytes() {
    let items = [
        FlowWork::PerHop {
            flow: 0xA1B2_C3D4,
            hop: 2,
            path_len: 5,
            node: 102,
        },
        FlowWork::Postcard {
            flow: 0x0000_0001,
            hop: 3,
            path_len: 3,
            node: 0x0102_0304,
        },
        FlowWork::Hop {
            flow: 0xFFFF_FFFE,
            hop: 1,
            record: record(9),
        },
    ];
    let mut buf = [0xEEu8; MAX_LEN];
    let n = emit([198, 18, 0, 2], items, &mut buf).expect("fits");
    #[rustfmt::skip]
    let want: Vec<u8> = [
        &[0u8; 12][..], &[0x88, 0xB5], &[198, 18, 0, 2], &[3, 0],
        &[1, 2, 5, 0], &[0xA1, 0xB2, 0xC3, 0xD4], &[0, 0, 0, 102], &[0; 8],
        &[2, 3, 3, 0], &[0, 0, 0, 1], &[1, 2, 3, 4], &[0; 8],
        &[3, 1, 0, 7], &[0xFF, 0xFF, 0xFF, 0xFE], &[0, 0, 0, 9], &[1, 2, 3, 4], &[0, 0xAB, 0xCD, 0xEF],
    ]
    .concat();
    assert_eq!(n, 20 + 3 * 20);
    assert_eq!(&buf[..n], &want[..]);
    let m = Message::parse(&buf[..n]).expect("parses");
    assert_eq!(m.dst_ip(), [198, 18, 0, 2]);
    assert_eq!(m.items().collect::<Vec<_>>(), items);
}

#[test]
fn refuses_what_is_not_a_whole_message() {
    let items = [FlowWork::Postcard {
        flow: 5,
        hop: 1,
        path_len: 2,
        node: 3,
    }];
    let mut buf = [0u8; MAX_LEN];
    let n = emit([10, 0, 0, 1], items, &mut buf).expect("fits");
    let good = buf[..n].to_vec();
    assert!(Message::parse(&good).is_ok());

    let with = |i: usize, v: u8| {
        let mut b = good.clone();
        b[i] = v;
        Message::parse(&b).err()
    };
    // An Ethernet frame of a port (a MAC address, another EtherType) is not one.
    assert_eq!(with(0, 2), Some(MessageError::NotMessage));
    assert_eq!(with(13, 0x00), Some(MessageError::NotMessage));
    assert_eq!(with(19, 1), Some(MessageError::NotMessage));
    assert_eq!(
        with(18, 2),
        Some(MessageError::Length { len: 40, items: 2 })
    );
    assert_eq!(
        with(18, 0),
        Some(MessageError::Length { len: 40, items: 0 })
    );
    assert_eq!(with(20, 4), Some(MessageError::Kind(4)));
    assert_eq!(with(20, 0), Some(MessageError::Kind(0)));
    assert_eq!(
        Message::parse(&good[..n - 1]).err(),
        Some(MessageError::Length { len: 39, items: 1 })
    );
    assert_eq!(
        Message::parse(&good[..19]).err(),
        Some(MessageError::NotMessage)
    );
    assert!(!is_message(&good[..19]));

    // emit: no items, too many, a short buffer.
    assert_eq!(emit([0; 4], [], &mut buf), None);
    assert_eq!(emit([0; 4], [items[0]; MAX_ITEMS + 1], &mut buf), None);
    assert_eq!(emit([0; 4], items, &mut buf[..39]), None);
    assert_eq!(emit([0; 4], [items[0]; MAX_ITEMS], &mut buf), Some(MAX_LEN));
}

fn work() -> impl Strategy<Value = FlowWork> {
    let rec = (any::<u32>(), any::<u32>(), any::<u8>(), any::<u32>()).prop_map(
        |(node, hop_latency, queue_id, queue_occupancy)| HopRecord {
            node,
            hop_latency,
            queue_id,
            queue_occupancy,
        },
    );
    prop_oneof![
        (any::<u32>(), any::<u8>(), any::<u8>(), any::<u32>()).prop_map(
            |(flow, hop, path_len, node)| FlowWork::PerHop {
                flow,
                hop,
                path_len,
                node
            }
        ),
        (any::<u32>(), any::<u8>(), any::<u8>(), any::<u32>()).prop_map(
            |(flow, hop, path_len, node)| FlowWork::Postcard {
                flow,
                hop,
                path_len,
                node
            }
        ),
        (any::<u32>(), any::<u8>(), rec).prop_map(|(flow, hop, record)| FlowWork::Hop {
            flow,
            hop,
            record
        }),
    ]
}

proptest! {
    /// Whatever a receiver writes, the owner reads back the same.
    #[test]
    fn every_message_reads_back(items in proptest::collection::vec(work(), 1..=MAX_ITEMS),
                                dst in any::<[u8; 4]>()) {
        let mut buf = [0u8; MAX_LEN];
        let n = emit(dst, items.iter().copied(), &mut buf).expect("fits");
        let m = Message::parse(&buf[..n]).expect("parses");
        prop_assert_eq!(m.dst_ip(), dst);
        prop_assert_eq!(m.items().collect::<Vec<_>>(), items);
    }

    /// Any bytes: a clear refusal or items, never a panic.
    #[test]
    fn any_bytes_parse_or_are_refused(bytes in proptest::collection::vec(any::<u8>(), 0..200),
                                      marker in any::<bool>()) {
        let mut b = bytes;
        if marker && b.len() >= 20 {
            b[..12].fill(0);
            b[12..14].copy_from_slice(&ETHERTYPE.to_be_bytes());
        }
        if let Ok(m) = Message::parse(&b) {
            prop_assert_eq!(m.items().count(), usize::from(b[18]));
        }
    }
}
