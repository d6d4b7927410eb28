//! Reading one run's raw outputs (testpmd's stats, callgrind's totals, the JSON each measurement wrote):
//! what the report and its floor sections both read, below either.

use std::path::Path;

use serde_json::Value;

/// testpmd's steady forwarding rate from its `--stats-period` output: the median of the non-zero `Rx-pps`
/// (io) or `Tx-pps` (txonly) samples, less the first when there are three or more (it may cover a partial
/// period). The very first print is always 0: it has no earlier sample to difference against.
pub fn testpmd_pps(text: &str, key: &str) -> Option<f64> {
    let mut v: Vec<f64> = text
        .lines()
        .filter_map(|l| {
            let rest = l.trim().strip_prefix(key)?;
            rest.split_whitespace().next()?.parse::<f64>().ok()
        })
        .filter(|&x| x > 0.0)
        .collect();
    if v.len() >= 3 {
        v.remove(0);
    }
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

/// Key-Write N = 1's instructions per report under callgrind: the collected total (the daemon's
/// `DataPlane::poll`, `callgrind-daemon.out`'s `summary:`) over the run's reports (its JSON).
pub(crate) fn callgrind_per_report(dir: &Path) -> Option<f64> {
    instructions_per_report(
        dir,
        "callgrind-daemon.out",
        "callgrind-daemon-keywrite-n1.json",
    )
}

/// A callgrind run's total instructions (`out`) over the reports its measured run counted (`json`).
fn instructions_per_report(dir: &Path, out: &str, json: &str) -> Option<f64> {
    let text = std::fs::read_to_string(dir.join(out)).ok()?;
    let total: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("summary:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let reports = read_json(&dir.join(json))?["reports"].as_f64()?;
    (reports > 0.0).then(|| total / reports)
}

pub(crate) fn read_json(path: &Path) -> Option<Value> {
    let t = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&t).ok()
}

/// Criterion's mean estimate in ns for `group/function`.
pub(crate) fn criterion_ns(dir: &Path, group: &str, function: &str) -> Option<f64> {
    let v = read_json(&dir.join(group).join(function).join("new/estimates.json"))?;
    v["mean"]["point_estimate"].as_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn testpmd_stats_period_output_parses_to_the_steady_median() {
        let text = "  Rx-pps:            0          Rx-bps:            0\n\
                    \x20 Rx-pps:     14000000          Rx-bps:            0\n\
                    \x20 Tx-pps:     28000001          Tx-bps:            0\n\
                    \x20 Rx-pps:     28097868          Rx-bps:            0\n\
                    \x20 Rx-pps:     27993369          Rx-bps:            0\n\
                    \x20 Rx-pps:     28100000          Rx-bps:            0\n";
        // The partial first period (14 M) is skipped; the median of the rest is 28097868.
        assert_eq!(testpmd_pps(text, "Rx-pps:"), Some(28097868.0));
        // A single Tx sample is taken as it is.
        assert_eq!(testpmd_pps(text, "Tx-pps:"), Some(28000001.0));
        assert_eq!(testpmd_pps("", "Rx-pps:"), None);
        // One steady sample is the rate.
        assert_eq!(
            testpmd_pps("  Rx-pps: 0\n  Rx-pps: 51845328\n", "Rx-pps:"),
            Some(51845328.0)
        );
    }
}
