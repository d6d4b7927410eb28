use dta_protocol::roce::{Extension, FrameRepr, PSN_MASK, ROCEV2_UDP_PORT};
use dta_protocol::udp::UdpEndpoints;

use super::builder::MAX_SHAPES;
use super::copy::{copy_bytes, copy_payload, copy_short};
use super::{FrameBuilder, Op, Payload, INLINE_PAYLOAD};

fn builder() -> FrameBuilder {
    let ep = UdpEndpoints::new(
        [2, 0, 0, 0, 0, 1],
        [2, 0, 0, 0, 0, 2],
        [198, 18, 0, 1],
        [198, 18, 0, 2],
        49152,
        ROCEV2_UDP_PORT,
    );
    FrameBuilder::new(ep, 0x11)
}

#[test]
fn template_path_equals_full_emit() {
    let mut b = builder();
    let ops = [
        Op::Write {
            va: 0x7f00_0000_1000,
            rkey: 0x1234,
            payload: Payload::from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]),
        },
        Op::Write {
            va: 0x20,
            rkey: 9,
            payload: Payload::from_slice(&[9; 40]),
        },
        Op::FetchAdd {
            va: 0x7f00_0000_2000,
            rkey: 0x1234,
            add: 0xdead_beef_0000_0001,
        },
    ];
    let mut out = Vec::new();
    for (k, op) in ops.iter().enumerate() {
        for (psn, ack) in [
            (0u32, false),
            (0xFF_FFFF, true),
            (0x123456 + k as u32, false),
        ] {
            assert!(b.build(op, psn, ack, &mut out));
            let mut want = vec![0u8; op.frame_len()];
            b.repr(op, psn, ack).emit(&mut want).unwrap();
            assert_eq!(out, want);
            // Straight into a larger, dirty buffer: the same bytes, the rest untouched.
            let mut room = vec![0xA5u8; 2048];
            assert_eq!(b.build_into(op, psn, ack, &mut room), Some(want.len()));
            assert_eq!(&room[..want.len()], &want[..]);
            assert!(room[want.len()..].iter().all(|&x| x == 0xA5));
            assert_eq!(
                b.build_into(op, psn, ack, &mut room[..want.len() - 1]),
                None
            );
            let f = FrameRepr::parse(&out).unwrap();
            assert_eq!((f.bth.psn, f.bth.ack_req, f.bth.mig_req), (psn, ack, true));
            assert_eq!(f.bth.dest_qp, 0x11);
            match (op, f.ext) {
                (Op::Write { va, payload, .. }, Extension::Reth(r)) => {
                    assert_eq!((r.va, r.dma_len as usize), (*va, payload.len()));
                    assert_eq!(f.payload, &payload[..]);
                }
                (Op::FetchAdd { add, .. }, Extension::Atomic(a)) => {
                    assert_eq!((a.swap_add, a.compare), (*add, 0))
                }
                other => panic!("wrong extension {other:?}"),
            }
        }
    }
    assert_eq!(b.shapes.len(), 3);
}

/// xorshift64: deterministic random inputs without a test dependency.
fn next(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

#[test]
fn copy_bytes_equals_copy_from_slice() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for n in 0..300usize {
        let src: Vec<u8> = (0..n).map(|_| next(&mut seed) as u8).collect();
        // Into a dirty buffer, at an offset: the same bytes, nothing around them touched.
        let mut got = vec![0xA5u8; n + 16];
        copy_bytes(&mut got[8..8 + n], &src);
        let mut want = vec![0xA5u8; n + 16];
        want[8..8 + n].copy_from_slice(&src);
        assert_eq!(got, want, "{n}");
        // The inline copies: the same bytes for the lengths they take, nothing written otherwise.
        let takes = n == 0 || (4..=128).contains(&n);
        for copy in [copy_short, copy_payload] {
            let mut got = vec![0xA5u8; n + 16];
            assert_eq!(copy(&mut got[8..8 + n], &src), takes, "{n}");
            if takes {
                assert_eq!(got, want, "{n}");
            } else {
                assert!(got.iter().all(|&b| b == 0xA5), "{n}");
            }
        }
    }
}

/// Random WRITEs (payloads of 0..200 bytes, inline and pooled) and FETCH_ADDs, PSNs and AckReq,
/// through one builder (shapes made, found again and reused in any order, and past `MAX_SHAPES` the
/// general path): every frame written, into a `Vec` or a dirty buffer, equals a full emit.
#[test]
fn template_path_equals_full_emit_random() {
    let mut b = builder();
    let mut seed = 0x0123_4567_89ab_cdefu64;
    let mut out = Vec::new();
    for _ in 0..3000 {
        let r = next(&mut seed);
        let op = if r % 5 == 0 {
            Op::FetchAdd {
                va: next(&mut seed),
                rkey: next(&mut seed) as u32,
                add: next(&mut seed),
            }
        } else {
            let n = (next(&mut seed) % 200) as usize;
            let bytes: Vec<u8> = (0..n).map(|_| next(&mut seed) as u8).collect();
            Op::Write {
                va: next(&mut seed),
                rkey: next(&mut seed) as u32,
                payload: Payload::from_slice(&bytes),
            }
        };
        let (psn, ack) = (next(&mut seed) as u32 & PSN_MASK, r & 2 != 0);
        let mut want = vec![0u8; op.frame_len()];
        b.repr(&op, psn, ack).emit(&mut want).unwrap();
        assert!(b.build(&op, psn, ack, &mut out));
        assert_eq!(out, want);
        let mut room = vec![next(&mut seed) as u8; want.len() + 64];
        let fill = room[0];
        assert_eq!(b.build_into(&op, psn, ack, &mut room), Some(want.len()));
        assert_eq!(&room[..want.len()], &want[..]);
        assert!(room[want.len()..].iter().all(|&x| x == fill));
    }
    assert_eq!(b.shapes.len(), MAX_SHAPES);
}

/// `inline_array` gives the bytes of an inline payload of exactly N bytes, and nothing for another
/// length or a payload on the heap, however short.
#[test]
fn inline_arrays_are_exact_and_inline() {
    let bytes = [1, 2, 3, 4, 5, 6, 7, 8];
    assert_eq!(Payload::from_slice(&bytes).inline_array::<8>(), Some(bytes));
    assert_eq!(Payload::from_slice(&bytes[..7]).inline_array::<8>(), None);
    assert_eq!(Payload::from_slice(&bytes).inline_array::<4>(), None);
    let mut heap = Payload::with_capacity(100);
    heap.extend_from_slice(&bytes);
    assert!(heap.0.spilled());
    assert_eq!(heap.inline_array::<8>(), None);
}

#[test]
fn payloads_inline_or_pooled() {
    let small = Payload::from_slice(&[1; INLINE_PAYLOAD]);
    assert!(!small.0.spilled());
    assert_eq!(small.clone(), small);
    let mut big = Payload::with_capacity(100);
    big.extend_from_slice(&[7; 60]);
    big.extend_from_slice(&[8; 40]);
    assert!(big.0.spilled());
    assert_eq!(big.len(), 100);
    assert_eq!((big[59], big[60]), (7, 8));
    let mut buf = [0u8; INLINE_PAYLOAD];
    buf[..5].copy_from_slice(&[1, 2, 3, 4, 5]);
    assert_eq!(
        Payload::from_array(buf, 5),
        Some(Payload::from_slice(&[1, 2, 3, 4, 5]))
    );
    assert_eq!(Payload::from_array(buf, INLINE_PAYLOAD + 1), None);
    let at = big.as_ptr();
    drop(big);
    // The buffer comes back from the pool for the next large payload.
    let again = Payload::from_slice(&[3; 200]);
    assert_eq!(again.as_ptr(), at);
    assert_eq!(&again[..], &[3; 200][..]);
    assert_ne!(again.clone().as_ptr(), at);
}
