//! INT reports in, collector memory out (issue 17): reports built field by field from the specifications'
//! layouts (fabric-tna's `header.p4` for v0.5, `telemetry_report.mdk` for v2.0, `INT.mdk` for the INT-MD
//! stack) by an encoder in this file, inner packets built with etherparse, the translator's frames applied
//! to a memory model, and the memory read back with the collector's own queries.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};

use dta_collector::query::{key_increment, key_write, KeyWriteAnswer, PathAnswer, PostcardDecoder};
use dta_protocol::control::{ResponderQp, Welcome, CONTROL_VERSION};
use dta_protocol::int::inner::FlowKey;
use dta_protocol::int::mapping::{drop_counter_key, flow_hop_key, flow_key, HopRecord};
use dta_protocol::layout::{
    AppendGeometry, Geometry, KeyIncrementGeometry, KeyWriteGeometry, PostcardGeometry, Region,
};
use dta_protocol::roce::{Extension, FrameRepr};
use dta_translator::int::IntDrop;
use dta_translator::{Config, Engine, Instant};
use etherparse::PacketBuilder;

const COLLECTOR_MAC: [u8; 6] = [2, 0, 0, 0, 0, 2];
const COLLECTOR_IP: [u8; 4] = [198, 18, 0, 2];
const KW_VA: u64 = 0x10_0000;
const KI_VA: u64 = 0x20_0000;
const PC_VA: u64 = 0x30_0000;
const DROPS_VA: u64 = 0x40_0000;
const QUEUES_VA: u64 = 0x50_0000;
const DROP_LIST: u32 = 7;
const QUEUE_LIST: u32 = 8;
const INT_UDP: u16 = 5000;

fn kw() -> KeyWriteGeometry {
    KeyWriteGeometry::new(1024, 16, 4).unwrap()
}
fn ki() -> KeyIncrementGeometry {
    KeyIncrementGeometry::new(1024, 4).unwrap()
}
fn pc() -> PostcardGeometry {
    PostcardGeometry::new(256, 5, 2).unwrap()
}
fn list() -> AppendGeometry {
    AppendGeometry::new(64, 16, 16).unwrap()
}

fn regions() -> Vec<Region> {
    let r = |id, va, geometry| Region {
        id,
        va,
        rkey: 0x77,
        geometry,
    };
    vec![
        r(0, KW_VA, Geometry::KeyWrite(kw())),
        r(0, KI_VA, Geometry::KeyIncrement(ki())),
        r(0, PC_VA, Geometry::Postcarding(pc())),
        r(DROP_LIST, DROPS_VA, Geometry::Append(list())),
        r(QUEUE_LIST, QUEUES_VA, Geometry::Append(list())),
    ]
}

fn engine() -> Engine {
    let mut c = Config::default();
    c.report.keywrite_data_len = 12;
    c.postcard.redundancy = 2;
    c.int.enabled = true;
    c.int.md_udp_port = Some(INT_UDP);
    c.int.drop_list = Some(DROP_LIST);
    c.int.queue_list = Some(QUEUE_LIST);
    let w = Welcome {
        version: CONTROL_VERSION,
        mac: COLLECTOR_MAC,
        ip: COLLECTOR_IP,
        qps: vec![ResponderQp {
            qpn: 0x11,
            peer_qpn: 0x100,
        }],
        max_dest_rd_atomic: 16,
        path_mtu: 1024,
        regions: regions(),
    };
    Engine::new(c, &[w], Instant(0)).unwrap()
}

/// The collector's memory, written by the translator's frames.
struct Memory(BTreeMap<u64, Vec<u8>>);

impl Memory {
    fn new() -> Self {
        Memory(
            regions()
                .iter()
                .map(|r| (r.va, vec![0u8; r.len() as usize]))
                .collect(),
        )
    }

    fn at(&mut self, va: u64, len: usize) -> &mut [u8] {
        let (&base, m) = self
            .0
            .range_mut(..=va)
            .next_back()
            .expect("below every region");
        let at = (va - base) as usize;
        assert!(at + len <= m.len(), "write outside the region at {base:#x}");
        &mut m[at..at + len]
    }

    /// Sends everything the engine has (flushing caches first) and applies it.
    fn sync(&mut self, e: &mut Engine, now: Instant) {
        e.flush(now);
        self.send(e, now);
    }

    /// Sends and applies what the engine has, without flushing its caches.
    fn send(&mut self, e: &mut Engine, now: Instant) {
        let mut out = Vec::new();
        while e.poll_transmit(now, &mut out) {
            let f = FrameRepr::parse(&out).expect("a valid RoCE frame");
            match f.ext {
                Extension::Reth(r) => self.at(r.va, f.payload.len()).copy_from_slice(f.payload),
                Extension::Atomic(a) => {
                    let cell = self.at(a.va, 8);
                    let old = u64::from_ne_bytes(cell.try_into().unwrap());
                    cell.copy_from_slice(&(old + a.swap_add).to_ne_bytes());
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        e.assume_delivered();
    }

    fn region(&self, va: u64) -> &[u8] {
        &self.0[&va]
    }

    fn path(&self, flow: u32, universe: &[u32]) -> PathAnswer {
        PostcardDecoder::new(universe)
            .query(self.region(PC_VA), &pc(), flow, 2)
            .unwrap()
    }

    fn hop(&self, flow: u32, hop: u8) -> Option<HopRecord> {
        match key_write(self.region(KW_VA), &kw(), flow_hop_key(flow, hop), 2, 2).unwrap() {
            KeyWriteAnswer::Found { data, .. } => HopRecord::decode(&hex::decode(data).unwrap()),
            _ => None,
        }
    }

    fn drops(&self, node: u32, reason: u8) -> u64 {
        key_increment(self.region(KI_VA), &ki(), drop_counter_key(node, reason), 2)
            .unwrap()
            .estimate
    }

    /// The entries of an Append list, as the head word counts them.
    fn entries(&self, va: u64) -> Vec<Vec<u8>> {
        let m = self.region(va);
        let head = u64::from_le_bytes(m[..8].try_into().unwrap());
        (0..head)
            .map(|i| {
                let at = 64 + 16 * i as usize;
                m[at..at + 16].to_vec()
            })
            .collect()
    }
}

/// Packs `(value, bits)` fields, most significant bit first, as the specifications draw them.
fn pack(fields: &[(u64, u32)]) -> Vec<u8> {
    let (mut out, mut acc, mut n) = (Vec::new(), 0u128, 0u32);
    for &(v, w) in fields {
        assert!(w == 64 || v < 1 << w, "{v:#x} does not fit {w} bits");
        acc = (acc << w) | u128::from(v);
        n += w;
        while n >= 8 {
            n -= 8;
            out.push((acc >> n) as u8);
            acc &= (1 << n) - 1;
        }
    }
    assert_eq!(n, 0);
    out
}

/// The UDP payload of a report to the collector, in an Ethernet/IPv4/UDP frame.
fn frame(payload: &[u8], dst_port: u16) -> Vec<u8> {
    let mut out = Vec::new();
    PacketBuilder::ethernet2([2, 0, 0, 0, 0, 0x33], COLLECTOR_MAC)
        .ipv4([10, 9, 9, 9], COLLECTOR_IP, 64)
        .udp(40000, dst_port)
        .write(&mut out, payload)
        .unwrap();
    out
}

const SRC: [u8; 4] = [10, 0, 0, 1];
const DST: [u8; 4] = [10, 0, 1, 2];

fn flow(sport: u16) -> u32 {
    flow_key(&FlowKey {
        src: IpAddr::V4(Ipv4Addr::from(SRC)),
        dst: IpAddr::V4(Ipv4Addr::from(DST)),
        protocol: 17,
        src_port: sport,
        dst_port: 80,
    })
}

/// The flow's packet as a switch mirrors it: Ethernet/IPv4/UDP with TTL `ttl`.
fn inner(sport: u16, ttl: u8) -> Vec<u8> {
    let mut out = Vec::new();
    PacketBuilder::ethernet2([2, 0, 0, 0, 0, 0xA], [2, 0, 0, 0, 0, 0xB])
        .ipv4(SRC, DST, ttl)
        .udp(sport, 80)
        .write(&mut out, &[0xEE; 8])
        .unwrap();
    out
}

/// fabric-tna's v0.5 switch-local report (header.p4: report_fixed_header_t, common_report_header_t,
/// local_report_header_t), next protocol 2.
#[allow(clippy::too_many_arguments)]
fn v05_local(
    switch: u32,
    seq: u32,
    congested: bool,
    ig_ts: u32,
    eg_ts: u32,
    queue: (u8, u32),
    eg_port: u16,
    inner: &[u8],
) -> Vec<u8> {
    let mut p = pack(&[
        (0, 4),                    // ver
        (2, 4),                    // nproto: switch-local
        (0, 1),                    // d
        (u64::from(congested), 1), // q
        (1, 1),                    // f
        (0, 15),                   // rsvd
        (1, 6),                    // hw_id
        (u64::from(seq), 32),
        (u64::from(ig_ts), 32),
        (u64::from(switch), 32), // common: switch_id
        (0, 7),
        (3, 9), // ig_port
        (0, 7),
        (u64::from(eg_port), 9),
        (0, 3),
        (u64::from(queue.0), 5),
        (0, 5), // local: pad, queue occupancy (19), egress timestamp
        (u64::from(queue.1), 19),
        (u64::from(eg_ts), 32),
    ]);
    p.extend_from_slice(inner);
    p
}

/// fabric-tna's v0.5 drop report (next protocol 1): fixed, common, drop_report_header_t.
fn v05_drop(switch: u32, seq: u32, reason: u8, queue: u8, eg_port: u16, inner: &[u8]) -> Vec<u8> {
    let mut p = pack(&[
        (0, 4),
        (1, 4), // nproto: drop
        (1, 1), // d
        (0, 1),
        (0, 1),
        (0, 15),
        (2, 6), // hw_id
        (u64::from(seq), 32),
        (0xABCD, 32), // ingress timestamp
        (u64::from(switch), 32),
        (0, 7),
        (4, 9),
        (0, 7),
        (u64::from(eg_port), 9),
        (0, 3),
        (u64::from(queue), 5),
        (u64::from(reason), 8),
        (0, 16),
    ]);
    p.extend_from_slice(inner);
    p
}

#[test]
fn fabric_tna_local_reports_give_path_hop_state_and_queue_events() {
    let mut e = engine();
    let mut mem = Memory::new();
    // Five switches on the path; each decrements the TTL before it mirrors (64 -> 63 at hop 1).
    for (i, switch) in (101u32..=105).enumerate() {
        let hop = i as u32 + 1;
        let r = v05_local(
            switch,
            10 + hop,
            switch == 103,
            1_000 * hop,
            1_000 * hop + 100 * hop,
            (2, 50 * hop),
            16 + switch as u16 % 8,
            &inner(7777, 64 - hop as u8),
        );
        assert_eq!(
            e.handle_frame(Instant(0), &frame(&r, 32766)),
            dta_translator::Handled::Consumed
        );
    }
    mem.sync(&mut e, Instant(1));
    let c = &e.counters().int;
    assert_eq!((c.packets, c.reports, c.lost), (5, 5, 0));
    assert_eq!(c.drops, [0; IntDrop::ALL.len()]);
    let universe: Vec<u32> = (1..=200).collect();
    assert_eq!(
        mem.path(flow(7777), &universe),
        PathAnswer::Found {
            path: vec![101, 102, 103, 104, 105],
            chunks: 2
        }
    );
    for hop in 1..=5u32 {
        assert_eq!(
            mem.hop(flow(7777), hop as u8),
            Some(HopRecord {
                node: 100 + hop,
                hop_latency: 100 * hop,
                queue_id: 2,
                queue_occupancy: 50 * hop,
            }),
            "hop {hop}"
        );
    }
    // Switch 103 flagged a congested queue: one queue event (node, port, queue, occupancy, timestamp).
    let q = mem.entries(QUEUES_VA);
    assert_eq!(q.len(), 1);
    let mut want = 103u32.to_le_bytes().to_vec();
    want.extend_from_slice(&(16u16 + 103 % 8).to_le_bytes());
    want.extend_from_slice(&[2, 0]);
    want.extend_from_slice(&150u32.to_le_bytes());
    want.extend_from_slice(&3_300u32.to_le_bytes());
    assert_eq!(q[0], want);
    assert!(mem.entries(DROPS_VA).is_empty());
}

#[test]
fn fabric_tna_drop_reports_count_per_node_and_reason() {
    let mut e = engine();
    let mut mem = Memory::new();
    let reports = [(7u32, 71u8, 1u32), (7, 71, 2), (7, 72, 3), (8, 71, 1)];
    for &(switch, reason, seq) in &reports {
        let r = v05_drop(switch, seq, reason, 3, 130, &inner(4242, 60));
        e.handle_frame(Instant(0), &frame(&r, 32766));
    }
    mem.sync(&mut e, Instant(1));
    assert_eq!(mem.drops(7, 71), 2);
    assert_eq!(mem.drops(7, 72), 1);
    assert_eq!(mem.drops(8, 71), 1);
    assert_eq!(mem.drops(8, 72), 0);
    let d = mem.entries(DROPS_VA);
    assert_eq!(d.len(), 4);
    // flow, node, port, reason, queue, timestamp (the ingress timestamp: a drop report has no egress one).
    let mut want = flow(4242).to_le_bytes().to_vec();
    want.extend_from_slice(&7u32.to_le_bytes());
    want.extend_from_slice(&130u16.to_le_bytes());
    want.extend_from_slice(&[72, 3]);
    want.extend_from_slice(&0xABCDu32.to_le_bytes());
    assert_eq!(d[2], want);
    // Node 7 reported on hw_id 2 with seqs 1, 2, 3, node 8 with seq 1: nothing lost. No path written.
    assert_eq!(e.counters().int.lost, 0);
    assert_eq!(
        mem.path(flow(4242), &(1..=200).collect::<Vec<_>>()),
        PathAnswer::Empty
    );
}

/// An INT 2.1 stack over UDP (shim NPT 1: the original destination port in the shim), hops newest first,
/// each with node id, hop latency and queue (instruction bits 0, 2, 3).
fn int_md_packet(sport: u16, hops: &[(u32, u32, u32)]) -> Vec<u8> {
    let per_hop = 3;
    let mut md = pack(&[
        (1, 4), // shim type: INT-MD
        (1, 2), // NPT 1: UDP payload, original port in the shim
        (0, 2),
        (3 + (per_hop * hops.len()) as u64, 8), // words after the shim
        (80, 16),                               // original UDP destination port
        (2, 4),                                 // INT-MD header: version 2
        (0, 3),
        (0, 12),
        (per_hop as u64, 5), // HopML
        (8u64.saturating_sub(hops.len() as u64), 8),
        (0b1011 << 12, 16), // node id, hop latency, queue
        (0, 16),
        (0, 16),
        (0, 16),
    ]);
    for &(node, latency, occupancy) in hops.iter().rev() {
        md.extend(pack(&[
            (u64::from(node), 32),
            (u64::from(latency), 32),
            (1, 8),
            (u64::from(occupancy), 24),
        ]));
    }
    let mut out = Vec::new();
    PacketBuilder::ethernet2([2, 0, 0, 0, 0, 0xA], [2, 0, 0, 0, 0, 0xB])
        .ipv4(SRC, DST, 60)
        .udp(sport, INT_UDP)
        .write(&mut out, &md)
        .unwrap();
    out
}

/// A Telemetry Report v2.0 packet: group header, then individual INT reports of (node's metadata bits
/// and bytes, flags D/Q, inner Ethernet frame).
/// One individual report: RepMdBits, the metadata they select, the D and Q flags, the inner frame.
type Individual = (u16, Vec<u8>, bool, bool, Vec<u8>);

fn v2_group(node: u32, seq: u32, reports: &[Individual]) -> Vec<u8> {
    let mut p = pack(&[(2, 4), (5, 6), (u64::from(seq), 22), (u64::from(node), 32)]);
    for (bits, md, d, q, inner) in reports {
        let mut inner = inner.clone();
        inner.resize(inner.len().div_ceil(4) * 4, 0);
        let words = (8 + md.len() + inner.len()) / 4;
        p.extend(pack(&[
            (1, 4), // RepType: INT
            (3, 4), // InType: Ethernet
            (words as u64, 8),
            ((md.len() / 4) as u64, 8),
            (u64::from(*d), 1),
            (u64::from(*q), 1),
            (1, 1),
            (0, 1),
            (0, 4),
            (u64::from(*bits), 16), // RepMdBits
            (0, 16),
            (0, 16),
            (0, 16),
        ]));
        p.extend_from_slice(md);
        p.extend_from_slice(&inner);
    }
    p
}

#[test]
fn v2_sink_report_writes_the_whole_path_at_once() {
    let mut e = engine();
    let mut mem = Memory::new();
    // Hops 11, 12, 13 pushed their metadata; the sink, node 14, reports its own hop latency and queue
    // (RepMdBits 2 and 3) in the main contents.
    let stack = int_md_packet(9000, &[(11, 110, 1), (12, 120, 2), (13, 130, 3)]);
    let md = pack(&[(140, 32), (1, 8), (4, 24)]);
    let r = v2_group(14, 1, &[(0b0011 << 12, md, false, false, stack)]);
    e.handle_frame(Instant(0), &frame(&r, 32766));
    // No flush: the path length is known, so the chunk goes out at once.
    mem.send(&mut e, Instant(0));
    assert_eq!(e.counters().int.whole_paths, 1);
    let f = flow(9000);
    assert_eq!(
        mem.path(f, &(1..=200).collect::<Vec<_>>()),
        PathAnswer::Found {
            path: vec![11, 12, 13, 14],
            chunks: 2
        }
    );
    for (hop, node, lat, occ) in [
        (1u8, 11u32, 110, 1),
        (2, 12, 120, 2),
        (3, 13, 130, 3),
        (4, 14, 140, 4),
    ] {
        assert_eq!(
            mem.hop(f, hop),
            Some(HopRecord {
                node,
                hop_latency: lat,
                queue_id: 1,
                queue_occupancy: occ
            })
        );
    }
}

#[test]
fn v2_per_hop_reports_and_sequence_gaps() {
    let mut e = engine();
    let mut mem = Memory::new();
    // Node 21 sends a group of two individual reports (two flows) with seq 5, then seq 9: 3 groups lost.
    let md = |lat: u32| pack(&[(u64::from(lat), 32)]);
    let a = v2_group(
        21,
        5,
        &[
            (0b0010 << 12, md(5), false, false, inner(1, 62)),
            (0b0010 << 12, md(6), false, false, inner(2, 62)),
        ],
    );
    let b = v2_group(21, 9, &[(0b0010 << 12, md(7), false, false, inner(3, 62))]);
    e.handle_frame(Instant(0), &frame(&a, 32766));
    e.handle_frame(Instant(0), &frame(&b, 32766));
    // A late repeat of seq 5 is translated but counted late.
    e.handle_frame(Instant(0), &frame(&a, 32766));
    mem.sync(&mut e, Instant(1));
    let c = &e.counters().int;
    assert_eq!((c.packets, c.reports, c.lost, c.late), (3, 5, 3, 1));
    // TTL 62 from 64: hop 2.
    assert_eq!(
        mem.hop(flow(2), 2).map(|h| (h.node, h.hop_latency)),
        Some((21, 6))
    );
    assert_eq!(
        mem.hop(flow(3), 2).map(|h| (h.node, h.hop_latency)),
        Some((21, 7))
    );
    assert_eq!(mem.hop(flow(3), 1), None);
}

#[test]
fn malformed_reports_are_counted_by_reason() {
    let mut e = engine();
    let ok = v05_local(1, 1, false, 0, 0, (0, 0), 1, &inner(5, 63));
    let cases: Vec<(Vec<u8>, IntDrop)> = vec![
        // Version 3: neither fabric-tna's 0 nor v2.0's 2.
        (vec![0x30; 40], IntDrop::UnknownType),
        // A v0.5 fixed header cut short.
        (ok[..8].to_vec(), IntDrop::Malformed),
        // Next protocol 0: no common header, no switch.
        (
            {
                let mut p = ok.clone();
                p[0] = 0x00;
                p
            },
            IntDrop::NoNode,
        ),
        // Next protocol 9.
        (
            {
                let mut p = ok.clone();
                p[0] = 0x09;
                p
            },
            IntDrop::UnknownType,
        ),
        // The TTL is the initial one: no switch decremented it, no hop.
        (
            v05_local(1, 2, false, 0, 0, (0, 0), 1, &inner(5, 64)),
            IntDrop::NoHop,
        ),
        // The inner packet is not IP.
        (
            v05_local(1, 3, false, 0, 0, (0, 0), 1, &[0u8; 20]),
            IntDrop::UnknownType,
        ),
        // v2.0: a report length that runs past the packet.
        (
            {
                let mut p = v2_group(1, 1, &[(0, vec![], false, false, inner(5, 63))]);
                p[9] = 0xFE;
                p
            },
            IntDrop::Malformed,
        ),
        // v2.0: a stack of 9 hops.
        (
            v2_group(
                1,
                2,
                &[(0, vec![], false, false, int_md_packet(5, &[(1, 0, 0); 9]))],
            ),
            IntDrop::TooManyHops,
        ),
        // v2.0: 6 hops and the sink make 7, more than the region's 5.
        (
            v2_group(
                30,
                3,
                &[(0, vec![], false, false, int_md_packet(5, &[(1, 0, 0); 6]))],
            ),
            IntDrop::TooManyHops,
        ),
    ];
    for (i, (payload, why)) in cases.iter().enumerate() {
        let before = e.counters().int.dropped(*why);
        e.handle_frame(Instant(0), &frame(payload, 32766));
        assert_eq!(
            e.counters().int.dropped(*why),
            before + 1,
            "case {i}: {why:?}"
        );
    }
    let total: u64 = e.counters().int.drops.iter().sum();
    assert_eq!(total, cases.len() as u64, "each case counted once");
    assert_eq!(e.counters().int.reports, 0);
}

#[test]
fn int_port_is_forwarded_when_int_is_off() {
    let mut c = Config::default();
    c.report.keywrite_data_len = 12;
    c.int.enabled = false;
    let w = Welcome {
        version: CONTROL_VERSION,
        mac: COLLECTOR_MAC,
        ip: COLLECTOR_IP,
        qps: vec![ResponderQp {
            qpn: 0x11,
            peer_qpn: 0x100,
        }],
        max_dest_rd_atomic: 16,
        path_mtu: 1024,
        regions: regions(),
    };
    let mut e = Engine::new(c, &[w], Instant(0)).unwrap();
    let r = v05_local(1, 1, false, 0, 0, (0, 0), 1, &inner(5, 63));
    assert_eq!(
        e.handle_frame(Instant(0), &frame(&r, 32766)),
        dta_translator::Handled::NotForUs
    );
}

#[test]
fn enabling_int_checks_the_key_write_data_size() {
    let mut c = Config::default();
    c.int.enabled = true;
    let err = c.validate().unwrap_err().to_string();
    assert!(err.contains("keywrite_data_len"), "{err}");
    c.int.flow_state = false;
    c.validate().unwrap();
}
