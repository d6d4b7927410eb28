//! The exporter's counters (`dta_collector_export_*`): rows each sink took per table, entries the rings
//! overwrote before a sink's tail read them, rows a sink's full buffer turned away, and failed writes.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

type SinkTable = [(&'static str, String); 2];
type ListSink = [(&'static str, String); 2];
type Sink = [(&'static str, String); 1];

/// Counters shared by the exporter's thread and the metrics exposition.
#[derive(Debug, Clone, Default)]
pub struct ExportMetrics {
    rows: Family<SinkTable, Counter>,
    overruns: Family<ListSink, Counter>,
    dropped: Family<Sink, Counter>,
    errors: Family<Sink, Counter>,
}

impl ExportMetrics {
    /// Registers the families under `registry`'s prefix.
    pub(super) fn register(&self, registry: &mut Registry) {
        registry.register(
            "export_rows",
            "Rows a sink wrote, by sink and table",
            self.rows.clone(),
        );
        registry.register(
            "export_overruns",
            "Append entries the ring overwrote before a sink's tail read them, by list and sink",
            self.overruns.clone(),
        );
        registry.register(
            "export_dropped_rows",
            "Rows a sink's full buffer turned away while the sink was down, by sink",
            self.dropped.clone(),
        );
        registry.register(
            "export_errors",
            "Sink writes that failed (retried while the buffer holds), by sink",
            self.errors.clone(),
        );
    }

    /// `n` rows of `table` written by `sink`.
    pub fn rows(&self, sink: &str, table: &str, n: u64) {
        self.rows
            .get_or_create(&[("sink", sink.to_string()), ("table", table.to_string())])
            .inc_by(n);
    }

    /// `n` entries of `list` lost to `sink`; also called with 0, so that every list shows up at 0.
    pub fn overruns(&self, list: u32, sink: &str, n: u64) {
        self.overruns
            .get_or_create(&[("list", list.to_string()), ("sink", sink.to_string())])
            .inc_by(n);
    }

    /// `n` rows `sink` had no room for.
    pub fn dropped(&self, sink: &str, n: u64) {
        self.dropped
            .get_or_create(&[("sink", sink.to_string())])
            .inc_by(n);
    }

    /// One failed write of `sink`.
    pub fn error(&self, sink: &str) {
        self.errors
            .get_or_create(&[("sink", sink.to_string())])
            .inc();
    }

    /// The overruns counted so far for `list` and `sink` (tests).
    pub fn overruns_of(&self, list: u32, sink: &str) -> u64 {
        self.overruns
            .get_or_create(&[("list", list.to_string()), ("sink", sink.to_string())])
            .get()
    }

    /// The rows of `table` written so far by `sink` (tests).
    pub fn rows_of(&self, sink: &str, table: &str) -> u64 {
        self.rows
            .get_or_create(&[("sink", sink.to_string()), ("table", table.to_string())])
            .get()
    }

    /// The rows dropped so far by `sink` (tests).
    pub fn dropped_of(&self, sink: &str) -> u64 {
        self.dropped
            .get_or_create(&[("sink", sink.to_string())])
            .get()
    }
}
