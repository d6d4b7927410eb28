//! INT reports as real fabrics send them (issue 27), built by the independent encoder `dta_e2e::int_spec`
//! from the specifications' field lists: v2.0 groups holding reports the translator cannot read, Report
//! Length 0xFF, a Q flag on a sink report, a non-IP inner packet, reordered sequence numbers, and hop-1
//! reports arriving after their flow was written. Each asserts exact counts and the collector's answers.

mod int_harness;

use dta_e2e::int_spec::{Header, Individual as SpecIndividual};
use int_harness::*;

const INT_PORT: u16 = 32766;

fn universe() -> Vec<u32> {
    (1..=300).collect()
}

/// `hops` (node ids, oldest first) as an INT-MD stack over UDP in flow `sport`'s packet: latency 10 x
/// node, queue 1 with occupancy node.
fn stack(sport: u16, hops: &[u32]) -> Vec<u8> {
    let h: Vec<(u32, u32, u32)> = hops.iter().map(|&n| (n, 10 * n, n)).collect();
    int_md_packet(sport, &h)
}

/// A sink's INT report (its own hop latency 140 and queue 1 / 4 in the main contents) of `inner`.
fn sink(inner: Vec<u8>, congested: bool) -> SpecIndividual {
    SpecIndividual {
        bits: 0b0011 << 12,
        md: pack(&[(140, 32), (1, 8), (4, 24)]),
        dropped: false,
        congested,
        inner,
    }
}

/// Every drop reason but those in `except` counted zero times.
fn no_drops_but(e: &Engine, except: &[IntDrop]) {
    for why in IntDrop::ALL {
        if !except.contains(&why) {
            assert_eq!(e.counters().int.dropped(why), 0, "{why:?}");
        }
    }
}

fn found(path: &[u32]) -> PathAnswer {
    PathAnswer::Found {
        path: path.to_vec(),
        chunks: 2,
    }
}

/// Sink reports of flows 1001 and 1002 (node 40, sequence 1) with an IOAM report (RepType 2, its
/// length valid) between them.
fn group_with_ioam() -> Vec<u8> {
    let ioam = SpecIndividual {
        md: vec![0x04; 12],
        inner: inner(1, 63),
        ..SpecIndividual::default()
    };
    let h = Header {
        rep_type: 2,
        in_type: 4,
        report_length: None,
    };
    spec::v2_group_of(
        40,
        1,
        &[
            spec::v2_individual(&sink(stack(1001, &[11, 12]), false), Header::default()),
            spec::v2_individual(&ioam, h),
            spec::v2_individual(&sink(stack(1002, &[21, 22]), false), Header::default()),
        ],
    )
}

/// Sink reports of flows 1003 and 1004 (node 40, sequence 2) with a report of reserved InType 7 (flow 2)
/// between them.
fn group_with_reserved_in_type() -> Vec<u8> {
    let reserved = SpecIndividual {
        inner: inner(2, 63),
        ..SpecIndividual::default()
    };
    let h = Header {
        in_type: 7,
        ..Header::default()
    };
    spec::v2_group_of(
        40,
        2,
        &[
            spec::v2_individual(&sink(stack(1003, &[31, 32]), false), Header::default()),
            spec::v2_individual(&reserved, h),
            spec::v2_individual(&sink(stack(1004, &[41, 42]), false), Header::default()),
        ],
    )
}

/// Item 1: one report of a group that cannot be translated (an IOAM report, a reserved InType) is
/// counted, and the reports after it are still translated.
#[test]
fn a_v2_group_reads_past_reports_it_cannot_translate() {
    let mut e = engine();
    let mut mem = Memory::new();
    let (g1, g2) = (group_with_ioam(), group_with_reserved_in_type());
    e.handle_frame(Instant(0), &frame(&g1, INT_PORT));
    e.handle_frame(Instant(0), &frame(&g2, INT_PORT));
    mem.sync(&mut e, Instant(1));
    let c = &e.counters().int;
    assert_eq!((c.packets, c.reports, c.whole_paths), (2, 4, 4));
    assert_eq!(c.dropped(IntDrop::UnknownType), 2);
    no_drops_but(&e, &[IntDrop::UnknownType]);
    for (sport, path) in [
        (1001, [11, 12, 40]),
        (1002, [21, 22, 40]),
        (1003, [31, 32, 40]),
        (1004, [41, 42, 40]),
    ] {
        assert_eq!(mem.path(flow(sport), &universe()), found(&path), "{sport}");
    }
    // Neither untranslated report wrote anything for its flow.
    assert_eq!(mem.path(flow(1), &universe()), PathAnswer::Empty);
    assert_eq!(mem.hop(flow(2), 1), None);
}

const TO_END: Header = Header {
    rep_type: 1,
    in_type: 3,
    report_length: Some(0xFF),
};

/// A sink report (node 50, sequence 1) of flow 2001 with a 1,300-byte payload of zeros after its stack:
/// a report of more than 255 words, Report Length 0xFF.
fn long_sink_to_end() -> Vec<u8> {
    let long = spec::int_md_packet_with(
        &spec_flow(2001),
        INT_UDP,
        60,
        &md_hops(&[51, 52]),
        &[0; 1300],
    );
    let r = spec::v2_individual(&sink(long, false), TO_END);
    assert!(r.len() > 4 + 4 * 255);
    spec::v2_group_of(50, 1, &[r])
}

/// A sink report (node 50, sequence 2, Report Length 0xFF) of flow 2002 whose tenant placed a per-hop
/// report (flow 6666, hop 1) in its own payload at byte 4 + 4 * 255 of the sink's report, where a Report
/// Length of 255 words would end it.
fn forged_in_tenant_payload() -> Vec<u8> {
    let forged = spec::v2_individual(
        &SpecIndividual {
            inner: inner(6666, 63),
            ..SpecIndividual::default()
        },
        Header::default(),
    );
    let g = spec_flow(2002);
    let prefix = spec::int_md_packet_with(&g, INT_UDP, 60, &md_hops(&[53, 54]), &[]).len();
    let at = 4 + 4 * 255 - (4 + 8 + sink(vec![], false).md.len() + prefix);
    let mut payload = vec![0x5A; at];
    payload.extend(&forged);
    let tenant = spec::int_md_packet_with(&g, INT_UDP, 60, &md_hops(&[53, 54]), &payload);
    let r = spec::v2_individual(&sink(tenant, false), TO_END);
    assert_eq!(r[4 + 4 * 255..4 + 4 * 255 + forged.len()], forged[..]);
    spec::v2_group_of(50, 2, &[r])
}

/// Item 2: Report Length 0xFF runs to the end of the payload. A sink report longer than 255 words is one
/// report, and report-shaped bytes a tenant put in its own payload where a 255-word report would end
/// are never read as a report.
#[test]
fn report_length_ff_runs_to_the_end_and_tenant_bytes_are_not_reports() {
    let mut e = engine();
    let mut mem = Memory::new();
    e.handle_frame(Instant(0), &frame(&long_sink_to_end(), INT_PORT));
    e.handle_frame(Instant(0), &frame(&forged_in_tenant_payload(), INT_PORT));
    mem.sync(&mut e, Instant(1));
    let c = &e.counters().int;
    assert_eq!((c.packets, c.reports, c.whole_paths), (2, 2, 2));
    no_drops_but(&e, &[]);
    assert_eq!(mem.path(flow(2001), &universe()), found(&[51, 52, 50]));
    assert_eq!(mem.path(flow(2002), &universe()), found(&[53, 54, 50]));
    assert_eq!(mem.path(flow(6666), &universe()), PathAnswer::Empty);
    assert_eq!(mem.hop(flow(6666), 1), None);
}

fn md_hops(nodes: &[u32]) -> Vec<spec::MdHop> {
    nodes
        .iter()
        .map(|&n| spec::MdHop {
            node: n,
            latency: 10 * n,
            queue: (1, n),
        })
        .collect()
}

/// A congested sink report (node 60, sequence 1) of flow 3001, RepMdBits 1, 2, 3, 5: ports (ingress 7,
/// egress 9), hop latency, queue 2 with occupancy 77, egress timestamp.
fn congested_sink() -> Vec<u8> {
    let md = pack(&[
        (7, 16),
        (9, 16),
        (150, 32),
        (2, 8),
        (77, 24),
        (0x1234_5678_9ABC, 64),
    ]);
    let r = SpecIndividual {
        bits: 0b0111_0100 << 8,
        md,
        dropped: false,
        congested: true,
        inner: stack(3001, &[61, 62]),
    };
    spec::v2_group(60, 1, &[r])
}

/// Item 3: the Q flag on a v2.0 sink report appends the sink's queue event (and none when the report is
/// not translated).
#[test]
fn q_flag_on_a_v2_sink_report_appends_a_queue_event() {
    let mut e = engine();
    let mut mem = Memory::new();
    e.handle_frame(Instant(0), &frame(&congested_sink(), INT_PORT));
    // A congested sink report with 9 stacked hops: too many, so no event either.
    let too_long = sink(stack(3002, &[1; 9]), true);
    e.handle_frame(
        Instant(0),
        &frame(&spec::v2_group(60, 2, &[too_long]), INT_PORT),
    );
    mem.sync(&mut e, Instant(1));
    let c = &e.counters().int;
    assert_eq!((c.packets, c.reports, c.whole_paths), (2, 1, 1));
    assert_eq!(c.dropped(IntDrop::TooManyHops), 1);
    assert_eq!(mem.path(flow(3001), &universe()), found(&[61, 62, 60]));
    // node 60, egress port 9, queue 2, occupancy 77, the egress timestamp's low 32 bits (little-endian).
    let mut want = 60u32.to_le_bytes().to_vec();
    want.extend_from_slice(&9u16.to_le_bytes());
    want.extend_from_slice(&[2, 0]);
    want.extend_from_slice(&77u32.to_le_bytes());
    want.extend_from_slice(&0x5678_9ABCu32.to_le_bytes());
    assert_eq!(mem.entries(QUEUES_VA), vec![want]);
}

/// A switch's ARP request as a mirrored inner frame.
fn arp() -> Vec<u8> {
    spec::arp([10, 0, 0, 1], [10, 0, 0, 9])
}

/// fabric-tna's switch-local report (switch 81) of an ARP request.
fn arp_local() -> Vec<u8> {
    v05_local(81, 1, false, 0, 0, (0, 0), 1, &arp())
}

/// A v2.0 INT report (node 82) of an ARP request.
fn arp_v2() -> Vec<u8> {
    let r = SpecIndividual {
        inner: arp(),
        ..SpecIndividual::default()
    };
    spec::v2_group(82, 1, &[r])
}

/// Item 4: an inner packet that is not IP (ARP) has no flow: `no_flow`, in both formats; a drop report
/// of one is still a counted drop.
#[test]
fn a_non_ip_inner_packet_is_no_flow() {
    let mut e = engine();
    let mut mem = Memory::new();
    let drop = v05_drop(83, 1, 71, 2, 5, &arp());
    for r in [&arp_local(), &arp_v2(), &drop] {
        e.handle_frame(Instant(0), &frame(r, INT_PORT));
    }
    mem.sync(&mut e, Instant(1));
    let c = &e.counters().int;
    assert_eq!((c.packets, c.reports), (3, 1));
    assert_eq!(c.dropped(IntDrop::NoFlow), 2);
    no_drops_but(&e, &[IntDrop::NoFlow]);
    assert_eq!(mem.drops(83, 71), 1);
    // Its event names no flow (key 0).
    let d = mem.entries(DROPS_VA);
    assert_eq!((d.len(), &d[0][..8]), (1, &[0, 0, 0, 0, 83, 0, 0, 0][..]));
}

/// Item 5: a report that arrives after a later one was counted as lost moves from lost to late; a
/// repeat is late and changes no loss.
#[test]
fn reordered_reports_move_from_lost_to_late() {
    let mut e = engine();
    // Switch 70 numbers 1..=20; 5 and 6 never arrive, 10..=12 arrive after 15, and 3 comes twice.
    let order = [
        1u32, 2, 3, 4, 7, 8, 9, 13, 14, 15, 10, 11, 12, 16, 17, 18, 19, 20, 3,
    ];
    for &seq in &order {
        let r = v05_local(
            70,
            seq,
            false,
            0,
            0,
            (0, 0),
            1,
            &inner(3000 + seq as u16, 63),
        );
        e.handle_frame(Instant(0), &frame(&r, INT_PORT));
    }
    let c = &e.counters().int;
    assert_eq!((c.packets, c.reports, c.lost, c.late), (19, 19, 2, 4));
    // v2.0's 22-bit numbers across the wrap: 0x3FFFFE, then 1 (0x3FFFFF and 0 missing), then 0x3FFFFF.
    let md = pack(&[(5, 32)]);
    for seq in [0x3F_FFFE, 1, 0x3F_FFFF] {
        let g = v2_group(
            71,
            seq,
            &[(0b0010 << 12, md.clone(), false, false, inner(9, 63))],
        );
        e.handle_frame(Instant(0), &frame(&g, INT_PORT));
    }
    let c = &e.counters().int;
    assert_eq!((c.packets, c.reports, c.lost, c.late), (22, 22, 3, 5));
}

/// The path `int-path` reads and the switches `int-flow`'s hop records name agree: every hop of the path
/// has its record, and no record follows the path's last hop.
fn agrees_with_hop_records(mem: &Memory, f: u32) {
    let PathAnswer::Found { path, .. } = mem.path(f, &universe()) else {
        panic!("no path for {f:#x}");
    };
    for (i, &node) in path.iter().enumerate() {
        assert_eq!(mem.hop(f, i as u8 + 1).map(|h| h.node), Some(node));
    }
    assert_eq!(mem.hop(f, path.len() as u8 + 1), None);
}

/// Item 6: a hop-1 report that arrives after its flow was written (repeated, or late behind the other
/// hops' entry) does not shorten the path to one hop; `int-path` and `int-flow` agree.
#[test]
fn a_late_or_repeated_hop_1_keeps_the_whole_path() {
    let mut e = engine();
    let mut mem = Memory::new();
    // Each switch numbers its own reports.
    let mut seqs = std::collections::HashMap::new();
    let mut report = |e: &mut Engine, sport: u16, switch: u32, hop: u8| {
        let seq = seqs.entry(switch).or_insert(0);
        *seq += 1;
        let r = v05_local(
            switch,
            *seq,
            false,
            0,
            100,
            (0, 0),
            1,
            &inner(sport, 64 - hop),
        );
        e.handle_frame(Instant(0), &frame(&r, INT_PORT));
    };
    // Flow 4001: five hops in order, written (complete), then hop 1 again.
    for hop in 1..=5u8 {
        report(&mut e, 4001, 100 + u32::from(hop), hop);
    }
    mem.sync(&mut e, Instant(1));
    report(&mut e, 4001, 101, 1);
    // Flow 4002: hops 2..=5 written (flushed without hop 1), then hop 1.
    for hop in 2..=5u8 {
        report(&mut e, 4002, 200 + u32::from(hop), hop);
    }
    mem.sync(&mut e, Instant(2));
    report(&mut e, 4002, 201, 1);
    // Flow 4003: a three-hop path in the five-hop region, written, then hop 1 again.
    for hop in 1..=3u8 {
        report(&mut e, 4003, 150 + u32::from(hop), hop);
    }
    mem.sync(&mut e, Instant(3));
    report(&mut e, 4003, 151, 1);
    mem.sync(&mut e, Instant(4));
    assert_eq!(
        mem.path(flow(4001), &universe()),
        found(&[101, 102, 103, 104, 105])
    );
    assert_eq!(
        mem.path(flow(4002), &universe()),
        found(&[201, 202, 203, 204, 205])
    );
    assert_eq!(mem.path(flow(4003), &universe()), found(&[151, 152, 153]));
    for sport in [4001, 4002, 4003] {
        agrees_with_hop_records(&mem, flow(sport));
    }
    let c = &e.counters().int;
    assert_eq!((c.packets, c.reports, c.lost), (15, 15, 0));
}

/// The fuzz targets' corpora hold these shapes (`fuzz/corpus/int_parse/` the UDP payload,
/// `fuzz/corpus/int_translate/` the same after the target's two configuration bytes: INT-MD over UDP
/// port 5000, both event lists, 6 hops). `DTA_BLESS_SEEDS=1` writes them.
#[test]
fn fuzz_corpora_hold_these_shapes() {
    let seeds = [
        ("v2_group_ioam_between", group_with_ioam()),
        ("v2_group_reserved_in_type", group_with_reserved_in_type()),
        ("v2_report_length_ff", long_sink_to_end()),
        ("v2_report_length_ff_forged", forged_in_tenant_payload()),
        ("v2_sink_congested", congested_sink()),
        ("v05_arp_inner", arp_local()),
        ("v2_arp_inner", arp_v2()),
    ];
    let corpus = concat!(env!("CARGO_MANIFEST_DIR"), "/../fuzz/corpus");
    let bless = std::env::var_os("DTA_BLESS_SEEDS").is_some();
    for (name, payload) in seeds {
        let mut config = vec![0x61, 0x05];
        config.extend(&payload);
        for (target, bytes) in [("int_parse", payload), ("int_translate", config)] {
            let path = format!("{corpus}/{target}/{name}");
            if bless {
                std::fs::write(&path, &bytes).unwrap();
            }
            let seed = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
            assert_eq!(seed, bytes, "{path} (DTA_BLESS_SEEDS=1 rewrites it)");
        }
    }
}
