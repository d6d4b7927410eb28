//! Lossless delivery: 10^5 mixed reports through a lossy, reordering link to a model rxe responder end
//! with the same collector memory as a loss-free run, and every atomic applied exactly once.

mod support;

use std::collections::VecDeque;

use dta_protocol::dta::{AppendRepr, Body, KeyIncrementRepr, KeyWriteRepr};
use dta_translator::{Config, Engine, Handled, Instant};
use support::*;

struct Run {
    mem: Vec<Vec<u8>>,
    atomics: u64,
    naks: u64,
    retransmitted: u64,
}

fn reports(n: usize) -> (Vec<Vec<u8>>, u64) {
    let mut rng = Rng::new(7);
    let from = reporter(1);
    let mut out = Vec::with_capacity(n);
    let mut fetch_adds = 0;
    let data: Vec<[u8; 4]> = (0..n as u32).map(|i| i.to_be_bytes()).collect();
    for (i, d) in data.iter().enumerate() {
        let key = rng.below(5000) as u32;
        let seq = i as u8;
        let f = match rng.below(3) {
            0 => report(
                &from,
                Body::KeyWrite(KeyWriteRepr {
                    redundancy: 1 + rng.below(4) as u8,
                    key,
                    data: d,
                }),
                seq,
                false,
            ),
            1 => {
                let red = 1 + rng.below(2) as u8;
                fetch_adds += u64::from(red);
                report(
                    &from,
                    Body::KeyIncrement(KeyIncrementRepr {
                        redundancy: red,
                        key,
                        counter: 1 + rng.below(100),
                    }),
                    seq,
                    false,
                )
            }
            _ => report(
                &from,
                Body::Append(AppendRepr {
                    list_id: 3,
                    data: d,
                }),
                seq,
                false,
            ),
        };
        out.push(f);
    }
    (out, fetch_adds)
}

fn run(reports: &[Vec<u8>], loss_per_mille: u64, seed: u64) -> Run {
    let mut cfg = Config::default();
    cfg.requester.retransmit_timeout_us = 50;
    let mut now = Instant(0);
    let mut e = Engine::new(cfg, &[welcome()], now).unwrap();
    let mut resp = Responder::new(0);
    let mut rng = Rng::new(seed);
    let mut to_resp: VecDeque<Vec<u8>> = VecDeque::new();
    let mut to_engine: VecDeque<Vec<u8>> = VecDeque::new();
    let mut next = 0;
    let mut buf = Vec::new();
    let mut flushed = false;
    loop {
        // Offer reports while the QP queue takes them: backpressure, not drops.
        while next < reports.len() && e.qp_stats(0).unwrap().queue < 64 {
            assert_eq!(e.handle_frame(now, &reports[next]), Handled::Consumed);
            next += 1;
        }
        if next == reports.len() && !flushed {
            e.flush(now);
            flushed = true;
        }
        let mut moved = false;
        while e.poll_transmit(now, &mut buf) {
            moved = true;
            if rng.chance(loss_per_mille) {
                continue;
            }
            to_resp.push_back(buf.clone());
            // Reorder: swap with the previous frame now and then.
            let n = to_resp.len();
            if n >= 2 && rng.chance(loss_per_mille) {
                to_resp.swap(n - 1, n - 2);
            }
        }
        while let Some(f) = to_resp.pop_front() {
            moved = true;
            for r in resp.handle(&f) {
                if !rng.chance(loss_per_mille) {
                    to_engine.push_back(r);
                }
            }
        }
        while let Some(f) = to_engine.pop_front() {
            moved = true;
            assert_eq!(e.handle_frame(now, &f), Handled::Consumed);
        }
        if let Some(ev) = e.poll_event() {
            panic!("unexpected event {ev:?}");
        }
        if next == reports.len() && flushed && e.is_idle() {
            break;
        }
        now = Instant(now.0 + 100);
        if !moved {
            if let Some(t) = e.poll_timeout() {
                now = now.max(t);
            }
        }
        e.handle_timeout(now);
    }
    assert_eq!(e.counters().drops.iter().sum::<u64>(), 0);
    Run {
        mem: [KW_VA, KI_VA, APPEND_VA]
            .iter()
            .map(|va| resp.region(*va).to_vec())
            .collect(),
        atomics: resp.atomics_applied,
        naks: resp.naks,
        retransmitted: e.counters().retransmitted_frames,
    }
}

#[test]
fn lossy_run_equals_loss_free_run() {
    let (reports, fetch_adds) = reports(100_000);
    let clean = run(&reports, 0, 1);
    let lossy = run(&reports, 10, 2);
    assert_eq!(clean.atomics, fetch_adds);
    assert_eq!(
        lossy.atomics, fetch_adds,
        "every atomic applied exactly once"
    );
    assert_eq!(clean.retransmitted, 0);
    assert!(lossy.retransmitted > 0 && lossy.naks > 0);
    assert!(clean.mem == lossy.mem, "collector memory differs");
    // The Key-Increment region is not all zeros: the comparison compared something.
    assert!(clean.mem[1].iter().any(|&b| b != 0));
}
