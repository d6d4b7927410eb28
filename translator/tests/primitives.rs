//! Each primitive's frames for hand-computed cases (addresses, lengths, payloads, iCRC valid).

mod support;

use dta_protocol::dta::{
    AppendRepr, Body, KeyIncrementRepr, KeyWriteRepr, PostcardPathLenRepr, PostcardRepr, SketchOp,
    SketchRepr,
};
use dta_protocol::hash::{hop_checksum, postcard_g, POSTCARD_BLANK};
use dta_protocol::roce::{Extension, FrameRepr};
use dta_translator::{Config, DropReason, Engine, Instant};
use support::*;

/// (va, payload) of WRITEs, (va, add) of FETCH_ADDs as (va, bytes of add LE).
fn ops(frames: &[Vec<u8>]) -> Vec<(u64, Vec<u8>)> {
    frames
        .iter()
        .map(|f| {
            let r = FrameRepr::parse(f).expect("valid frame, iCRC included");
            assert_eq!(r.endpoints.dst_ip, COLLECTOR_IP);
            match r.ext {
                Extension::Reth(h) => {
                    assert_eq!(h.rkey, RKEY);
                    (h.va, r.payload.to_vec())
                }
                Extension::Atomic(a) => (a.va, a.swap_add.to_le_bytes().to_vec()),
                other => panic!("unexpected {other:?}"),
            }
        })
        .collect()
}

fn engine(f: impl FnOnce(&mut Config)) -> Engine {
    let mut c = Config::default();
    f(&mut c);
    Engine::new(c, &[welcome()], Instant(0)).unwrap()
}

/// Through `handle_frame`, one report at a time: `Engine::handle_report`'s Key-Write branch, the one
/// Key-Write path besides a burst's run (`burst.rs` checks the run against it).
#[test]
fn key_write_design_vector() {
    let mut e = engine(|_| {});
    let r = report(
        &reporter(1),
        Body::KeyWrite(KeyWriteRepr {
            redundancy: 4,
            key: 1,
            data: &[0xaa, 0xbb, 0xcc, 0xdd],
        }),
        0,
        false,
    );
    e.handle_frame(Instant(0), &r);
    let f = drain(&mut e, Instant(0));
    // Key 1 -> checksum 0x99f8b879 (DESIGN.md section 3), slots 173, 100, 212, 95 for S = 256 with the
    // per-copy placement polynomials (dta-protocol hash.rs).
    let entry = vec![0x79, 0xb8, 0xf8, 0x99, 0xaa, 0xbb, 0xcc, 0xdd];
    assert_eq!(
        ops(&f),
        [173u64, 100, 212, 95]
            .iter()
            .map(|s| (KW_VA + s * 8, entry.clone()))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        psns(&f),
        vec![(0, false), (1, false), (2, false), (3, true)]
    );
    assert_eq!(e.counters().ops_out[0], 4);
    // Redundancy above the region's n_max (8 is the wire limit; 9 is malformed).
    let bad = report(
        &reporter(1),
        Body::KeyWrite(KeyWriteRepr {
            redundancy: 1,
            key: 1,
            data: &[0; 4],
        }),
        0,
        false,
    );
    let mut bad9 = bad.clone();
    bad9[42 + 3] = 9;
    e.handle_frame(Instant(0), &bad9);
    assert_eq!(e.counters().dropped(DropReason::BadRedundancy), 1);
}

#[test]
fn key_increment_and_coalescing() {
    let ki = |key, counter| {
        report(
            &reporter(1),
            Body::KeyIncrement(KeyIncrementRepr {
                redundancy: 2,
                key,
                counter,
            }),
            0,
            false,
        )
    };
    let mut e = engine(|_| {});
    e.handle_frame(Instant(0), &ki(1, 7));
    // Key 1's slots for copies 0 and 1 are 173 and 100; counters are 8 bytes.
    assert_eq!(
        ops(&drain(&mut e, Instant(0))),
        vec![
            (KI_VA + 173 * 8, 7u64.to_le_bytes().to_vec()),
            (KI_VA + 100 * 8, 7u64.to_le_bytes().to_vec())
        ]
    );
    let mut e = engine(|c| c.key_increment.coalesce_us = 5);
    e.handle_frame(Instant(0), &ki(1, 7));
    e.handle_frame(Instant(1000), &ki(1, 3));
    assert!(drain(&mut e, Instant(1000)).is_empty());
    assert_eq!(e.poll_timeout(), Some(Instant(5000)));
    e.handle_timeout(Instant(5000));
    assert_eq!(
        ops(&drain(&mut e, Instant(5000))),
        vec![
            (KI_VA + 173 * 8, 10u64.to_le_bytes().to_vec()),
            (KI_VA + 100 * 8, 10u64.to_le_bytes().to_vec())
        ]
    );
    assert_eq!(e.counters().increments_coalesced, 2);
}

fn append(v: u32) -> Vec<u8> {
    report(
        &reporter(1),
        Body::Append(AppendRepr {
            list_id: 3,
            data: &v.to_be_bytes(),
        }),
        0,
        false,
    )
}

#[test]
fn append_batches_wrap_flush_and_head() {
    let mut e = engine(|c| c.append.idle_flush_us = 10);
    // 64-entry ring, batch 16: entries 0..16 in one write at slot 0.
    for v in 0..16 {
        e.handle_frame(Instant(0), &append(v));
    }
    let f = ops(&drain(&mut e, Instant(0)));
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].0, APPEND_VA + 64);
    assert_eq!(f[0].1.len(), 64);
    assert_eq!(&f[0].1[60..], &15u32.to_be_bytes());
    // Five entries then idle: partial flush at slot 16, then the head word (21, LE) at offset 0.
    for v in 16..21 {
        e.handle_frame(Instant(0), &append(v));
    }
    assert!(drain(&mut e, Instant(0)).is_empty());
    assert_eq!(e.poll_timeout(), Some(Instant(10_000)));
    e.handle_timeout(Instant(10_000));
    let f = ops(&drain(&mut e, Instant(10_000)));
    assert_eq!(f[0].0, APPEND_VA + 64 + 16 * 4);
    assert_eq!(f[0].1.len(), 20);
    assert_eq!(f[1], (APPEND_VA, 21u64.to_le_bytes().to_vec()));
    // From slot 21, a batch is cut at the ring's end (slot 64): 16, 16, then 11 entries, then slot 0.
    for v in 21..80 {
        e.handle_frame(Instant(20_000), &append(v));
    }
    let f = ops(&drain(&mut e, Instant(20_000)));
    let got: Vec<(u64, usize)> = f.iter().map(|(va, p)| (*va, p.len())).collect();
    assert_eq!(
        got,
        vec![
            (APPEND_VA + 64 + 21 * 4, 64),
            (APPEND_VA + 64 + 37 * 4, 64),
            (APPEND_VA + 64 + 53 * 4, 44),
            (APPEND_VA + 64, 64),
        ]
    );
    assert_eq!(&f[3].1[..4], &64u32.to_be_bytes());
}

/// Feeds `n` Append entries (values `first..first + n`) to list 3, each batch answered, and flushes the
/// rest at idle; returns every WRITE as (va, payload) in order.
fn append_stream(e: &mut Engine, first: u32, n: u32, at: u64) -> Vec<(u64, Vec<u8>)> {
    let mut writes = Vec::new();
    for v in first..first + n {
        e.handle_frame(Instant(at), &append(v));
        let f = drain(e, Instant(at));
        answer_all(&mut [&mut *e], Instant(at), &f);
        writes.extend(ops(&f));
    }
    e.handle_timeout(Instant(at + 1_000_000));
    let f = drain(e, Instant(at + 1_000_000));
    answer_all(&mut [&mut *e], Instant(at + 1_000_000), &f);
    writes.extend(ops(&f));
    writes
}

/// The list region (64-byte header and 64 entries of 4 bytes) after `writes`.
fn list_memory(writes: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let mut mem = vec![0u8; 64 + 64 * 4];
    for (va, p) in writes {
        let at = usize::try_from(va - APPEND_VA).expect("in the list");
        mem[at..at + p.len()].copy_from_slice(p);
    }
    mem
}

/// Each ring slot holds the entry of absolute index `i` (value `i - base`) for the last 64 indices below
/// `head`.
fn assert_ring(mem: &[u8], head: u64, base: u64) {
    for i in head - 64..head {
        let at = 64 + (i % 64) as usize * 4;
        let want = u32::try_from(i - base).expect("small");
        assert_eq!(
            &mem[at..at + 4],
            &want.to_be_bytes(),
            "entry {i} at slot {}",
            i % 64
        );
    }
}

/// Issue 26 item 3: a translator welcomed with a list's head word (3,000 entries written before its
/// restart) continues the list there: 1,000 more entries leave the head word at 4,000, written at ring
/// slots 3,000 mod 64 onwards, rather than rewinding to entry 0 (head 1,000).
#[test]
fn append_continues_from_the_welcomes_head() {
    let mut w = welcome();
    w.append_heads = vec![dta_protocol::control::AppendHead {
        list: 3,
        head: 3000,
    }];
    let mut e = Engine::new(Config::default(), &[w.clone()], Instant(0)).unwrap();
    let writes = append_stream(&mut e, 0, 1000, 0);
    // 3000 mod 64 = 56: the first batch holds the 8 entries up to the ring's end, the next starts at slot 0.
    assert_eq!(writes[0].0, APPEND_VA + 64 + 56 * 4);
    assert_eq!(writes[0].1.len(), 8 * 4);
    assert_eq!(writes[1].0, APPEND_VA + 64);
    assert_eq!(writes[1].1.len(), 16 * 4);
    let heads: Vec<u64> = writes
        .iter()
        .filter(|(va, _)| *va == APPEND_VA)
        .map(|(_, p)| u64::from_le_bytes(p[..8].try_into().expect("8 bytes")))
        .collect();
    assert_eq!(heads.last(), Some(&4000));
    assert!(heads.iter().all(|&h| h > 3000 && h <= 4000), "{heads:?}");
    let mem = list_memory(&writes);
    assert_eq!(&mem[..8], &4000u64.to_le_bytes());
    assert_ring(&mem, 4000, 3000);

    // A QP re-established on the same collector keeps the translator's own head (4,000), not the older
    // head of the welcome that re-established it.
    e.reestablish(0, &w, 0x100, Instant(3_000_000)).unwrap();
    let writes = append_stream(&mut e, 1000, 16, 3_000_000);
    assert_eq!(writes[0].0, APPEND_VA + 64 + (4000 % 64) * 4);
    assert_eq!(
        writes.last().map(|w| w.1.clone()),
        Some(4016u64.to_le_bytes().to_vec())
    );

    // A collector that comes back (replace_collector) is continued from its new welcome's head.
    w.append_heads[0].head = 130;
    e.replace_collector(0, &w, 0x200, Instant(6_000_000))
        .unwrap();
    let writes = append_stream(&mut e, 0, 100, 6_000_000);
    assert_eq!(writes[0].0, APPEND_VA + 64 + 2 * 4);
    assert_eq!(
        writes.last().map(|w| w.1.clone()),
        Some(230u64.to_le_bytes().to_vec())
    );
    let mem = list_memory(&writes);
    for i in 166..230u64 {
        let at = 64 + (i % 64) as usize * 4;
        let want = u32::try_from(i - 130).expect("small");
        assert_eq!(&mem[at..at + 4], &want.to_be_bytes(), "entry {i}");
    }

    // Without a head in the welcome a list starts at 0, as before.
    let mut e = engine(|_| {});
    let writes = append_stream(&mut e, 0, 100, 0);
    assert_eq!(writes[0].0, APPEND_VA + 64);
    assert_eq!(
        writes.last().map(|w| w.1.clone()),
        Some(100u64.to_le_bytes().to_vec())
    );
}

fn postcard(key: u32, hop: u8, data: u32) -> Vec<u8> {
    report(
        &reporter(1),
        Body::Postcard(PostcardRepr { key, hop, data }),
        0,
        false,
    )
}

fn cell(chunk: &[u8], hop: u8) -> u32 {
    let at = usize::from(hop - 1) * 4;
    u32::from_be_bytes(chunk[at..at + 4].try_into().unwrap())
}

#[test]
fn postcard_complete_and_eviction() {
    let mut e = engine(|c| {
        c.postcard.cache_size = 1;
        c.postcard.redundancy = 2;
    });
    // Path of 5 hops complete: two chunk copies of 32 bytes.
    for hop in 1..=5 {
        e.handle_frame(Instant(0), &postcard(0xdeadbeef, hop, 100 + u32::from(hop)));
    }
    let f = ops(&drain(&mut e, Instant(0)));
    assert_eq!(f.len(), 2);
    // dta-protocol's layout test: key 0xdeadbeef, copy 1 -> chunk 1020 of 1024; here C = 64.
    assert_eq!(f[1].0, PC_VA + (1020 % 64) * 32);
    for hop in 1..=5u8 {
        assert_eq!(
            cell(&f[0].1, hop) ^ hop_checksum(hop, 0xdeadbeef).unwrap(),
            postcard_g(100 + u32::from(hop))
        );
    }
    assert_eq!(&f[0].1[20..], &[0u8; 12]);
    // Two hops of flow 7, then flow 8 takes the only cache slot: flow 7 is written, its two cells only
    // (opcode 0x04's paths are 5 hops: no blank goes inside the path, hops 3-5 may still come).
    e.handle_frame(Instant(0), &postcard(7, 1, 11));
    e.handle_frame(Instant(0), &postcard(7, 2, 12));
    e.handle_frame(Instant(0), &postcard(8, 1, 21));
    let f = ops(&drain(&mut e, Instant(0)));
    assert_eq!(f.len(), 2);
    let c = &f[0].1;
    assert_eq!(c.len(), 8);
    assert_eq!(cell(c, 1) ^ hop_checksum(1, 7).unwrap(), postcard_g(11));
    assert_eq!(cell(c, 2) ^ hop_checksum(2, 7).unwrap(), postcard_g(12));
    let g = dta_protocol::layout::PostcardGeometry::new(64, 5, 2).unwrap();
    assert_eq!(f[0].0, PC_VA + g.offset(7, 0));
    assert_eq!(e.counters().postcard_evictions, 1);
    assert_eq!(
        e.counters().dropped(DropReason::BadHop),
        0,
        "hop 1..=5 are all valid"
    );
    e.handle_frame(Instant(0), &postcard(8, 6, 1));
    assert_eq!(e.counters().dropped(DropReason::BadHop), 1);
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

#[test]
fn sketch_merges_columns_and_nacks_gaps() {
    let mut e = engine(|c| {
        c.sketch.reporters = 2;
        c.sketch.column_batch = 2;
    });
    e.handle_frame(Instant(0), &sketch(0, 0, 1, 2));
    e.handle_frame(Instant(0), &sketch(0, 1, 3, 4));
    assert!(drain(&mut e, Instant(0)).is_empty());
    e.handle_frame(Instant(0), &sketch(1, 0, 10, 20));
    assert!(
        drain(&mut e, Instant(0)).is_empty(),
        "batch of 2 not complete"
    );
    e.handle_frame(Instant(0), &sketch(1, 1, 30, 40));
    let f = ops(&drain(&mut e, Instant(0)));
    // Columns 0 and 1 (2 rows each) merged by sum, big-endian, in one write at the sketch base.
    let want: Vec<u8> = [11u32, 22, 33, 44]
        .iter()
        .flat_map(|v| v.to_be_bytes())
        .collect();
    assert_eq!(f, vec![(SKETCH_VA, want)]);
    // Reporter 0 skips column 2: the report is dropped and the reporter NACKed (last in order: 1).
    e.handle_frame(Instant(0), &sketch(0, 3, 1, 1));
    let n = drain(&mut e, Instant(0));
    assert_eq!(n.len(), 1);
    assert_eq!(&n[0][42..], &[0x05, 0x01, 0x00, 0x01, 0x80]);
    assert_eq!(e.counters().dropped(DropReason::OutOfOrder), 1);
    e.handle_frame(Instant(0), &sketch(0, 1, 1, 1));
    assert_eq!(e.counters().dropped(DropReason::Duplicate), 1);
}

/// Applies WRITEs to a model of the postcard region (from `PC_VA`) and returns the memory.
fn apply(mem: &mut [u8], writes: &[(u64, Vec<u8>)]) {
    for (va, p) in writes {
        let at = (va - PC_VA) as usize;
        mem[at..at + p.len()].copy_from_slice(p);
    }
}

#[test]
fn postcard_partial_flushes_of_one_flow_compose() {
    let mut e = engine(|c| {
        c.postcard.redundancy = 1;
        c.postcard.idle_timeout_us = 1_000;
    });
    let g = dta_protocol::layout::PostcardGeometry::new(64, 5, 2).unwrap();
    let at = g.offset(9, 0) as usize;
    // Memory a previous flow left: cells that never decode for flow 9.
    let mut mem = vec![0xA5u8; 64 * 32];
    // No collector answers here: count every frame as delivered, so nothing is retransmitted.
    e.assume_delivered();
    // Hops 1-2 of flow 9, then its idle timeout: their two cells, no blank inside the 5-hop path.
    e.handle_frame(Instant(0), &postcard(9, 1, 31));
    e.handle_frame(Instant(0), &postcard(9, 2, 32));
    e.handle_timeout(Instant(1_000_000));
    let f = ops(&drain(&mut e, Instant(1_000_000)));
    assert_eq!(f.len(), 1);
    assert_eq!((f[0].0, f[0].1.len()), (PC_VA + at as u64, 8));
    apply(&mut mem, &f);
    e.assume_delivered();
    // Hops 3-5 arrive 2 ms later: a continuation, one WRITE of cells 3..=5 only.
    for hop in 3..=5 {
        e.handle_frame(Instant(2_000_000), &postcard(9, hop, 30 + u32::from(hop)));
    }
    e.handle_timeout(Instant(3_000_000));
    let f = ops(&drain(&mut e, Instant(3_000_000)));
    assert_eq!(f.len(), 1);
    assert_eq!((f[0].0, f[0].1.len()), (PC_VA + at as u64 + 8, 12));
    apply(&mut mem, &f);
    e.assume_delivered();
    assert_eq!(e.counters().postcard_timeouts, 2);
    assert_eq!(e.counters().postcard_continuations, 1);
    for hop in 1..=5u8 {
        assert_eq!(
            cell(&mem[at..at + 32], hop) ^ hop_checksum(hop, 9).unwrap(),
            postcard_g(30 + u32::from(hop)),
            "hop {hop}"
        );
    }
    // A continuation with a hole (hops 2 and 4 of flow 10): two WRITEs of one cell each.
    e.handle_frame(Instant(4_000_000), &postcard(10, 2, 1));
    e.handle_frame(Instant(4_000_000), &postcard(10, 4, 1));
    e.handle_timeout(Instant(5_000_000));
    let f = ops(&drain(&mut e, Instant(5_000_000)));
    let base = PC_VA + g.offset(10, 0);
    let got: Vec<(u64, usize)> = f.iter().map(|(va, p)| (*va, p.len())).collect();
    assert_eq!(got, vec![(base + 4, 4), (base + 12, 4)]);
    e.assume_delivered();

    // Out of order: hops 3-5 of flow 11 written first, hops 1-2 a timeout later; nothing covers anything.
    let at = g.offset(11, 0) as usize;
    for hop in 3..=5 {
        e.handle_frame(Instant(6_000_000), &postcard(11, hop, 50 + u32::from(hop)));
    }
    e.handle_timeout(Instant(7_000_000));
    apply(&mut mem, &ops(&drain(&mut e, Instant(7_000_000))));
    e.assume_delivered();
    for hop in 1..=2 {
        e.handle_frame(Instant(8_000_000), &postcard(11, hop, 50 + u32::from(hop)));
    }
    e.handle_timeout(Instant(9_000_000));
    apply(&mut mem, &ops(&drain(&mut e, Instant(9_000_000))));
    e.assume_delivered();
    for hop in 1..=5u8 {
        assert_eq!(
            cell(&mem[at..at + 32], hop) ^ hop_checksum(hop, 11).unwrap(),
            postcard_g(50 + u32::from(hop)),
            "flow 11 hop {hop}"
        );
    }

    // Opcode 0x06, a 3-hop path in the 5-hop region: complete at hop 3, one whole chunk, blanks at 4-5.
    for hop in 1..=3 {
        let r = report(
            &reporter(1),
            Body::PostcardPathLen(PostcardPathLenRepr {
                key: 12,
                hop,
                path_len: 3,
                data: 60 + u32::from(hop),
            }),
            0,
            false,
        );
        e.handle_frame(Instant(10_000_000), &r);
    }
    let f = ops(&drain(&mut e, Instant(10_000_000)));
    assert_eq!((f[0].0, f[0].1.len()), (PC_VA + g.offset(12, 0), 32));
    for hop in 4..=5u8 {
        assert_eq!(
            cell(&f[0].1, hop) ^ hop_checksum(hop, 12).unwrap(),
            postcard_g(POSTCARD_BLANK)
        );
    }
}

/// A collector's path MTU must be an IB one at most: a welcome advertising more is refused (its frames
/// would outgrow the daemon's output slots), and 4096 itself is accepted.
#[test]
fn path_mtus_above_4096_are_refused() {
    for (mtu, ok) in [
        (4096, true),
        (4097, false),
        (8192, false),
        (63, false),
        (0, true),
    ] {
        let mut w = welcome();
        w.path_mtu = mtu;
        let r = Engine::new(Config::default(), &[w], Instant(0));
        assert_eq!(r.is_ok(), ok, "path MTU {mtu}");
        if let Err(e) = r {
            assert!(e.to_string().contains(&format!("path MTU {mtu}")), "{e}");
        }
    }
}
