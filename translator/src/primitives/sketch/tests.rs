use super::*;
use crate::config::{RateConfig, RequesterConfig};
use crate::counters::Counters;
use dta_protocol::roce::ROCEV2_UDP_PORT;
use dta_protocol::udp::UdpEndpoints;
use dta_rc::frames::FrameBuilder;
use dta_rc::requester::RequesterParams;

/// `write_complete` as it was before the known-complete run: every pass scans from `next_write`.
fn reference(
    m: &mut Merge,
    reporters: u16,
    batch: u32,
    mtu: usize,
    partial: bool,
    qp: &mut Requester,
) {
    let col_len = m.g.column_len() as usize;
    let cap = batch.min((mtu / col_len).max(1) as u32);
    loop {
        let start = m.next_write;
        let mut k = 0;
        while k < cap && start + k < m.g.columns() && m.contrib[(start + k) as usize] >= reporters {
            k += 1;
        }
        let ends_sketch = start + k == m.g.columns();
        if k == 0 || !(k == cap || ends_sketch || partial) {
            break;
        }
        // The write itself is shared (what is under test is the scan).
        super::write_run(m, start, k, qp);
        m.next_write = (start + k) % m.g.columns();
    }
    let pending = m
        .contrib
        .get(m.next_write as usize)
        .is_some_and(|&n| n >= reporters);
    if !pending {
        m.complete_since = None;
    }
}

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

/// Resuming at the known-complete run writes what scanning from `next_write` every time wrote, and
/// leaves the same state, for columns completing in any order, every batch and MTU cap, and timer
/// flushes in between.
#[test]
fn resumed_scans_equal_full_scans() {
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut rand = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    for (reporters, batch, mtu) in [
        (2u16, 4u32, 1024usize),
        (3, 16, 24),
        (1, 1, 1024),
        (2, 5, 64),
    ] {
        let g = SketchGeometry::new(2, 11).unwrap();
        let fresh = Merge {
            region: Region {
                id: 1,
                va: 0x9000,
                rkey: 5,
                geometry: Geometry::Sketch(g),
            },
            g,
            op: SketchOp::Sum,
            acc: vec![0; 22],
            contrib: vec![0; 11],
            expected: vec![0; usize::from(reporters)],
            next_write: 0,
            complete_since: None,
            run: 0,
        };
        let (mut a, mut b) = (fresh.clone(), fresh);
        let (mut qa, mut qb) = (qp(), qp());
        let (mut c, mut fa, mut fb) = (Counters::default(), Vec::new(), Vec::new());
        let mut written = 0;
        for step in 0..5000u64 {
            let partial = rand(13) == 0;
            if !partial {
                // A contribution to a column, which completes it when it is the last one.
                let col = rand(11) as usize;
                if a.contrib[col] >= reporters {
                    continue;
                }
                let v = rand(1000) as u32;
                for m in [&mut a, &mut b] {
                    m.contrib[col] += 1;
                    m.acc[col * 2] += v;
                    m.acc[col * 2 + 1] += v / 2;
                }
                if a.contrib[col] < reporters {
                    continue;
                }
                for m in [&mut a, &mut b] {
                    m.complete_since.get_or_insert(Instant(step));
                }
            }
            write_complete(&mut a, reporters, batch, mtu, partial, &mut qa);
            reference(&mut b, reporters, batch, mtu, partial, &mut qb);
            assert_eq!(
                (&a.acc, &a.contrib, a.next_write, a.complete_since),
                (&b.acc, &b.contrib, b.next_write, b.complete_since),
                "step {step}"
            );
            loop {
                let (sa, sb) = (
                    qa.poll_transmit(Instant(0), &mut c, &mut fa),
                    qb.poll_transmit(Instant(0), &mut c, &mut fb),
                );
                assert_eq!(sa, sb, "step {step}");
                if !sa {
                    break;
                }
                assert_eq!(fa, fb, "step {step}");
                written += 1;
            }
            qa.assume_delivered();
            qb.assume_delivered();
        }
        assert!(
            written > 200,
            "{written} writes ({reporters}, {batch}, {mtu})"
        );
    }
}
