//! `dta-sim`: measured query rates of the real translator and collector beside the paper's bounds, and the
//! figure sweeps. See the library docs for what "real" covers and the scale of each experiment.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Parser, Subcommand};
use dta_sim::bounds::{crc_all_overwritten, KeyWriteBounds, PostcardBounds};
use dta_sim::keyincrement::{self, KeyIncrementParams};
use dta_sim::keywrite::{self, KeyWriteParams};
use dta_sim::postcard::{self, PostcardParams};
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
            println!(
                "placement offsets of copies 1..N from copy 0 (key-independent means CRC-affine): {:?}",
                placement::affine_offsets(slots, n, 1000)
            );
            println!("| α | N | b | T | queries | engine empty | engine wrong | model empty | model wrong | (1)+(2)+(3) | (4) | CRC-placement empty |");
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
            println!("| α | N | B | |V| | queries | engine fail | engine wrong | model fail | model wrong | (5) | (5)+(6)+(7) | (8) | CRC-placement fail |");
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
