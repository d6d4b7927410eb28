//! `dta-sim`: measured query rates of the real translator and collector beside the paper's bounds, and the
//! figure sweeps. See the library docs for what "real" covers and the scale of each experiment.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Parser, Subcommand};
use dta_sim::bounds::{crc_all_overwritten, KeyWriteBounds, PostcardBounds};
use dta_sim::keyincrement::{self, KeyIncrementParams};
use dta_sim::keywrite::{self, KeyWriteParams};
use dta_sim::postcard::{self, PostcardParams};
use dta_sim::spread::table::{self as spread_table, Sweep};
use dta_sim::spread::{Order, SpreadParams};
use dta_sim::{figures, ideal, placement};

#[derive(Parser)]
#[command(about = "DTA paper mathematics against the real translator and collector")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Key-Write: empty-return and wrong-answer rates beside equations (1)-(4).
    Keywrite {
        #[arg(long, default_value_t = 1 << 16)]
        slots: u64,
        #[arg(long, default_value_t = 2)]
        n: u8,
        #[arg(long, default_value_t = 32)]
        b: u32,
        #[arg(long, default_value_t = 1)]
        t: u32,
        /// Ages as α = later distinct keys / slots, comma separated.
        #[arg(long, value_delimiter = ',', default_value = "0.1")]
        alpha: Vec<f64>,
        #[arg(long, default_value_t = 100_000)]
        queries: u64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Postcarding: failure and wrong-output rates beside equations (5)-(8).
    Postcard {
        #[arg(long, default_value_t = 1 << 16)]
        chunks: u64,
        #[arg(long, default_value_t = 5)]
        hops: u8,
        #[arg(long, default_value_t = 2)]
        n: u8,
        #[arg(long, default_value_t = 1 << 18)]
        universe: u32,
        #[arg(long, value_delimiter = ',', default_value = "0.1")]
        alpha: Vec<f64>,
        #[arg(long, default_value_t = 50_000)]
        queries: u64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Key-Increment: overestimate distribution against the count-min bound.
    Keyincrement {
        #[arg(long, default_value_t = 1 << 16)]
        counters: u64,
        #[arg(long, default_value_t = 2)]
        n: u8,
        #[arg(long, default_value_t = 1 << 15)]
        keys: u64,
        #[arg(long, default_value_t = 100)]
        max_count: u64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// The table: the real engine at the paper's worked examples beside the paper's formulas, the
    /// numbers in the paper's text and the reference placement (one shared polynomial).
    Table {
        /// Key-Write queries per row (M = 2^16 slots).
        #[arg(long, default_value_t = 1_000_000)]
        queries: u64,
        /// Postcarding queries (C = 2^16 chunks).
        #[arg(long, default_value_t = 200_000)]
        postcard_queries: u64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Issue 17: paths recovered when a flow's per-hop reports are spread over a window, for DTA postcards
    /// and INT v0.5 per-hop reports alike, per arrival order and idle timeout (POSTCARD_SPREAD.md).
    PostcardSpread {
        #[arg(long, default_value_t = 2000)]
        flows: u32,
        #[arg(long, default_value_t = 5)]
        hops: u8,
        /// Windows over which one flow's reports arrive, in milliseconds.
        #[arg(long, value_delimiter = ',', default_value = "0.1,0.3,1,3,10")]
        spread_ms: Vec<f64>,
        /// Path-order runs with these jitters, in slices of spread/B (0.5 keeps path order, 1 lets
        /// neighbours swap); a random-order run always.
        #[arg(long, value_delimiter = ',', default_value = "0.5,1")]
        jitter: Vec<f64>,
        /// Translator postcard idle timeouts, in microseconds.
        #[arg(long, value_delimiter = ',', default_value = "1000,10000")]
        idle_us: Vec<u64>,
        /// Mean flow starts per millisecond (Poisson).
        #[arg(long, default_value_t = 20.0)]
        flows_per_ms: f64,
        /// Translator postcard cache entries.
        #[arg(long, default_value_t = 1 << 18)]
        cache: usize,
        #[arg(long, default_value_t = 1 << 20)]
        chunks: u64,
        #[arg(long, default_value_t = 2)]
        n: u8,
        /// Switch ids are 1..=universe.
        #[arg(long, default_value_t = 1024)]
        universe: u32,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Figures 12 and 13 as CSV and PNG.
    Figures {
        #[arg(long, default_value = "figures")]
        out: PathBuf,
        /// Queries per age for figure 13.
        #[arg(long, default_value_t = 5000)]
        queries: u64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
}

fn pct(x: f64) -> String {
    format!("{:.4}%", 100.0 * x)
}

fn main() -> Result<()> {
    match Cli::parse().cmd {
        Cmd::Keywrite {
            slots,
            n,
            b,
            t,
            alpha,
            queries,
            seed,
        } => {
            let p = KeyWriteParams {
                slots,
                n,
                b,
                threshold: t,
                ages: alpha
                    .iter()
                    .map(|a| (a * slots as f64).round() as u64)
                    .collect(),
                queries,
                data_len: 4,
                seed,
            };
            println!("{}", placement::describe(slots, n));
            println!("| α | N | b | T | queries | engine empty | engine wrong | model empty | model wrong | (1)+(2)+(3) | (4) | reference placement (one shared polynomial) empty |");
            println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
            let engine = keywrite::run(&p)?;
            let model = ideal::key_write(&p);
            for (e, m) in engine.iter().zip(&model) {
                let k = KeyWriteBounds::new(e.alpha, u32::from(n), b);
                let crc = crc_all_overwritten(e.alpha, u32::from(n)).map_or("-".into(), pct);
                println!(
                    "| {:.4} | {n} | {b} | {t} | {} | {} | {} ({}) | {} | {} ({}) | {} | {:.3e} | {crc} |",
                    e.alpha, e.queries, pct(e.empty_rate()), pct(e.wrong_rate()), e.wrong,
                    pct(m.empty_rate()), pct(m.wrong_rate()), m.wrong, pct(k.empty()), k.eq4
                );
            }
        }
        Cmd::Postcard {
            chunks,
            hops,
            n,
            universe,
            alpha,
            queries,
            seed,
        } => {
            let p = PostcardParams {
                chunks,
                hops,
                n,
                universe,
                ages: alpha
                    .iter()
                    .map(|a| (a * chunks as f64).round() as u64)
                    .collect(),
                queries,
                seed,
            };
            let dec = postcard::decoder(universe);
            let engine = postcard::run(&p, &dec)?;
            let model = ideal::postcard(&p, &dec);
            println!("{}", placement::describe(chunks, n));
            println!("| α | N | B | |V| | queries | engine fail | engine wrong | model fail | model wrong | (5) | (5)+(6)+(7) | (8) | reference placement (one shared polynomial) fail |");
            println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
            for (e, m) in engine.iter().zip(&model) {
                let b = PostcardBounds::new(
                    e.alpha,
                    u32::from(n),
                    32,
                    f64::from(universe),
                    u32::from(hops),
                );
                let crc = crc_all_overwritten(e.alpha, u32::from(n)).map_or("-".into(), pct);
                println!(
                    "| {:.4} | {n} | {hops} | {universe} | {} | {} | {} | {} | {} | {} | {} | {:.3e} | {crc} |",
                    e.alpha, e.queries, pct(e.empty_rate()), e.wrong, pct(m.empty_rate()), m.wrong,
                    pct(b.eq5), pct(b.failure()), b.eq8
                );
            }
        }
        Cmd::Keyincrement {
            counters,
            n,
            keys,
            max_count,
            seed,
        } => {
            let p = KeyIncrementParams {
                counters,
                n,
                keys,
                max_count,
                seed,
            };
            println!("| run | mean excess | p50 | p90 | p99 | max | P(excess ≥ e·N·(total-own)/M) | count-min bound e^-N |");
            println!("|---|---|---|---|---|---|---|---|");
            for (name, o) in [
                ("engine", keyincrement::run(&p)?),
                ("model", keyincrement::ideal(&p)),
            ] {
                println!(
                    "| {name} | {:.1} | {} | {} | {} | {} | {} | {} |",
                    o.mean(),
                    o.quantile(0.5),
                    o.quantile(0.9),
                    o.quantile(0.99),
                    o.quantile(1.0),
                    pct(o.tail),
                    pct(o.bound)
                );
            }
        }
        Cmd::Table {
            queries,
            postcard_queries,
            seed,
        } => table(queries, postcard_queries, seed)?,
        Cmd::PostcardSpread {
            flows,
            hops,
            spread_ms,
            jitter,
            idle_us,
            flows_per_ms,
            cache,
            chunks,
            n,
            universe,
            seed,
        } => {
            let base = SpreadParams {
                flows,
                hops,
                spread_ns: 1_000_000,
                order: Order::Random,
                flows_per_ms,
                idle_us: idle_us.first().copied().unwrap_or(1000),
                cache,
                chunks,
                n,
                universe,
                seed,
            };
            let mut orders = vec![Order::Random];
            orders.extend(jitter.iter().map(|&jitter| Order::Path { jitter }));
            spread_table::print(&Sweep {
                base,
                spreads_ms: spread_ms,
                orders,
                idles_us: idle_us,
            })?;
        }
        Cmd::Figures { out, queries, seed } => {
            std::fs::create_dir_all(&out)?;
            figures::figure12(&out, seed)?;
            figures::figure13(&out, queries, seed)?;
            println!(
                "wrote fig12.{{csv,png}}, fig13.{{csv,png}}, fig13_paper_points.csv to {}",
                out.display()
            );
        }
    }
    Ok(())
}

/// z for the ± columns of [`table`].
const Z: f64 = 4.0;

fn pm(p: f64, q: u64) -> String {
    format!("±{}", pct(Z * dta_sim::tally::binomial_se(p, q)))
}

fn table(queries: u64, postcard_queries: u64, seed: u64) -> Result<()> {
    const M: u64 = 1 << 16;
    let age = |a: f64| (a * M as f64).round() as u64;
    println!(
        "M = C = {M} slots (chunks); ± is {Z} binomial standard errors of the formula's value."
    );
    println!("{}", placement::describe(M, 2));
    println!("{}", placement::describe(M, 4));
    println!("| quantity | queries | real engine | paper formula | paper text | reference placement (one shared polynomial) |");
    println!("|---|---|---|---|---|---|");
    for (n, text) in [(1u8, "9.5%"), (2, "3.3%"), (4, "1.2%")] {
        let p = KeyWriteParams {
            slots: M,
            n,
            b: 32,
            threshold: 1,
            ages: vec![age(0.1)],
            queries,
            data_len: 4,
            seed: seed + u64::from(n),
        };
        let t = keywrite::run(&p)?[0];
        let k = KeyWriteBounds::new(t.alpha, u32::from(n), 32);
        println!(
            "| Key-Write empty, N={n}, b=32, α=0.1 | {} | {} ({} wrong) | {} {} | {text} | {} |",
            t.queries,
            pct(t.empty_rate()),
            t.wrong,
            pct(k.empty()),
            pm(k.empty(), t.queries),
            pct(crc_all_overwritten(t.alpha, u32::from(n)).unwrap_or(f64::NAN))
        );
    }
    let p = KeyWriteParams {
        slots: M,
        n: 2,
        b: 8,
        threshold: 1,
        ages: vec![age(0.1), age(1.0)],
        queries,
        data_len: 4,
        seed: seed + 8,
    };
    for t in keywrite::run(&p)? {
        let k = KeyWriteBounds::new(t.alpha, 2, 8);
        println!(
            "| Key-Write wrong, N=2, b=8, α={:.1} | {} | {} ({}) | [{}, {}] {} (A.5 lower, (4)) | - | {} |",
            t.alpha,
            t.queries,
            pct(t.wrong_rate()),
            t.wrong,
            pct(k.wrong_lower),
            pct(k.eq4),
            pm(k.eq4, t.queries),
            pct(crc_all_overwritten(t.alpha, 2).unwrap_or(f64::NAN) / 256.0)
        );
    }
    let p = KeyWriteParams {
        slots: M,
        n: 2,
        b: 32,
        threshold: 1,
        ages: (1..=10).map(|i| age(f64::from(i) / 10.0)).collect(),
        queries: 100_000,
        data_len: 4,
        seed: seed + 32,
    };
    let tallies = keywrite::run(&p)?;
    let wrong: u64 = tallies.iter().map(|t| t.wrong).sum();
    let bound: f64 = tallies
        .iter()
        .map(|t| KeyWriteBounds::new(t.alpha, 2, 32).eq4 * t.queries as f64)
        .sum();
    println!(
        "| Key-Write wrong answers, N=2, b=32, α=0.1..1.0 | {} | {wrong} | ≤ {bound:.1e} expected ((4)) | 1.6e-11 per query at α=0.1 | - |",
        tallies.iter().map(|t| t.queries).sum::<u64>()
    );
    let p = PostcardParams {
        chunks: M,
        hops: 5,
        n: 2,
        universe: 1 << 18,
        ages: vec![age(0.1)],
        queries: postcard_queries,
        seed: seed + 5,
    };
    let t = postcard::run(&p, &postcard::decoder(1 << 18))?[0];
    let b = PostcardBounds::new(t.alpha, 2, 32, f64::from(1u32 << 18), 5);
    println!(
        "| Postcarding fail, universe 2^18, B=5, N=2, b=32, α=0.1 | {} | {} ({} wrong) | {} {} ((5)); wrong ≤ {:.1e} ((8)) | 3.3%; wrong < 1e-22 | {} |",
        t.queries,
        pct(t.empty_rate()),
        t.wrong,
        pct(b.eq5),
        pm(b.eq5, t.queries),
        b.eq8,
        pct(crc_all_overwritten(t.alpha, 2).unwrap_or(f64::NAN))
    );
    let p = KeyIncrementParams {
        counters: M,
        n: 2,
        keys: M / 2,
        max_count: 100,
        seed: seed + 7,
    };
    let o = keyincrement::run(&p)?;
    println!(
        "| Key-Increment P(excess ≥ e·N·(total-own)/M), N=2, {} keys | {} | {} (mean excess {:.1}, p99 {}) | ≤ {} (count-min e^-N) | - | - |",
        p.keys,
        p.keys,
        pct(o.tail),
        o.mean(),
        o.quantile(0.99),
        pct(o.bound)
    );
    Ok(())
}
