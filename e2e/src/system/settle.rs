//! One workload sent and the translator waited for: what it took.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::send::{Metrics, Sender};
use crate::workload::Workload;

/// What one workload took.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Name.
    pub name: &'static str,
    /// Reports sent.
    pub reports: u64,
    /// Seconds from the first report to a settled translator.
    pub seconds: f64,
    /// Answers checked.
    pub checked: u64,
    /// Frames the translator sent again during the workload, and the retransmit timeouts among the causes.
    pub retransmitted: u64,
    /// Retransmit timeouts during the workload.
    pub timeouts: u64,
}

/// Sends `w` through `sender` and waits for the translator behind `metrics` to settle; `checked` is left
/// 0 for the caller's check.
pub(super) fn send_and_settle(
    sender: &mut Sender,
    metrics: &Metrics,
    w: &Workload,
) -> Result<Outcome> {
    let taken = sender.paced_by();
    let base = metrics.value(taken, "")?;
    let resent = metrics.value("dta_translator_retransmitted_frames_total", "")?;
    let timeouts = metrics.value("dta_translator_retransmit_timeouts_total", "")?;
    let start = Instant::now();
    let n = w.reports.len() as u64;
    sender
        .send_all(&w.reports, metrics, base, 4096, Duration::from_secs(60))
        .with_context(|| format!("sending {}", w.name))?;
    metrics
        .wait_settled_on(taken, base + n, Duration::from_secs(60))
        .with_context(|| format!("settling after {}", w.name))?;
    let seconds = start.elapsed().as_secs_f64();
    Ok(Outcome {
        name: w.name,
        reports: n,
        seconds,
        checked: 0,
        retransmitted: metrics.value("dta_translator_retransmitted_frames_total", "")? - resent,
        timeouts: metrics.value("dta_translator_retransmit_timeouts_total", "")? - timeouts,
    })
}
