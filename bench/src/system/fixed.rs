//! `dta-bench system --rates`: fixed rates instead of the search.

use super::*;

/// `--rates`: one probe per given rate, in order, after the warm-up; the same result shape with no search
/// (the lossless rate is the highest lossless one probed) and no testpmd.
#[allow(clippy::too_many_arguments)]
pub(super) fn fixed_rates(
    o: &Opts,
    r: &mut Run,
    ep: &Endpoints,
    pids: [u32; 2],
    mut translator: Proc,
    mut collector: Proc,
    start: Instant,
    load_before: [f64; 3],
) -> Result<SystemResult> {
    let mut probes = Vec::new();
    for &rate in &o.rates {
        probes.push(r.probe(ep, Some(rate), pids)?);
    }
    r.stop_sender();
    translator.stop(libc::SIGTERM, Duration::from_secs(6));
    collector.stop(libc::SIGTERM, Duration::from_secs(3));
    let best = probes
        .iter()
        .filter(|p| p.lossless())
        .max_by(|a, b| a.target_pps.total_cmp(&b.target_pps));
    let lossy = probes
        .iter()
        .filter(|p| !p.lossless())
        .min_by(|a, b| a.target_pps.total_cmp(&b.target_pps));
    let first = probes.first().context("no rate given")?.clone();
    Ok(SystemResult::of(
        o,
        Found {
            saturation: first,
            lossless_pps: best.map_or(0.0, |p| p.target_pps),
            lossless_written_per_s: best.map_or(0.0, Probe::written_per_s),
            lossy_pps: lossy.map_or(0.0, |p| p.target_pps),
            saturating_stage: lossy.map_or("none", Probe::stage).to_string(),
            probes,
            testpmd: None,
        },
        start,
        load_before,
    ))
}
