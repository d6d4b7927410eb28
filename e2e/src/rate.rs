//! The highest lossless end-to-end rate (issue 14): an open-loop sender in the reporter namespace at a
//! fixed rate, then a count of where reports went missing, stage by stage, from the counters each stage
//! keeps. The exact-check runs use flow control instead (they measure correctness, not capacity); this
//! answers "how fast can it go here without losing anything", and says which stage saturates first.

use std::time::Duration;

use anyhow::Result;

use crate::http::metric;
use crate::system::System;

/// One probe at one rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Probe {
    /// Offered rate, reports per second.
    pub rate: u64,
    /// Reports the reporter's kernel accepted.
    pub sent: u64,
    /// Sends the reporter's kernel refused (its own queue full).
    pub refused: u64,
    /// Reports the translator's engines took in.
    pub taken: u64,
    /// Frames the translator's ports dropped or missed (its RX rings full).
    pub port_drops: u64,
    /// Frames its I/O thread dropped because a worker fell behind.
    pub backlog_drops: u64,
    /// Reports the engines dropped (queue full and the like).
    pub report_drops: u64,
    /// QP errors.
    pub qp_errors: u64,
}

impl Probe {
    /// Nothing lost anywhere.
    pub fn lossless(&self) -> bool {
        self.refused == 0
            && self.taken == self.sent
            && self.report_drops == 0
            && self.qp_errors == 0
    }

    /// The stage that lost reports first, in path order.
    pub fn bottleneck(&self) -> &'static str {
        if self.refused > 0 {
            "the reporter's interface queue (sender)"
        } else if self.port_drops > 0 {
            "the translator's RX ring (veth to AF_PACKET/DPDK port)"
        } else if self.backlog_drops > 0 {
            "the translator's workers (I/O thread to engine queues)"
        } else if self.report_drops > 0 || self.qp_errors > 0 {
            "the translator's QP queue: the collector acknowledges writes slower than they come"
        } else if self.taken < self.sent {
            "the kernel between reporter and translator: the veth or the translator's AF_PACKET ring (DPDK's net_af_packet does not count that ring's drops)"
        } else {
            "none"
        }
    }
}

struct Totals {
    taken: u64,
    port_drops: u64,
    backlog_drops: u64,
    report_drops: u64,
    qp_errors: u64,
}

fn totals(sys: &System) -> Result<Totals> {
    let m = sys.metrics.scrape()?;
    Ok(Totals {
        // Well-formed reports taken in, including any an engine then dropped (counted below).
        taken: metric(&m, "dta_translator_reports_total", ""),
        port_drops: metric(&m, "dta_translator_port_rx_dropped_total", "")
            + metric(&m, "dta_translator_port_rx_missed_total", ""),
        backlog_drops: metric(&m, "dta_translator_worker_backlog_drops_total", ""),
        report_drops: metric(&m, "dta_translator_report_drops_total", ""),
        qp_errors: metric(&m, "dta_translator_qp_errors_total", ""),
    })
}

/// Offers `reports` (cycled) at `rate` for `secs`, lets the translator drain, and counts.
pub fn probe(sys: &mut System, reports: &[Vec<u8>], rate: u64, secs: f64) -> Result<Probe> {
    let before = totals(sys)?;
    let (sent, refused) = sys.send_at_rate(reports, rate, Duration::from_secs_f64(secs))?;
    // Drain: wait until every report is in or the count stops moving (what was lost stays lost).
    let mut last = totals(sys)?.taken;
    for _ in 0..50 {
        std::thread::sleep(Duration::from_millis(200));
        let now = totals(sys)?.taken;
        if now - before.taken >= sent || now == last {
            break;
        }
        last = now;
    }
    let after = totals(sys)?;
    Ok(Probe {
        rate,
        sent,
        refused,
        taken: after.taken - before.taken,
        port_drops: after.port_drops - before.port_drops,
        backlog_drops: after.backlog_drops - before.backlog_drops,
        report_drops: after.report_drops - before.report_drops,
        qp_errors: after.qp_errors - before.qp_errors,
    })
}

/// The highest lossless rate: doubles from `start` until a probe loses, then bisects `steps` times.
/// Returns the best lossless probe (none when even `start` loses) and every probe made.
pub fn highest_lossless(
    sys: &mut System,
    reports: &[Vec<u8>],
    start: u64,
    max: u64,
    steps: u32,
    secs: f64,
) -> Result<(Option<Probe>, Vec<Probe>)> {
    let mut probes = Vec::new();
    let mut best: Option<Probe> = None;
    let mut rate = start;
    let mut lossy: Option<u64> = None;
    while rate <= max {
        let p = probe(sys, reports, rate, secs)?;
        probes.push(p);
        if p.lossless() {
            best = Some(p);
            rate *= 2;
        } else {
            lossy = Some(rate);
            break;
        }
    }
    if let (Some(mut hi), Some(mut lo)) = (lossy, best.map(|b| b.rate)) {
        for _ in 0..steps {
            let mid = (lo + hi) / 2;
            let p = probe(sys, reports, mid, secs)?;
            probes.push(p);
            if p.lossless() {
                best = Some(p);
                lo = mid;
            } else {
                hi = mid;
            }
        }
    }
    Ok((best, probes))
}
