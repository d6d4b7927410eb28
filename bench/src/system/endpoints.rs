//! What the whole-system run reads from the daemons: their counters, from their `/metrics`.

use super::*;

/// The daemons' counters at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Counters {
    pub(super) taken: u64,
    pub(super) report_drops: u64,
    pub(super) qp_errors: u64,
    pub(super) translator_rx_missed: u64,
    pub(super) translator_tx_dropped: u64,
    pub(super) retransmitted: u64,
    pub(super) collector_rx_missed: u64,
    pub(super) collector_rx_frames: u64,
    pub(super) written: u64,
}

pub(super) struct Endpoints {
    pub(super) translator: Option<SocketAddr>,
    pub(super) collector: SocketAddr,
}

impl Endpoints {
    pub(super) fn counters(&self) -> Result<Counters> {
        let c = http_get(self.collector, "/metrics").context("the collector's /metrics")?;
        let mut n = Counters {
            collector_rx_missed: metric_sum(&c, "dta_collector_port_rx_missed_total", None)
                + metric_sum(&c, "dta_collector_port_rx_dropped_total", None),
            collector_rx_frames: metric_sum(&c, "dta_collector_port_rx_frames_total", None),
            written: metric_sum(&c, "dta_collector_writes_total", None),
            ..Counters::default()
        };
        if let Some(t) = self.translator {
            let t = http_get(t, "/metrics").context("the translator's /metrics")?;
            n.taken = metric_sum(&t, "dta_translator_reports_total", None);
            n.report_drops = metric_sum(&t, "dta_translator_report_drops_total", None);
            n.qp_errors = metric_sum(&t, "dta_translator_qp_errors_total", None);
            n.translator_rx_missed = metric_sum(&t, "dta_translator_port_rx_missed_total", None)
                + metric_sum(&t, "dta_translator_port_rx_dropped_total", None);
            n.translator_tx_dropped = metric_sum(
                &t,
                "dta_translator_port_tx_dropped_total",
                Some("port=\"net_memif1\""),
            );
            n.retransmitted = metric_sum(&t, "dta_translator_retransmitted_frames_total", None);
        }
        Ok(n)
    }

    /// Waits until the counters stop moving (the translator publishes every 100 ms), at most `limit`.
    pub(super) fn settle(&self, limit: Duration) -> Result<Counters> {
        let start = Instant::now();
        let mut last = self.counters()?;
        let mut still = 0;
        while start.elapsed() < limit {
            std::thread::sleep(Duration::from_millis(120));
            let now = self.counters()?;
            if now == last {
                still += 1;
                if still >= 2 {
                    break;
                }
            } else {
                still = 0;
            }
            last = now;
        }
        Ok(last)
    }
}
