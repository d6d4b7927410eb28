//! Helpers shared by the responder tests that feed frames from several requesters.

#![allow(dead_code)]

use dta_collector::memory::Arena;
use dta_collector::responder::{Outcome, Responder, RESPONSE_MAX};
use dta_protocol::control::{Hello, RequesterQp, CONTROL_VERSION};
use dta_protocol::layout::{Geometry, KeyWriteGeometry};
use dta_protocol::roce::{AckKind, Extension, FrameRepr};
use dta_protocol::udp::UdpEndpoints;

pub const TRANSLATOR_A: [u8; 4] = [198, 18, 0, 1];
pub const TRANSLATOR_B: [u8; 4] = [198, 18, 0, 3];
pub const COLLECTOR: [u8; 4] = [198, 18, 0, 2];
/// Every translator's default `qpn_base`.
pub const TRANSLATOR_QPN: u32 = 0x100;

pub fn arena() -> Arena {
    Arena::new_normal(&[(
        0,
        Geometry::KeyWrite(KeyWriteGeometry::new(256, 8, 4).unwrap()),
    )])
    .unwrap()
}

pub fn endpoints(src_ip: [u8; 4], src_port: u16) -> UdpEndpoints {
    UdpEndpoints::new(
        [2, 0, 0, 0, 0, src_ip[3]],
        [2, 0, 0, 0, 0, 2],
        src_ip,
        COLLECTOR,
        src_port,
        4791,
    )
}

pub fn write(ep: UdpEndpoints, qpn: u32, psn: u32, va: u64, rkey: u32, data: &[u8]) -> Vec<u8> {
    let f = FrameRepr::write_only(ep, qpn, psn, true, va, rkey, data);
    let mut buf = vec![0u8; f.buffer_len()];
    f.emit(&mut buf).unwrap();
    buf
}

pub fn feed(
    resp: &mut Responder,
    arena: &Arena,
    frame: &[u8],
) -> (Outcome, Option<FrameRepr<'static>>) {
    let mut out = [0u8; RESPONSE_MAX];
    let o = resp.handle(frame, arena.write().as_mut_slice(), &mut out);
    let parsed = match o {
        Outcome::Respond(n) => {
            let bytes: &'static [u8] = Box::leak(out[..n].to_vec().into_boxed_slice());
            Some(FrameRepr::parse(bytes).unwrap())
        }
        _ => None,
    };
    (o, parsed)
}

pub fn mem(arena: &Arena, at: usize, len: usize) -> Vec<u8> {
    let off = arena.slots()[0].offset + at;
    arena.read().as_slice()[off..off + len].to_vec()
}

/// The ACK of `psn` to `dest`, or a panic saying what came instead.
pub fn assert_acked(got: &(Outcome, Option<FrameRepr<'static>>), psn: u32, dest_ip: [u8; 4]) {
    let f = got
        .1
        .as_ref()
        .unwrap_or_else(|| panic!("no response: {:?}", got.0));
    assert_eq!(f.bth.psn, psn);
    assert_eq!(
        f.endpoints.dst_ip, dest_ip,
        "the ACK goes back to the requester"
    );
    match f.ext {
        Extension::Aeth(a) => assert!(matches!(a.kind, AckKind::Ack { .. }), "{a:?}"),
        ref other => panic!("{other:?}"),
    }
}

pub fn hello(ip: [u8; 4], start_psn: u32) -> Hello {
    let mut gid = [0u8; 16];
    gid[10..12].copy_from_slice(&[0xff, 0xff]);
    gid[12..].copy_from_slice(&ip);
    Hello {
        version: CONTROL_VERSION,
        token: "t".into(),
        mac: [2, 0, 0, 0, 0, ip[3]],
        ip,
        gid,
        qps: vec![RequesterQp {
            qpn: TRANSLATOR_QPN,
            start_psn,
        }],
    }
}
