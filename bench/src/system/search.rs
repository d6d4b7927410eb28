//! The pure parts of the whole-system run: one probe's counts and what they say (lossless or not, and the
//! stage that lost first), the search for the highest lossless rate, and reading Prometheus text.

use serde::Serialize;

/// What one probe at one offered rate counted, every figure a difference of counters taken before and
/// after it (the daemons run through every probe).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Probe {
    /// Offered rate, reports/s; 0 for the sender as fast as it can.
    pub target_pps: f64,
    /// Reports the sender generated.
    pub sent: u64,
    /// Seconds the sender ran.
    pub sender_secs: f64,
    /// Of `sent`, those the sender's memif TX could not place: the translator's receive ring was full.
    pub sender_dropped: u64,
    /// Reports the translator took in (its engines', `dta_translator_reports_total`).
    pub taken: u64,
    /// Reports the translator dropped (`dta_translator_report_drops_total`, every reason; `queue_full`
    /// when its QP's queue was full because the collector's ACKs did not free the window fast enough).
    pub report_drops: u64,
    /// QP errors.
    pub qp_errors: u64,
    /// Frames the translator's ports missed or dropped on receive.
    pub translator_rx_missed: u64,
    /// RoCE frames the translator's memif TX to the collector could not place (the collector's ring full).
    pub translator_tx_dropped: u64,
    /// WRITEs the translator retransmitted (go-back-N after a loss or a timeout).
    pub retransmitted: u64,
    /// Frames the collector's port missed or dropped on receive.
    pub collector_rx_missed: u64,
    /// WRITEs the collector applied (one a Key-Write N=1 report; duplicates not counted).
    pub written: u64,
    /// CPU seconds the translator's threads ran during the probe, over its wall seconds.
    pub translator_cpu_share: f64,
    /// The same for the collector.
    pub collector_cpu_share: f64,
    /// Times the translator's threads were preempted (involuntary context switches): each is a pause of
    /// its busy-polling worker while another process ran on its CPU.
    pub translator_preempted: u64,
    /// The same for the collector.
    pub collector_preempted: u64,
}

impl Probe {
    /// Reports written at the collector per second of sending.
    pub fn written_per_s(&self) -> f64 {
        if self.sender_secs > 0.0 {
            self.written as f64 / self.sender_secs
        } else {
            0.0
        }
    }

    /// The rate the sender achieved.
    pub fn sender_pps(&self) -> f64 {
        if self.sender_secs > 0.0 {
            self.sent as f64 / self.sender_secs
        } else {
            0.0
        }
    }

    /// The sender fell more than 3 % short of a target rate: the probe did not offer what it says.
    pub fn sender_short(&self) -> bool {
        self.target_pps > 0.0 && self.sender_pps() < 0.97 * self.target_pps
    }

    /// Every report sent was written, and no stage counted a loss.
    pub fn lossless(&self) -> bool {
        self.sent > 0
            && !self.sender_short()
            && self.sender_dropped == 0
            && self.report_drops == 0
            && self.qp_errors == 0
            && self.translator_rx_missed == 0
            && self.collector_rx_missed == 0
            && self.written == self.sent
    }

    /// The stage that lost first, in path order (sender, translator, link to the collector, collector).
    pub fn stage(&self) -> &'static str {
        if self.sent == 0 {
            "nothing sent"
        } else if self.sender_short() {
            "dta-pktgen: the sender could not offer the rate on its shared core"
        } else if self.sender_dropped > 0 || self.translator_rx_missed > 0 {
            "dta-translator: its worker did not drain its receive ring (the sender's memif TX found it full)"
        } else if self.collector_rx_missed > 0 || self.translator_tx_dropped > 0 {
            "dta-collector: its receive ring was full (the translator's memif TX to it dropped)"
        } else if self.report_drops > 0 {
            "dta-translator's QP window: the collector's ACKs freed it slower than reports came (queue_full)"
        } else if self.qp_errors > 0 {
            "QP errors between translator and collector"
        } else if self.written < self.sent {
            "uncounted: reports sent but neither written nor counted as dropped"
        } else {
            "none"
        }
    }
}

/// The search for the highest lossless rate: `lo` the highest rate found lossless, `hi` the lowest found
/// lossy; each next rate halves the gap (the first may be a guess), until the gap is within `precision`
/// of `hi` or `hi` falls below `min`.
#[derive(Debug, Clone)]
pub struct Search {
    lo: f64,
    hi: f64,
    guess: Option<f64>,
    precision: f64,
    min: f64,
}

impl Search {
    /// Between 0 and `max` (a rate known or assumed lossy, e.g. the sender's unpaced rate), starting at
    /// `guess` when it lies inside.
    pub fn new(max: f64, guess: Option<f64>, precision: f64, min: f64) -> Self {
        Search {
            lo: 0.0,
            hi: max,
            guess: guess.filter(|g| *g > 0.0 && *g < max),
            precision,
            min,
        }
    }

    /// The rate to probe next, or `None` when the bracket is narrow enough.
    pub fn next(&mut self) -> Option<f64> {
        if let Some(g) = self.guess.take() {
            return Some(g);
        }
        if self.hi < self.min || self.hi - self.lo <= self.precision * self.hi {
            return None;
        }
        Some((self.lo + self.hi) / 2.0)
    }

    /// Records a probe's outcome at `rate`.
    pub fn record(&mut self, rate: f64, lossless: bool) {
        if lossless {
            self.lo = self.lo.max(rate);
            // A lossless rate above a lossy one (noise): the lossy one no longer bounds the search.
            if self.lo >= self.hi {
                self.hi = self.lo * 1.25;
            }
        } else {
            self.hi = self.hi.min(rate);
            if self.hi <= self.lo {
                self.lo = 0.0;
            }
        }
    }

    /// The highest rate found lossless (0 if none).
    pub fn lossless(&self) -> f64 {
        self.lo
    }

    /// The lowest rate found lossy.
    pub fn lossy(&self) -> f64 {
        self.hi
    }
}

/// The sum of every series of metric `name` in Prometheus text exposition (counters end in `_total`),
/// those whose labels contain `label` when given (e.g. `port="net_memif1"`).
pub fn metric_sum(text: &str, name: &str, label: Option<&str>) -> u64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let rest = l.strip_prefix(name)?;
            let (labels, value) = match rest.chars().next()? {
                '{' => {
                    let end = rest.find('}')?;
                    (&rest[1..end], &rest[end + 1..])
                }
                ' ' => ("", rest),
                _ => return None,
            };
            if label.is_some_and(|want| !labels.contains(want)) {
                return None;
            }
            let v: f64 = value.split_whitespace().next()?.parse().ok()?;
            Some(v as u64)
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The search against a system lossless at or below `limit`.
    fn run(limit: f64, max: f64, guess: Option<f64>) -> (f64, f64, usize) {
        let mut s = Search::new(max, guess, 0.05, 1000.0);
        let mut probes = 0;
        while let Some(r) = s.next() {
            probes += 1;
            assert!(probes < 50, "the search does not end");
            s.record(r, r <= limit);
        }
        (s.lossless(), s.lossy(), probes)
    }

    #[test]
    fn search_brackets_the_limit_within_its_precision() {
        for (limit, guess) in [
            (2.3e6, Some(3.0e6)),
            (2.3e6, Some(1.0e6)),
            (2.3e6, None),
            (9.9e6, None),
            (0.4e6, Some(8.0e6)),
        ] {
            let (lo, hi, probes) = run(limit, 10e6, guess);
            assert!(lo <= limit && limit < hi, "{lo} {limit} {hi}");
            assert!(hi - lo <= 0.05 * hi, "{lo} {hi}");
            assert!(probes <= 12, "{probes} probes for {limit}");
        }
    }

    #[test]
    fn search_ends_when_nothing_is_lossless() {
        let (lo, hi, probes) = run(0.0, 10e6, Some(2e6));
        assert_eq!(lo, 0.0);
        assert!(hi < 1000.0);
        assert!(probes < 20);
    }

    #[test]
    fn search_survives_a_lossless_probe_above_a_lossy_one() {
        let mut s = Search::new(10e6, None, 0.05, 1000.0);
        assert_eq!(s.next(), Some(5e6));
        s.record(5e6, false);
        assert_eq!(s.next(), Some(2.5e6));
        // Noise: 6 M lossless after 5 M lossy moves the bracket up rather than ending inverted.
        s.record(6e6, true);
        assert!(s.lossless() == 6e6 && s.lossy() > 6e6);
        assert!(s.next().unwrap() > 6e6);
    }

    fn clean(rate: f64) -> Probe {
        Probe {
            target_pps: rate,
            sent: 1_000_000,
            sender_secs: 1_000_000.0 / rate,
            taken: 1_000_000,
            written: 1_000_000,
            ..Probe::default()
        }
    }

    #[test]
    fn a_probe_names_the_first_stage_that_lost() {
        let p = clean(1e6);
        assert!(p.lossless());
        assert_eq!(p.stage(), "none");
        assert!((p.written_per_s() - 1e6).abs() < 1.0);

        let mut short = clean(1e6);
        short.sender_secs *= 1.1;
        assert!(!short.lossless());
        assert!(short.stage().starts_with("dta-pktgen"));

        // The sender's drops come first even when the collector lost too.
        let mut rx = clean(1e6);
        rx.sender_dropped = 10;
        rx.translator_tx_dropped = 5;
        rx.written -= 15;
        assert!(rx.stage().starts_with("dta-translator: its worker"));

        let mut col = clean(1e6);
        col.translator_tx_dropped = 5;
        assert!(col.stage().starts_with("dta-collector"));

        let mut window = clean(1e6);
        window.report_drops = 3;
        window.written -= 3;
        assert!(window.stage().contains("queue_full"));

        let mut silent = clean(1e6);
        silent.written -= 1;
        assert!(!silent.lossless());
        assert!(silent.stage().starts_with("uncounted"));

        // Unpaced (target 0): never "short".
        let mut sat = clean(1e6);
        sat.target_pps = 0.0;
        assert!(sat.lossless());
    }

    #[test]
    fn metric_sum_adds_the_series_of_one_name() {
        let text = "# HELP dta_translator_report_drops Reports dropped.\n\
            # TYPE dta_translator_report_drops counter\n\
            dta_translator_report_drops_total{reason=\"queue_full\"} 12\n\
            dta_translator_report_drops_total{reason=\"no_route\"} 3\n\
            dta_translator_report_drops_total_other 99\n\
            dta_translator_port_tx_dropped_total{port=\"net_memif0\"} 1\n\
            dta_translator_port_tx_dropped_total{port=\"net_memif1\"} 7\n\
            dta_collector_writes_total 1.5e6\n";
        assert_eq!(
            metric_sum(text, "dta_translator_report_drops_total", None),
            15
        );
        assert_eq!(
            metric_sum(
                text,
                "dta_translator_port_tx_dropped_total",
                Some("port=\"net_memif1\"")
            ),
            7
        );
        assert_eq!(
            metric_sum(text, "dta_collector_writes_total", None),
            1_500_000
        );
        assert_eq!(metric_sum(text, "dta_collector_acks_total", None), 0);
    }
}
