//! Drives the collector's software RoCEv2 responder (`dta_collector::responder::Responder`) over an arena
//! of real regions with arbitrary frames on live QPs: WRITEs, FETCH_ADDs and COMPARE_SWAPs built from
//! fuzzed fields with a correct iCRC (so they reach the state machine), with PSNs at, behind and ahead of
//! the expected one, right and wrong R_Keys, VAs around the regions' edges and several source addresses;
//! replays of earlier frames; mutated and raw frames; QPs re-opened, closed and failed.
//!
//! Checked on every frame:
//! * no panic;
//! * no byte outside the regions ever changes (the arena's guard gaps keep their fill);
//! * memory changes only for a request carried out: one WRITE or one atomic counted, on a live QP, from
//!   its peer's address, at exactly the expected PSN, inside the one region whose R_Key the request
//!   carries and inside the request's own range (an atomic: its 8-byte aligned cell, with FETCH_ADD's sum);
//! * every atomic is applied at most once per QP incarnation (tracked by PSN): a duplicate never changes
//!   memory, and a replayed answer carries the original value of the first execution;
//! * every response is a valid RoCEv2 ACKNOWLEDGE or ATOMIC ACKNOWLEDGE (iCRC included), back to the
//!   requester's address and QP; the expected PSN only ever moves by one;
//! * `handle` (fast path first) and `handle_general` (the reference path alone), fed the same frames on
//!   twin responders, agree on the outcome, the response bytes, every counter, every QP and the memory.
//!
//! (Over 500 lines: one fuzz target: the input decoder, the model and the invariants must stay together.)
#![no_main]

use std::collections::HashMap;

use dta_collector::memory::Arena;
use dta_collector::responder::{Outcome, Responder, ResponderConfig, RESPONSE_MAX};
use dta_protocol::layout::{
    AppendGeometry, Geometry, KeyIncrementGeometry, KeyWriteGeometry, SketchGeometry,
};
use dta_protocol::roce::{icrc, BthOpcode, Extension, FrameRepr, Psn, PSN_MASK, ROCEV2_UDP_PORT};
use dta_protocol::udp::{UdpEndpoints, UdpFrame, HEADERS_LEN};
use libfuzzer_sys::fuzz_target;

mod input;
use input::Src;

const FILL: u8 = 0xA5;
const QPNS: [u32; 3] = [0x100, 0x101, 0x102];
/// Each QP's requester; the third QP's peer is another host.
const PEERS: [[u8; 4]; 3] = [[198, 18, 0, 1], [198, 18, 0, 1], [198, 18, 0, 7]];
const LOCAL_IP: [u8; 4] = [198, 18, 0, 2];
const MAX_OPS: usize = 256;
/// BTH opcodes and header offsets (from the start of the frame) the harness reads itself.
const BTH_AT: usize = HEADERS_LEN;
const EXT_AT: usize = HEADERS_LEN + 12;
const OP_COMPARE_SWAP: u8 = 0x13;
const OP_FETCH_ADD: u8 = 0x14;
const OP_WRITE_ONLY: u8 = 0x0A;

fn be_u64(b: &[u8]) -> u64 {
    u64::from_be_bytes(b[..8].try_into().unwrap())
}

fn be_u32(b: &[u8]) -> u32 {
    u32::from_be_bytes(b[..4].try_into().unwrap())
}

fn emit(f: &FrameRepr) -> Vec<u8> {
    let mut out = vec![0u8; f.buffer_len()];
    let n = f.emit(&mut out).expect("a built frame emits");
    out.truncate(n);
    out
}

struct Harness {
    arena: Arena,
    resp: Responder,
    /// A twin fed through `handle_general` only, and its memory.
    general: Responder,
    general_mem: Vec<u8>,
    /// Per byte of the arena: inside a region.
    in_region: Vec<bool>,
    /// Per QP: how many times it was opened (atomics are tracked per incarnation).
    incarnation: [u32; 3],
    /// (QP index, incarnation, PSN) -> the value the atomic found.
    applied: HashMap<(usize, u32, u32), u64>,
    /// Recent frames, for replays.
    history: Vec<Vec<u8>>,
    out: [u8; RESPONSE_MAX],
}

impl Harness {
    fn new(s: &mut Src) -> Self {
        let b = s.u8();
        let arena = Arena::new_normal(&[
            (
                0,
                Geometry::KeyWrite(KeyWriteGeometry::new(32, 8, 4).unwrap()),
            ),
            (
                0,
                Geometry::KeyIncrement(KeyIncrementGeometry::new(16, 2).unwrap()),
            ),
            (3, Geometry::Append(AppendGeometry::new(16, 4, 8).unwrap())),
            (1, Geometry::Sketch(SketchGeometry::new(3, 5).unwrap())),
        ])
        .expect("arena");
        let mut arena = arena;
        // Fixed keys (the arena draws random ones) so that every input replays the same way.
        for i in 0..arena.slots().len() {
            arena.set_rkey(i, 0x1000 + 0x111 * i as u32);
        }
        let config = ResponderConfig {
            max_dest_rd_atomic: u32::from(b % 5),
            path_mtu: if b & 8 != 0 { 256 } else { 1024 },
            local_ip: (b & 16 != 0).then_some(LOCAL_IP),
            local_mac: (b & 32 != 0).then_some([2, 0, 0, 0, 0, 2]),
            vlan: None,
        };
        let mut resp = Responder::new(config, arena.slots().to_vec());
        let mut general = Responder::new(config, arena.slots().to_vec());
        let psn = s.u8();
        let start = if psn & 1 != 0 {
            PSN_MASK - u32::from(psn >> 1)
        } else {
            u32::from(psn)
        };
        for (i, q) in QPNS.iter().enumerate() {
            for r in [&mut resp, &mut general] {
                r.open_qp(
                    *q,
                    PEERS[i],
                    0x11 + i as u32,
                    start.wrapping_add(i as u32) & PSN_MASK,
                );
            }
        }
        let len = arena.read().as_slice().len();
        arena.write().as_mut_slice().fill(FILL);
        let mut in_region = vec![false; len];
        for slot in arena.slots() {
            in_region[slot.offset..slot.offset + slot.len()].fill(true);
        }
        let general_mem = arena.read().as_slice().to_vec();
        Harness {
            arena,
            resp,
            general,
            general_mem,
            in_region,
            incarnation: [0; 3],
            applied: HashMap::new(),
            history: Vec::new(),
            out: [0; RESPONSE_MAX],
        }
    }

    fn qp_index(&self, s: &mut Src) -> usize {
        usize::from(s.u8()) % QPNS.len()
    }

    fn endpoints(&self, qp: usize, s: &mut Src) -> UdpEndpoints {
        let b = s.u8();
        let src_ip = match b % 8 {
            0 => [10, 0, 0, 9],
            1 => PEERS[(qp + 2) % 3],
            _ => PEERS[qp],
        };
        let dst_ip = if b & 8 != 0 {
            [198, 18, 0, 99]
        } else {
            LOCAL_IP
        };
        let src_port = match (b >> 4) % 8 {
            0 => s.u16(),
            1 => 0xC000 - 1,
            _ => 0xC000 + u16::from(b),
        };
        UdpEndpoints::new(
            [2, 0, 0, 0, 0, 1],
            [2, 0, 0, 0, 0, 2],
            src_ip,
            dst_ip,
            src_port,
            ROCEV2_UDP_PORT,
        )
    }

    fn psn(&self, qp: usize, s: &mut Src) -> u32 {
        let expected = self.resp.qp(QPNS[qp]).map_or(0, |q| q.expected_psn);
        let b = s.u8();
        match b % 8 {
            0..=3 => expected,
            4 | 5 => expected.wrapping_sub(1 + u32::from(b >> 3)) & PSN_MASK,
            6 => expected.wrapping_add(1 + u32::from(b >> 3)) & PSN_MASK,
            _ => s.u32() & PSN_MASK,
        }
    }

    /// (VA, R_Key) aimed at one of the regions, at or around its edges, or anywhere.
    fn target(&self, s: &mut Src, len: u64) -> (u64, u32) {
        let slots = self.arena.slots();
        let b = s.u8();
        let slot = slots[usize::from(b) % slots.len()];
        let r = slot.region;
        let d = u64::from(s.u16());
        let va = match (b >> 2) % 8 {
            0 => s.u64(),
            1 => (r.va + r.len()).wrapping_sub(len).wrapping_add(d % 8),
            2 => r.va.wrapping_sub(d % 80),
            3 => r.va + r.len() - d % 16,
            _ => r.va + d % r.len(),
        };
        let rkey = match (b >> 5) % 8 {
            0 => s.u32(),
            1 => slots[usize::from(b >> 1) % slots.len()].region.rkey,
            _ => r.rkey,
        };
        (va, rkey)
    }

    fn write(&self, s: &mut Src) -> Vec<u8> {
        let qp = self.qp_index(s);
        let ep = self.endpoints(qp, s);
        let psn = self.psn(qp, s);
        let b = s.u8();
        let len = match b % 4 {
            0 => usize::from(s.u16() % 1100),
            _ => usize::from(s.u8() % 80),
        };
        let mut payload = s.bytes(len).to_vec();
        payload.resize(len, 0x5A);
        let (va, rkey) = self.target(s, len as u64);
        let mut f = emit(&FrameRepr::write_only(
            ep,
            QPNS[qp],
            psn,
            b & 4 != 0,
            va,
            rkey,
            &payload,
        ));
        if b & 8 != 0 {
            // A DMA length that disagrees with the payload.
            let at = EXT_AT + 12;
            f[at..at + 4].copy_from_slice(&s.u32().to_be_bytes());
            let _ = icrc::fill(&mut f);
        }
        f
    }

    fn atomic(&self, s: &mut Src) -> Vec<u8> {
        let qp = self.qp_index(s);
        let ep = self.endpoints(qp, s);
        let psn = self.psn(qp, s);
        let b = s.u8();
        let (va, rkey) = self.target(s, 8);
        let va = if b & 1 == 0 { va & !7 } else { va };
        let add = match b % 4 {
            0 => s.u64(),
            _ => u64::from(s.u8()),
        };
        let mut f = emit(&FrameRepr::fetch_add(
            ep,
            QPNS[qp],
            psn,
            b & 2 != 0,
            va,
            rkey,
            add,
        ));
        if b & 8 != 0 {
            // COMPARE & SWAP, with a compare value that sometimes matches the fill.
            f[BTH_AT] = OP_COMPARE_SWAP;
            let cmp = if b & 16 != 0 {
                u64::from_ne_bytes([FILL; 8])
            } else {
                s.u64()
            };
            f[EXT_AT + 20..EXT_AT + 28].copy_from_slice(&cmp.to_be_bytes());
            let _ = icrc::fill(&mut f);
        }
        f
    }

    fn raw(&self, s: &mut Src) -> Vec<u8> {
        let b = s.u8();
        let len = usize::from(s.u8());
        let bytes = s.bytes(len);
        if b % 2 == 0 {
            return bytes.to_vec();
        }
        let qp = usize::from(b >> 1) % QPNS.len();
        let ep = self.endpoints(qp, s);
        let mut f = vec![0u8; HEADERS_LEN + bytes.len()];
        ep.emit_frame(&mut f, bytes).unwrap();
        if f.len() >= EXT_AT {
            // Aim the BTH at a live QP now and then, so raw opcodes reach the state machine.
            if b & 0x10 != 0 {
                f[BTH_AT + 5..BTH_AT + 8].copy_from_slice(&QPNS[qp].to_be_bytes()[1..]);
                let psn = self.resp.qp(QPNS[qp]).map_or(0, |q| q.expected_psn);
                f[BTH_AT + 9..BTH_AT + 12].copy_from_slice(&psn.to_be_bytes()[1..]);
                f[BTH_AT + 2..BTH_AT + 4].copy_from_slice(&[0xFF, 0xFF]);
            }
        }
        let _ = icrc::fill(&mut f);
        f
    }

    fn mutate(&self, s: &mut Src) -> Vec<u8> {
        let Some(last) = self.history.last() else {
            return Vec::new();
        };
        let mut f = last.clone();
        for _ in 0..1 + s.u8() % 4 {
            if f.len() > HEADERS_LEN {
                let at = HEADERS_LEN + usize::from(s.u16()) % (f.len() - HEADERS_LEN);
                f[at] ^= 1 << (s.u8() % 8);
            }
        }
        match s.u8() % 4 {
            0 => f.truncate(usize::from(s.u16()) % (f.len() + 1)),
            1 => {
                let n = usize::from(s.u8() % 32);
                f.extend_from_slice(s.bytes(n));
            }
            _ => {}
        }
        let _ = icrc::fill(&mut f);
        f
    }

    /// One frame through the responder, with every invariant checked.
    fn feed(&mut self, frame: &[u8]) {
        let qpn = (frame.len() >= EXT_AT)
            .then(|| be_u32(&frame[BTH_AT + 4..]) & PSN_MASK)
            .unwrap_or(u32::MAX);
        let qp = QPNS.iter().position(|&q| q == qpn);
        let status = qp.and_then(|i| self.resp.qp(QPNS[i]));
        let stats = self.resp.stats().clone();
        let before = self.arena.read().as_slice().to_vec();
        let outcome = {
            let mut mem = self.arena.write();
            self.resp.handle(frame, mem.as_mut_slice(), &mut self.out)
        };
        let after_stats = self.resp.stats().clone();
        // The reference path on the twin decides exactly the same.
        let mut general_out = [0u8; RESPONSE_MAX];
        let general_outcome =
            self.general
                .handle_general(frame, &mut self.general_mem, &mut general_out);
        assert_eq!(outcome, general_outcome, "fast and general paths disagree");
        if let Outcome::Respond(n) = outcome {
            assert_eq!(self.out[..n], general_out[..n], "response bytes differ");
        }
        assert_eq!(&after_stats, self.general.stats(), "counters differ");
        for q in QPNS {
            assert_eq!(self.resp.qp(q), self.general.qp(q), "QP {q:#x} differs");
        }
        assert!(
            self.arena.read().as_slice() == &self.general_mem[..],
            "memory differs"
        );
        let mem = self.arena.read();
        let now = mem.as_slice();
        let changed: Vec<usize> = (0..now.len()).filter(|&i| now[i] != before[i]).collect();
        for &i in &changed {
            assert!(self.in_region[i], "byte {i} outside every region changed");
        }
        let writes = after_stats.writes - stats.writes;
        let atomics = after_stats.atomics - stats.atomics;
        let dup_atomics = after_stats.duplicate_atomics - stats.duplicate_atomics;
        assert!(writes + atomics <= 1, "one frame carried out twice");
        if writes + atomics == 1 || !changed.is_empty() {
            assert_eq!(
                writes + atomics,
                1,
                "memory changed with nothing carried out"
            );
            let i = qp.expect("carried out on no QP");
            let st = status.expect("carried out on a closed QP");
            assert!(!st.error, "carried out on a QP in error");
            let udp = UdpFrame::parse(frame).expect("carried out a non-UDP frame");
            assert_eq!(
                udp.endpoints.src_ip, st.peer_ip,
                "carried out from a stranger"
            );
            let psn = be_u32(&frame[BTH_AT + 8..]) & PSN_MASK;
            assert_eq!(psn, st.expected_psn, "carried out a PSN out of sequence");
            let opcode = frame[BTH_AT];
            let ext = &frame[EXT_AT..];
            let (va, rkey) = (be_u64(ext), be_u32(&ext[8..]));
            let slot = self
                .arena
                .slots()
                .iter()
                .find(|s| s.region.rkey == rkey)
                .expect("carried out with an unknown R_Key");
            let base = slot.offset as u64 + (va - slot.region.va);
            if writes == 1 {
                assert_eq!(opcode, OP_WRITE_ONLY);
                let dma = u64::from(be_u32(&ext[12..]));
                assert!(slot.region.contains(va, dma), "WRITE beyond its region");
                for &c in &changed {
                    assert!(
                        (base..base + dma).contains(&(c as u64)),
                        "WRITE past its range"
                    );
                }
            } else {
                assert!(opcode == OP_FETCH_ADD || opcode == OP_COMPARE_SWAP);
                assert_eq!(va % 8, 0, "misaligned atomic carried out");
                assert!(slot.region.contains(va, 8));
                let at = base as usize;
                for &c in &changed {
                    assert!((at..at + 8).contains(&c), "atomic past its cell");
                }
                let orig = u64::from_ne_bytes(before[at..at + 8].try_into().unwrap());
                let new = u64::from_ne_bytes(now[at..at + 8].try_into().unwrap());
                let (swap_add, compare) = (be_u64(&ext[12..]), be_u64(&ext[20..]));
                let want = if opcode == OP_FETCH_ADD {
                    orig.wrapping_add(swap_add)
                } else if orig == compare {
                    swap_add
                } else {
                    orig
                };
                assert_eq!(new, want, "atomic result");
                let key = (i, self.incarnation[i], psn);
                assert!(
                    self.applied.insert(key, orig).is_none(),
                    "atomic PSN {psn:#x} applied twice on QP {qpn:#x}"
                );
                let r = self.response(&outcome, frame, st.peer_qpn);
                let Some(Extension::AtomicAck(_, o)) = r else {
                    panic!("atomic answered with {r:?}");
                };
                assert_eq!(o.orig_remote_data, orig);
            }
        }
        if dup_atomics == 1 {
            let i = qp.expect("a duplicate on no QP");
            let st = status.unwrap();
            let psn = be_u32(&frame[BTH_AT + 8..]) & PSN_MASK;
            assert!(Psn::new(psn).offset_from(Psn::new(st.expected_psn)) < 0);
            let orig = *self
                .applied
                .get(&(i, self.incarnation[i], psn))
                .unwrap_or_else(|| panic!("duplicate answered for PSN {psn:#x}, never applied"));
            let r = self.response(&outcome, frame, st.peer_qpn);
            let Some(Extension::AtomicAck(_, o)) = r else {
                panic!("duplicate atomic answered with {r:?}");
            };
            assert_eq!(o.orig_remote_data, orig, "a replayed answer differs");
        } else if let Outcome::Respond(_) = outcome {
            self.response(&outcome, frame, status.map_or(u32::MAX, |s| s.peer_qpn));
        }
        if let (Some(i), Some(st)) = (qp, status) {
            let e = self.resp.qp(QPNS[i]).unwrap().expected_psn;
            assert!(
                e == st.expected_psn || e == (st.expected_psn + 1) & PSN_MASK,
                "expected PSN jumped"
            );
            if e != st.expected_psn {
                assert!(
                    !matches!(outcome, Outcome::Dropped(_)),
                    "a dropped frame moved the PSN"
                );
            }
        }
        drop(mem);
        self.history.push(frame.to_vec());
        if self.history.len() > 16 {
            self.history.remove(0);
        }
    }

    /// Checks a response: a valid frame back to the requester's address and QP.
    fn response(&self, outcome: &Outcome, request: &[u8], peer_qpn: u32) -> Option<Extension> {
        let Outcome::Respond(n) = *outcome else {
            return None;
        };
        let r = FrameRepr::parse(&self.out[..n]).expect("a response parses, iCRC included");
        let req = UdpFrame::parse(request).expect("answered a non-UDP frame");
        assert_eq!(
            r.endpoints.dst_ip, req.endpoints.src_ip,
            "response to another host"
        );
        assert_eq!(r.endpoints.src_ip, req.endpoints.dst_ip);
        assert_eq!(r.endpoints.dst_port, ROCEV2_UDP_PORT);
        assert_eq!(r.bth.dest_qp, peer_qpn, "response to another QP");
        assert!(matches!(
            r.bth.opcode,
            BthOpcode::Acknowledge | BthOpcode::AtomicAcknowledge
        ));
        Some(r.ext)
    }

    fn step(&mut self, s: &mut Src) {
        let op = s.u8();
        let frame = match op % 12 {
            0..=3 => self.write(s),
            4..=6 => self.atomic(s),
            7 => self.raw(s),
            8 => self.mutate(s),
            9 | 10 => {
                // A replay of a recent frame: duplicates must not be carried out again.
                if self.history.is_empty() {
                    return;
                }
                let i = usize::from(s.u8()) % self.history.len();
                self.history[i].clone()
            }
            _ => {
                let i = usize::from(op >> 4) % QPNS.len();
                if op & 0x80 != 0 {
                    self.resp.close_qp(QPNS[i]);
                    self.general.close_qp(QPNS[i]);
                } else {
                    let start = match s.u8() {
                        0 => s.u32() & PSN_MASK,
                        p => u32::from(p),
                    };
                    for r in [&mut self.resp, &mut self.general] {
                        r.open_qp(QPNS[i], PEERS[i], 0x11 + i as u32, start);
                    }
                }
                self.incarnation[i] += 1;
                return;
            }
        };
        self.feed(&frame);
    }
}

fuzz_target!(|data: &[u8]| {
    let mut s = Src(data);
    let mut h = Harness::new(&mut s);
    let mut ops = 0;
    while !s.0.is_empty() && ops < MAX_OPS {
        h.step(&mut s);
        ops += 1;
    }
    if std::env::var_os("DTA_FUZZ_DEBUG").is_some() {
        eprintln!("ops {ops} atomics tracked {}\n{:?}", h.applied.len(), {
            let st = h.resp.stats();
            (
                st.writes,
                st.atomics,
                st.duplicate_writes,
                st.duplicate_atomics,
                st.acks,
                st.drops,
                st.naks,
            )
        });
    }
});
