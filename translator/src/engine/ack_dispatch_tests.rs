//! `handle_roce`'s direct path for well-formed ACKNOWLEDGEs and ATOMIC ACKNOWLEDGEs against the general
//! path of `handle_roce_frame` (the whole parse, then `Requester::on_response_frame`), which handles every
//! RoCE frame the same way: two engines, one fed every response through `handle_frame`, the other through
//! `handle_roce_frame` alone, agree on counters, QP gauges, events, timers and frames after every step.

use super::*;
use crate::config::Config;
use crate::counters::DropReason;
use crate::time::Instant;
use dta_protocol::control::Welcome;
use dta_protocol::control::{ResponderQp, CONTROL_VERSION};
use dta_protocol::dta::{Body, HeaderForm, KeyIncrementRepr, KeyWriteRepr};
use dta_protocol::dta::{ReportFormat, ReportRepr};
use dta_protocol::layout::Region;
use dta_protocol::layout::{Geometry, KeyIncrementGeometry, KeyWriteGeometry};
use dta_protocol::roce::{icrc, AckKind, AethRepr, NakCode};
use dta_protocol::roce::{FrameRepr, QPN_MASK, ROCEV2_UDP_PORT};
use dta_protocol::udp::UdpView;
use dta_protocol::udp::{UdpEndpoints, HEADERS_LEN};
use dta_rc::test_rng::Rng;

const COLLECTOR_IP: [u8; 4] = [198, 18, 0, 2];
const TRANSLATOR_IP: [u8; 4] = [198, 18, 0, 1];
const COLLECTOR_QPN: u32 = 0x11;
const TRANSLATOR_QPN: u32 = 0x100;

/// Collector `c`'s answer (`c` from 0; collector `c` is at `COLLECTOR_IP` plus `c`).
fn welcome(c: u8) -> Welcome {
    let mut ip = COLLECTOR_IP;
    ip[3] += c;
    Welcome {
        version: CONTROL_VERSION,
        mac: [2, 0, 0, 0, 0, 2 + c],
        ip,
        qps: vec![ResponderQp {
            qpn: COLLECTOR_QPN,
            peer_qpn: TRANSLATOR_QPN,
        }],
        max_dest_rd_atomic: 4,
        path_mtu: 1024,
        regions: vec![
            Region {
                id: 0,
                va: 0x10_0000,
                rkey: 1,
                geometry: Geometry::KeyWrite(KeyWriteGeometry::new(256, 8, 8).unwrap()),
            },
            Region {
                id: 0,
                va: 0x20_0000,
                rkey: 1,
                geometry: Geometry::KeyIncrement(KeyIncrementGeometry::new(256, 8).unwrap()),
            },
        ],
        append_heads: Vec::new(),
    }
}

/// A Key-Write or Key-Increment report frame.
fn report(rng: &mut Rng, seq: u8) -> Vec<u8> {
    let key = rng.below(1 << 16) as u32;
    let body = if rng.chance(50) {
        Body::KeyWrite(KeyWriteRepr {
            redundancy: 1,
            key,
            data: &[1, 2, 3, 4],
        })
    } else {
        Body::KeyIncrement(KeyIncrementRepr {
            redundancy: 1,
            key,
            counter: 1 + rng.below(9),
        })
    };
    frame_of(&ReportRepr::new(body, HeaderForm::Seq, seq))
}

/// Report `r` in a frame from a reporter to the collector, in the default format.
fn frame_of(r: &ReportRepr) -> Vec<u8> {
    let fmt = ReportFormat::default();
    let mut payload = vec![0u8; r.buffer_len(&fmt)];
    r.emit(&mut payload, &fmt).unwrap();
    let from = UdpEndpoints::new(
        [2, 0, 0, 0, 0, 0x11],
        [2, 0, 0, 0, 0, 1],
        [10, 0, 0, 1],
        COLLECTOR_IP,
        5000,
        Config::default().report.udp_port,
    );
    let mut out = vec![0u8; HEADERS_LEN + payload.len()];
    from.emit_frame(&mut out, &payload).unwrap();
    out
}

/// A response from the collector (or, rarely, from elsewhere): mostly ACKs and ATOMIC
/// ACKNOWLEDGEs of PSNs in or near the window, some NAKs, RNR NAKs, CNPs, other QPs, and now and
/// then a changed byte in the RoCE part or the IPv4/UDP fields the UDP parse does not read, its
/// iCRC recomputed or not. The IPv4 ID varies, as a NIC's does.
fn response(rng: &mut Rng, c: u8, next_psn: u32) -> Vec<u8> {
    let mut src = COLLECTOR_IP;
    src[3] += if rng.chance(2) { 7 } else { c };
    let ep = UdpEndpoints::new(
        [2, 0, 0, 0, 0, 2],
        [2, 0, 0, 0, 0, 1],
        src,
        TRANSLATOR_IP,
        49152,
        ROCEV2_UDP_PORT,
    );
    let kind = match rng.below(100) {
        0..=79 => AckKind::Ack {
            credits: rng.below(32) as u8,
        },
        80..=89 => AckKind::Nak(NakCode::PsnSequenceError),
        90..=95 => AckKind::RnrNak {
            timer: rng.below(4) as u8,
        },
        96 => AckKind::Nak(NakCode::RemoteAccessError),
        97 => AckKind::Nak(NakCode::InvalidRequest),
        _ => AckKind::Nak(NakCode::RemoteOperationalError),
    };
    let aeth = AethRepr {
        kind,
        msn: rng.below(1 << 24) as u32,
    };
    let psn = if rng.chance(90) {
        // The window's recent PSNs, mostly its front's neighbourhood.
        next_psn.wrapping_sub(1 + rng.below(24) as u32) & QPN_MASK
    } else {
        rng.below(1 << 24) as u32
    };
    // Collector `c`'s local QPN is `qpn_base + c`.
    let qp = TRANSLATOR_QPN + u32::from(c) + u32::from(rng.chance(5));
    let f = match rng.below(100) {
        0..=44 => FrameRepr::acknowledge(ep, qp, psn, aeth),
        45..=97 => FrameRepr::atomic_acknowledge(ep, qp, psn, aeth, rng.next_u64()),
        _ => FrameRepr::cnp(ep, qp),
    };
    let mut out = vec![0u8; f.buffer_len()];
    f.emit(&mut out).unwrap();
    let id = rng.below(1 << 16) as u16;
    out[14 + 4..14 + 6].copy_from_slice(&id.to_be_bytes());
    let _ = icrc::fill(&mut out);
    if rng.chance(10) {
        // TOS, ID, TTL, checksum, UDP checksum (the UDP parse reads none), or the RoCE part.
        let at = match rng.below(3) {
            0 => [15, 18, 19, 22, 24, 25, 40, 41][rng.below(8) as usize],
            _ => HEADERS_LEN + rng.below((out.len() - HEADERS_LEN) as u64) as usize,
        };
        out[at] ^= 1 << rng.below(8);
        if rng.chance(50) {
            let _ = icrc::fill(&mut out);
        }
    }
    out
}

/// `handle_frame` of a RoCE response, its collector's part through `handle_roce_frame` alone.
fn general(e: &mut Engine, now: Instant, frame: &[u8]) -> Handled {
    e.counters.frames_in += 1;
    let Some(udp) = UdpView::parse(frame) else {
        return e.not_for_us();
    };
    assert_eq!(udp.dst_port, ROCEV2_UDP_PORT);
    let Some(i) = e.collectors.iter().position(|c| c.ip == udp.src_ip) else {
        return e.not_for_us();
    };
    let Some(full) = udp.frame(frame) else {
        return e.not_for_us();
    };
    e.handle_roce_frame(now, i, frame, &full);
    Handled::Consumed
}

fn same(a: &mut Engine, b: &mut Engine, now: Instant, step: usize) {
    assert_eq!(a.counters(), b.counters(), "step {step}");
    for i in 0..a.collectors.len() {
        assert_eq!(a.qp_stats(i), b.qp_stats(i), "step {step}");
    }
    assert_eq!(a.poll_timeout(), b.poll_timeout(), "step {step}");
    assert_eq!(a.is_idle(), b.is_idle(), "step {step}");
    loop {
        let (ea, eb) = (a.poll_event(), b.poll_event());
        assert_eq!(ea, eb, "step {step}");
        match ea {
            Some(Event::QpError { collector, .. }) => {
                let psn = a.qp_stats(collector).map_or(0, |s| s.next_psn);
                let w = welcome(collector as u8);
                a.reestablish(collector, &w, psn, now).unwrap();
                b.reestablish(collector, &w, psn, now).unwrap();
            }
            None => break,
        }
    }
    same_frames(a, b, now, step);
}

/// Takes every frame both engines send now, in turn, and requires them equal: how many.
fn same_frames(a: &mut Engine, b: &mut Engine, now: Instant, step: usize) -> usize {
    let (mut fa, mut fb) = (Vec::new(), Vec::new());
    let mut n = 0;
    loop {
        let (sa, sb) = (a.poll_transmit(now, &mut fa), b.poll_transmit(now, &mut fb));
        assert_eq!(sa, sb, "step {step}");
        if !sa {
            return n;
        }
        assert_eq!(fa, fb, "step {step}");
        n += 1;
    }
}

#[test]
fn direct_ack_dispatch_equals_the_general_path() {
    for seed in 1..=8u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut cfg = Config::default();
        cfg.requester.retransmit_timeout_us = 50;
        cfg.requester.ack_every = 1 + rng.below(4) as u32;
        // One collector, or two (the second found past the first).
        let collectors: Vec<Welcome> = (0..1 + (seed % 2) as u8).map(welcome).collect();
        let mut a = Engine::new(cfg.clone(), &collectors, Instant(0)).unwrap();
        let mut b = Engine::new(cfg, &collectors, Instant(0)).unwrap();
        let mut now = Instant(0);
        let mut seq = 0u8;
        for step in 0..3000 {
            match rng.below(10) {
                0..=2 => {
                    for _ in 0..=rng.below(4) {
                        let f = report(&mut rng, seq);
                        seq = seq.wrapping_add(1);
                        assert_eq!(a.handle_frame(now, &f), b.handle_frame(now, &f));
                    }
                }
                3 => {
                    now = Instant(now.0 + rng.below(80_000));
                    a.handle_timeout(now);
                    b.handle_timeout(now);
                }
                _ => {
                    let c = rng.below(collectors.len() as u64) as u8;
                    let next = a.qp_stats(usize::from(c)).map_or(0, |s| s.next_psn);
                    let f = response(&mut rng, c, next);
                    now = Instant(now.0 + rng.below(2_000));
                    assert_eq!(
                        a.handle_frame(now, &f),
                        general(&mut b, now, &f),
                        "step {step}"
                    );
                }
            }
            same(&mut a, &mut b, now, step);
        }
        let c = a.counters();
        assert!(c.acks > 0 && c.atomic_acks > 0, "{c:?}");
        assert!(c.stale_responses > 0 && c.bad_icrc_responses > 0, "{c:?}");
    }
}

/// `dispatch`'s Key-Write arm, the general path (`handle_report` takes Key-Write reports through their
/// own parse before `dispatch`), writes what `handle_frame` writes for the same reports: the same RDMA
/// WRITE frames, byte for byte, and no drop on either side.
#[test]
fn key_write_through_dispatch_writes_what_handle_frame_writes() {
    let mut rng = Rng(0x5EED_0001);
    let cfg = Config::default();
    let mut a = Engine::new(cfg.clone(), &[welcome(0)], Instant(0)).unwrap();
    let mut b = Engine::new(cfg, &[welcome(0)], Instant(0)).unwrap();
    let mut writes = 0;
    for step in 0..64u8 {
        let now = Instant(u64::from(step) * 1_000);
        let key = rng.below(1 << 16) as u32;
        let data = [step, 2, 3, 4];
        let r = ReportRepr::new(
            Body::KeyWrite(KeyWriteRepr {
                redundancy: 1 + (step % 2),
                key,
                data: &data,
            }),
            HeaderForm::Seq,
            step,
        );
        let frame = frame_of(&r);

        assert!(matches!(a.handle_frame(now, &frame), Handled::Consumed));
        let parsed = ReportRepr::parse(&frame[HEADERS_LEN..], &b.fmt).unwrap();
        assert_eq!(b.dispatch(now, &parsed, &frame, COLLECTOR_IP), Ok(()));
        writes += same_frames(&mut a, &mut b, now, usize::from(step));
    }
    // N = 1 and N = 2 in turn: 32 + 64 WRITEs.
    assert_eq!(writes, 96);
    assert_eq!(a.counters().drops, [0; DropReason::ALL.len()]);
    assert_eq!(b.counters().drops, [0; DropReason::ALL.len()]);
}
