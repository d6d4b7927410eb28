//! Statistical tests of the paper's numbers, with fixed seeds. Tolerances come from the binomial standard
//! error of the predicted rate (z = 4 unless said), never from the measured rate. Scale: M = 2^16 slots
//! (chunks); the rates depend on α and N only once M is this large (Poisson error O(α·N²/M) < 10^-4).

use dta_sim::bounds::{crc_all_overwritten, KeyWriteBounds, PostcardBounds};
use dta_sim::ideal;
use dta_sim::keyincrement::{self, KeyIncrementParams};
use dta_sim::keywrite::{self, KeyWriteParams};
use dta_sim::postcard::{self, PostcardParams};
use dta_sim::tally::binomial_se;

const M: u64 = 1 << 16;
const Z: f64 = 4.0;

fn kw(n: u8, b: u32, alphas: &[f64], queries: u64, seed: u64) -> KeyWriteParams {
    KeyWriteParams {
        slots: M,
        n,
        b,
        threshold: 1,
        ages: alphas
            .iter()
            .map(|a| (a * M as f64).round() as u64)
            .collect(),
        queries,
        data_len: 4,
        seed,
    }
}

/// The paper's model (independent copies) reproduces section 4's worked numbers within 10 % relative.
#[test]
fn paper_model_empty_rates_at_alpha_0_1() {
    for (n, paper) in [(1u8, 0.095), (2, 0.0329), (4, 0.012)] {
        let q = 200_000;
        let t = ideal::key_write(&kw(n, 32, &[0.1], q, 11))[0];
        let predicted = KeyWriteBounds::new(t.alpha, u32::from(n), 32).empty();
        // The 10 % window must be wider than the noise, or passing would mean nothing.
        assert!(0.10 * predicted > Z * binomial_se(predicted, q));
        let rel = (t.empty_rate() - paper).abs() / paper;
        assert!(
            rel < 0.10,
            "N={n}: measured {} vs paper {paper}",
            t.empty_rate()
        );
        assert!((t.empty_rate() - predicted).abs() < Z * binomial_se(predicted, q));
        assert_eq!(t.wrong, 0);
    }
}

/// The real engine, responder and query: N = 1 matches the paper (9.5 %); N = 2 and 4 match the formula for
/// the CRC placement (every later key that touches a copy overwrites all of them), not the paper's.
#[test]
fn engine_empty_rates_follow_the_crc_placement() {
    for (n, q) in [(1u8, 20_000u64), (2, 20_000), (4, 10_000)] {
        let t = keywrite::run(&kw(n, 32, &[0.1], q, 21)).unwrap()[0];
        let predicted = crc_all_overwritten(t.alpha, u32::from(n)).unwrap();
        assert!(
            (t.empty_rate() - predicted).abs() < Z * binomial_se(predicted, q),
            "N={n}: measured {} vs CRC-placement prediction {predicted}",
            t.empty_rate()
        );
        if n == 1 {
            assert!((t.empty_rate() - 0.095).abs() / 0.095 < 0.10);
        }
        assert_eq!(t.wrong, 0);
    }
}

/// 10^6 queries of the real system at b = 32 (ten ages, 10^5 each, α = 0.1..1.0): no wrong answer. The
/// bound (4) gives at most 10^6 · 2·2^-32 ≈ 5·10^-4 expected.
#[test]
fn engine_no_wrong_answers_in_a_million_queries_at_32_bits() {
    let alphas: Vec<f64> = (1..=10).map(|i| f64::from(i) / 10.0).collect();
    let tallies = keywrite::run(&kw(2, 32, &alphas, 100_000, 31)).unwrap();
    let queries: u64 = tallies.iter().map(|t| t.queries).sum();
    assert_eq!(queries, 1_000_000);
    assert_eq!(tallies.iter().map(|t| t.wrong).sum::<u64>(), 0);
}

/// b = 8: the paper's model lands between appendix A.5's lower bound and equation (4), within the binomial
/// error; the real system matches its own prediction (all copies hold one later key's entry, which matches
/// with probability 2^-b).
#[test]
fn eight_bit_checksums_wrong_answer_rate() {
    let q = 200_000;
    for (alpha, seed) in [(0.1, 41), (1.0, 42)] {
        let t = ideal::key_write(&kw(2, 8, &[alpha], q, seed))[0];
        let k = KeyWriteBounds::new(t.alpha, 2, 8);
        let slack = 3.0 * binomial_se(k.eq4, q);
        assert!(
            t.wrong_rate() >= k.wrong_lower - slack && t.wrong_rate() <= k.eq4 + slack,
            "α={alpha}: measured {} vs [{}, {}] ± {slack}",
            t.wrong_rate(),
            k.wrong_lower,
            k.eq4
        );
        assert!(t.empty_rate() <= k.empty() + Z * binomial_se(k.empty(), q));
    }
    let q = 50_000;
    let t = keywrite::run(&kw(2, 8, &[1.0], q, 43)).unwrap()[0];
    let predicted = crc_all_overwritten(t.alpha, 2).unwrap() / 256.0;
    assert!(
        (t.wrong_rate() - predicted).abs() < Z * binomial_se(predicted, q),
        "engine b=8: {} vs {predicted}",
        t.wrong_rate()
    );
}

fn pc(alpha: f64, queries: u64) -> PostcardParams {
    PostcardParams {
        chunks: M,
        hops: 5,
        n: 2,
        universe: 1 << 18,
        ages: vec![(alpha * M as f64).round() as u64],
        queries,
        seed: 51,
    }
}

/// |V| = 2^18, B = 5, N = 2, b = 32, α = 0.1: the paper's model fails within 10 % of (5)'s leading term and
/// never outputs a wrong path; the real system fails at its CRC-placement rate, also with no wrong path.
#[test]
fn postcarding_at_the_papers_example() {
    let decoder = postcard::decoder(1 << 18);
    let q = 100_000;
    let p = pc(0.1, q);
    let t = ideal::postcard(&p, &decoder)[0];
    let leading = PostcardBounds::new(t.alpha, 2, 32, f64::from(1u32 << 18), 5).eq5;
    assert!(0.10 * leading > Z * binomial_se(leading, q));
    assert!(
        (t.empty_rate() - leading).abs() / leading < 0.10,
        "model: {} vs {leading}",
        t.empty_rate()
    );
    assert_eq!(t.wrong, 0);

    let q = 15_000;
    let t = postcard::run(&pc(0.1, q), &decoder).unwrap()[0];
    let predicted = crc_all_overwritten(t.alpha, 2).unwrap();
    assert!(
        (t.empty_rate() - predicted).abs() < Z * binomial_se(predicted, q),
        "engine: {} vs {predicted}",
        t.empty_rate()
    );
    assert_eq!(t.wrong, 0);
}

/// Count-min through FETCH_ADD: never an undercount (the run fails on one), and the fraction of keys whose
/// excess reaches e·N·(total - own)/M stays within the bound e^-N (plus 3 standard errors).
#[test]
fn key_increment_overestimates_within_count_min() {
    let p = KeyIncrementParams {
        counters: 1 << 14,
        n: 2,
        keys: 1 << 13,
        max_count: 100,
        seed: 61,
    };
    for (name, o) in [
        ("engine", keyincrement::run(&p).unwrap()),
        ("model", keyincrement::ideal(&p)),
    ] {
        let slack = 3.0 * binomial_se(o.bound, p.keys);
        assert!(
            o.tail <= o.bound + slack,
            "{name}: tail {} > {}",
            o.tail,
            o.bound
        );
        assert!(o.mean() > 0.0);
    }
}
