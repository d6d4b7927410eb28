//! The steady state allocates nothing per report: a counting global allocator around every engine call
//! (reports in, frames out, ACKs in, timers) on a virtual clock, after a warm-up that lets queues, the
//! window, the frame templates and the payload pool reach their working sizes.

mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use dta_protocol::dta::{
    AppendRepr, Body, KeyIncrementRepr, KeyWriteRepr, PostcardRepr, SketchOp, SketchRepr,
};
use dta_protocol::roce::{AckKind, BthOpcode, FrameRepr};
use dta_translator::{Config, Engine, Instant};
use support::*;

struct Counting;

thread_local! {
    // Per thread, so tests running in parallel do not count each other.
    static ON: Cell<bool> = const { Cell::new(false) };
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

fn note() {
    if ON.with(Cell::get) {
        ALLOCS.with(|a| a.set(a.get() + 1));
    }
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        note();
        System.alloc(l)
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        note();
        System.alloc_zeroed(l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        note();
        System.realloc(p, l, n)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l)
    }
}

#[global_allocator]
static A: Counting = Counting;

/// Allocations `f` makes on this thread.
fn counted<T>(f: impl FnOnce() -> T) -> (T, u64) {
    ALLOCS.with(|a| a.set(0));
    ON.with(|o| o.set(true));
    let r = f();
    ON.with(|o| o.set(false));
    (r, ALLOCS.with(Cell::get))
}

/// Feeds `reports` round and round, answers every frame that asks for it like a lossless collector, and
/// returns the allocations of the last `measured` reports (after `warmup`) and the frames they produced.
fn steady(cfg: Config, reports: &[Vec<u8>], warmup: usize, measured: usize) -> (u64, u64) {
    let mut e = Engine::new(cfg, &[welcome()], Instant(0)).unwrap();
    let mut out = Vec::with_capacity(2048);
    let mut acks = Vec::new();
    let (mut allocs, mut frames) = (0, 0);
    for k in 0..warmup + measured {
        let now = Instant(k as u64 * 1000);
        let on = k >= warmup;
        let mut n = 0;
        n += counted(|| {
            if e.poll_timeout().is_some_and(|t| t <= now) {
                e.handle_timeout(now);
            }
        })
        .1;
        n += counted(|| e.handle_frame(now, &reports[k % reports.len()])).1;
        loop {
            let (more, a) = counted(|| e.poll_transmit(now, &mut out));
            n += a;
            if !more {
                break;
            }
            frames += u64::from(on);
            // Outside the count: the test's own collector.
            let f = FrameRepr::parse(&out).unwrap();
            if f.bth.ack_req || f.bth.opcode == BthOpcode::FetchAdd {
                let atomic = (f.bth.opcode == BthOpcode::FetchAdd).then_some(0);
                acks.push(response(f.bth.psn, AckKind::Ack { credits: 31 }, atomic));
            }
        }
        for a in acks.drain(..) {
            n += counted(|| e.handle_frame(now, &a)).1;
        }
        if on {
            allocs += n;
        }
    }
    assert!(e.counters().roce_frames_out > 0);
    assert_eq!(e.counters().retransmitted_frames, 0);
    (allocs, frames)
}

fn check(name: &str, cfg: Config, reports: &[Vec<u8>]) {
    let (allocs, frames) = steady(cfg, reports, 3000, 5000);
    assert!(frames > 0, "{name}: no frames in the measured part");
    assert_eq!(
        allocs, 0,
        "{name}: {allocs} allocations for 5000 reports ({frames} frames)"
    );
}

#[test]
fn key_write_allocates_nothing_per_report() {
    let data = [0xaa, 0xbb, 0xcc, 0xdd];
    let reports: Vec<_> = (0..997u32)
        .map(|key| {
            let body = Body::KeyWrite(KeyWriteRepr {
                redundancy: 1 + (key % 4) as u8,
                key,
                data: &data,
            });
            report(&reporter(1), body, 0, false)
        })
        .collect();
    check("Key-Write", Config::default(), &reports);
}

#[test]
fn key_increment_allocates_nothing_per_report() {
    let reports: Vec<_> = (0..997u32)
        .map(|key| {
            let body = Body::KeyIncrement(KeyIncrementRepr {
                redundancy: 2,
                key: key % 300,
                counter: 1,
            });
            report(&reporter(1), body, 0, false)
        })
        .collect();
    check("Key-Increment", Config::default(), &reports);
    let mut coalescing = Config::default();
    coalescing.key_increment.coalesce_us = 20;
    check("Key-Increment (coalescing)", coalescing, &reports);
}

#[test]
fn append_allocates_nothing_per_report() {
    let reports: Vec<_> = (0..1000u32)
        .map(|v| {
            let data = v.to_be_bytes();
            report(
                &reporter(1),
                Body::Append(AppendRepr {
                    list_id: 3,
                    data: &data,
                }),
                0,
                false,
            )
        })
        .collect();
    // Batches of 16 entries of 4 bytes: 64-byte WRITEs, beyond the inline payload.
    check("Append", Config::default(), &reports);
}

#[test]
fn postcarding_allocates_nothing_per_report() {
    let reports: Vec<_> = (0..1000u32)
        .map(|i| {
            let (key, hop) = (i / 5, (i % 5) as u8 + 1);
            report(
                &reporter(1),
                Body::Postcard(PostcardRepr { key, hop, data: i }),
                0,
                false,
            )
        })
        .collect();
    check("Postcarding", Config::default(), &reports);
}

#[test]
fn sketch_merge_allocates_nothing_per_report() {
    let reports: Vec<_> = (0..8u16)
        .map(|column| {
            let mut counters = [0u8; 8];
            counters[3] = column as u8;
            counters[7] = 1;
            report(
                &reporter(1),
                Body::SketchMerge(SketchRepr {
                    sketch_id: 1,
                    op: SketchOp::Sum,
                    reporter_id: 0,
                    column,
                    counters: &counters,
                }),
                0,
                false,
            )
        })
        .collect();
    // Eight columns of two counters: one 64-byte WRITE per round, beyond the inline payload.
    check("Sketch-Merge", Config::default(), &reports);
}
