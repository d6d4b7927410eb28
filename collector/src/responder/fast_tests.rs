//! The fast path against the general path: two responders fed the same frames, one through `handle`'s
//! fast path (falling back as `handle` does), one through `handle_general` alone, must agree on every
//! outcome, response byte, counter, QP state and memory byte.

use dta_protocol::layout::{Geometry, KeyIncrementGeometry, KeyWriteGeometry};
use dta_protocol::roce::{bth::opcode as op, icrc, FrameRepr};
use dta_protocol::udp::UdpEndpoints;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

use super::super::reply::{Outcome, RESPONSE_MAX};
use super::super::state::{Responder, ResponderConfig};
use crate::memory::{Arena, RegionSlot};

const COLLECTOR: [u8; 4] = [198, 18, 0, 2];
const PEERS: [[u8; 4]; 2] = [[198, 18, 0, 1], [198, 18, 0, 3]];
const QPNS: [u32; 3] = [0x100, 0x101, 0x5000];

struct Pair {
    fast: Responder,
    general: Responder,
    mem_fast: Vec<u8>,
    mem_general: Vec<u8>,
    /// Frames the fast path took, and frames it left to the general path.
    hits: u64,
    misses: u64,
}

impl Pair {
    fn new(config: ResponderConfig, slots: &[RegionSlot], mem_len: usize) -> Self {
        Pair {
            fast: Responder::new(config, slots.to_vec()),
            general: Responder::new(config, slots.to_vec()),
            mem_fast: vec![0; mem_len],
            mem_general: vec![0; mem_len],
            hits: 0,
            misses: 0,
        }
    }

    fn open(&mut self, qpn: u32, ip: [u8; 4], peer: u32, psn: u32) {
        self.fast.open_qp(qpn, ip, peer, psn);
        self.general.open_qp(qpn, ip, peer, psn);
    }

    fn feed(&mut self, frame: &[u8], out_len: usize, step: usize) {
        let (mut a, mut b) = ([0u8; RESPONSE_MAX], [0u8; RESPONSE_MAX]);
        // What `Responder::handle` does, with the fast path's verdict seen.
        let got = match super::handle(&mut self.fast, frame, &mut self.mem_fast, &mut a[..out_len])
        {
            Some(o) => {
                self.hits += 1;
                o
            }
            None => {
                self.misses += 1;
                self.fast
                    .handle_general(frame, &mut self.mem_fast, &mut a[..out_len])
            }
        };
        let want = self
            .general
            .handle_general(frame, &mut self.mem_general, &mut b[..out_len]);
        assert_eq!(got, want, "step {step}: outcome, frame {frame:02x?}");
        if let Outcome::Respond(n) = got {
            assert_eq!(a[..n], b[..n], "step {step}: response bytes");
        }
        assert_eq!(
            self.fast.stats(),
            self.general.stats(),
            "step {step}: counters"
        );
        for q in QPNS {
            assert_eq!(
                self.fast.qp(q),
                self.general.qp(q),
                "step {step}: QP {q:#x}"
            );
        }
        assert!(self.mem_fast == self.mem_general, "step {step}: memory");
    }
}

fn slots() -> (Vec<RegionSlot>, usize) {
    let arena = Arena::new_normal(&[
        (
            0,
            Geometry::KeyWrite(KeyWriteGeometry::new(64, 8, 4).unwrap()),
        ),
        (
            0,
            Geometry::KeyIncrement(KeyIncrementGeometry::new(32, 1).unwrap()),
        ),
    ])
    .unwrap();
    let len = arena.read().as_slice().len();
    (arena.slots().to_vec(), len)
}

/// One request, mostly well formed and in sequence, sometimes not, sometimes damaged.
fn request(rng: &mut ChaCha8Rng, p: &Pair, slots: &[RegionSlot], buf: &mut [u8]) -> usize {
    // Half of the requests are clean (every `pick` says 0 except where a choice is harmless), so that
    // QPs are not in the error state most of the time.
    let clean = rng.next_u32() % 2 == 0;
    let pick = |rng: &mut ChaCha8Rng, n: u32| if clean { 0 } else { rng.next_u32() % n };
    let any = |rng: &mut ChaCha8Rng, n: u32| rng.next_u32() % n;
    let qpn = QPNS[any(rng, 3) as usize];
    let peer = PEERS[usize::from(pick(rng, 8) == 1)];
    let src_port = if pick(rng, 16) == 1 {
        4791
    } else {
        0xC000 + any(rng, 0x4000) as u16
    };
    let ep = UdpEndpoints {
        dscp: if any(rng, 4) == 0 { 26 } else { 0 },
        ..UdpEndpoints::new(
            [2, 0, 0, 0, 0, peer[3]],
            [2, 0, 0, 0, 0, 2],
            peer,
            if pick(rng, 20) == 1 {
                [10, 0, 0, 9]
            } else {
                COLLECTOR
            },
            src_port,
            4791,
        )
    };
    let expected = p.general.qp(qpn).map_or(0, |q| q.expected_psn);
    let psn = match pick(rng, 10) {
        1 => expected.wrapping_sub(1 + any(rng, 3)) & 0xFF_FFFF,
        2 => (expected + 1 + any(rng, 3)) & 0xFF_FFFF,
        3 => rng.next_u32() & 0xFF_FFFF,
        _ => expected,
    };
    let slot = slots[any(rng, 2) as usize];
    let (va0, len) = (slot.region.va, slot.len() as u64);
    let rkey = match pick(rng, 20) {
        1 => rng.next_u32(),
        2 => slots[0].region.rkey ^ slots[1].region.rkey ^ slot.region.rkey,
        _ => slot.region.rkey,
    };
    let va = match pick(rng, 20) {
        1 => va0 + len - 4,
        2 => va0.wrapping_sub(8),
        3 => va0 + u64::from(any(rng, len as u32)),
        _ => va0 + u64::from(any(rng, len as u32 / 8)) * 8,
    };
    let ack = any(rng, 3) == 0;
    let mut payload = [0u8; 40];
    rng.fill_bytes(&mut payload);
    let f = if any(rng, 2) == 0 {
        let plen = match pick(rng, 8) {
            1 => 0,
            2 => any(rng, 40) as usize,
            _ => 8,
        };
        FrameRepr::write_only(ep, qpn, psn, ack, va, rkey, &payload[..plen])
    } else {
        FrameRepr::fetch_add(ep, qpn, psn, ack, va, rkey, rng.next_u64() % 5)
    };
    let mut n = f.emit(buf).unwrap();
    // Field changes with the iCRC made good again, so the checks behind it are reached.
    let refill = |buf: &mut [u8], n: usize| {
        let _ = icrc::fill(&mut buf[..n]);
    };
    match pick(rng, 24) {
        // COMPARE & SWAP, comparing with what is there half the time.
        1 | 2 => {
            buf[42] = op::COMPARE_SWAP;
            if buf[42..].len() >= 12 + 28 && pick(rng, 2) == 0 {
                buf[54 + 20..54 + 28].fill(0);
            }
            refill(buf, n);
        }
        // Another opcode.
        3 => {
            buf[42] = [
                op::SEND_ONLY,
                op::READ_REQUEST,
                op::WRITE_FIRST,
                op::ACKNOWLEDGE,
                0x64,
            ][pick(rng, 5) as usize];
            refill(buf, n);
        }
        // A wrong pad count, DMA length, P_Key, IPv4 option length, fragment, protocol or UDP length.
        4 => {
            buf[43] ^= 0x10 << pick(rng, 2);
            refill(buf, n);
        }
        5 => {
            buf[54 + 15] ^= 1 << pick(rng, 6);
            refill(buf, n);
        }
        6 => {
            buf[44] ^= 0x01;
            refill(buf, n);
        }
        7 => {
            buf[21] |= 1 << pick(rng, 8);
            refill(buf, n);
        }
        8 => {
            buf[23] = 6;
            refill(buf, n);
        }
        9 => {
            buf[39] ^= 1 << pick(rng, 4);
            refill(buf, n);
        }
        // The variant fields the iCRC ignores (TOS, TTL, IPv4 checksum, UDP checksum, FECN/BECN).
        10 => {
            let at = [15, 22, 24, 25, 40, 41, 46][pick(rng, 7) as usize];
            buf[at] ^= rng.next_u32() as u8 | 1;
        }
        // Any byte flipped, iCRC left as it was.
        11 | 12 => buf[pick(rng, n as u32) as usize] ^= 1 << pick(rng, 8),
        // Truncated, or followed by Ethernet padding.
        13 => n = pick(rng, n as u32) as usize,
        14 => n += pick(rng, 20) as usize,
        _ => {}
    }
    n
}

fn run(seed: u64, config: ResponderConfig, steps: usize) -> (u64, u64) {
    let (slots, mem_len) = slots();
    let mut p = Pair::new(config, &slots, mem_len);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut buf = [0u8; 256];
    for (k, q) in QPNS.iter().enumerate() {
        p.open(*q, PEERS[0], 0x200 + k as u32, 0xFF_FFF0 + k as u32);
    }
    for step in 0..steps {
        // Now and then a QP is opened again (out of the error state, at a new PSN).
        let q = QPNS[rng.next_u32() as usize % 3];
        let error = p.general.qp(q).is_some_and(|s| s.error);
        if rng.next_u32() % if error { 8 } else { 500 } == 0 {
            p.open(
                q,
                PEERS[0],
                rng.next_u32() & 0xFF_FFFF,
                rng.next_u32() & 0xFF_FFFF,
            );
        }
        buf.fill(0);
        let n = request(&mut rng, &p, &slots, &mut buf);
        // Mostly room for any response; now and then too little (a caller's bug, answered the same way).
        let out_len = if rng.next_u32() % 100 == 0 {
            40
        } else {
            RESPONSE_MAX
        };
        p.feed(&buf[..n], out_len, step);
    }
    (p.hits, p.misses)
}

#[test]
fn fast_path_agrees_with_the_general_path() {
    let mut total = (0, 0);
    for (seed, config) in [
        (1, ResponderConfig::default()),
        (
            2,
            ResponderConfig {
                local_ip: Some(COLLECTOR),
                ..ResponderConfig::default()
            },
        ),
        (
            3,
            ResponderConfig {
                max_dest_rd_atomic: 0,
                path_mtu: 16,
                ..ResponderConfig::default()
            },
        ),
        (
            4,
            ResponderConfig {
                max_dest_rd_atomic: 1,
                ..ResponderConfig::default()
            },
        ),
    ] {
        let (hits, misses) = run(seed, config, 20_000);
        total = (total.0 + hits, total.1 + misses);
    }
    eprintln!("hits/misses {total:?}");
    // Both paths were exercised in earnest.
    assert!(total.0 > 20_000 && total.1 > 20_000, "{total:?}");
}

/// The common case goes the fast way, responses included: a stream of in-sequence WRITEs and FETCH_ADDs
/// from one requester, as the bench's ring.
#[test]
fn in_sequence_requests_take_the_fast_path() {
    let (slots, mem_len) = slots();
    let mut p = Pair::new(ResponderConfig::default(), &slots, mem_len);
    p.open(0x100, PEERS[0], 0x200, 7);
    let ep = UdpEndpoints::new([2; 6], [4; 6], PEERS[0], COLLECTOR, 0xC001, 4791);
    let mut buf = [0u8; 128];
    for i in 0..1000u32 {
        let data = [i as u8; 8];
        let f = if i % 2 == 0 {
            let va = slots[0].region.va + u64::from(i % 64) * 8;
            FrameRepr::write_only(
                ep,
                0x100,
                7 + i,
                i % 4 == 0,
                va,
                slots[0].region.rkey,
                &data,
            )
        } else {
            let va = slots[1].region.va + u64::from(i % 32) * 8;
            FrameRepr::fetch_add(ep, 0x100, 7 + i, true, va, slots[1].region.rkey, 1)
        };
        let n = f.emit(&mut buf).unwrap();
        p.feed(&buf[..n], RESPONSE_MAX, i as usize);
    }
    assert_eq!((p.hits, p.misses), (1000, 0));
    assert_eq!(p.fast.stats().writes, 500);
    assert_eq!(p.fast.stats().atomics, 500);
}
