//! Postcarding and Sketch-Merge with several translators and across a translator restart (issue 26, item
//! 4), as the collector's memory sees the engines' WRITEs.
//!
//! * Postcarding regions are shared by every translator: with the path length known, an entry writes
//!   only the cells it holds, so a flow whose postcards reach two translators (or a translator and its
//!   successor after a restart) reads back whole, in either order of their writes.
//! * A sketch has one merging translator (the collector withholds it from the others' welcomes). A
//!   restarted holder starts its merge afresh: reporters in mid-sketch are refused as out of order
//!   (NACKed, counted in reports) until they start the sketch again at column 0, and that sketch is
//!   exact; the stopped engine's incomplete columns are counted as held (lost at its stop).

mod support;

use dta_protocol::dta::{Body, PostcardRepr, SketchOp, SketchRepr};
use dta_protocol::hash::{hop_checksum, postcard_g};
use dta_protocol::layout::{PostcardGeometry, SketchGeometry};
use dta_protocol::roce::{Extension, FrameRepr};
use dta_translator::{Config, DropReason, Engine, Instant};
use support::*;

fn engine(f: impl FnOnce(&mut Config)) -> Engine {
    let mut c = Config::default();
    f(&mut c);
    Engine::new(c, &[welcome()], Instant(0)).unwrap()
}

/// The (va, payload) of every WRITE an engine sends now; every frame counts as delivered (no collector
/// answers here), so nothing is sent twice. Frames that are not RoCE (DTA NACKs to reporters) are
/// counted in `nacks`.
fn writes_and_nacks(e: &mut Engine, now: Instant, nacks: &mut usize) -> Vec<(u64, Vec<u8>)> {
    let mut out = Vec::new();
    for f in drain(e, now) {
        match FrameRepr::parse(&f) {
            Ok(r) => match r.ext {
                Extension::Reth(h) => out.push((h.va, r.payload.to_vec())),
                other => panic!("unexpected {other:?}"),
            },
            Err(_) => *nacks += 1,
        }
    }
    e.assume_delivered();
    out
}

/// [`writes_and_nacks`] where no NACK may go.
fn writes(e: &mut Engine, now: Instant) -> Vec<(u64, Vec<u8>)> {
    let mut nacks = 0;
    let w = writes_and_nacks(e, now, &mut nacks);
    assert_eq!(nacks, 0);
    w
}

/// Applies WRITEs to a model of the region at `base`.
fn apply(mem: &mut [u8], base: u64, writes: &[(u64, Vec<u8>)]) {
    for (va, p) in writes {
        let at = (va - base) as usize;
        mem[at..at + p.len()].copy_from_slice(p);
    }
}

fn postcard(key: u32, hop: u8, data: u32) -> Vec<u8> {
    report(
        &reporter(1),
        Body::Postcard(PostcardRepr { key, hop, data }),
        0,
        false,
    )
}

const FLOWS: usize = 24;

/// The value hop `hop` of flow `key` reports.
fn value(key: u32, hop: u8) -> u32 {
    1_000 * key + u32::from(hop)
}

/// The hops of every flow read back from the postcard region: each cell decoded, None where it does
/// not decode to the flow's value.
fn paths(mem: &[u8]) -> Vec<Vec<Option<u32>>> {
    let g = PostcardGeometry::new(64, 5, 2).unwrap();
    keys()
        .into_iter()
        .map(|key| {
            let at = g.offset(key, 0) as usize;
            (1..=5u8)
                .map(|hop| {
                    let c = at + usize::from(hop - 1) * 4;
                    let cell = u32::from_be_bytes(mem[c..c + 4].try_into().unwrap());
                    let want = value(key, hop);
                    (cell ^ hop_checksum(hop, key).unwrap() == postcard_g(want)).then_some(want)
                })
                .collect()
        })
        .collect()
}

fn whole_paths() -> Vec<Vec<Option<u32>>> {
    keys()
        .into_iter()
        .map(|key| (1..=5u8).map(|hop| Some(value(key, hop))).collect())
        .collect()
}

/// The test's flows: the first keys whose chunks differ (the region is direct-mapped, and flows that
/// share a chunk overwrite each other whatever the translators).
fn keys() -> Vec<u32> {
    let g = PostcardGeometry::new(64, 5, 2).unwrap();
    let mut seen = std::collections::HashSet::new();
    (0..)
        .filter(|&k| seen.insert(g.offset(k, 0)))
        .take(FLOWS)
        .collect()
}

/// Two translators each get some hops of every flow (odd hops to one, even hops to the other, as when
/// the switches of a path report to different translators). Each writes only its cells, so the region
/// holds every whole path whichever translator's writes land first; the memory starts with bytes that
/// decode for no flow, so a cell nobody wrote cannot pass.
#[test]
fn postcards_of_a_flow_split_between_two_translators_compose() {
    let idle = |c: &mut Config| c.postcard.idle_timeout_us = 1_000;
    let (mut a, mut b) = (engine(idle), engine(idle));
    a.assume_delivered();
    b.assume_delivered();
    for key in keys() {
        for hop in 1..=5u8 {
            let e = if hop % 2 == 1 { &mut a } else { &mut b };
            e.handle_frame(Instant(0), &postcard(key, hop, value(key, hop)));
        }
    }
    let later = Instant(2_000_000);
    for e in [&mut a, &mut b] {
        e.handle_timeout(later);
    }
    let (wa, wb) = (writes(&mut a, later), writes(&mut b, later));
    // Cells 1, 3, 5 of each flow from one, cells 2, 4 from the other: one WRITE per cell.
    assert_eq!((wa.len(), wb.len()), (3 * FLOWS, 2 * FLOWS));
    assert!(wa.iter().chain(&wb).all(|(_, p)| p.len() == 4));
    for order in [[&wa, &wb], [&wb, &wa]] {
        let mut mem = vec![0xA5u8; 64 * 32];
        for w in order {
            apply(&mut mem, PC_VA, w);
        }
        assert_eq!(paths(&mem), whole_paths());
    }
    for e in [&a, &b] {
        assert_eq!(e.counters().postcard_timeouts, FLOWS as u64);
        assert_eq!(e.counters().drops.iter().sum::<u64>(), 0);
    }
}

/// A translator restarts in the middle of flows: the stopping engine writes what its cache holds (the
/// daemon flushes at a stop), and its successor's later hops of the same flows are continuations that
/// write only their cells. Every path reads back whole; nothing is counted lost.
#[test]
fn postcards_continue_across_a_translator_restart() {
    let idle = |c: &mut Config| c.postcard.idle_timeout_us = 1_000;
    let mut mem = vec![0xA5u8; 64 * 32];
    let mut before = engine(idle);
    before.assume_delivered();
    for key in keys() {
        for hop in 1..=2u8 {
            before.handle_frame(Instant(0), &postcard(key, hop, value(key, hop)));
        }
    }
    // The stop: everything cached is written, nothing is held.
    before.flush(Instant(10));
    apply(&mut mem, PC_VA, &writes(&mut before, Instant(10)));
    assert_eq!(before.held_reports(), 0);
    let mut after = engine(idle);
    after.assume_delivered();
    for key in keys() {
        for hop in 3..=5u8 {
            after.handle_frame(Instant(0), &postcard(key, hop, value(key, hop)));
        }
    }
    after.handle_timeout(Instant(2_000_000));
    apply(&mut mem, PC_VA, &writes(&mut after, Instant(2_000_000)));
    assert_eq!(paths(&mem), whole_paths());
    assert_eq!(
        after.counters().postcard_continuations,
        FLOWS as u64,
        "every successor entry lacks hop 1"
    );
}

fn sketch(reporter_id: u16, column: u16, a: u32, b: u32) -> Vec<u8> {
    let mut counters = a.to_be_bytes().to_vec();
    counters.extend_from_slice(&b.to_be_bytes());
    report(
        &reporter(1 + reporter_id as u8),
        Body::SketchMerge(SketchRepr {
            sketch_id: 1,
            op: SketchOp::Sum,
            reporter_id,
            column,
            counters: &counters,
        }),
        0,
        false,
    )
}

/// Reporter `r`'s counters for column `c` of sketch epoch `epoch` (two rows).
fn counters(epoch: u32, r: u16, c: u16) -> (u32, u32) {
    let base = 10_000 * epoch + 100 * u32::from(c) + u32::from(r);
    (base, base + 50)
}

/// The sketch region's counters, column-major (rows consecutive), as the collector reads them.
fn sketch_cells(mem: &[u8]) -> Vec<u32> {
    mem.chunks_exact(4)
        .map(|c| u32::from_be_bytes(c.try_into().unwrap()))
        .collect()
}

/// What the merged (summed) sketch of `epoch` holds, over reporters 0 and 1.
fn merged(epoch: u32) -> Vec<u32> {
    (0..8u16)
        .flat_map(|c| {
            let (a0, b0) = counters(epoch, 0, c);
            let (a1, b1) = counters(epoch, 1, c);
            [a0 + a1, b0 + b1]
        })
        .collect()
}

/// The sketch's holder restarts in the middle of a sketch (two reporters, 8 columns). The stopped engine
/// writes its complete columns and holds the incomplete one (counted as lost at its stop); the new one
/// starts its merge afresh: the reporters' remaining columns are refused as out of order (each NACKed
/// and counted, 7 reports), and the next sketch, from column 0, is merged and written exactly.
#[test]
fn a_sketch_restarts_with_its_translator_and_counts_what_it_refuses() {
    let g = SketchGeometry::new(2, 8).unwrap();
    let cfg = |c: &mut Config| {
        c.sketch.reporters = 2;
        c.sketch.column_batch = 2;
    };
    let mut mem = vec![0u8; g.len() as usize];
    let mut before = engine(cfg);
    before.assume_delivered();
    // Epoch 1: columns 0-3 from both reporters, column 4 from reporter 0 only.
    for c in 0..4u16 {
        for r in 0..2 {
            let (x, y) = counters(1, r, c);
            before.handle_frame(Instant(0), &sketch(r, c, x, y));
        }
    }
    let (x, y) = counters(1, 0, 4);
    before.handle_frame(Instant(0), &sketch(0, 4, x, y));
    before.flush(Instant(10));
    apply(&mut mem, SKETCH_VA, &writes(&mut before, Instant(10)));
    assert_eq!(&sketch_cells(&mem)[..8], &merged(1)[..8]);
    // Column 4's one contribution was never written: held at the stop, counted there.
    assert_eq!(before.held_reports(), 1);
    let mut after = engine(cfg);
    after.assume_delivered();
    // The reporters go on with columns 4-7 of epoch 1 (reporter 0 from 5): out of order for the new
    // merge, which expects column 0 from each.
    let mut refused = 0;
    for r in 0..2u16 {
        for c in (if r == 0 { 5 } else { 4 })..8u16 {
            let (x, y) = counters(1, r, c);
            after.handle_frame(Instant(20), &sketch(r, c, x, y));
            refused += 1;
        }
    }
    assert_eq!(refused, 7);
    assert_eq!(after.counters().dropped(DropReason::OutOfOrder), 7);
    // One NACK per refused report went to its reporter; nothing was written.
    let mut nacks = 0;
    assert!(writes_and_nacks(&mut after, Instant(20), &mut nacks).is_empty());
    assert_eq!(nacks, 7);
    // Epoch 2 from column 0: merged and written whole, exactly.
    for c in 0..8u16 {
        for r in 0..2 {
            let (x, y) = counters(2, r, c);
            after.handle_frame(Instant(30), &sketch(r, c, x, y));
        }
    }
    apply(&mut mem, SKETCH_VA, &writes(&mut after, Instant(30)));
    assert_eq!(sketch_cells(&mem), merged(2));
    assert_eq!(after.held_reports(), 0);
    assert_eq!(after.counters().drops.iter().sum::<u64>(), 7);
}
