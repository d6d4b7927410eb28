//! Figures 12 and 13, regenerated as CSV and PNG.
//!
//! * Figure 12: average query success after filling M slots to load factor L (keys / slots), N = 1..4:
//!   the real system measured beside the paper's model (independent copies), averaged over the ages 0..L
//!   of the keys in memory; dashed, for comparison only, the reference placement with one shared CRC
//!   polynomial (which this project no longer uses; it loses all copies at once). M = 2^16: the rates
//!   depend on L and N only.
//! * Figure 13: success against age (later flows) for N = 2, 32-byte entries (a 4-byte checksum and the
//!   20-byte 5-hop path need 32-byte entries in this layout) at several storage sizes. The paper's sizes go
//!   to 30 GiB (10^9 slots), beyond 24 GiB of RAM, so sizes and ages are both divided by [`FIG13_SCALE`]:
//!   α = age / slots is unchanged, and α is all the rates depend on.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use anyhow::Result;

use crate::bounds::{crc_all_overwritten, KeyWriteBounds};
use crate::keywrite::{self, KeyWriteParams};
use crate::plot::{line_chart, Series};

/// Figure 13's storage sizes and ages are divided by this.
pub const FIG13_SCALE: u64 = 1024;
/// Figure 12's slot count.
pub const FIG12_SLOTS: u64 = 1 << 16;

/// Mean of `f` over α in [0, l] (midpoint rule; f is smooth, 400 steps are exact to 1e-6).
fn average(l: f64, f: impl Fn(f64) -> f64) -> f64 {
    let steps = 400;
    let h = l / f64::from(steps);
    (0..steps).map(|i| f(h * (f64::from(i) + 0.5))).sum::<f64>() * h / l
}

/// Writes fig12.csv and fig12.png into `out`.
pub fn figure12(out: &Path, seed: u64) -> Result<()> {
    let loads: Vec<f64> = (1..=20).map(|i| f64::from(i) / 10.0).collect();
    let mut csv = String::from(
        "load,n,engine_success,paper_model_success,reference_shared_polynomial_success\n",
    );
    let mut series = Vec::new();
    for n in 1u8..=4 {
        let measured = keywrite::load_sweep(FIG12_SLOTS, n, &loads, seed + u64::from(n))?;
        let nn = u32::from(n);
        let paper: Vec<f64> = loads
            .iter()
            .map(|&l| 1.0 - average(l, |a| KeyWriteBounds::new(a, nn, 32).empty()))
            .collect();
        let crc: Vec<f64> = loads
            .iter()
            .map(|&l| 1.0 - average(l, |a| crc_all_overwritten(a, nn).unwrap_or(f64::NAN)))
            .collect();
        for i in 0..loads.len() {
            writeln!(
                csv,
                "{},{n},{:.6},{:.6},{:.6}",
                loads[i], measured[i], paper[i], crc[i]
            )?;
        }
        let pts = |v: &[f64]| loads.iter().copied().zip(v.iter().copied()).collect();
        let c = usize::from(n) - 1;
        series.push(Series {
            label: format!("N={n} measured (engine)"),
            points: pts(&measured),
            measured: true,
            dashed: false,
            colour: c,
        });
        series.push(Series {
            label: format!("N={n} paper model"),
            points: pts(&paper),
            measured: false,
            dashed: false,
            colour: c,
        });
        if n > 1 {
            series.push(Series {
                label: format!("N={n} reference placement (one shared polynomial)"),
                points: pts(&crc),
                measured: false,
                dashed: true,
                colour: c,
            });
        }
    }
    fs::write(out.join("fig12.csv"), csv)?;
    line_chart(
        &out.join("fig12.png"),
        &format!("Fig. 12: Key-Write query success vs load factor (M = {FIG12_SLOTS} slots)"),
        "load factor (keys / slots)",
        "query success rate",
        (0.0, 2.0),
        (0.0, 1.0),
        &series,
    )
}

/// Writes fig13.csv, fig13_paper_points.csv and fig13.png into `out`.
pub fn figure13(out: &Path, queries: u64, seed: u64) -> Result<()> {
    const ENTRY: u64 = 32;
    let sizes_gib = [2u64, 4, 8, 16, 32];
    let ages_real: Vec<u64> = (0..=20).map(|i| i * 5_000_000).collect();
    let mut csv = String::from(
        "storage_gib,slots_real,slots_sim,age_flows,alpha,engine_success,paper_model_success,reference_shared_polynomial_success\n",
    );
    let mut series = Vec::new();
    for (c, &gib) in sizes_gib.iter().enumerate() {
        let slots_real = (gib << 30) / ENTRY;
        let slots = slots_real / FIG13_SCALE;
        let ages: Vec<u64> = ages_real.iter().map(|a| a / FIG13_SCALE).collect();
        let p = KeyWriteParams {
            slots,
            n: 2,
            b: 32,
            threshold: 1,
            ages,
            queries,
            data_len: (ENTRY - 4) as usize,
            seed: seed + gib,
        };
        let tallies = keywrite::run(&p)?;
        let mut measured = Vec::new();
        let mut paper = Vec::new();
        let mut reference = Vec::new();
        for (t, &age) in tallies.iter().zip(&ages_real) {
            let alpha = age as f64 / slots_real as f64;
            let pm = 1.0 - KeyWriteBounds::new(alpha, 2, 32).empty();
            let cm = 1.0 - crc_all_overwritten(alpha, 2).unwrap_or(f64::NAN);
            writeln!(
                csv,
                "{gib},{slots_real},{slots},{age},{alpha:.6},{:.6},{pm:.6},{cm:.6}",
                t.success_rate()
            )?;
            let x = age as f64 / 1e6;
            measured.push((x, t.success_rate()));
            paper.push((x, pm));
            reference.push((x, cm));
        }
        series.push(Series {
            label: format!("{gib} GiB measured (engine)"),
            points: measured,
            measured: true,
            dashed: false,
            colour: c,
        });
        series.push(Series {
            label: format!("{gib} GiB paper model"),
            points: paper,
            measured: false,
            dashed: false,
            colour: c,
        });
        // One reference curve is enough to show the gap without burying the figure.
        if c == 0 {
            series.push(Series {
                label: format!("{gib} GiB reference placement (one shared polynomial)"),
                points: reference,
                measured: false,
                dashed: true,
                colour: c,
            });
        }
    }
    fs::write(out.join("fig13.csv"), csv)?;
    fs::write(out.join("fig13_paper_points.csv"), paper_points())?;
    line_chart(
        &out.join("fig13.png"),
        &format!("Fig. 13: 5-hop path queryability, N = 2, 32 B entries (simulated at 1/{FIG13_SCALE} scale)"),
        "age (million later flows)",
        "query success rate",
        (0.0, 100.0),
        (0.0, 1.0),
        &series,
    )
}

/// Section 6.5.3's quoted points beside equation (1) for 24-byte entries (4 B checksum + 20 B path), both
/// at exactly that age and averaged over ages 0..age (the flows "with as many as" that many later ones).
pub fn paper_points() -> String {
    let mut s = String::from(
        "storage_gib,age_flows,paper_text_success,eq1_at_age_24B,eq1_avg_over_ages_24B,reference_shared_polynomial_at_age_24B\n",
    );
    for (gib, age, text) in [
        (3u64, 10_000_000u64, 0.993),
        (3, 100_000_000, 0.445),
        (30, 10_000_000, 0.9999),
        (30, 100_000_000, 0.982),
    ] {
        let slots = (gib << 30) as f64 / 24.0;
        let a = age as f64 / slots;
        let at = 1.0 - KeyWriteBounds::new(a, 2, 32).empty();
        let avg = 1.0 - average(a, |x| KeyWriteBounds::new(x, 2, 32).empty());
        let crc = 1.0 - crc_all_overwritten(a, 2).unwrap_or(f64::NAN);
        let _ = writeln!(s, "{gib},{age},{text},{at:.5},{avg:.5},{crc:.5}");
    }
    s
}
