//! Prometheus text metrics: responder frames by opcode, NAKs by kind, duplicates, drops by reason, fault
//! injection, and query counts and latencies.

use std::fmt::Write;
use std::sync::Mutex;
use std::time::Duration;

use crate::responder::{DropReason, FaultCounts, NakKind, Stats};

/// The query kinds, for per-kind counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryKind {
    /// Key-Write.
    KeyWrite,
    /// Key-Increment.
    KeyIncrement,
    /// Postcarding.
    Postcard,
    /// Append.
    Append,
    /// Sketch.
    Sketch,
}

impl QueryKind {
    const ALL: [QueryKind; 5] = [
        QueryKind::KeyWrite,
        QueryKind::KeyIncrement,
        QueryKind::Postcard,
        QueryKind::Append,
        QueryKind::Sketch,
    ];

    fn label(self) -> &'static str {
        match self {
            QueryKind::KeyWrite => "keywrite",
            QueryKind::KeyIncrement => "keyincrement",
            QueryKind::Postcard => "postcard",
            QueryKind::Append => "append",
            QueryKind::Sketch => "sketch",
        }
    }
}

/// Latency histogram bucket bounds in seconds.
const BUCKETS: [f64; 8] = [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.1, 1.0, 10.0];

#[derive(Debug, Clone, Copy, Default)]
struct QueryStats {
    ok: u64,
    failed: u64,
    seconds: f64,
    buckets: [u64; BUCKETS.len()],
}

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

#[derive(Debug, Default)]
struct Inner {
    responder: Stats,
    faults: FaultCounts,
    port: PortCounters,
    queries: [QueryStats; QueryKind::ALL.len()],
}

/// Every metric of a running collector, shared by the I/O loop, the query engine and the HTTP server.
#[derive(Debug, Default)]
pub struct Metrics {
    inner: Mutex<Inner>,
}

impl Metrics {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // Counters stay meaningful after a panic elsewhere; keep serving them.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Publishes the responder's counters (the I/O loop calls this after each burst).
    pub fn publish_responder(&self, stats: &Stats, faults: FaultCounts) {
        let mut i = self.lock();
        i.responder = stats.clone();
        i.faults = faults;
    }

    /// Publishes the responder port's counters.
    pub fn publish_port(&self, port: PortCounters) {
        self.lock().port = port;
    }

    /// Records one query.
    pub fn record_query(&self, kind: QueryKind, took: Duration, ok: bool) {
        let mut i = self.lock();
        let idx = QueryKind::ALL.iter().position(|k| *k == kind).unwrap_or(0);
        let q = &mut i.queries[idx];
        if ok {
            q.ok += 1;
        } else {
            q.failed += 1;
        }
        let s = took.as_secs_f64();
        q.seconds += s;
        for (b, bound) in q.buckets.iter_mut().zip(BUCKETS) {
            if s <= bound {
                *b += 1;
            }
        }
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let i = self.lock();
        let mut o = String::new();
        let r = &i.responder;
        o.push_str(
            "# HELP dta_collector_frames_total RoCE frames that passed the iCRC, by BTH opcode.\n",
        );
        o.push_str("# TYPE dta_collector_frames_total counter\n");
        for (code, n) in r
            .frames_by_opcode
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
        {
            let _ = writeln!(
                o,
                "dta_collector_frames_total{{opcode=\"0x{code:02x}\"}} {n}"
            );
        }
        o.push_str("# HELP dta_collector_naks_total NAKs sent, by kind.\n");
        o.push_str("# TYPE dta_collector_naks_total counter\n");
        for k in NakKind::ALL {
            let _ = writeln!(
                o,
                "dta_collector_naks_total{{kind=\"{}\"}} {}",
                k.label(),
                r.naks_for(k)
            );
        }
        o.push_str(
            "# HELP dta_collector_drops_total Frames dropped without a response, by reason.\n",
        );
        o.push_str("# TYPE dta_collector_drops_total counter\n");
        for d in DropReason::ALL {
            let _ = writeln!(
                o,
                "dta_collector_drops_total{{reason=\"{}\"}} {}",
                d.label(),
                r.drops_for(d)
            );
        }
        o.push_str("# HELP dta_collector_duplicates_total Duplicate requests answered without being applied.\n");
        o.push_str("# TYPE dta_collector_duplicates_total counter\n");
        let _ = writeln!(
            o,
            "dta_collector_duplicates_total{{op=\"write\"}} {}",
            r.duplicate_writes
        );
        let _ = writeln!(
            o,
            "dta_collector_duplicates_total{{op=\"atomic\"}} {}",
            r.duplicate_atomics
        );
        for (name, help, v) in [
            ("acks_total", "ACKs and ATOMIC ACKNOWLEDGEs sent.", r.acks),
            ("writes_total", "WRITEs applied.", r.writes),
            (
                "write_bytes_total",
                "Bytes written by WRITEs.",
                r.write_bytes,
            ),
            ("atomics_total", "Atomics applied.", r.atomics),
            (
                "port_rx_frames_total",
                "Frames the responder port received.",
                i.port.rx_frames,
            ),
            (
                "port_rx_dropped_total",
                "Frames received but too long to deliver.",
                i.port.rx_dropped,
            ),
            (
                "port_rx_missed_total",
                "Frames lost before they were received: socket buffer or NIC ring full (the translator retransmits them).",
                i.port.rx_missed,
            ),
            (
                "port_tx_frames_total",
                "Responses sent.",
                i.port.tx_frames,
            ),
            (
                "port_tx_dropped_total",
                "Responses the port refused (ring or socket buffer full).",
                i.port.tx_dropped,
            ),
            (
                "fault_dropped_total",
                "Frames dropped by fault injection.",
                i.faults.dropped,
            ),
            (
                "fault_reordered_total",
                "Frames reordered by fault injection.",
                i.faults.reordered,
            ),
            (
                "fault_corrupted_total",
                "Frames corrupted by fault injection.",
                i.faults.corrupted,
            ),
        ] {
            let _ = writeln!(o, "# HELP dta_collector_{name} {help}\n# TYPE dta_collector_{name} counter\ndta_collector_{name} {v}");
        }
        o.push_str("# HELP dta_collector_queries_total Queries answered, by kind and result.\n");
        o.push_str("# TYPE dta_collector_queries_total counter\n");
        for (k, q) in QueryKind::ALL.iter().zip(&i.queries) {
            let _ = writeln!(
                o,
                "dta_collector_queries_total{{kind=\"{}\",result=\"ok\"}} {}",
                k.label(),
                q.ok
            );
            let _ = writeln!(
                o,
                "dta_collector_queries_total{{kind=\"{}\",result=\"error\"}} {}",
                k.label(),
                q.failed
            );
        }
        o.push_str("# HELP dta_collector_query_seconds Query latency.\n");
        o.push_str("# TYPE dta_collector_query_seconds histogram\n");
        for (k, q) in QueryKind::ALL.iter().zip(&i.queries) {
            let l = k.label();
            for (b, bound) in q.buckets.iter().zip(BUCKETS) {
                let _ = writeln!(
                    o,
                    "dta_collector_query_seconds_bucket{{kind=\"{l}\",le=\"{bound}\"}} {b}"
                );
            }
            let n = q.ok + q.failed;
            let _ = writeln!(
                o,
                "dta_collector_query_seconds_bucket{{kind=\"{l}\",le=\"+Inf\"}} {n}"
            );
            let _ = writeln!(
                o,
                "dta_collector_query_seconds_sum{{kind=\"{l}\"}} {}",
                q.seconds
            );
            let _ = writeln!(o, "dta_collector_query_seconds_count{{kind=\"{l}\"}} {n}");
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counts_and_histograms() {
        let m = Metrics::default();
        let mut s = Stats::default();
        s.frames_by_opcode[0x0A] = 3;
        s.nak(NakKind::RemoteAccess);
        s.drop(DropReason::Icrc);
        s.drop(DropReason::Icrc);
        s.duplicate_atomics = 4;
        m.publish_responder(
            &s,
            FaultCounts {
                dropped: 2,
                ..Default::default()
            },
        );
        m.publish_port(PortCounters {
            rx_missed: 5,
            ..Default::default()
        });
        m.record_query(QueryKind::KeyWrite, Duration::from_micros(50), true);
        m.record_query(QueryKind::KeyWrite, Duration::from_micros(50), false);
        let t = m.render();
        for line in [
            "dta_collector_frames_total{opcode=\"0x0a\"} 3",
            "dta_collector_naks_total{kind=\"remote_access\"} 1",
            "dta_collector_naks_total{kind=\"psn_sequence\"} 0",
            "dta_collector_drops_total{reason=\"icrc\"} 2",
            "dta_collector_duplicates_total{op=\"atomic\"} 4",
            "dta_collector_fault_dropped_total 2",
            "dta_collector_port_rx_missed_total 5",
            "dta_collector_queries_total{kind=\"keywrite\",result=\"ok\"} 1",
            "dta_collector_queries_total{kind=\"keywrite\",result=\"error\"} 1",
            "dta_collector_query_seconds_bucket{kind=\"keywrite\",le=\"0.00001\"} 0",
            "dta_collector_query_seconds_bucket{kind=\"keywrite\",le=\"0.0001\"} 2",
            "dta_collector_query_seconds_count{kind=\"keywrite\"} 2",
        ] {
            assert!(t.lines().any(|l| l == line), "missing {line:?} in\n{t}");
        }
    }
}
