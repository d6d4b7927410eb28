//! INT reports taken by several workers (issue 25, item 3): each frame is received by the worker its
//! switch's outer 5-tuple hashes to, whose engine counts it, tracks the switch's sequence numbers and
//! translates its reports, and hands the work on other workers' flows to their owners as messages (the
//! owners never parse the report again). The collector's memory
//! and every counter must come out as one engine taking every frame makes them: the same paths, hop
//! records and drop counters, the same events (spread over the workers' lists, each list in the order
//! sent), each packet and each report counted once.

mod int_harness;

use int_harness::*;

/// The workload: per-hop v0.5 reports of 24 flows over 5 switches (switch 103 congested, a sequence gap
/// on switch 102), drop reports, v2.0 groups of three flows each, a sink report, and a report that
/// cannot be translated. (receiving switch, frame) in send order.
fn workload() -> Vec<(u32, Vec<u8>)> {
    let mut out = Vec::new();
    // Sequence numbers per (switch, hardware id): local reports on hw_id 1, drop reports on 2.
    let mut seq = std::collections::HashMap::<(u32, u8), u32>::new();
    let mut next = |switch: u32, hw: u8| {
        let s = seq.entry((switch, hw)).or_default();
        // Switch 102 loses one report in ten on the way.
        *s += if switch == 102 && *s % 10 == 9 { 2 } else { 1 };
        *s
    };
    for f in 0..24u16 {
        let sport = 1000 + f;
        for (i, switch) in (101u32..=105).enumerate() {
            let hop = i as u32 + 1;
            let r = v05_local(
                switch,
                next(switch, 1),
                switch == 103 && f % 3 == 0,
                1_000 * hop,
                1_000 * hop + 10 * hop + u32::from(f),
                (2, 50 * hop + u32::from(f)),
                16 + switch as u16 % 8,
                &inner(sport, 64 - hop as u8),
            );
            out.push((switch, frame(&r, 32766)));
        }
        if f % 4 == 0 {
            let r = v05_drop(
                104,
                next(104, 2),
                71 + (f % 3) as u8,
                3,
                130,
                &inner(sport, 60),
            );
            out.push((104, frame(&r, 32766)));
        }
    }
    // Node 21 groups per-hop reports of three flows each (hop 2 from TTL 62): the workers that own them
    // differ, so the frame goes to several.
    let md = |lat: u32| pack(&[(u64::from(lat), 32)]);
    for g in 0..6u32 {
        let reports: Vec<Individual> = (0..3u16)
            .map(|i| {
                let sport = 2000 + g as u16 * 3 + i;
                (
                    0b0010 << 12,
                    md(g * 10 + u32::from(i)),
                    false,
                    false,
                    inner(sport, 62),
                )
            })
            .collect();
        out.push((100, frame(&v2_group(21, g + 1, &reports), 32766)));
    }
    // A group whose second report is a drop (D flag) and whose third has no inner packet.
    let mixed = v2_group(
        22,
        1,
        &[
            (0b0010 << 12, md(9), false, false, inner(3000, 62)),
            (0b0010 << 12, md(8), true, false, inner(3001, 62)),
            (0b0010 << 12, md(7), false, false, Vec::new()),
        ],
    );
    out.push((100, frame(&mixed, 32766)));
    let stack = int_md_packet(9000, &[(11, 110, 1), (12, 120, 2), (13, 130, 3)]);
    let sink = pack(&[(140, 32), (1, 8), (4, 24)]);
    out.push((
        100,
        frame(
            &v2_group(14, 1, &[(0b0011 << 12, sink, false, true, stack)]),
            32766,
        ),
    ));
    out
}

/// Every flow of the workload, by source port.
fn sports() -> Vec<u16> {
    (1000..1024)
        .chain(2000..2018)
        .chain([3000, 3001, 9000])
        .collect()
}

/// Flushes `e` and applies everything it sends, window after window.
fn drain(mem: &mut Memory, e: &mut Engine) {
    for _ in 0..1000 {
        mem.sync(e, Instant(1));
        if e.is_idle() {
            return;
        }
    }
    panic!("the engine does not drain");
}

fn worker_engine(k: usize, workers: usize) -> Engine {
    let (drops, queues, _, _) = WORKER_LISTS[k];
    let mut e = engine_with(|c| {
        c.int.drop_list = EventLists::one(drops);
        c.int.queue_list = EventLists::one(queues);
    });
    e.set_int_shard(k, workers);
    e
}

#[test]
fn several_workers_write_what_one_engine_writes_and_count_each_report_once() {
    let frames = workload();
    let universe: Vec<u32> = (1..=200).collect();

    let mut alone = engine();
    let mut one = Memory::new();
    for (_, f) in &frames {
        alone.handle_frame(Instant(0), f);
    }
    drain(&mut one, &mut alone);

    for workers in [2usize, 3] {
        let mut engines: Vec<Engine> = (0..workers).map(|k| worker_engine(k, workers)).collect();
        let mut mem = Memory::new();
        let (mut handed, mut groups_to_two) = (0, 0);
        for (switch, f) in &frames {
            // RSS: one switch's reports share one outer 5-tuple, so one worker receives them all.
            let r = *switch as usize % workers;
            let mut to: Vec<(usize, Vec<u8>)> = Vec::new();
            engines[r].handle_int_frames(Instant(0), [f.as_slice()], |i, k, m| {
                assert_eq!(i, 0);
                to.push((k, m.to_vec()))
            });
            let mut owners: Vec<usize> = to.iter().map(|t| t.0).collect();
            owners.dedup();
            assert_eq!(owners.len(), to.len(), "one message a worker: {owners:?}");
            groups_to_two += usize::from(owners.len() > 1);
            for (k, m) in to {
                assert_ne!(k, r, "a receiver hands nothing to itself");
                assert!(k < workers);
                handed += 1;
                engines[k].handle_int_work(Instant(0), [m.as_slice()]);
            }
        }
        for e in &mut engines {
            drain(&mut mem, e);
        }
        assert!(handed > 40, "{workers} workers: {handed} hand-overs");
        if workers == 3 {
            assert!(
                groups_to_two > 0,
                "a v2.0 group of three flows goes to two other workers"
            );
        }

        for sport in sports() {
            let f = flow(sport);
            // The path, not how many copies survived: flows share chunks, and which flow's write lands
            // last depends on when each engine's cache writes it.
            let path = |a: PathAnswer| match a {
                PathAnswer::Found { path, .. } => Some(path),
                _ => None,
            };
            assert_eq!(
                path(mem.path(f, &universe)),
                path(one.path(f, &universe)),
                "{workers} workers: path of flow {sport}"
            );
            for hop in 1..=5 {
                assert_eq!(mem.hop(f, hop), one.hop(f, hop), "flow {sport} hop {hop}");
            }
        }
        for reason in 71..=73 {
            assert_eq!(mem.drops(104, reason), one.drops(104, reason));
        }
        assert_eq!(mem.drops(22, 0), one.drops(22, 0));
        assert_eq!(one.drops(104, 71), 2);

        // Events: each worker's list holds what it translated, in the order sent; together, the one
        // engine's list.
        for (i, va) in [(2usize, DROPS_VA), (3, QUEUES_VA)] {
            let sent = one.entries(va);
            let mut all = Vec::new();
            for (k, lists) in WORKER_LISTS.iter().enumerate().take(workers) {
                let mine = mem.entries(if i == 2 { lists.2 } else { lists.3 });
                let mut rest = sent.iter();
                assert!(
                    mine.iter().all(|m| rest.any(|s| s == m)),
                    "worker {k}'s list is in the order sent"
                );
                all.extend(mine);
            }
            let (mut all, mut sent) = (all, sent);
            all.sort();
            sent.sort();
            assert_eq!(all, sent, "{workers} workers: events of list at {va:#x}");
            assert!(!sent.is_empty());
        }

        // Counters: packets, sequence and reports at the receivers, each report once.
        let one_c = &alone.counters().int;
        let sum = |f: &dyn Fn(&dta_translator::int::IntCounters) -> u64| -> u64 {
            engines.iter().map(|e| f(&e.counters().int)).sum()
        };
        assert_eq!(sum(&|c| c.packets), one_c.packets);
        assert_eq!(sum(&|c| c.reports), one_c.reports);
        assert_eq!(sum(&|c| c.whole_paths), one_c.whole_paths);
        assert_eq!(sum(&|c| c.lost), one_c.lost);
        assert_eq!(sum(&|c| c.late), one_c.late);
        for why in IntDrop::ALL {
            let n: u64 = engines.iter().map(|e| e.counters().int.dropped(why)).sum();
            assert_eq!(n, one_c.dropped(why), "{why:?}");
        }
    }
    // The workload as sent: 131 frames; switch 102 lost 2 of its 26 sequence numbers.
    let c = &alone.counters().int;
    assert_eq!(
        (c.packets, c.lost, c.whole_paths),
        (frames.len() as u64, 2, 1)
    );
    assert_eq!(c.reports, 24 * 5 + 6 + 18 + 2 + 1);
    assert_eq!(
        c.dropped(IntDrop::NoFlow) + c.dropped(IntDrop::Malformed),
        1
    );
}

#[test]
fn a_frame_that_is_not_int_is_counted_not_translated() {
    let mut e = worker_engine(0, 2);
    let dta = frame(&[0x01; 12], 40040);
    e.handle_int_frames(Instant(0), [dta.as_slice()], |_, _, _| {
        panic!("nothing to hand over")
    });
    assert_eq!(e.counters().int.packets, 0);
    assert_eq!(e.counters().not_for_us, 1);
}

#[test]
fn a_sharded_engine_given_every_frame_without_handoff_counts_other_flows_as_not_its_own() {
    // `Engine::handle_frame` has no way to hand a frame over: each worker of two, given the whole
    // workload there, translates its own flows' reports and the reports that need no flow state (the 7
    // drop reports), and counts every other flow's report as not its own; none is lost uncounted.
    let frames = workload();
    let mut alone = engine();
    for (_, f) in &frames {
        alone.handle_frame(Instant(0), f);
    }
    let all = alone.counters().int.reports;
    assert_eq!(alone.counters().int.dropped(IntDrop::NotOwner), 0);
    let (drop_reports, flow_reports) = (7, all - 7);
    let mut not_owned = 0;
    for k in 0..2 {
        let mut e = worker_engine(k, 2);
        for (_, f) in &frames {
            e.handle_frame(Instant(0), f);
        }
        let c = &e.counters().int;
        let others = c.dropped(IntDrop::NotOwner);
        assert!(others > 0 && others < flow_reports, "worker {k}: {others}");
        assert_eq!(c.reports + others, all, "worker {k}");
        assert_eq!(c.packets, frames.len() as u64);
        not_owned += others;
    }
    // Each flow report is one worker's: the other counts it.
    assert_eq!(not_owned, flow_reports);
    assert_eq!(flow_reports + drop_reports, 147);
}
