//! INT reports in, collector memory out (issue 17): reports built field by field from the specifications'
//! layouts (fabric-tna's `header.p4` for v0.5, `telemetry_report.mdk` for v2.0, `INT.mdk` for the INT-MD
//! stack) by the independent encoder `dta_e2e::int_spec`, inner packets built with etherparse, the translator's frames applied
//! to a memory model, and the memory read back with the collector's own queries.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};

use dta_collector::query::{key_increment, key_write, KeyWriteAnswer, PathAnswer, PostcardDecoder};
use dta_e2e::int_spec::{self as spec, pack};
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

fn welcome() -> Welcome {
    Welcome {
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
    }
}

/// The INT front end on, with both event lists and INT-MD over UDP on `INT_UDP`.
fn engine() -> Engine {
    let mut c = Config::default();
    c.report.keywrite_data_len = 12;
    c.postcard.redundancy = 2;
    c.int.enabled = true;
    c.int.md_udp_port = Some(INT_UDP);
    c.int.drop_list = Some(DROP_LIST);
    c.int.queue_list = Some(QUEUE_LIST);
    Engine::new(c, &[welcome()], Instant(0)).unwrap()
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
    spec::inner(&spec_flow(sport), ttl)
}

fn spec_flow(sport: u16) -> spec::Flow {
    spec::Flow {
        src: SRC,
        dst: DST,
        sport,
        dport: 80,
    }
}

/// A v0.5 switch-local report (hw_id 1, ingress port 3).
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
    let l = spec::Local {
        switch,
        hw_id: 1,
        seq,
        congested,
        ig_ts,
        eg_ts,
        queue,
        ig_port: 3,
        eg_port,
    };
    spec::v05_local(&l, inner)
}

/// A v0.5 drop report (hw_id 2, ingress port 4, ingress timestamp 0xABCD).
fn v05_drop(switch: u32, seq: u32, reason: u8, queue: u8, eg_port: u16, inner: &[u8]) -> Vec<u8> {
    let d = spec::Drop {
        switch,
        hw_id: 2,
        seq,
        ig_ts: 0xABCD,
        reason,
        queue,
        ig_port: 4,
        eg_port,
    };
    spec::v05_drop(&d, inner)
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

/// The flow's packet with an INT-MD stack over UDP port `INT_UDP`: (node, latency, occupancy) oldest
/// first, queue id 1.
fn int_md_packet(sport: u16, hops: &[(u32, u32, u32)]) -> Vec<u8> {
    let hops: Vec<spec::MdHop> = hops
        .iter()
        .map(|&(node, latency, occupancy)| spec::MdHop {
            node,
            latency,
            queue: (1, occupancy),
        })
        .collect();
    spec::int_md_packet(&spec_flow(sport), INT_UDP, 60, &hops)
}

/// One individual report: RepMdBits, the metadata they select, the D and Q flags, the inner frame.
type Individual = (u16, Vec<u8>, bool, bool, Vec<u8>);

fn v2_group(node: u32, seq: u32, reports: &[Individual]) -> Vec<u8> {
    let r: Vec<spec::Individual> = reports
        .iter()
        .map(|(bits, md, dropped, congested, inner)| spec::Individual {
            bits: *bits,
            md: md.clone(),
            dropped: *dropped,
            congested: *congested,
            inner: inner.clone(),
        })
        .collect();
    spec::v2_group(node, seq, &r)
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
    let mut e = Engine::new(c, &[welcome()], Instant(0)).unwrap();
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
