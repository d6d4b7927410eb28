//! Test support: report builders, a welcome, a seeded PRNG and a model RoCEv2 responder that behaves
//! like Linux rxe (DESIGN.md section 5).
#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};

use dta_protocol::control::{ResponderQp, Welcome, CONTROL_VERSION};
use dta_protocol::dta::{Body, HeaderForm, ReportFormat, ReportRepr};
use dta_protocol::layout::{
    AppendGeometry, Geometry, KeyIncrementGeometry, KeyWriteGeometry, PostcardGeometry, Region,
    SketchGeometry,
};
use dta_protocol::roce::{AckKind, AethRepr, Extension, FrameRepr, NakCode, Psn};
use dta_protocol::udp::{UdpEndpoints, HEADERS_LEN};

pub const COLLECTOR_MAC: [u8; 6] = [2, 0, 0, 0, 0, 2];
pub const COLLECTOR_IP: [u8; 4] = [198, 18, 0, 2];
pub const COLLECTOR_QPN: u32 = 0x11;
pub const TRANSLATOR_QPN: u32 = 0x100;
pub const KW_VA: u64 = 0x10_0000;
pub const KI_VA: u64 = 0x20_0000;
pub const PC_VA: u64 = 0x30_0000;
pub const APPEND_VA: u64 = 0x40_0000;
pub const SKETCH_VA: u64 = 0x50_0000;
pub const RKEY: u32 = 0x1234;

/// xorshift64*: small, seeded, reproducible.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// True with probability `per_mille`/1000.
    pub fn chance(&mut self, per_mille: u64) -> bool {
        self.below(1000) < per_mille
    }
}

pub fn regions() -> Vec<Region> {
    vec![
        Region {
            id: 0,
            va: KW_VA,
            rkey: RKEY,
            geometry: Geometry::KeyWrite(KeyWriteGeometry::new(256, 8, 8).unwrap()),
        },
        Region {
            id: 0,
            va: KI_VA,
            rkey: RKEY,
            geometry: Geometry::KeyIncrement(KeyIncrementGeometry::new(256, 8).unwrap()),
        },
        Region {
            id: 0,
            va: PC_VA,
            rkey: RKEY,
            geometry: Geometry::Postcarding(PostcardGeometry::new(64, 5, 2).unwrap()),
        },
        Region {
            id: 3,
            va: APPEND_VA,
            rkey: RKEY,
            geometry: Geometry::Append(AppendGeometry::new(64, 4, 16).unwrap()),
        },
        Region {
            id: 1,
            va: SKETCH_VA,
            rkey: RKEY,
            geometry: Geometry::Sketch(SketchGeometry::new(2, 8).unwrap()),
        },
    ]
}

pub fn welcome() -> Welcome {
    Welcome {
        version: CONTROL_VERSION,
        mac: COLLECTOR_MAC,
        ip: COLLECTOR_IP,
        qps: vec![ResponderQp {
            qpn: COLLECTOR_QPN,
            peer_qpn: TRANSLATOR_QPN,
        }],
        max_dest_rd_atomic: 16,
        path_mtu: 1024,
        regions: regions(),
        append_heads: Vec::new(),
    }
}

pub fn reporter(ip_last: u8) -> UdpEndpoints {
    UdpEndpoints::new(
        [2, 0, 0, 0, 0, 0x10 + ip_last],
        [2, 0, 0, 0, 0, 1],
        [10, 0, 0, ip_last],
        COLLECTOR_IP,
        5000,
        40040,
    )
}

/// A whole report frame: `body` with a seq-form base header.
pub fn report(from: &UdpEndpoints, body: Body, seq: u8, retransmit: bool) -> Vec<u8> {
    let fmt = ReportFormat::default();
    let mut r = ReportRepr::new(body, HeaderForm::Seq, seq);
    r.base.retransmit = retransmit;
    let mut payload = vec![0u8; r.buffer_len(&fmt)];
    r.emit(&mut payload, &fmt).unwrap();
    let mut out = vec![0u8; HEADERS_LEN + payload.len()];
    from.emit_frame(&mut out, &payload).unwrap();
    out
}

/// An ACKNOWLEDGE (or ATOMIC ACKNOWLEDGE with `atomic`) from the collector for `psn`.
pub fn response(psn: u32, kind: AckKind, atomic: Option<u64>) -> Vec<u8> {
    let ep = UdpEndpoints::new(
        COLLECTOR_MAC,
        [2, 0, 0, 0, 0, 1],
        COLLECTOR_IP,
        [198, 18, 0, 1],
        49152,
        4791,
    );
    let aeth = AethRepr { kind, msn: 0 };
    let f = match atomic {
        Some(v) => FrameRepr::atomic_acknowledge(ep, TRANSLATOR_QPN, psn, aeth, v),
        None => FrameRepr::acknowledge(ep, TRANSLATOR_QPN, psn, aeth),
    };
    let mut out = vec![0u8; f.buffer_len()];
    f.emit(&mut out).unwrap();
    out
}

/// A congestion notification from the collector NIC to the translator's QP.
pub fn cnp() -> Vec<u8> {
    let ep = UdpEndpoints::new(
        COLLECTOR_MAC,
        [2, 0, 0, 0, 0, 1],
        COLLECTOR_IP,
        [198, 18, 0, 1],
        49152,
        4791,
    );
    let f = FrameRepr::cnp(ep, TRANSLATOR_QPN);
    let mut out = vec![0u8; f.buffer_len()];
    f.emit(&mut out).unwrap();
    out
}

/// Parses every frame the engine wants to send now.
pub fn drain(e: &mut dta_translator::Engine, now: dta_translator::Instant) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = Vec::new();
    while e.poll_transmit(now, &mut buf) {
        out.push(buf.clone());
    }
    out
}

/// An engine with the default configuration and sequence tracking on, welcomed by [`welcome`].
pub fn seq_engine() -> dta_translator::Engine {
    let mut cfg = dta_translator::Config::default();
    cfg.sequence.enabled = true;
    dta_translator::Engine::new(cfg, &[welcome()], dta_translator::Instant(0)).unwrap()
}

/// Answers every AckReq and every atomic in `frames` to each of `engines`, as a responder would (an ACK,
/// or an ATOMIC ACKNOWLEDGE with original value 7). DTA NACKs among them are not RoCE: skipped.
pub fn answer_all(
    engines: &mut [&mut dta_translator::Engine],
    now: dta_translator::Instant,
    frames: &[Vec<u8>],
) {
    for f in frames {
        let Ok(r) = FrameRepr::parse(f) else {
            continue;
        };
        let atomic = matches!(r.ext, Extension::Atomic(_));
        if atomic || r.bth.ack_req {
            let resp = response(r.bth.psn, AckKind::Ack { credits: 31 }, atomic.then_some(7));
            for e in engines.iter_mut() {
                e.handle_frame(now, &resp);
            }
        }
    }
}

/// (PSN, AckReq) of RoCE frames.
pub fn psns(frames: &[Vec<u8>]) -> Vec<(u32, bool)> {
    frames
        .iter()
        .map(|f| {
            let r = FrameRepr::parse(f).unwrap();
            (r.bth.psn, r.bth.ack_req)
        })
        .collect()
}

/// A responder like rxe: PSN order, one sequence NAK per gap, duplicates re-ACKed without re-applying,
/// duplicate atomics answered from a cache.
pub struct Responder {
    pub mem: HashMap<u64, Vec<u8>>,
    regions: Vec<Region>,
    pub expected: u32,
    nak_sent: bool,
    /// The newest `max_dest_rd_atomic` atomic answers, oldest first: rxe's responder resources, a ring
    /// that every new atomic overwrites.
    atomic_cache: VecDeque<(u32, u64)>,
    atomic_capacity: usize,
    /// Duplicate atomics whose answer had left the cache: rxe drops them silently (a class D error).
    pub uncached_duplicates: u64,
    pub atomics_applied: u64,
    pub writes_applied: u64,
    pub duplicates: u64,
    pub naks: u64,
    pub refuse_rnr: u32,
    ep: UdpEndpoints,
}

impl Responder {
    pub fn new(start_psn: u32) -> Self {
        let regions = regions();
        let mem = regions
            .iter()
            .map(|r| (r.va, vec![0u8; r.len() as usize]))
            .collect();
        Responder {
            mem,
            regions,
            expected: start_psn,
            nak_sent: false,
            atomic_cache: VecDeque::new(),
            atomic_capacity: welcome().max_dest_rd_atomic as usize,
            uncached_duplicates: 0,
            atomics_applied: 0,
            writes_applied: 0,
            duplicates: 0,
            naks: 0,
            refuse_rnr: 0,
            ep: UdpEndpoints::new(
                COLLECTOR_MAC,
                [2, 0, 0, 0, 0, 1],
                COLLECTOR_IP,
                [198, 18, 0, 1],
                49152,
                4791,
            ),
        }
    }

    fn slice(&mut self, va: u64, len: usize) -> &mut [u8] {
        let r = self
            .regions
            .iter()
            .find(|r| r.contains(va, len as u64))
            .unwrap_or_else(|| panic!("write outside regions: {va:#x}+{len}"));
        let base = r.va;
        let m = self.mem.get_mut(&base).unwrap();
        let at = (va - base) as usize;
        &mut m[at..at + len]
    }

    fn ack(&self, psn: u32, kind: AckKind, atomic: Option<u64>) -> Vec<u8> {
        response(psn, kind, atomic)
    }

    /// Handles one request frame; returns the responses.
    pub fn handle(&mut self, frame: &[u8]) -> Vec<Vec<u8>> {
        let f = FrameRepr::parse(frame).expect("translator sent an invalid frame");
        assert_eq!(f.bth.dest_qp, COLLECTOR_QPN);
        let psn = f.bth.psn;
        let ack_ok = AckKind::Ack { credits: 31 };
        if psn != self.expected {
            if Psn::new(psn).before(Psn::new(self.expected)) {
                self.duplicates += 1;
                if let Extension::Atomic(_) = f.ext {
                    let Some(&(_, v)) = self.atomic_cache.iter().find(|(p, _)| *p == psn) else {
                        self.uncached_duplicates += 1;
                        return vec![];
                    };
                    return vec![self.ack(psn, ack_ok, Some(v))];
                }
                let last = Psn::new(self.expected).prev().value();
                return vec![self.ack(last, ack_ok, None)];
            }
            if self.nak_sent {
                return vec![];
            }
            self.nak_sent = true;
            self.naks += 1;
            return vec![self.ack(self.expected, AckKind::Nak(NakCode::PsnSequenceError), None)];
        }
        if self.refuse_rnr > 0 {
            self.refuse_rnr -= 1;
            return vec![self.ack(psn, AckKind::RnrNak { timer: 1 }, None)];
        }
        self.nak_sent = false;
        self.expected = Psn::new(psn).next().value();
        match f.ext {
            Extension::Reth(r) => {
                assert_eq!(r.rkey, RKEY);
                self.slice(r.va, f.payload.len()).copy_from_slice(f.payload);
                self.writes_applied += 1;
                if f.bth.ack_req {
                    return vec![self.ack(psn, ack_ok, None)];
                }
                vec![]
            }
            Extension::Atomic(a) => {
                assert_eq!(a.va % 8, 0);
                let cell = self.slice(a.va, 8);
                let old = u64::from_le_bytes(cell.try_into().unwrap());
                cell.copy_from_slice(&old.wrapping_add(a.swap_add).to_le_bytes());
                self.atomics_applied += 1;
                if self.atomic_cache.len() >= self.atomic_capacity {
                    self.atomic_cache.pop_front();
                }
                self.atomic_cache.push_back((psn, old));
                vec![self.ack(psn, ack_ok, Some(old))]
            }
            other => panic!("unexpected request {other:?}"),
        }
    }

    /// The bytes of the region at `va`.
    pub fn region(&self, va: u64) -> &[u8] {
        &self.mem[&va]
    }
}
