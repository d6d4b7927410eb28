//! The software responder takes what reaches rxe through Linux and a NIC, nothing more (issue 26, item
//! 10): a frame to a foreign MAC, with a bad IPv4 header checksum, a wrong non-zero UDP checksum or a UDP
//! length other than IPv4's is a counted drop, never ACKed or written; a VLAN-tagged frame is taken as a
//! NIC on that VLAN takes it (the `vlan` setting), and answered with its tag. Each case is one exact frame,
//! fed through both the fast and the general path.

use dta_collector::memory::Arena;
use dta_collector::responder::{DropReason, Outcome, Responder, ResponderConfig, RESPONSE_MAX};
use dta_protocol::layout::{Geometry, KeyWriteGeometry};
use dta_protocol::roce::{icrc, AckKind, AethRepr, FrameRepr};
use dta_protocol::udp::UdpEndpoints;

const QPN: u32 = 0x100;
const PEER: u32 = 0x11;
const OUR_MAC: [u8; 6] = [2, 0, 0, 0, 0, 2];
const PEER_MAC: [u8; 6] = [2, 0, 0, 0, 0, 1];
const OUR_IP: [u8; 4] = [198, 18, 0, 2];
const PEER_IP: [u8; 4] = [198, 18, 0, 1];
const DATA: [u8; 8] = [0x5a, 1, 2, 3, 4, 5, 6, 7];

/// Offsets in an untagged frame: the IPv4 checksum, the UDP length and checksum.
const IP_CSUM: usize = 24;
const UDP_LEN: usize = 38;
const UDP_CSUM: usize = 40;

struct Rig {
    arena: Arena,
    resp: Responder,
}

impl Rig {
    fn new(config: ResponderConfig) -> Self {
        let arena = Arena::new_normal(&[(
            0,
            Geometry::KeyWrite(KeyWriteGeometry::new(256, 8, 4).unwrap()),
        )])
        .unwrap();
        let mut resp = Responder::new(config, arena.slots().to_vec());
        resp.open_qp(QPN, PEER_IP, PEER, 0);
        Rig { arena, resp }
    }

    fn target(&self) -> (u64, u32) {
        let r = self.arena.slots()[0].region;
        (r.va + 64, r.rkey)
    }

    fn written(&self) -> Vec<u8> {
        let s = &self.arena.slots()[0];
        self.arena.read().as_slice()[s.offset + 64..s.offset + 72].to_vec()
    }

    fn feed(&mut self, frame: &[u8], general: bool) -> (Outcome, Vec<u8>) {
        let mut out = [0u8; RESPONSE_MAX];
        let mut mem = self.arena.write();
        let o = match general {
            false => self.resp.handle(frame, mem.as_mut_slice(), &mut out),
            true => self
                .resp
                .handle_general(frame, mem.as_mut_slice(), &mut out),
        };
        let bytes = match o {
            Outcome::Respond(n) => out[..n].to_vec(),
            _ => Vec::new(),
        };
        (o, bytes)
    }
}

/// A WRITE ONLY of [`DATA`] at PSN 0 with AckReq, from the peer to us, as the translator sends it.
fn write(rig: &Rig) -> Vec<u8> {
    let (va, rkey) = rig.target();
    let ep = UdpEndpoints::new(PEER_MAC, OUR_MAC, PEER_IP, OUR_IP, 49152, 4791);
    let f = FrameRepr::write_only(ep, QPN, 0, true, va, rkey, &DATA);
    let mut buf = vec![0u8; f.buffer_len()];
    f.emit(&mut buf).unwrap();
    buf
}

/// The ACK of PSN 0 (MSN 1) back to the peer.
fn ack() -> Vec<u8> {
    let ep = UdpEndpoints::new(OUR_MAC, PEER_MAC, OUR_IP, PEER_IP, 49152, 4791);
    let kind = AckKind::Ack { credits: 31 };
    let f = FrameRepr::acknowledge(ep, PEER, 0, AethRepr { kind, msn: 1 });
    let mut buf = vec![0u8; f.buffer_len()];
    f.emit(&mut buf).unwrap();
    buf
}

/// `frame` with an 802.1Q tag (TCI `tci`) after its MACs.
fn tag(frame: &[u8], tci: u16) -> Vec<u8> {
    let mut f = frame[..12].to_vec();
    f.extend_from_slice(&[0x81, 0x00]);
    f.extend_from_slice(&tci.to_be_bytes());
    f.extend_from_slice(&frame[12..]);
    f
}

/// The UDP checksum etherparse computes for the datagram of an untagged `frame`.
fn udp_checksum(frame: &[u8]) -> u16 {
    let udp = etherparse::UdpHeader::from_slice(&frame[34..42]).unwrap().0;
    udp.calc_checksum_ipv4_raw(PEER_IP, OUR_IP, &frame[42..])
        .unwrap()
}

fn config() -> ResponderConfig {
    ResponderConfig {
        local_ip: Some(OUR_IP),
        local_mac: Some(OUR_MAC),
        ..ResponderConfig::default()
    }
}

/// Feeds `frame` to a fresh responder with `config`, through the fast and the general path; each must
/// drop it for `reason`, count it once, and neither answer nor write.
fn assert_dropped(
    name: &str,
    config: ResponderConfig,
    mutate: impl Fn(&Rig) -> Vec<u8>,
) -> DropReason {
    let mut reasons = Vec::new();
    for general in [false, true] {
        let mut rig = Rig::new(config);
        let f = mutate(&rig);
        let (o, bytes) = rig.feed(&f, general);
        let Outcome::Dropped(reason) = o else {
            panic!("{name} (general path: {general}): {o:?}, answered {bytes:02x?}");
        };
        let s = rig.resp.stats();
        assert_eq!(s.drops_for(reason), 1, "{name}: counted once");
        assert_eq!(s.drops.iter().sum::<u64>(), 1, "{name}: one drop in all");
        assert_eq!((s.acks, s.writes), (0, 0), "{name}: no ACK, no write");
        assert_eq!(rig.written(), [0; 8], "{name}: memory untouched");
        reasons.push(reason);
    }
    assert_eq!(reasons[0], reasons[1], "{name}: both paths agree");
    reasons[0]
}

/// Feeds `frame` through both paths; each must write [`DATA`] and answer `expected` exactly.
fn assert_taken(
    name: &str,
    config: ResponderConfig,
    expected: &[u8],
    make: impl Fn(&Rig) -> Vec<u8>,
) {
    for general in [false, true] {
        let mut rig = Rig::new(config);
        let f = make(&rig);
        let (o, bytes) = rig.feed(&f, general);
        assert_eq!(
            o,
            Outcome::Respond(expected.len()),
            "{name} (general path: {general})"
        );
        assert_eq!(bytes, expected, "{name}: the response");
        assert_eq!(rig.written(), DATA, "{name}: written");
        let s = rig.resp.stats();
        assert_eq!((s.acks, s.writes), (1, 1), "{name}");
        assert_eq!(s.drops.iter().sum::<u64>(), 0, "{name}: nothing dropped");
    }
}

/// A case: its name, the drop it must earn, and how it changes a good frame.
type Case = (&'static str, DropReason, fn(&mut Vec<u8>));

#[test]
fn what_linux_drops_before_rxe_is_a_counted_drop_never_acked_or_written() {
    // The unmodified write, its correct non-zero UDP checksum (etherparse's), and broadcast are taken.
    assert_taken("as sent", config(), &ack(), write);
    assert_taken("a correct UDP checksum", config(), &ack(), |r| {
        let mut f = write(r);
        let c = udp_checksum(&f);
        assert_ne!(c, 0);
        f[UDP_CSUM..UDP_CSUM + 2].copy_from_slice(&c.to_be_bytes());
        f
    });
    let mut to_broadcast = ack();
    to_broadcast[6..12].copy_from_slice(&[0xff; 6]);
    assert_taken("to broadcast", config(), &to_broadcast, |r| {
        let mut f = write(r);
        f[..6].copy_from_slice(&[0xff; 6]);
        f
    });
    // A responder without a MAC of its own (tests, the fuzzer) takes any.
    let mut from_foreign = ack();
    from_foreign[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 0x99]);
    let any_mac = ResponderConfig {
        local_mac: None,
        ..config()
    };
    assert_taken("any MAC when none is set", any_mac, &from_foreign, |r| {
        let mut f = write(r);
        f[5] = 0x99;
        f
    });

    let cases: [Case; 8] = [
        ("a foreign unicast MAC", DropReason::ForeignMac, |f| {
            f[5] = 0x99
        }),
        ("a multicast MAC", DropReason::ForeignMac, |f| {
            f[..6].copy_from_slice(&[0x01, 0, 0x5e, 0, 0, 1])
        }),
        (
            "a bad IPv4 header checksum",
            DropReason::Ipv4Checksum,
            |f| f[IP_CSUM + 1] ^= 0x01,
        ),
        (
            "a wrong non-zero UDP checksum",
            DropReason::UdpChecksum,
            |f| f[UDP_CSUM..UDP_CSUM + 2].copy_from_slice(&[0x12, 0x34]),
        ),
        (
            "UDP checksum 0xFFFF where 0x0000 is not right",
            DropReason::UdpChecksum,
            |f| f[UDP_CSUM..UDP_CSUM + 2].copy_from_slice(&[0xff, 0xff]),
        ),
        // The iCRC covers the UDP length: refilled, so that the length is the only fault.
        ("UDP length 0", DropReason::UdpLength, |f| {
            f[UDP_LEN..UDP_LEN + 2].copy_from_slice(&[0, 0]);
            icrc::fill(f).unwrap();
        }),
        ("UDP length 4 short of IPv4's", DropReason::UdpLength, |f| {
            let n = u16::from_be_bytes([f[UDP_LEN], f[UDP_LEN + 1]]) - 4;
            f[UDP_LEN..UDP_LEN + 2].copy_from_slice(&n.to_be_bytes());
            icrc::fill(f).unwrap();
        }),
        ("UDP length 4 beyond IPv4's", DropReason::UdpLength, |f| {
            let n = u16::from_be_bytes([f[UDP_LEN], f[UDP_LEN + 1]]) + 4;
            f[UDP_LEN..UDP_LEN + 2].copy_from_slice(&n.to_be_bytes());
            icrc::fill(f).unwrap();
        }),
    ];
    for (name, want, mutate) in cases {
        let got = assert_dropped(name, config(), |r| {
            let mut f = write(r);
            mutate(&mut f);
            f
        });
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn tagged_roce_is_taken_as_a_nic_on_that_vlan_takes_it() {
    // Untagged responder: a VID 100 frame is another interface's; a priority tag (VID 0, PCP 3) is ours,
    // answered with the tag.
    let got = assert_dropped("VID 100 to an untagged responder", config(), |r| {
        tag(&write(r), 0x0064)
    });
    assert_eq!(got, DropReason::Vlan);
    assert_taken(
        "a VID 0 priority tag",
        config(),
        &tag(&ack(), 0x6000),
        |r| tag(&write(r), 0x6000),
    );

    // A responder on VLAN 100: only VID 100 (any priority), answered tagged alike.
    let on_100 = ResponderConfig {
        vlan: Some(100),
        ..config()
    };
    for (name, make) in [
        ("untagged to VLAN 100", write as fn(&Rig) -> Vec<u8>),
        ("VID 200 to VLAN 100", |r: &Rig| tag(&write(r), 0x00c8)),
        ("a priority tag to VLAN 100", |r: &Rig| {
            tag(&write(r), 0x6000)
        }),
    ] {
        assert_eq!(
            assert_dropped(name, on_100, make),
            DropReason::Vlan,
            "{name}"
        );
    }
    assert_taken("VID 100, PCP 5", on_100, &tag(&ack(), 0xa064), |r| {
        tag(&write(r), 0xa064)
    });
    // The checks of the untagged frame apply inside the tag.
    let got = assert_dropped("VID 100 with a bad IPv4 checksum", on_100, |r| {
        let mut f = write(r);
        f[IP_CSUM] ^= 0x40;
        tag(&f, 0x0064)
    });
    assert_eq!(got, DropReason::Ipv4Checksum);
}
