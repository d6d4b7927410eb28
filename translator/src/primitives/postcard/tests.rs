use super::*;
use crate::config::{RateConfig, RequesterConfig};
use crate::counters::Counters;
use dta_protocol::roce::ROCEV2_UDP_PORT;
use dta_protocol::roce::{Extension, FrameRepr};
use dta_protocol::udp::UdpEndpoints;
use dta_rc::frames::FrameBuilder;
use dta_rc::requester::{Requester, RequesterParams};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;

fn qp() -> Requester {
    let ep = UdpEndpoints::new([2; 6], [3; 6], [1; 4], [2; 4], 1, ROCEV2_UDP_PORT);
    let params = RequesterParams {
        cfg: RequesterConfig::default(),
        rate: RateConfig::default(),
        max_atomics: 16,
        start_psn: 0,
    };
    Requester::new(params, FrameBuilder::new(ep, 0x11), Instant(0))
}

/// One step of a [`Case`].
#[derive(Debug, Clone)]
enum Step {
    /// `dt` nanoseconds pass, then a postcard of key number `key` (modulo the case's keys).
    Report {
        dt: u64,
        key: u16,
        hop: u8,
        path_len: u8,
        data: u32,
        length_known: bool,
    },
    /// `dt` nanoseconds pass, then a timer run (due or not; only time passes where the caches run
    /// their own timers).
    Timers { dt: u64 },
    /// Everything cached is written (end of a capture, shutdown).
    FlushAll,
}

/// A cache and what it is fed.
#[derive(Debug, Clone)]
struct Case {
    /// B.
    hops: u8,
    /// Flows the cache holds (powers of two and not).
    size: usize,
    /// N, copies written.
    copies: u8,
    /// Copies the region holds.
    n_max: u8,
    /// Whether each cache's flush runs when its own deadline says (as the daemon, the bench and the
    /// simulator do), instead of at the `Timers` steps.
    own_timers: bool,
    /// How many flow keys the reports draw from (few: colliding flows evict each other).
    keys: usize,
    steps: Vec<Step>,
}

/// A report of hop `hop` of a path `path_len` long, in a region of `hops` hops: mostly valid, now and
/// then out of range (a bad hop).
fn step(hops: u8) -> impl Strategy<Value = Step> {
    let path_len = prop_oneof![1 => 0..=hops + 1, 4 => Just(hops), 5 => 1..=hops];
    let report = path_len.prop_flat_map(move |path_len| {
        let hop = prop_oneof![1 => 0..=hops + 1, 9 => 1..=path_len.max(1)];
        let data = prop_oneof![1 => Just(POSTCARD_BLANK), 3 => any::<u32>()];
        let known = prop_oneof![2 => Just(true), 1 => Just(false)];
        (0..300u64, any::<u16>(), hop, data, known).prop_map(
            move |(dt, key, hop, data, length_known)| Step::Report {
                dt,
                key,
                hop,
                path_len,
                data,
                length_known,
            },
        )
    });
    prop_oneof![
        380 => report,
        19 => (0..300u64).prop_map(|dt| Step::Timers { dt }),
        1 => Just(Step::FlushAll),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    let sizes = prop::sample::select(vec![1usize, 3, 4, 5, 16, 64]);
    let n_max = prop_oneof![3 => Just(3u8), 1 => 1..=2u8];
    (1..=MAX_HOPS, sizes, 1..=3u8, n_max, any::<bool>()).prop_flat_map(
        |(hops, size, copies, n_max, own_timers)| {
            let steps = prop::collection::vec(step(hops), 1..400);
            (1..=3 * size + 2, steps).prop_map(move |(keys, steps)| Case {
                hops,
                size,
                copies,
                n_max,
                own_timers,
                keys,
                steps,
            })
        },
    )
}

/// The WRITEs queued on `qp`, read back from its frames (all of them: the window is emptied as often as
/// it fills), as the model describes them.
fn writes_of(qp: &mut Requester) -> Vec<spec::Write> {
    let (mut out, mut frame, mut c) = (Vec::new(), Vec::new(), Counters::default());
    loop {
        let before = out.len();
        while qp.poll_transmit(Instant(0), &mut c, &mut frame) {
            let f = FrameRepr::parse(&frame).expect("the requester's own frame parses");
            let Extension::Reth(reth) = f.ext else {
                panic!("not an RDMA WRITE ONLY: {f:?}");
            };
            assert_eq!(reth.dma_len as usize, f.payload.len());
            out.push(spec::Write {
                va: reth.va,
                rkey: reth.rkey,
                bytes: f.payload.to_vec(),
            });
        }
        qp.assume_delivered();
        if qp.is_idle() {
            return out;
        }
        // A pass that sent nothing and left work queued would never end.
        assert!(
            out.len() > before,
            "the QP keeps {} frames",
            qp.pending_frames()
        );
    }
}

/// What a case came to, to check that the cases reach every rule.
#[derive(Debug, Default)]
struct Tally {
    effects: spec::Effects,
    accepted: u64,
    bad_hops: u64,
    mismatches: u64,
    whole_chunks: u64,
    partial: u64,
}

/// Runs `case` through the cache and the spec model side by side: after every step, the same outcome,
/// the same WRITEs in the same order (addresses, keys, bytes), the same counters (and no other counted),
/// the same reports completed and held, the same next deadline.
fn follows_the_spec(case: &Case) -> Result<Tally, TestCaseError> {
    let idle = Duration::from_nanos(1000);
    let g = PostcardGeometry::new(256, case.hops, case.n_max).expect("a valid geometry");
    let region = Region {
        id: 0,
        va: 0x10_0000,
        rkey: 7,
        geometry: Geometry::Postcarding(g),
    };
    let regions = Regions {
        postcard: Some(region),
        ..Regions::default()
    };
    let mut cache = PostcardCache::new(case.size, idle, case.copies);
    let mut model = spec::Spec::new(case.size, 1000, case.copies);
    let (mut qp, mut counters) = (qp(), Counters::default());
    let mut tally = Tally::default();
    let (mut now, mut written) = (Instant(0), 0);
    for (k, step) in case.steps.iter().enumerate() {
        let mut sink = Sink {
            qp: &mut qp,
            mtu: 1024,
            counters: &mut counters,
        };
        match *step {
            Step::Report {
                dt,
                key,
                hop,
                path_len,
                data,
                length_known,
            } => {
                now = Instant(now.0 + dt);
                let p = Postcard {
                    key: ((usize::from(key) % case.keys) as u32).wrapping_mul(0x9E37_79B1),
                    hop,
                    path_len,
                    data,
                    opcode: Opcode::Postcard,
                    length_known,
                };
                let real = cache.handle(now, &p, &region, &mut sink);
                let want = model.report(now, &p, &region).map(|()| Outcome::Accepted);
                prop_assert_eq!(real, want, "step {}: {:?}", k, p);
                match want {
                    Ok(_) => tally.accepted += 1,
                    Err(DropReason::BadHop) => tally.bad_hops += 1,
                    Err(_) => tally.mismatches += 1,
                }
            }
            Step::Timers { dt } => {
                now = Instant(now.0 + dt);
                if !case.own_timers {
                    cache.flush(now, FlushMode::Due, &regions, &mut sink);
                    model.flush(now, false, &region);
                }
            }
            Step::FlushAll => {
                cache.flush(now, FlushMode::All, &regions, &mut sink);
                model.flush(now, true, &region);
            }
        }
        if case.own_timers {
            if cache.poll_timeout().is_some_and(|t| t <= now) {
                cache.flush(now, FlushMode::Due, &regions, &mut sink);
            }
            if model.next_timeout().is_some_and(|t| t <= now) {
                model.flush(now, false, &region);
            }
        }
        let want = model.take();
        written += qp.held_reports();
        prop_assert_eq!(
            qp.held_reports(),
            want.reports,
            "step {}: reports written",
            k
        );
        prop_assert_eq!(writes_of(&mut qp), want.writes.clone(), "step {}", k);
        tally.effects.evictions += want.evictions;
        tally.effects.timeouts += want.timeouts;
        tally.effects.continuations += want.continuations;
        tally.effects.completions += want.completions;
        tally.effects.reports += want.reports;
        for w in &want.writes {
            match w.bytes.len() {
                CHUNK_STRIDE => tally.whole_chunks += 1,
                _ => tally.partial += 1,
            }
        }
        let counted = Counters {
            postcard_evictions: tally.effects.evictions,
            postcard_timeouts: tally.effects.timeouts,
            postcard_continuations: tally.effects.continuations,
            ..Counters::default()
        };
        prop_assert_eq!(&counters, &counted, "step {}", k);
        prop_assert_eq!(cache.held_reports(), model.held_reports(), "step {}", k);
        prop_assert_eq!(cache.poll_timeout(), model.next_timeout(), "step {}", k);
    }
    // No report is lost: each accepted one was written or is still cached.
    prop_assert_eq!(written + cache.held_reports(), tally.accepted);
    Ok(tally)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The cache does what the spec model says, for any mix of flows, hops, path lengths, timers and
    /// flushes.
    #[test]
    fn the_cache_follows_the_spec(case in case()) {
        follows_the_spec(&case)?;
    }
}

/// The cases the property test draws reach every rule: 64 of them, from a fixed seed, evict, time out,
/// complete, write whole chunks and runs of cells, continue paths, and refuse bad hops and too many
/// copies, each many times (and follow the spec while they do).
#[test]
fn the_cases_reach_every_rule() {
    let mut runner = TestRunner::deterministic();
    let mut sum = Tally::default();
    for _ in 0..64 {
        let case = case()
            .new_tree(&mut runner)
            .expect("a case is drawn")
            .current();
        let t = match follows_the_spec(&case) {
            Ok(t) => t,
            Err(e) => panic!("{e}: {case:?}"),
        };
        sum.effects.evictions += t.effects.evictions;
        sum.effects.timeouts += t.effects.timeouts;
        sum.effects.continuations += t.effects.continuations;
        sum.effects.completions += t.effects.completions;
        sum.effects.reports += t.effects.reports;
        sum.accepted += t.accepted;
        sum.bad_hops += t.bad_hops;
        sum.mismatches += t.mismatches;
        sum.whole_chunks += t.whole_chunks;
        sum.partial += t.partial;
    }
    let e = &sum.effects;
    assert!(
        e.evictions > 500
            && e.timeouts > 500
            && e.continuations > 500
            && e.completions > 500
            && sum.whole_chunks > 500
            && sum.partial > 500
            && sum.bad_hops > 100
            && sum.mismatches > 100,
        "{sum:?}"
    );
}

#[test]
fn runs_of_cells() {
    let r = |have, hops| {
        runs_of(have, hops)
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
    };
    assert_eq!(r(0b0001_1100, 5), vec![(2, 5)]);
    assert_eq!(r(0b1010_1010, 8), vec![(1, 2), (3, 4), (5, 6), (7, 8)]);
    assert_eq!(r(0b0101_0101, 8), vec![(0, 1), (2, 3), (4, 5), (6, 7)]);
    assert_eq!(r(0b1111_0000, 5), vec![(4, 5)]);
    assert_eq!(r(0, 5), vec![]);
}

fn flow(have: u8, path_len: u8, length_known: bool) -> Flow {
    Flow {
        key: 1,
        values: [POSTCARD_BLANK; MAX_HOPS as usize],
        have,
        path_len,
        length_known,
        gen: 0,
        reports: 0,
    }
}

#[test]
fn cells_an_entry_writes() {
    // Length known (B = 5): held cells only, never a blank inside the path.
    assert_eq!(cells_to_write(&flow(0b00011, 5, true), 5), 0b00011);
    assert_eq!(cells_to_write(&flow(0b11100, 5, true), 5), 0b11100);
    // A 3-hop path in a 5-hop region: the blanks after hop 3 too, from any entry.
    assert_eq!(cells_to_write(&flow(0b00001, 3, true), 5), 0b11001);
    assert_eq!(cells_to_write(&flow(0b00110, 3, true), 5), 0b11110);
    // Length unknown: the entry with hop 1 writes everything, a continuation its own cells.
    assert_eq!(cells_to_write(&flow(0b00011, 5, false), 5), 0b11111);
    assert_eq!(cells_to_write(&flow(0b10100, 5, false), 5), 0b10100);
    assert_eq!(low_bits(8), 0xFF);
}
