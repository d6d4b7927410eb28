//! The sweep of issue 17's measurement: spread × arrival order × idle timeout × report kind, as a table.

use anyhow::Result;
use dta_protocol::layout::PostcardGeometry;

use super::drive::{self, Measured};
use super::rule::{predict, predict_whole_chunk_rewrite, random_order_loss, sharing_chunks};
use super::schedule::schedule;
use super::{Kind, Order, SpreadParams, Verdict, Verdicts};

/// What to sweep; `base` gives everything else (its spread, order and idle timeout are replaced).
#[derive(Debug, Clone)]
pub struct Sweep {
    /// The fixed parameters.
    pub base: SpreadParams,
    /// Spreads in milliseconds.
    pub spreads_ms: Vec<f64>,
    /// Arrival orders.
    pub orders: Vec<Order>,
    /// Idle timeouts in microseconds.
    pub idles_us: Vec<u64>,
}

/// One row of the table.
#[derive(Debug, Clone)]
pub struct Row {
    /// The run's parameters.
    pub params: SpreadParams,
    /// Report kind.
    pub kind: Kind,
    /// What the run measured.
    pub measured: Measured,
    /// Flows the composition rule predicts not to read back exactly (no evictions assumed).
    pub predicted_lost: u64,
    /// Flows whose measured verdict differs from the rule's.
    pub disagree: u64,
    /// Flows the rule before composition (every write the whole chunk) would lose: a model.
    pub rewrite_lost: u64,
}

/// Runs the sweep; both kinds see the same flows, paths and times.
pub fn run(s: &Sweep) -> Result<Vec<Row>> {
    let dec = drive::decoder(s.base.universe);
    let mut rows = Vec::new();
    for &idle_us in &s.idles_us {
        for &order in &s.orders {
            for &ms in &s.spreads_ms {
                let params = SpreadParams {
                    spread_ns: (ms * 1e6).round() as u64,
                    order,
                    idle_us,
                    ..s.base.clone()
                };
                let flows = schedule(&params)?;
                let rewrite_lost = flows
                    .iter()
                    .filter(|f| {
                        predict_whole_chunk_rewrite(&f.at, 1_000 * idle_us) != Verdict::Exact
                    })
                    .count() as u64;
                for kind in [Kind::Dta, Kind::Int] {
                    // DTA postcards (opcode 0x04) have a known length (B); INT per-hop reports do not.
                    let rule: Vec<Verdict> = flows
                        .iter()
                        .map(|f| predict(&f.at, 1_000 * idle_us, kind == Kind::Dta))
                        .collect();
                    let predicted_lost =
                        rule.iter().filter(|&&v| v != Verdict::Exact).count() as u64;
                    let measured = drive::run(&params, kind, &flows, &dec)?;
                    let disagree = measured
                        .verdicts
                        .iter()
                        .zip(&rule)
                        .filter(|(a, b)| a != b)
                        .count() as u64;
                    rows.push(Row {
                        params: params.clone(),
                        kind,
                        measured,
                        predicted_lost,
                        disagree,
                        rewrite_lost,
                    });
                }
            }
        }
    }
    Ok(rows)
}

/// Prints the sweep's setting and its table (Markdown).
pub fn print(s: &Sweep) -> Result<()> {
    let b = &s.base;
    let g = PostcardGeometry::new(b.chunks, b.hops, b.n)?;
    let shared = sharing_chunks(&schedule(b)?, &g, b.n);
    println!(
        "F = {} flows of B = {} hops, starting at {} flows/ms (Poisson); cache {} entries; C = {} chunks, N = {}; \
         switch ids 1..={}; seed {}. Flows sharing a chunk copy with another flow: {shared}.",
        b.flows, b.hops, b.flows_per_ms, b.cache, b.chunks, b.n, b.universe, b.seed
    );
    println!("| idle timeout | order | spread | kind | exact | prefix only | empty | conflict | wrong | rule predicts lost | differs from rule | closed form (random order) | lost before composition (model) | evictions | timeouts | continuations |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for r in run(s)? {
        let v = Verdicts::of(&r.measured.verdicts);
        let pct = |x: u64| format!("{:.2}%", 100.0 * x as f64 / v.total().max(1) as f64);
        let m = &r.measured;
        let closed = match r.params.order {
            Order::Random => format!(
                "{:.2}%",
                100.0 * random_order_loss(1_000 * r.params.idle_us, r.params.spread_ns, b.hops)
            ),
            Order::Path { .. } => "-".into(),
        };
        println!(
            "| {} ms | {} | {} ms | {} | {} ({}) | {} | {} | {} | {} | {} ({}) | {} | {closed} | {} ({}) | {} | {} | {} |",
            r.params.idle_us as f64 / 1e3,
            r.params.order,
            r.params.spread_ns as f64 / 1e6,
            r.kind,
            pct(v.exact),
            v.exact,
            v.prefix,
            v.empty,
            v.conflict,
            v.wrong,
            pct(r.predicted_lost),
            r.predicted_lost,
            r.disagree,
            pct(r.rewrite_lost),
            r.rewrite_lost,
            m.evictions,
            m.timeouts,
            m.continuations
        );
    }
    Ok(())
}
