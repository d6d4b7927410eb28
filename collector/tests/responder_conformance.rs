//! Frame-by-frame conformance of the software responder with the rxe rules of DESIGN.md section 5.

use dta_collector::memory::Arena;
use dta_collector::responder::{
    DropReason, NakKind, Outcome, Responder, ResponderConfig, RESPONSE_MAX,
};
use dta_protocol::layout::{AppendGeometry, Geometry, KeyIncrementGeometry, KeyWriteGeometry};
use dta_protocol::roce::{icrc, AckKind, AethRepr, BthOpcode, Extension, FrameRepr, NakCode};
use dta_protocol::udp::UdpEndpoints;

const QPN: u32 = 0x100;
const PEER: u32 = 0x11;

fn endpoints() -> UdpEndpoints {
    UdpEndpoints::new(
        [2, 0, 0, 0, 0, 1],
        [2, 0, 0, 0, 0, 2],
        [198, 18, 0, 1],
        [198, 18, 0, 2],
        49152,
        4791,
    )
}

struct Rig {
    arena: Arena,
    resp: Responder,
}

impl Rig {
    fn new(start_psn: u32, config: ResponderConfig) -> Self {
        let arena = Arena::new_normal(&[
            (
                0,
                Geometry::KeyWrite(KeyWriteGeometry::new(256, 8, 4).unwrap()),
            ),
            (
                0,
                Geometry::KeyIncrement(KeyIncrementGeometry::new(256, 4).unwrap()),
            ),
            (3, Geometry::Append(AppendGeometry::new(32, 4, 16).unwrap())),
        ])
        .unwrap();
        let mut resp = Responder::new(config, arena.slots().to_vec());
        resp.open_qp(QPN, PEER, start_psn);
        Rig { arena, resp }
    }

    fn kw(&self) -> (u64, u32) {
        let r = self.arena.slots()[0].region;
        (r.va, r.rkey)
    }

    fn ki(&self) -> (u64, u32) {
        let r = self.arena.slots()[1].region;
        (r.va, r.rkey)
    }

    fn feed(&mut self, frame: &[u8]) -> (Outcome, Vec<u8>) {
        let mut out = [0u8; RESPONSE_MAX];
        let mut mem = self.arena.write();
        let o = self.resp.handle(frame, mem.as_mut_slice(), &mut out);
        let bytes = match o {
            Outcome::Respond(n) => out[..n].to_vec(),
            _ => Vec::new(),
        };
        (o, bytes)
    }

    fn write(
        &mut self,
        psn: u32,
        ack: bool,
        va: u64,
        rkey: u32,
        data: &[u8],
    ) -> (Outcome, Vec<u8>) {
        self.feed(&write_frame(psn, ack, va, rkey, data))
    }

    fn fetch_add(&mut self, psn: u32, va: u64, rkey: u32, add: u64) -> (Outcome, Vec<u8>) {
        let f = FrameRepr::fetch_add(endpoints(), QPN, psn, true, va, rkey, add);
        let mut buf = vec![0u8; f.buffer_len()];
        f.emit(&mut buf).unwrap();
        self.feed(&buf)
    }

    fn mem(&self, va: u64, len: usize) -> Vec<u8> {
        let slot = self
            .arena
            .slots()
            .iter()
            .find(|s| s.region.contains(va, len as u64))
            .unwrap();
        let at = slot.offset + (va - slot.region.va) as usize;
        self.arena.read().as_slice()[at..at + len].to_vec()
    }
}

fn write_frame(psn: u32, ack: bool, va: u64, rkey: u32, data: &[u8]) -> Vec<u8> {
    let f = FrameRepr::write_only(endpoints(), QPN, psn, ack, va, rkey, data);
    let mut buf = vec![0u8; f.buffer_len()];
    f.emit(&mut buf).unwrap();
    buf
}

/// The exact response frame the responder must send: back to the requester, from its source port to 4791.
fn expected_ack(psn: u32, kind: AckKind, msn: u32) -> Vec<u8> {
    let ep = UdpEndpoints::new(
        [2, 0, 0, 0, 0, 2],
        [2, 0, 0, 0, 0, 1],
        [198, 18, 0, 2],
        [198, 18, 0, 1],
        49152,
        4791,
    );
    let f = FrameRepr::acknowledge(ep, PEER, psn, AethRepr { kind, msn });
    let mut buf = vec![0u8; f.buffer_len()];
    f.emit(&mut buf).unwrap();
    buf
}

fn ack(psn: u32, msn: u32) -> Vec<u8> {
    expected_ack(psn, AckKind::Ack { credits: 31 }, msn)
}

fn nak(psn: u32, code: NakCode, msn: u32) -> Vec<u8> {
    expected_ack(psn, AckKind::Nak(code), msn)
}

/// (psn, msn, original value) of an ATOMIC ACKNOWLEDGE.
fn atomic_ack(bytes: &[u8]) -> (u32, u32, u64) {
    let f = FrameRepr::parse(bytes).unwrap();
    assert_eq!(f.bth.opcode, BthOpcode::AtomicAcknowledge);
    assert_eq!(f.bth.dest_qp, PEER);
    match f.ext {
        Extension::AtomicAck(aeth, o) => {
            assert_eq!(aeth.kind, AckKind::Ack { credits: 31 });
            (f.bth.psn, aeth.msn, o.orig_remote_data)
        }
        other => panic!("not an atomic ack: {other:?}"),
    }
}

#[test]
fn write_is_applied_and_acked_only_when_asked() {
    let mut rig = Rig::new(100, ResponderConfig::default());
    let (va, rkey) = rig.kw();
    let (o, bytes) = rig.write(100, false, va + 8, rkey, &[1, 2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(o, Outcome::Silent);
    assert!(bytes.is_empty());
    let (_, bytes) = rig.write(101, true, va + 16, rkey, &[9, 10, 11]);
    assert_eq!(bytes, ack(101, 2));
    assert_eq!(
        rig.mem(va, 24),
        [0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0, 0, 0, 0, 0]
    );
    let qp = rig.resp.qp(QPN).unwrap();
    assert_eq!((qp.expected_psn, qp.msn), (102, 2));
    assert_eq!(rig.resp.stats().writes, 2);
    assert_eq!(rig.resp.stats().write_bytes, 11);
    assert_eq!(rig.resp.stats().frames_by_opcode[0x0A], 2);
    assert_eq!(rig.resp.stats().acks, 1);
}

#[test]
fn one_sequence_nak_then_silence_until_the_expected_psn() {
    let mut rig = Rig::new(10, ResponderConfig::default());
    let (va, rkey) = rig.kw();
    let (_, bytes) = rig.write(12, true, va, rkey, &[0xAA; 8]);
    assert_eq!(bytes, nak(10, NakCode::PsnSequenceError, 0));
    let (o, _) = rig.write(13, true, va, rkey, &[0xBB; 8]);
    assert_eq!(o, Outcome::Dropped(DropReason::OutOfSequence));
    assert_eq!(
        rig.mem(va, 8),
        [0; 8],
        "out-of-order writes are never applied"
    );
    let (_, bytes) = rig.write(10, true, va, rkey, &[0xCC; 8]);
    assert_eq!(bytes, ack(10, 1));
    assert!(!rig.resp.qp(QPN).unwrap().nak_sent);
    // The latch cleared, so the next gap earns a new NAK.
    let (_, bytes) = rig.write(14, true, va, rkey, &[0xDD; 8]);
    assert_eq!(bytes, nak(11, NakCode::PsnSequenceError, 1));
    assert_eq!(rig.mem(va, 8), [0xCC; 8]);
    let s = rig.resp.stats();
    assert_eq!(s.naks_for(NakKind::PsnSequence), 2);
    assert_eq!(s.drops_for(DropReason::OutOfSequence), 1);
}

#[test]
fn duplicate_write_is_reacked_not_reapplied() {
    let mut rig = Rig::new(5, ResponderConfig::default());
    let (va, rkey) = rig.kw();
    rig.write(5, false, va, rkey, &[1; 8]);
    rig.write(6, false, va + 8, rkey, &[2; 8]);
    // A retransmission of PSN 5 with other bytes: acknowledged up to the last PSN received (6).
    let (_, bytes) = rig.write(5, false, va, rkey, &[9; 8]);
    assert_eq!(bytes, ack(6, 2));
    assert_eq!(rig.mem(va, 16), [[1u8; 8], [2u8; 8]].concat());
    assert_eq!(rig.resp.stats().duplicate_writes, 1);
    assert_eq!(rig.resp.stats().writes, 2);
    assert_eq!(rig.resp.qp(QPN).unwrap().expected_psn, 7);
}

#[test]
fn psn_wraps_at_24_bits() {
    let mut rig = Rig::new(0xFF_FFFE, ResponderConfig::default());
    let (va, rkey) = rig.kw();
    for (i, psn) in [0xFF_FFFE, 0xFF_FFFF, 0, 1].into_iter().enumerate() {
        let (_, bytes) = rig.write(psn, true, va + 8 * i as u64, rkey, &[i as u8 + 1; 8]);
        assert_eq!(bytes, ack(psn, i as u32 + 1), "psn {psn:#x}");
    }
    assert_eq!(rig.resp.qp(QPN).unwrap().expected_psn, 2);
    // 0xFFFFFF is now behind 2, not 16 million ahead of it.
    let (_, bytes) = rig.write(0xFF_FFFF, true, va, rkey, &[0xEE; 8]);
    assert_eq!(bytes, ack(1, 4));
    assert_eq!(rig.resp.stats().duplicate_writes, 1);
    let (_, bytes) = rig.write(3, true, va, rkey, &[0xEE; 8]);
    assert_eq!(bytes, nak(2, NakCode::PsnSequenceError, 4));
    assert_eq!(rig.mem(va, 8), [1; 8]);
}

#[test]
fn fetch_add_returns_the_original_and_duplicates_replay_from_the_cache() {
    let mut rig = Rig::new(0xFF_FFFF, ResponderConfig::default());
    let (va, rkey) = rig.ki();
    let (_, b) = rig.fetch_add(0xFF_FFFF, va + 16, rkey, 5);
    assert_eq!(atomic_ack(&b), (0xFF_FFFF, 1, 0));
    let (_, b) = rig.fetch_add(0, va + 16, rkey, 7);
    assert_eq!(atomic_ack(&b), (0, 2, 5));
    assert_eq!(rig.mem(va + 16, 8), 12u64.to_ne_bytes());
    // The retransmitted first atomic gets its first answer, and the counter does not move.
    let (_, b) = rig.fetch_add(0xFF_FFFF, va + 16, rkey, 5);
    assert_eq!(atomic_ack(&b), (0xFF_FFFF, 1, 0));
    let (_, b) = rig.fetch_add(0, va + 16, rkey, 7);
    assert_eq!(atomic_ack(&b), (0, 2, 5));
    assert_eq!(rig.mem(va + 16, 8), 12u64.to_ne_bytes());
    let s = rig.resp.stats();
    assert_eq!((s.atomics, s.duplicate_atomics, s.acks), (2, 2, 4));
    assert_eq!(s.frames_by_opcode[0x14], 4);
}

#[test]
fn atomic_cache_holds_max_dest_rd_atomic_entries() {
    let config = ResponderConfig {
        max_dest_rd_atomic: 2,
        ..Default::default()
    };
    let mut rig = Rig::new(0, config);
    let (va, rkey) = rig.ki();
    for psn in 0..3 {
        rig.fetch_add(psn, va, rkey, 1);
    }
    let (o, _) = rig.fetch_add(0, va, rkey, 1);
    assert_eq!(o, Outcome::Dropped(DropReason::StaleDuplicateAtomic));
    let (_, b) = rig.fetch_add(1, va, rkey, 1);
    assert_eq!(atomic_ack(&b), (1, 2, 1));
    assert_eq!(rig.mem(va, 8), 3u64.to_ne_bytes());

    let mut none = Rig::new(
        0,
        ResponderConfig {
            max_dest_rd_atomic: 0,
            ..Default::default()
        },
    );
    let (va, rkey) = none.ki();
    let (_, b) = none.fetch_add(0, va, rkey, 1);
    assert_eq!(b, nak(0, NakCode::InvalidRequest, 0));
    assert_eq!(none.mem(va, 8), [0; 8]);
}

#[test]
fn misaligned_atomic_is_an_invalid_request_and_errors_the_qp() {
    let mut rig = Rig::new(7, ResponderConfig::default());
    let (va, rkey) = rig.ki();
    rig.fetch_add(7, va, rkey, 1);
    let (_, b) = rig.fetch_add(8, va + 4, rkey, 1);
    assert_eq!(b, nak(8, NakCode::InvalidRequest, 1));
    assert!(rig.resp.qp(QPN).unwrap().error);
    assert_eq!(rig.mem(va, 16), [1u64.to_ne_bytes(), [0; 8]].concat());
    let (o, _) = rig.fetch_add(8, va, rkey, 1);
    assert_eq!(o, Outcome::Dropped(DropReason::QpError));
    assert_eq!(rig.resp.stats().naks_for(NakKind::InvalidRequest), 1);
    // Re-opening over the control channel starts over.
    rig.resp.open_qp(QPN, PEER, 8);
    let (_, b) = rig.fetch_add(8, va, rkey, 1);
    assert_eq!(atomic_ack(&b), (8, 1, 1));
}

#[test]
fn rkey_and_bounds_violations_nak_remote_access() {
    let mut rig = Rig::new(0, ResponderConfig::default());
    let (va, rkey) = rig.kw();
    let (_, b) = rig.write(0, false, va, rkey ^ 0x40, &[1; 8]);
    assert_eq!(b, nak(0, NakCode::RemoteAccessError, 0));
    for (va, len) in [(va + 2048 - 4, 8), (va - 8, 8), (u64::MAX - 3, 8)] {
        rig.resp.open_qp(QPN, PEER, 0);
        let (_, b) = rig.write(0, false, va, rkey, &vec![1; len]);
        assert_eq!(b, nak(0, NakCode::RemoteAccessError, 0), "va {va:#x}");
    }
    // The Key-Increment key does not open the Key-Write region.
    rig.resp.open_qp(QPN, PEER, 0);
    let (_, ki_rkey) = rig.ki();
    let (_, b) = rig.fetch_add(0, va, ki_rkey, 1);
    assert_eq!(b, nak(0, NakCode::RemoteAccessError, 0));
    assert_eq!(rig.resp.stats().naks_for(NakKind::RemoteAccess), 5);
    assert!(rig.arena.read().as_slice().iter().all(|&b| b == 0));
}

#[test]
fn oversized_write_is_an_invalid_request() {
    let mut rig = Rig::new(
        0,
        ResponderConfig {
            path_mtu: 256,
            ..Default::default()
        },
    );
    let (va, rkey) = rig.kw();
    let (_, b) = rig.write(0, true, va, rkey, &[1; 260]);
    assert_eq!(b, nak(0, NakCode::InvalidRequest, 0));
}

#[test]
fn bad_frames_are_counted_drops() {
    let mut rig = Rig::new(
        0,
        ResponderConfig {
            local_ip: Some([198, 18, 0, 2]),
            ..Default::default()
        },
    );
    let (va, rkey) = rig.kw();
    let mut f = write_frame(0, true, va, rkey, &[1; 8]);
    let last = f.len() - 1;
    f[last] ^= 0x80;
    assert_eq!(rig.feed(&f).0, Outcome::Dropped(DropReason::Icrc));
    let mut f = write_frame(0, true, va, rkey, &[1; 8]);
    f[42 + 5..42 + 8].copy_from_slice(&[0, 0x0F, 0xFF]);
    icrc::fill(&mut f).unwrap();
    assert_eq!(rig.feed(&f).0, Outcome::Dropped(DropReason::UnknownQp));
    assert_eq!(
        rig.feed(&[0u8; 60]).0,
        Outcome::Dropped(DropReason::NotRoce)
    );
    assert_eq!(rig.feed(&f[..30]).0, Outcome::Dropped(DropReason::NotRoce));
    // An ACK sent to the responder is not a request.
    let a = ack(0, 0);
    let fixed = {
        let p = FrameRepr::parse(&a).unwrap();
        let ep = UdpEndpoints {
            dst_ip: [198, 18, 0, 2],
            src_ip: [198, 18, 0, 1],
            ..p.endpoints
        };
        let g = FrameRepr { endpoints: ep, ..p };
        let mut buf = vec![0u8; g.buffer_len()];
        g.emit(&mut buf).unwrap();
        buf
    };
    assert_eq!(rig.feed(&fixed).0, Outcome::Dropped(DropReason::NotRequest));
    let other = {
        let p = FrameRepr::parse(&write_frame(0, true, va, rkey, &[1; 8]))
            .unwrap()
            .endpoints;
        let g = FrameRepr::write_only(
            UdpEndpoints {
                dst_ip: [10, 0, 0, 9],
                ..p
            },
            QPN,
            0,
            true,
            va,
            rkey,
            &[1; 8],
        );
        let mut buf = vec![0u8; g.buffer_len()];
        g.emit(&mut buf).unwrap();
        buf
    };
    assert_eq!(rig.feed(&other).0, Outcome::Dropped(DropReason::NotForUs));
    let s = rig.resp.stats();
    for r in [
        DropReason::Icrc,
        DropReason::UnknownQp,
        DropReason::NotRequest,
        DropReason::NotForUs,
    ] {
        assert_eq!(s.drops_for(r), 1, "{r:?}");
    }
    assert_eq!(s.drops_for(DropReason::NotRoce), 2);
    assert_eq!(rig.resp.qp(QPN).unwrap().expected_psn, 0);
    assert_eq!(rig.mem(va, 8), [0; 8]);
}
