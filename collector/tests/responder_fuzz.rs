//! A hostile frame stream (random and mutated RoCE frames, out-of-range VAs, wrong R_Keys, random PSNs)
//! must never write outside a region: the guard gaps around every region keep their fill pattern.

use dta_collector::memory::Arena;
use dta_collector::responder::{NakKind, Outcome, Responder, ResponderConfig, RESPONSE_MAX};
use dta_protocol::layout::{
    AppendGeometry, Geometry, KeyIncrementGeometry, KeyWriteGeometry, PostcardGeometry,
    SketchGeometry,
};
use dta_protocol::roce::{icrc, FrameRepr};
use dta_protocol::udp::UdpEndpoints;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

const GUARD_FILL: u8 = 0xA5;
const QPNS: [u32; 2] = [0x100, 0x101];
/// The requester the QPs are connected to: the source of every frame.
const PEER_IP: [u8; 4] = [198, 18, 0, 1];

fn below(rng: &mut ChaCha8Rng, n: u64) -> u64 {
    rng.next_u64() % n.max(1)
}

#[test]
fn hostile_frames_never_write_outside_a_region() {
    let arena = Arena::new_normal(&[
        (
            0,
            Geometry::KeyWrite(KeyWriteGeometry::new(64, 8, 4).unwrap()),
        ),
        (
            0,
            Geometry::KeyIncrement(KeyIncrementGeometry::new(32, 4).unwrap()),
        ),
        (
            0,
            Geometry::Postcarding(PostcardGeometry::new(16, 5, 2).unwrap()),
        ),
        (1, Geometry::Append(AppendGeometry::new(16, 4, 16).unwrap())),
        (2, Geometry::Sketch(SketchGeometry::new(3, 5).unwrap())),
    ])
    .unwrap();
    let slots = arena.slots().to_vec();
    arena.write().as_mut_slice().fill(GUARD_FILL);
    let mut resp = Responder::new(ResponderConfig::default(), slots.clone());
    for q in QPNS {
        resp.open_qp(q, PEER_IP, 0x11, 0);
    }
    let ep = UdpEndpoints::new(
        [2, 0, 0, 0, 0, 1],
        [2, 0, 0, 0, 0, 2],
        [198, 18, 0, 1],
        [198, 18, 0, 2],
        49152,
        4791,
    );
    let mut rng = ChaCha8Rng::seed_from_u64(0xD7A);
    let mut out = [0u8; RESPONSE_MAX];
    let mut responses = 0u64;
    for _ in 0..20_000 {
        let slot = slots[below(&mut rng, slots.len() as u64) as usize];
        let len = slot.len() as u64;
        // VAs around and across the region's edges, sometimes anywhere at all.
        let va = match below(&mut rng, 4) {
            0 => rng.next_u64(),
            1 => slot.region.va + len - below(&mut rng, 16),
            2 => slot.region.va.wrapping_sub(below(&mut rng, 80)),
            _ => slot.region.va + below(&mut rng, len + 8),
        };
        let rkey = match below(&mut rng, 8) {
            0 => rng.next_u64() as u32,
            1 => {
                slots[below(&mut rng, slots.len() as u64) as usize]
                    .region
                    .rkey
            }
            _ => slot.region.rkey,
        };
        let qpn = QPNS[below(&mut rng, 2) as usize];
        let expected = resp.qp(qpn).map_or(0, |q| q.expected_psn);
        let psn = match below(&mut rng, 4) {
            0 => rng.next_u64() as u32 & 0xFF_FFFF,
            _ => expected,
        };
        let payload: Vec<u8> = (0..below(&mut rng, 90))
            .map(|_| rng.next_u64() as u8)
            .collect();
        let f = if rng.next_u64() % 3 == 0 {
            // Regions are 64-byte aligned, so masking the VA gives atomics that may succeed.
            let va = if rng.next_u64() % 2 == 0 { va & !7 } else { va };
            FrameRepr::fetch_add(ep, qpn, psn, true, va, rkey, rng.next_u64())
        } else {
            FrameRepr::write_only(ep, qpn, psn, rng.next_u64() % 2 == 0, va, rkey, &payload)
        };
        let mut frame = vec![0u8; f.buffer_len()];
        f.emit(&mut frame).unwrap();
        match below(&mut rng, 6) {
            // Flip bytes after the UDP header and re-seal the iCRC, so the mutation reaches the parser.
            0 => {
                for _ in 0..1 + below(&mut rng, 4) {
                    let at = 42 + below(&mut rng, frame.len() as u64 - 42) as usize;
                    frame[at] ^= 1 << below(&mut rng, 8);
                }
                let _ = icrc::fill(&mut frame);
            }
            1 => frame.truncate(below(&mut rng, frame.len() as u64) as usize),
            2 => {
                let extra = below(&mut rng, 64) as usize;
                frame.extend((0..extra).map(|_| rng.next_u64() as u8));
                let _ = icrc::fill(&mut frame);
            }
            _ => {}
        }
        let outcome = resp.handle(&frame, arena.write().as_mut_slice(), &mut out);
        if let Outcome::Respond(n) = outcome {
            responses += 1;
            FrameRepr::parse(&out[..n]).expect("responses are valid frames");
        }
        // An errored QP is re-opened, as the translator would over the control channel, to keep writing.
        for q in QPNS {
            if resp.qp(q).is_some_and(|s| s.error) {
                resp.open_qp(q, PEER_IP, 0x11, rng.next_u64() as u32);
            }
        }
    }
    let mem = arena.read();
    let bytes = mem.as_slice();
    let mut in_region = vec![false; bytes.len()];
    for s in &slots {
        in_region[s.offset..s.offset + s.len()].fill(true);
    }
    let touched: Vec<usize> = (0..bytes.len())
        .filter(|&i| !in_region[i] && bytes[i] != GUARD_FILL)
        .collect();
    assert!(
        touched.is_empty(),
        "bytes outside regions changed at {touched:?}"
    );
    let s = resp.stats();
    // The stream did exercise every path: writes and atomics landed, and refusals were sent.
    assert!(s.writes > 1000, "writes {}", s.writes);
    assert!(s.atomics > 300, "atomics {}", s.atomics);
    // RNR NAKs come only from opcodes the mutations happen to produce (SEND, WRITE with immediate).
    for k in NakKind::ALL {
        let floor = if k == NakKind::ReceiverNotReady {
            0
        } else {
            100
        };
        assert!(s.naks_for(k) > floor, "naks {:?}", s.naks);
    }
    assert!(responses > 5000);
    assert!(s.drops.iter().sum::<u64>() > 1000);
}
