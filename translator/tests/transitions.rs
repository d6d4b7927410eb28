//! A collector's life as the engine sees it (issue 26, items 2 and 11): every report taken ends written
//! or counted as lost, in reports (not work requests), across a collector that comes back with memory
//! the engine cannot use, one that comes back usable, and a stop.

mod support;

use dta_protocol::dta::{
    AppendRepr, Body, KeyIncrementRepr, KeyWriteRepr, PostcardRepr, SketchOp, SketchRepr,
};
use dta_protocol::layout::{Geometry, KeyWriteGeometry};
use dta_translator::{Config, DropReason, Engine, Instant};
use support::*;

/// Every primitive holds something: Key-Write N = 2 (two work requests a report), coalesced
/// Key-Increment N = 2, an Append batch written without its head word and a partial one, a cached
/// postcard flow, a sketch column waiting for its second reporter.
fn config() -> Config {
    let mut cfg = Config::default();
    cfg.key_increment.coalesce_us = 1_000;
    cfg.sketch.reporters = 2;
    cfg
}

/// The reports of [`feed`], by primitive: 10 Key-Writes, 6 Key-Increments (on 3 keys), 20 Append
/// entries (a batch of 16 and 4), 3 postcards of one 5-hop flow, 2 sketch columns of reporter 0.
const FED: u64 = 10 + 6 + 20 + 3 + 2;

fn feed(e: &mut Engine, now: Instant) {
    let from = reporter(1);
    let mut frames = Vec::new();
    for k in 0..10 {
        frames.push(report(
            &from,
            Body::KeyWrite(KeyWriteRepr {
                redundancy: 2,
                key: k,
                data: &[1, 2, 3, 4],
            }),
            0,
            false,
        ));
    }
    for k in 0..6 {
        frames.push(report(
            &from,
            Body::KeyIncrement(KeyIncrementRepr {
                redundancy: 2,
                key: k % 3,
                counter: 1,
            }),
            0,
            false,
        ));
    }
    for k in 0..20u32 {
        let data = k.to_le_bytes();
        frames.push(report(
            &from,
            Body::Append(AppendRepr {
                list_id: 3,
                data: &data,
            }),
            0,
            false,
        ));
    }
    for hop in 1..=3 {
        frames.push(report(
            &from,
            Body::Postcard(PostcardRepr {
                key: 77,
                hop,
                data: u32::from(hop),
            }),
            0,
            false,
        ));
    }
    let counters = [0u8; 8];
    for column in 0..2 {
        frames.push(report(
            &from,
            Body::SketchMerge(SketchRepr {
                sketch_id: 1,
                op: SketchOp::Sum,
                reporter_id: 0,
                column,
                counters: &counters,
            }),
            0,
            false,
        ));
    }
    for f in &frames {
        e.handle_frame(now, f);
    }
}

fn taken(e: &Engine) -> u64 {
    e.counters().reports_in.iter().sum::<u64>() - e.counters().drops.iter().sum::<u64>()
}

/// A collector back with Key-Write entries of 16 bytes (12 of data; reports carry 4): a welcome the engine refuses.
fn unusable() -> dta_protocol::control::Welcome {
    let mut w = welcome();
    for r in &mut w.regions {
        if let Geometry::KeyWrite(_) = r.geometry {
            r.geometry = Geometry::KeyWrite(KeyWriteGeometry::new(256, 16, 8).unwrap());
        }
    }
    w
}

#[test]
fn a_collector_back_with_unusable_memory_loses_counted_reports_and_resumes_when_usable() {
    let cfg = config();
    let mut e = Engine::new(cfg.clone(), &[welcome()], Instant(0)).unwrap();
    feed(&mut e, Instant(10));
    assert_eq!(taken(&e), FED, "{:?}", e.counters().drops);
    // Nothing acknowledged: every report taken is held, in a work request or a primitive.
    assert_eq!(e.held_reports(), FED);

    // The collector comes back with Key-Write entries the reports do not fit.
    let why = Engine::check_welcome(&cfg, 0, &unusable())
        .unwrap_err()
        .to_string();
    assert!(
        why.contains("Key-Write entries hold 12 data bytes, reports carry 4"),
        "{why}"
    );
    assert!(e
        .replace_collector(0, &unusable(), 0x1000, Instant(20))
        .is_err());
    // Its old memory is gone: everything held is lost, counted in reports (44 work requests were queued:
    // 20 Key-Write copies, 1 Append batch; the rest waited in the primitives).
    assert_eq!(e.detach_collector(0).unwrap(), FED);
    assert_eq!(e.held_reports(), 0);
    assert!(e.is_idle());
    assert!(
        drain(&mut e, Instant(30)).is_empty(),
        "nothing goes to an unusable collector"
    );
    // Reports for it now: refused and counted, every one of them, none queued.
    let before = e.counters().dropped(DropReason::CollectorUnusable);
    feed(&mut e, Instant(40));
    e.handle_timeout(Instant(1_000_000_000));
    assert_eq!(
        e.counters().dropped(DropReason::CollectorUnusable) - before,
        FED,
        "{:?}",
        e.counters().drops
    );
    assert_eq!(e.held_reports(), 0);
    assert!(drain(&mut e, Instant(50)).is_empty());
    // Detaching again loses nothing more.
    assert_eq!(e.detach_collector(0).unwrap(), 0);

    // The right collector returns: the engine starts over on it, nothing held to lose, and resumes.
    Engine::check_welcome(&cfg, 0, &welcome()).unwrap();
    assert_eq!(
        e.replace_collector(0, &welcome(), 0x2000, Instant(60))
            .unwrap(),
        0
    );
    let refused = e.counters().dropped(DropReason::CollectorUnusable);
    feed(&mut e, Instant(70));
    assert_eq!(e.counters().dropped(DropReason::CollectorUnusable), refused);
    assert_eq!(e.held_reports(), FED);
    // A responder acknowledges everything: every report is written, none held.
    let mut r = Responder::new(0x2000);
    let mut now = Instant(80);
    for _ in 0..100 {
        e.flush(now);
        let mut acks = Vec::new();
        for f in drain(&mut e, now) {
            acks.extend(r.handle(&f));
        }
        for a in &acks {
            e.handle_frame(now, a);
        }
        now = Instant(now.0 + 1_000);
        if e.is_idle() {
            break;
        }
    }
    assert!(e.is_idle());
    // What stays held is the sketch columns still waiting for reporter 1 (no flush writes an incomplete
    // column): counted, not silently dropped, if the translator stops now.
    assert_eq!(e.held_reports(), 2);
}

/// A collector restart with usable new memory: the loss returned is in reports, whatever the number of
/// work requests that carried them.
#[test]
fn a_restart_counts_lost_reports_not_work_requests() {
    let cfg = config();
    let mut e = Engine::new(cfg, &[welcome()], Instant(0)).unwrap();
    feed(&mut e, Instant(10));
    let queued = e.qp_stats(0).unwrap().queue as u64;
    assert_eq!(queued, 20 + 1, "20 Key-Write copies and one Append batch");
    let mut moved = welcome();
    for r in &mut moved.regions {
        r.va += 0x100_0000;
    }
    assert_eq!(
        e.replace_collector(0, &moved, 0x1000, Instant(20)).unwrap(),
        FED
    );
    assert_eq!(e.held_reports(), 0);
}
