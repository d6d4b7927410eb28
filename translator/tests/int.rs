//! INT reports in, collector memory out (issue 17): reports built field by field from the specifications'
//! layouts (fabric-tna's `header.p4` for v0.5, `telemetry_report.mdk` for v2.0, `INT.mdk` for the INT-MD
//! stack) by the independent encoder `dta_e2e::int_spec`, inner packets built with etherparse, the translator's frames applied
//! to a memory model, and the memory read back with the collector's own queries.

mod int_harness;

use int_harness::*;

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
    // Per switch (the metrics' bounded series): one congested queue, at 103; no drops.
    let nodes = e.counters().int.nodes.entries().to_vec();
    let congested: Vec<(u32, u64)> = nodes.iter().map(|(n, c)| (*n, c.congested)).collect();
    assert_eq!(congested, vec![(103, 1)]);
    assert!(nodes.iter().all(|(_, c)| c.drops == 0));
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
    // Every reporter has its entry (at 0: nothing lost).
    assert_eq!(
        e.counters().int.reporters_lost.entries(),
        &[((7, 2), 0), ((8, 2), 0)]
    );
    // Drops per switch (the metrics' bounded series), whatever their reason.
    let per_node: Vec<(u32, u64)> = (e.counters().int.nodes.entries().iter())
        .map(|(n, c)| (*n, c.drops))
        .collect();
    assert_eq!(per_node, vec![(7, 3), (8, 1)]);
    assert_eq!(
        mem.path(flow(4242), &(1..=200).collect::<Vec<_>>()),
        PathAnswer::Empty
    );
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
        // The inner frame carries no IP packet (EtherType 0): a report with no flow.
        (
            v05_local(1, 3, false, 0, 0, (0, 0), 1, &[0u8; 20]),
            IntDrop::NoFlow,
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
