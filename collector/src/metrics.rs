//! Prometheus metrics (OpenMetrics text through prometheus-client): responder frames by opcode, NAKs by
//! kind, duplicates, drops by reason, fault injection, port counters, and query counts and latencies.
//!
//! The I/O loop publishes the responder's and the port's counters after each burst (a copy under a mutex,
//! as before); a scrape encodes the last copy ([`Published`] is a prometheus-client collector). Queries are
//! counted with the client's own typed counters and histograms. Counter families are named without
//! `_total`: the encoder appends it.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dta_httpd::openmetrics::{counter, counters, exposition, gauge};
use dta_httpd::HttpStats;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use dta_protocol::layout::RegionKind;

use crate::control::QpStats;

pub mod export;
use crate::responder::{DropReason, FaultCounts, NakKind, Stats};
pub use export::ExportMetrics;

/// The query kinds, for per-kind counters: a query reads one region kind, and its label is the
/// region-kind table's `query` column (`RegionKind::query_label`).
pub type QueryKind = RegionKind;

const BUCKETS: [f64; 8] = [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.1, 1.0, 10.0];

/// The responder port's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PortCounters {
    /// Frames received.
    pub rx_frames: u64,
    /// Frames received but not delivered (oversize).
    pub rx_dropped: u64,
    /// Frames lost before they were received (socket buffer or NIC ring full).
    pub rx_missed: u64,
    /// Frames sent.
    pub tx_frames: u64,
    /// Frames the port refused to send.
    pub tx_dropped: u64,
}

/// What the I/O loop last published.
#[derive(Debug, Default)]
struct Snapshot {
    responder: Stats,
    faults: FaultCounts,
    port: PortCounters,
    /// The control server's QP table, when there is one.
    control: Option<Arc<QpStats>>,
}

/// The published snapshot as a collector, encoded at every scrape.
#[derive(Debug, Default, Clone)]
struct Published(Arc<Mutex<Snapshot>>);

impl Published {
    fn lock(&self) -> std::sync::MutexGuard<'_, Snapshot> {
        // Counters stay meaningful after a panic elsewhere; keep serving them.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Collector for Published {
    fn encode(&self, mut enc: DescriptorEncoder) -> fmt::Result {
        let i = self.lock();
        let r = &i.responder;
        let enc = &mut enc;
        counters(
            enc,
            "frames",
            "RoCE frames that passed the iCRC, by BTH opcode.",
            r.frames_by_opcode
                .iter()
                .enumerate()
                .filter(|(_, n)| **n > 0)
                .map(|(code, n)| ([("opcode", format!("0x{code:02x}"))], *n)),
        )?;
        counters(
            enc,
            "naks",
            "NAKs sent, by kind.",
            NakKind::ALL
                .iter()
                .map(|k| ([("kind", k.label())], r.naks_for(*k))),
        )?;
        counters(
            enc,
            "drops",
            "Frames dropped without a response, by reason.",
            DropReason::ALL
                .iter()
                .map(|d| ([("reason", d.label())], r.drops_for(*d))),
        )?;
        counters(
            enc,
            "duplicates",
            "Duplicate requests answered without being applied.",
            [
                ([("op", "write")], r.duplicate_writes),
                ([("op", "atomic")], r.duplicate_atomics),
            ],
        )?;
        for (name, help, v) in [
            ("acks", "ACKs and ATOMIC ACKNOWLEDGEs sent.", r.acks),
            ("writes", "WRITEs applied.", r.writes),
            ("write_bytes", "Bytes written by WRITEs.", r.write_bytes),
            ("atomics", "Atomics applied.", r.atomics),
            ("port_rx_frames", "Frames the responder port received.", i.port.rx_frames),
            ("port_rx_dropped", "Frames received but too long to deliver.", i.port.rx_dropped),
            (
                "port_rx_missed",
                "Frames lost before they were received: socket buffer or NIC ring full (the translator retransmits them).",
                i.port.rx_missed,
            ),
            ("port_tx_frames", "Responses sent.", i.port.tx_frames),
            (
                "port_tx_dropped",
                "Responses the port refused (ring or socket buffer full).",
                i.port.tx_dropped,
            ),
            ("fault_dropped", "Frames dropped by fault injection.", i.faults.dropped),
            ("fault_reordered", "Frames reordered by fault injection.", i.faults.reordered),
            ("fault_corrupted", "Frames corrupted by fault injection.", i.faults.corrupted),
        ] {
            counter(enc, name, help, v)?;
        }
        if let Some(c) = &i.control {
            let get =
                |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
            gauge(
                enc,
                "control_qps_open",
                "Responder QPs open for translators.",
                i64::try_from(get(&c.open)).unwrap_or(i64::MAX),
            )?;
            counter(
                enc,
                "control_qps_reclaimed",
                "QPs closed because their translator's control connection ended and it did not say hello again within the grace period.",
                get(&c.reclaimed),
            )?;
            counters(
                enc,
                "control_hellos_refused_qp_cap",
                "Hellos refused for the QPs they asked for, by limit.",
                [
                    ([("limit", "per_hello")], get(&c.refused_per_hello)),
                    ([("limit", "total")], get(&c.refused_total)),
                ],
            )?;
            counter(
                enc,
                "control_hellos_refused_in_use",
                "Hellos refused because another live control connection holds their translator QPs (a second translator with the same address and QPNs as a running one).",
                get(&c.refused_in_use),
            )?;
            counter(
                enc,
                "control_append_lists_withheld",
                "Append lists left out of a translator's welcome because another translator writes them (one per list per welcome).",
                get(&c.append_lists_withheld),
            )?;
            counter(
                enc,
                "control_sketches_withheld",
                "Sketches left out of a translator's welcome because another translator merges them (one per sketch per welcome).",
                get(&c.sketches_withheld),
            )?;
        }
        Ok(())
    }
}

type KindResult = [(&'static str, &'static str); 2];
type KindLabel = [(&'static str, &'static str); 1];

fn latency_histogram() -> Histogram {
    Histogram::new(BUCKETS)
}

/// Every metric of a running collector, shared by the I/O loop, the query engine and the HTTP server.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    published: Published,
    queries: Family<KindResult, Counter>,
    latency: Family<KindLabel, Histogram>,
    /// The history exporter's counters (zero families when it is not configured).
    pub export: ExportMetrics,
}

impl Default for Metrics {
    fn default() -> Self {
        let published = Published::default();
        let queries = Family::<KindResult, Counter>::default();
        let latency = Family::<KindLabel, Histogram>::new_with_constructor(
            latency_histogram as fn() -> Histogram,
        );
        // Every kind and result is exposed from the start, at zero, as dashboards expect.
        for k in QueryKind::ALL {
            for result in ["ok", "error"] {
                let _ = queries.get_or_create(&[("kind", k.query_label()), ("result", result)]);
            }
            let _ = latency.get_or_create(&[("kind", k.query_label())]);
        }
        let mut registry = Registry::with_prefix("dta_collector");
        registry.register_collector(Box::new(published.clone()));
        registry.register(
            "queries",
            "Queries answered, by kind and result",
            queries.clone(),
        );
        // `register` ends the help with a full stop.
        registry.register("query_seconds", "Query latency", latency.clone());
        let export = ExportMetrics::default();
        export.register(&mut registry);
        Metrics {
            registry,
            published,
            queries,
            latency,
            export,
        }
    }
}

impl Metrics {
    /// Publishes the responder's counters (the I/O loop calls this after each burst).
    pub fn publish_responder(&self, stats: &Stats, faults: FaultCounts) {
        let mut i = self.published.lock();
        i.responder = stats.clone();
        i.faults = faults;
    }

    /// Exposes the control server's QP counters from now on.
    pub fn publish_control(&self, stats: Arc<QpStats>) {
        self.published.lock().control = Some(stats);
    }

    /// Publishes the responder port's counters.
    pub fn publish_port(&self, port: PortCounters) {
        self.published.lock().port = port;
    }

    /// Records one query.
    pub fn record_query(&self, kind: QueryKind, took: Duration, ok: bool) {
        let result = if ok { "ok" } else { "error" };
        self.queries
            .get_or_create(&[("kind", kind.query_label()), ("result", result)])
            .inc();
        self.latency
            .get_or_create(&[("kind", kind.query_label())])
            .observe(took.as_secs_f64());
    }

    /// The exposition: the collector's families, then the HTTP server's (`dta_collector_http_*`), `# EOF`.
    pub fn render(&self, http: &HttpStats) -> String {
        exposition(&self.registry, http, "dta_collector")
    }
}

#[cfg(test)]
mod tests;
