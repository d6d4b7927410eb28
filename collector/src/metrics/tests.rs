//! The collector's exposition: values, and the pinned list of series (names, label names and values) that
//! dashboards and scrapers select on.

use super::*;

/// Every series the hand-written exposition had (taken by running it before the move to prometheus-client)
/// with frames of opcodes 0x0a and 0x13 seen. `le` bounds compare as numbers: OpenMetrics writes `1.0`
/// where the hand-written text had `1`.
const SERIES: &[&str] = &[
    "dta_collector_acks_total",
    "dta_collector_atomics_total",
    "dta_collector_drops_total{reason=\"duplicate_read\"}",
    "dta_collector_drops_total{reason=\"foreign_mac\"}",
    "dta_collector_drops_total{reason=\"icrc\"}",
    "dta_collector_drops_total{reason=\"ipv4_checksum\"}",
    "dta_collector_drops_total{reason=\"malformed\"}",
    "dta_collector_drops_total{reason=\"not_for_us\"}",
    "dta_collector_drops_total{reason=\"not_request\"}",
    "dta_collector_drops_total{reason=\"not_roce\"}",
    "dta_collector_drops_total{reason=\"out_of_sequence\"}",
    "dta_collector_drops_total{reason=\"pkey\"}",
    "dta_collector_drops_total{reason=\"qp_error\"}",
    "dta_collector_drops_total{reason=\"stale_duplicate_atomic\"}",
    "dta_collector_drops_total{reason=\"udp_checksum\"}",
    "dta_collector_drops_total{reason=\"udp_length\"}",
    "dta_collector_drops_total{reason=\"unknown_qp\"}",
    "dta_collector_drops_total{reason=\"unsupported_opcode\"}",
    "dta_collector_drops_total{reason=\"vlan\"}",
    "dta_collector_drops_total{reason=\"wrong_source\"}",
    "dta_collector_duplicates_total{op=\"atomic\"}",
    "dta_collector_duplicates_total{op=\"write\"}",
    "dta_collector_fault_corrupted_total",
    "dta_collector_fault_dropped_total",
    "dta_collector_fault_reordered_total",
    "dta_collector_frames_total{opcode=\"0x0a\"}",
    "dta_collector_frames_total{opcode=\"0x13\"}",
    "dta_collector_http_connections_active",
    "dta_collector_http_connections_total",
    "dta_collector_http_refused_total{reason=\"address_cap\"}",
    "dta_collector_http_refused_total{reason=\"bad_request\"}",
    "dta_collector_http_refused_total{reason=\"body_too_large\"}",
    "dta_collector_http_refused_total{reason=\"connection_cap\"}",
    "dta_collector_http_refused_total{reason=\"head_too_large\"}",
    "dta_collector_http_refused_total{reason=\"idle_timeout\"}",
    "dta_collector_http_refused_total{reason=\"read_timeout\"}",
    "dta_collector_http_refused_total{reason=\"write_timeout\"}",
    "dta_collector_http_requests_total",
    "dta_collector_naks_total{kind=\"invalid_request\"}",
    "dta_collector_naks_total{kind=\"psn_sequence\"}",
    "dta_collector_naks_total{kind=\"remote_access\"}",
    "dta_collector_naks_total{kind=\"rnr\"}",
    "dta_collector_port_rx_dropped_total",
    "dta_collector_port_rx_frames_total",
    "dta_collector_port_rx_missed_total",
    "dta_collector_port_tx_dropped_total",
    "dta_collector_port_tx_frames_total",
    "dta_collector_queries_total{kind=\"append\",result=\"error\"}",
    "dta_collector_queries_total{kind=\"append\",result=\"ok\"}",
    "dta_collector_queries_total{kind=\"keyincrement\",result=\"error\"}",
    "dta_collector_queries_total{kind=\"keyincrement\",result=\"ok\"}",
    "dta_collector_queries_total{kind=\"keywrite\",result=\"error\"}",
    "dta_collector_queries_total{kind=\"keywrite\",result=\"ok\"}",
    "dta_collector_queries_total{kind=\"postcard\",result=\"error\"}",
    "dta_collector_queries_total{kind=\"postcard\",result=\"ok\"}",
    "dta_collector_queries_total{kind=\"sketch\",result=\"error\"}",
    "dta_collector_queries_total{kind=\"sketch\",result=\"ok\"}",
    "dta_collector_query_seconds_bucket{kind=\"append\",le=\"+Inf\"}",
    "dta_collector_query_seconds_bucket{kind=\"append\",le=\"0.000001\"}",
    "dta_collector_query_seconds_bucket{kind=\"append\",le=\"0.00001\"}",
    "dta_collector_query_seconds_bucket{kind=\"append\",le=\"0.0001\"}",
    "dta_collector_query_seconds_bucket{kind=\"append\",le=\"0.001\"}",
    "dta_collector_query_seconds_bucket{kind=\"append\",le=\"0.01\"}",
    "dta_collector_query_seconds_bucket{kind=\"append\",le=\"0.1\"}",
    "dta_collector_query_seconds_bucket{kind=\"append\",le=\"1\"}",
    "dta_collector_query_seconds_bucket{kind=\"append\",le=\"10\"}",
    "dta_collector_query_seconds_bucket{kind=\"keyincrement\",le=\"+Inf\"}",
    "dta_collector_query_seconds_bucket{kind=\"keyincrement\",le=\"0.000001\"}",
    "dta_collector_query_seconds_bucket{kind=\"keyincrement\",le=\"0.00001\"}",
    "dta_collector_query_seconds_bucket{kind=\"keyincrement\",le=\"0.0001\"}",
    "dta_collector_query_seconds_bucket{kind=\"keyincrement\",le=\"0.001\"}",
    "dta_collector_query_seconds_bucket{kind=\"keyincrement\",le=\"0.01\"}",
    "dta_collector_query_seconds_bucket{kind=\"keyincrement\",le=\"0.1\"}",
    "dta_collector_query_seconds_bucket{kind=\"keyincrement\",le=\"1\"}",
    "dta_collector_query_seconds_bucket{kind=\"keyincrement\",le=\"10\"}",
    "dta_collector_query_seconds_bucket{kind=\"keywrite\",le=\"+Inf\"}",
    "dta_collector_query_seconds_bucket{kind=\"keywrite\",le=\"0.000001\"}",
    "dta_collector_query_seconds_bucket{kind=\"keywrite\",le=\"0.00001\"}",
    "dta_collector_query_seconds_bucket{kind=\"keywrite\",le=\"0.0001\"}",
    "dta_collector_query_seconds_bucket{kind=\"keywrite\",le=\"0.001\"}",
    "dta_collector_query_seconds_bucket{kind=\"keywrite\",le=\"0.01\"}",
    "dta_collector_query_seconds_bucket{kind=\"keywrite\",le=\"0.1\"}",
    "dta_collector_query_seconds_bucket{kind=\"keywrite\",le=\"1\"}",
    "dta_collector_query_seconds_bucket{kind=\"keywrite\",le=\"10\"}",
    "dta_collector_query_seconds_bucket{kind=\"postcard\",le=\"+Inf\"}",
    "dta_collector_query_seconds_bucket{kind=\"postcard\",le=\"0.000001\"}",
    "dta_collector_query_seconds_bucket{kind=\"postcard\",le=\"0.00001\"}",
    "dta_collector_query_seconds_bucket{kind=\"postcard\",le=\"0.0001\"}",
    "dta_collector_query_seconds_bucket{kind=\"postcard\",le=\"0.001\"}",
    "dta_collector_query_seconds_bucket{kind=\"postcard\",le=\"0.01\"}",
    "dta_collector_query_seconds_bucket{kind=\"postcard\",le=\"0.1\"}",
    "dta_collector_query_seconds_bucket{kind=\"postcard\",le=\"1\"}",
    "dta_collector_query_seconds_bucket{kind=\"postcard\",le=\"10\"}",
    "dta_collector_query_seconds_bucket{kind=\"sketch\",le=\"+Inf\"}",
    "dta_collector_query_seconds_bucket{kind=\"sketch\",le=\"0.000001\"}",
    "dta_collector_query_seconds_bucket{kind=\"sketch\",le=\"0.00001\"}",
    "dta_collector_query_seconds_bucket{kind=\"sketch\",le=\"0.0001\"}",
    "dta_collector_query_seconds_bucket{kind=\"sketch\",le=\"0.001\"}",
    "dta_collector_query_seconds_bucket{kind=\"sketch\",le=\"0.01\"}",
    "dta_collector_query_seconds_bucket{kind=\"sketch\",le=\"0.1\"}",
    "dta_collector_query_seconds_bucket{kind=\"sketch\",le=\"1\"}",
    "dta_collector_query_seconds_bucket{kind=\"sketch\",le=\"10\"}",
    "dta_collector_query_seconds_count{kind=\"append\"}",
    "dta_collector_query_seconds_count{kind=\"keyincrement\"}",
    "dta_collector_query_seconds_count{kind=\"keywrite\"}",
    "dta_collector_query_seconds_count{kind=\"postcard\"}",
    "dta_collector_query_seconds_count{kind=\"sketch\"}",
    "dta_collector_query_seconds_sum{kind=\"append\"}",
    "dta_collector_query_seconds_sum{kind=\"keyincrement\"}",
    "dta_collector_query_seconds_sum{kind=\"keywrite\"}",
    "dta_collector_query_seconds_sum{kind=\"postcard\"}",
    "dta_collector_query_seconds_sum{kind=\"sketch\"}",
    "dta_collector_write_bytes_total",
    "dta_collector_writes_total",
];

/// The type of every family as the hand-written exposition declared it (its `# TYPE` names kept the
/// counters' `_total`; OpenMetrics names the family without it).
const TYPES: &[(&str, &str)] = &[
    ("dta_collector_frames_total", "counter"),
    ("dta_collector_naks_total", "counter"),
    ("dta_collector_drops_total", "counter"),
    ("dta_collector_duplicates_total", "counter"),
    ("dta_collector_acks_total", "counter"),
    ("dta_collector_writes_total", "counter"),
    ("dta_collector_write_bytes_total", "counter"),
    ("dta_collector_atomics_total", "counter"),
    ("dta_collector_port_rx_frames_total", "counter"),
    ("dta_collector_port_rx_dropped_total", "counter"),
    ("dta_collector_port_rx_missed_total", "counter"),
    ("dta_collector_port_tx_frames_total", "counter"),
    ("dta_collector_port_tx_dropped_total", "counter"),
    ("dta_collector_fault_dropped_total", "counter"),
    ("dta_collector_fault_reordered_total", "counter"),
    ("dta_collector_fault_corrupted_total", "counter"),
    ("dta_collector_queries_total", "counter"),
    ("dta_collector_query_seconds", "histogram"),
    ("dta_collector_http_connections_total", "counter"),
    ("dta_collector_http_connections_active", "gauge"),
    ("dta_collector_http_requests_total", "counter"),
    ("dta_collector_http_refused_total", "counter"),
];

#[test]
fn series_names_and_labels_are_kept() {
    let m = Metrics::default();
    let mut s = Stats::default();
    s.frames_by_opcode[0x0A] = 3;
    s.frames_by_opcode[0x13] = 1;
    m.publish_responder(&s, FaultCounts::default());
    let text = m.render(&HttpStats::default());
    dta_httpd::openmetrics::assert_exposition(&text, SERIES, TYPES);
}

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
    let t = m.render(&HttpStats::default());
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
        "dta_collector_query_seconds_bucket{le=\"0.00001\",kind=\"keywrite\"} 0",
        "dta_collector_query_seconds_bucket{le=\"0.0001\",kind=\"keywrite\"} 2",
        "dta_collector_query_seconds_count{kind=\"keywrite\"} 2",
    ] {
        assert!(t.lines().any(|l| l == line), "missing {line:?} in\n{t}");
    }
}
