//! Issue 17's spread measurement on small cases whose outcome the arrival times alone fix: every count below
//! is derived in this file from the schedule (not from `dta_sim::spread::rule`) and must equal what the
//! real engine, responder and path decoder produce.

use std::collections::HashSet;

use dta_protocol::layout::PostcardGeometry;
use dta_sim::spread::drive::{self, Measured};
use dta_sim::spread::schedule::{schedule, Flow, Tuple};
use dta_sim::spread::{Kind, Order, SpreadParams, Verdict, Verdicts};

const MS: u64 = 1_000_000;

fn params(flows: u32, spread_ns: u64, order: Order, idle_us: u64) -> SpreadParams {
    seeded(flows, spread_ns, order, idle_us, 17)
}

fn seeded(flows: u32, spread_ns: u64, order: Order, idle_us: u64, seed: u64) -> SpreadParams {
    SpreadParams {
        flows,
        hops: 5,
        spread_ns,
        order,
        flows_per_ms: 20.0,
        idle_us,
        cache: 1 << 18,
        chunks: 1 << 20,
        n: 2,
        universe: 1024,
        seed,
    }
}

fn run(p: &SpreadParams, kind: Kind, flows: &[Flow]) -> Measured {
    drive::run(p, kind, flows, &drive::decoder(p.universe)).unwrap()
}

/// Flows one of whose chunk copies another flow also uses: none in these settings, so only the timing
/// decides a flow's fate.
fn assert_no_shared_chunk(p: &SpreadParams, flows: &[Flow]) {
    let g = PostcardGeometry::new(p.chunks, p.hops, p.n).unwrap();
    let mut seen = HashSet::new();
    for f in flows {
        for c in 0..p.n {
            assert!(seen.insert(g.offset(f.key, c)), "two copies share a chunk");
        }
    }
}

/// Arrival instants of a flow's reports, sorted, each with its hop (1-based).
fn arrivals(f: &Flow) -> Vec<(u64, u8)> {
    let mut a: Vec<(u64, u8)> = f.at.iter().zip(1..).map(|(&t, h)| (t, h)).collect();
    a.sort_unstable();
    a
}

/// The instants at which the flow's cache entries open: the first report, then the first report at or
/// after the previous entry's opening plus the idle timeout.
fn openings(f: &Flow, idle_ns: u64) -> Vec<u64> {
    let mut out: Vec<u64> = Vec::new();
    for (t, _) in arrivals(f) {
        if out.last().map_or(true, |&o| t >= o + idle_ns) {
            out.push(t);
        }
    }
    out
}

#[test]
fn in_path_order_within_the_idle_timeout_every_path_completes() {
    let p = params(300, MS / 2, Order::Path { jitter: 0.5 }, 1000);
    let flows = schedule(&p).unwrap();
    assert_no_shared_chunk(&p, &flows);
    for kind in [Kind::Dta, Kind::Int] {
        let m = run(&p, kind, &flows);
        assert_eq!(
            Verdicts::of(&m.verdicts),
            Verdicts {
                exact: 300,
                ..Verdicts::default()
            },
            "{kind}"
        );
        // Every flow completed in its first entry: nothing waited for a timer.
        assert_eq!(
            (m.postcards, m.timeouts, m.continuations, m.evictions),
            (1500, 0, 0, 0),
            "{kind}"
        );
    }
}

#[test]
fn in_path_order_over_ten_idle_timeouts_the_partial_writes_compose() {
    let p = params(300, 10 * MS, Order::Path { jitter: 0.5 }, 1000);
    let flows = schedule(&p).unwrap();
    assert_no_shared_chunk(&p, &flows);
    // Hop 1 comes first, so it opens the first entry; every later entry is a continuation.
    assert!(flows.iter().all(|f| arrivals(f)[0].1 == 1));
    let entries: u64 = flows.iter().map(|f| openings(f, MS).len() as u64).sum();
    assert_eq!(entries, 1352);
    for kind in [Kind::Dta, Kind::Int] {
        let m = run(&p, kind, &flows);
        assert_eq!(Verdicts::of(&m.verdicts).exact, 300, "{kind}");
        assert_eq!(m.timeouts, entries, "{kind}");
        assert_eq!(m.continuations, entries - 300, "{kind}");
        assert_eq!(m.evictions, 0, "{kind}");
    }
}

#[test]
fn in_random_order_a_late_hop_1_loses_no_path() {
    // Seed 4: no two of these 1000 flows share a chunk copy (most seeds have one such pair).
    let p = seeded(1000, 3 * MS, Order::Random, 1000, 4);
    let flows = schedule(&p).unwrap();
    assert_no_shared_chunk(&p, &flows);
    // Lost (INT per-hop): hop 1's entry opened after an entry of later hops was written, and blanks cover
    // those hops.
    // They read as a shorter path when the covered hops are all after the ones kept, else as none.
    let (mut lost, mut prefix, mut empty) = (HashSet::new(), 0, 0);
    for (i, f) in flows.iter().enumerate() {
        let first = arrivals(f)[0].0;
        if f.at[0] < first + MS {
            continue;
        }
        lost.insert(i);
        let hop1_entry = openings(f, MS)
            .into_iter()
            .rfind(|&o| o <= f.at[0])
            .unwrap();
        let covered: Vec<bool> = f.at.iter().map(|&t| t < hop1_entry).collect();
        let kept = covered.iter().take_while(|&&c| !c).count();
        if covered[kept..].iter().all(|&c| c) {
            prefix += 1;
        } else {
            empty += 1;
        }
    }
    assert_eq!((lost.len(), prefix, empty), (460, 137, 323));
    // INT per-hop reports: the path's length is unknown, so hop 1's entry writes the end-marking blanks;
    // it also carries the hops the flow's earlier reports named (the translator's path memory, issue 27),
    // so the blanks cover none of them: the flows an end marker alone lost above read whole too.
    let m = run(&p, Kind::Int, &flows);
    let measured: HashSet<usize> = (0..flows.len())
        .filter(|&i| m.verdicts[i] != Verdict::Exact)
        .collect();
    assert_eq!(
        measured,
        HashSet::new(),
        "of the {} an end marker alone loses",
        lost.len()
    );
    assert_eq!(m.evictions, 0);
    // DTA postcards: the length is B, no entry writes a blank inside the path, every path reads whole.
    let d = run(&p, Kind::Dta, &flows);
    assert_eq!(
        Verdicts::of(&d.verdicts),
        Verdicts {
            exact: 1000,
            ..Verdicts::default()
        }
    );
    assert_eq!(d.evictions, 0);
}

/// Hand-placed flows at the timer's edge, through both kinds.
#[test]
fn the_idle_timer_fires_at_its_own_instant_before_a_report_of_that_instant() {
    let idle = MS;
    let flow = |i: u8, path: [u32; 5], at: [u64; 5]| {
        let tuple = Tuple {
            src: [10, 1, 0, i],
            dst: [10, 2, 0, 1],
            src_port: 7000 + u16::from(i),
            dst_port: 80,
        };
        Flow {
            tuple,
            key: tuple.key(),
            path: path.to_vec(),
            at: at.to_vec(),
        }
    };
    let t = 5 * MS;
    let flows = vec![
        // Hop 1 one nanosecond inside the first entry: whole path.
        flow(
            1,
            [11, 12, 13, 14, 15],
            [t + idle - 1, t, t + 1, t + 2, t + 3],
        ),
        // Hop 1 at the very instant the first entry (hops 2-5) is written: blanks cover them, and the
        // chunk reads as a one-hop path.
        flow(2, [21, 22, 23, 24, 25], [t + idle, t, t + 1, t + 2, t + 3]),
        // Hops 4 and 5 first, hops 1-3 two timeouts later: the path reads as its first three hops.
        flow(
            3,
            [31, 32, 33, 34, 35],
            [t + 2 * idle, t + 2 * idle, t + 2 * idle, t, t],
        ),
        // In path order, 2 ms apart: five entries, four continuations, the whole path.
        flow(
            4,
            [41, 42, 43, 44, 45],
            [t, t + 2 * idle, t + 4 * idle, t + 6 * idle, t + 8 * idle],
        ),
        // Hop 3 alone first, the rest one timeout later: a blank at hop 3 before kept hops 4 and 5, no path.
        flow(
            5,
            [51, 52, 53, 54, 55],
            [t + idle, t + idle + 1, t, t + idle + 2, t + idle + 3],
        ),
    ];
    let p = params(5, 10 * MS, Order::Random, 1000);
    for kind in [Kind::Dta, Kind::Int] {
        let m = run(&p, kind, &flows);
        // DTA's known length: no blank inside the path, all five whole. INT per-hop: hop 1's entry carries
        // the hops the flow's earlier reports named (the translator's path memory), so the end-marking
        // blanks the comments above describe cover none of them: all five whole too.
        assert_eq!(m.verdicts, vec![Verdict::Exact; 5], "{kind}");
        // DTA's entries: flow 1 one (complete), flows 2, 3 and 5 two each, flow 4 five; timeouts: all but
        // flow 1's; continuations: the first of flows 2, 3 and 5, the last four of flow 4. (INT's hop-1
        // entries carry the flow's earlier hops, so some complete instead of timing out: its counts
        // differ, and only its verdicts are asserted.)
        if kind == Kind::Dta {
            assert_eq!((m.timeouts, m.continuations), (11, 7), "{kind}");
        }
        assert_eq!(m.evictions, 0, "{kind}");
    }
}
