//! The translator's exposition: values summed over workers, the served endpoint, and the pinned list of
//! series (names, label names and values) that dashboards and the e2e scrapers select on.

use super::*;

impl Sources {
    fn render_for_test(&self) -> String {
        exposition(
            &self.registry(),
            &dta_httpd::HttpStats::default(),
            "dta_translator",
        )
    }
}

/// Every series the hand-written exposition had (taken by running it before the move to prometheus-client),
/// plus the INT and postcard-continuation series added since,
/// for two workers with one QP each (smoothed RTT measured), one collector and one port `p0`.
const SERIES: &[&str] = &[
    "dta_translator_acks_total",
    "dta_translator_append_head_writes_total",
    "dta_translator_arp_replies_total",
    "dta_translator_atomic_acks_total",
    "dta_translator_bad_icrc_responses_total",
    "dta_translator_cnps_total",
    "dta_translator_collector_restarts_seen_total",
    "dta_translator_collector_restarts_total{collector=\"0\"}",
    "dta_translator_collector_usable{collector=\"0\"}",
    "dta_translator_control_failures_total{collector=\"0\"}",
    "dta_translator_control_reestablished_total{collector=\"0\"}",
    "dta_translator_control_welcomes_refused_total{collector=\"0\",reason=\"qp_mismatch\"}",
    "dta_translator_control_welcomes_refused_total{collector=\"0\",reason=\"qps_in_use\"}",
    "dta_translator_control_welcomes_refused_total{collector=\"0\",reason=\"refused_by_collector\"}",
    "dta_translator_control_welcomes_refused_total{collector=\"0\",reason=\"unusable_welcome\"}",
    "dta_translator_control_welcomes_total{collector=\"0\"}",
    "dta_translator_dta_nacks_total",
    "dta_translator_forwarded_total",
    "dta_translator_frames_in_total",
    "dta_translator_http_connections_active",
    "dta_translator_http_connections_total",
    "dta_translator_http_refused_total{reason=\"address_cap\"}",
    "dta_translator_http_refused_total{reason=\"bad_request\"}",
    "dta_translator_http_refused_total{reason=\"body_too_large\"}",
    "dta_translator_http_refused_total{reason=\"connection_cap\"}",
    "dta_translator_http_refused_total{reason=\"head_too_large\"}",
    "dta_translator_http_refused_total{reason=\"idle_timeout\"}",
    "dta_translator_http_refused_total{reason=\"read_timeout\"}",
    "dta_translator_http_refused_total{reason=\"write_timeout\"}",
    "dta_translator_http_requests_total",
    "dta_translator_increments_coalesced_total",
    "dta_translator_int_node_congested_total{node=\"other\"}",
    "dta_translator_int_node_drops_total{node=\"other\"}",
    "dta_translator_int_reporter_reports_lost{hw_id=\"other\",node=\"other\"}",
    "dta_translator_int_drops_total{reason=\"malformed\"}",
    "dta_translator_int_drops_total{reason=\"no_flow\"}",
    "dta_translator_int_drops_total{reason=\"no_hop\"}",
    "dta_translator_int_drops_total{reason=\"no_node\"}",
    "dta_translator_int_drops_total{reason=\"not_owner\"}",
    "dta_translator_int_drops_total{reason=\"too_many_hops\"}",
    "dta_translator_int_drops_total{reason=\"unknown_type\"}",
    "dta_translator_int_packets_total",
    "dta_translator_int_reports_late_total",
    "dta_translator_int_reports_lost",
    "dta_translator_int_reports_total",
    "dta_translator_int_sequence_resets_total",
    "dta_translator_int_sequences_untracked_total",
    "dta_translator_int_whole_paths_total",
    "dta_translator_naks_psn_sequence_total",
    "dta_translator_naks_remote_total",
    "dta_translator_naks_rnr_total",
    "dta_translator_not_forwarded_total",
    "dta_translator_port_rx_dropped_total{port=\"p0\"}",
    "dta_translator_port_rx_frames_total{port=\"p0\"}",
    "dta_translator_port_rx_missed_total{port=\"p0\"}",
    "dta_translator_port_tx_dropped_total{port=\"p0\"}",
    "dta_translator_port_link_up{port=\"p0\"}",
    "dta_translator_port_link_downs_total{port=\"p0\"}",
    "dta_translator_port_driver_faults_total",
    "dta_translator_port_tx_frames_total{port=\"p0\"}",
    "dta_translator_postcard_continuations_total",
    "dta_translator_postcard_evictions_total",
    "dta_translator_postcard_timeouts_total",
    "dta_translator_qp_errors_total",
    "dta_translator_qp_queue{collector=\"0\",worker=\"0\"}",
    "dta_translator_qp_queue{collector=\"0\",worker=\"1\"}",
    "dta_translator_qp_reestablished_total",
    "dta_translator_qp_retransmit_timeout_microseconds{collector=\"0\",worker=\"0\"}",
    "dta_translator_qp_retransmit_timeout_microseconds{collector=\"0\",worker=\"1\"}",
    "dta_translator_qp_smoothed_rtt_microseconds{collector=\"0\",worker=\"0\"}",
    "dta_translator_qp_smoothed_rtt_microseconds{collector=\"0\",worker=\"1\"}",
    "dta_translator_qp_window_limit{collector=\"0\",worker=\"0\"}",
    "dta_translator_qp_window_limit{collector=\"0\",worker=\"1\"}",
    "dta_translator_qp_window{collector=\"0\",worker=\"0\"}",
    "dta_translator_qp_window{collector=\"0\",worker=\"1\"}",
    "dta_translator_rate_limited_total",
    "dta_translator_rdma_ops_total{primitive=\"append\"}",
    "dta_translator_rdma_ops_total{primitive=\"key_increment\"}",
    "dta_translator_rdma_ops_total{primitive=\"key_write\"}",
    "dta_translator_rdma_ops_total{primitive=\"postcard\"}",
    "dta_translator_rdma_ops_total{primitive=\"postcard_path_len\"}",
    "dta_translator_rdma_ops_total{primitive=\"sketch_merge\"}",
    "dta_translator_report_drops_total{reason=\"bad_hop\"}",
    "dta_translator_report_drops_total{reason=\"bad_redundancy\"}",
    "dta_translator_report_drops_total{reason=\"bad_sketch\"}",
    "dta_translator_report_drops_total{reason=\"collector_unusable\"}",
    "dta_translator_report_drops_total{reason=\"duplicate\"}",
    "dta_translator_report_drops_total{reason=\"geometry_mismatch\"}",
    "dta_translator_report_drops_total{reason=\"malformed\"}",
    "dta_translator_report_drops_total{reason=\"no_region\"}",
    "dta_translator_report_drops_total{reason=\"out_of_order\"}",
    "dta_translator_report_drops_total{reason=\"queue_full\"}",
    "dta_translator_reports_total{primitive=\"append\"}",
    "dta_translator_reports_total{primitive=\"key_increment\"}",
    "dta_translator_reports_total{primitive=\"key_write\"}",
    "dta_translator_reports_total{primitive=\"postcard\"}",
    "dta_translator_reports_total{primitive=\"postcard_path_len\"}",
    "dta_translator_reports_total{primitive=\"sketch_merge\"}",
    "dta_translator_retransmit_timeouts_total",
    "dta_translator_retransmitted_frames_total",
    "dta_translator_roce_bytes_out_total",
    "dta_translator_roce_frames_out_total",
    "dta_translator_stale_responses_total",
    "dta_translator_startup_drops_total",
    "dta_translator_worker_backlog_drops_total",
    "dta_translator_handed_off_total",
    "dta_translator_handoff_waits_total",
    "dta_translator_worker_reports_total{worker=\"0\"}",
    "dta_translator_worker_reports_total{worker=\"1\"}",
    "dta_translator_reports_lost_at_stop_total",
    "dta_translator_reports_lost_on_restart_total",
];

/// The type of every family as the hand-written exposition declared it (its `# TYPE` names kept the
/// counters' `_total`; OpenMetrics names the family without it).
const TYPES: &[(&str, &str)] = &[
    ("dta_translator_frames_in_total", "counter"),
    ("dta_translator_reports_total", "counter"),
    ("dta_translator_rdma_ops_total", "counter"),
    ("dta_translator_report_drops_total", "counter"),
    ("dta_translator_roce_frames_out_total", "counter"),
    ("dta_translator_roce_bytes_out_total", "counter"),
    ("dta_translator_retransmitted_frames_total", "counter"),
    ("dta_translator_retransmit_timeouts_total", "counter"),
    ("dta_translator_acks_total", "counter"),
    ("dta_translator_atomic_acks_total", "counter"),
    ("dta_translator_naks_psn_sequence_total", "counter"),
    ("dta_translator_naks_rnr_total", "counter"),
    ("dta_translator_naks_remote_total", "counter"),
    ("dta_translator_stale_responses_total", "counter"),
    ("dta_translator_bad_icrc_responses_total", "counter"),
    ("dta_translator_cnps_total", "counter"),
    ("dta_translator_qp_errors_total", "counter"),
    ("dta_translator_rate_limited_total", "counter"),
    ("dta_translator_dta_nacks_total", "counter"),
    ("dta_translator_append_head_writes_total", "counter"),
    ("dta_translator_increments_coalesced_total", "counter"),
    ("dta_translator_postcard_evictions_total", "counter"),
    ("dta_translator_postcard_timeouts_total", "counter"),
    ("dta_translator_postcard_continuations_total", "counter"),
    ("dta_translator_int_drops_total", "counter"),
    ("dta_translator_int_packets_total", "counter"),
    ("dta_translator_int_reports_total", "counter"),
    ("dta_translator_int_reports_lost", "gauge"),
    ("dta_translator_int_node_drops_total", "counter"),
    ("dta_translator_int_node_congested_total", "counter"),
    ("dta_translator_int_reporter_reports_lost", "gauge"),
    ("dta_translator_int_reports_late_total", "counter"),
    ("dta_translator_int_sequences_untracked_total", "counter"),
    ("dta_translator_int_whole_paths_total", "counter"),
    ("dta_translator_int_sequence_resets_total", "counter"),
    ("dta_translator_qp_reestablished_total", "counter"),
    ("dta_translator_collector_restarts_seen_total", "counter"),
    ("dta_translator_reports_lost_on_restart_total", "counter"),
    ("dta_translator_reports_lost_at_stop_total", "counter"),
    ("dta_translator_forwarded_total", "counter"),
    ("dta_translator_not_forwarded_total", "counter"),
    ("dta_translator_arp_replies_total", "counter"),
    ("dta_translator_worker_backlog_drops_total", "counter"),
    ("dta_translator_handed_off_total", "counter"),
    ("dta_translator_handoff_waits_total", "counter"),
    ("dta_translator_startup_drops_total", "counter"),
    ("dta_translator_worker_reports_total", "counter"),
    ("dta_translator_qp_window", "gauge"),
    ("dta_translator_qp_queue", "gauge"),
    ("dta_translator_qp_window_limit", "gauge"),
    ("dta_translator_qp_retransmit_timeout_microseconds", "gauge"),
    ("dta_translator_qp_smoothed_rtt_microseconds", "gauge"),
    ("dta_translator_control_welcomes_total", "counter"),
    ("dta_translator_control_failures_total", "counter"),
    ("dta_translator_collector_restarts_total", "counter"),
    ("dta_translator_control_reestablished_total", "counter"),
    ("dta_translator_control_welcomes_refused_total", "counter"),
    ("dta_translator_collector_usable", "gauge"),
    ("dta_translator_port_rx_frames_total", "counter"),
    ("dta_translator_port_rx_dropped_total", "counter"),
    ("dta_translator_port_rx_missed_total", "counter"),
    ("dta_translator_port_tx_frames_total", "counter"),
    ("dta_translator_port_tx_dropped_total", "counter"),
    ("dta_translator_port_link_up", "gauge"),
    ("dta_translator_port_link_downs_total", "counter"),
    ("dta_translator_port_driver_faults_total", "counter"),
    ("dta_translator_http_connections_total", "counter"),
    ("dta_translator_http_connections_active", "gauge"),
    ("dta_translator_http_requests_total", "counter"),
    ("dta_translator_http_refused_total", "counter"),
];

fn fixture() -> Sources {
    let qp = dta_translator::QpStats {
        window: 1,
        queue: 2,
        next_psn: 0,
        error: None,
        timeout_ns: 1000,
        srtt_ns: Some(5000),
        window_limit: 4,
    };
    let a = Snapshot {
        qps: vec![qp],
        ..Snapshot::default()
    };
    // Worker 0 watches the links: port p0 up after falling twice.
    let w0 = Snapshot {
        links: vec![(Some(true), 2)],
        ..a.clone()
    };
    Sources {
        workers: Arc::new(Mutex::new(vec![w0, a])),
        ports: Arc::new(Mutex::new(vec![(
            "p0".into(),
            Default::default(),
            Default::default(),
        )])),
        control: vec![Arc::new(ControlCounters::default())],
    }
}

#[test]
fn series_names_and_labels_are_kept() {
    let text = fixture().render_for_test();
    dta_httpd::openmetrics::assert_exposition(&text, SERIES, TYPES);
    assert!(
        text.contains("dta_translator_port_link_up{port=\"p0\"} 1\n"),
        "{text}"
    );
    assert!(
        text.contains("dta_translator_port_link_downs_total{port=\"p0\"} 2\n"),
        "{text}"
    );
    // The e2e scraper reads the samples as before.
    assert_eq!(dta_e2e_metric(&text, "dta_translator_qp_window"), 2);
    assert_eq!(dta_e2e_metric(&text, "dta_translator_qp_queue"), 4);
}

/// e2e/src/http.rs `metric`, as the e2e tests read the endpoint.
fn dta_e2e_metric(text: &str, name: &str) -> u64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            let (metric, _) = series.split_once('{').unwrap_or((series, ""));
            (metric == name).then(|| value.parse::<f64>().ok())?
        })
        .map(|v| v as u64)
        .sum()
}

#[test]
fn sums_workers_and_renders_labels() {
    let mut a = Snapshot::default();
    a.counters.reports_in[0] = 3;
    a.counters.drops[0] = 1;
    a.lost_on_restart = 2;
    let mut b = Snapshot::default();
    b.counters.reports_in[0] = 4;
    b.counters.roce_frames_out = 9;
    let src = Sources {
        workers: Arc::new(Mutex::new(vec![a, b])),
        ports: Arc::new(Mutex::new(Vec::new())),
        control: vec![Arc::new(ControlCounters::default())],
    };
    let text = src.render_for_test();
    assert!(
        text.contains("dta_translator_reports_total{primitive=\"key_write\"} 7\n"),
        "{text}"
    );
    assert!(text.contains("dta_translator_report_drops_total{reason=\"malformed\"} 1\n"));
    assert!(text.contains("dta_translator_roce_frames_out_total 9\n"));
    assert!(text.contains("dta_translator_worker_reports_total{worker=\"0\"} 3\n"));
    assert!(text.contains("dta_translator_worker_reports_total{worker=\"1\"} 4\n"));
    assert!(text.contains("dta_translator_reports_lost_on_restart_total 2\n"));
    assert!(text.contains("dta_translator_collector_restarts_total{collector=\"0\"} 0\n"));
    assert!(src.summary().contains("reports in            7"));
}

/// Each worker publishes its own queue of every port and its data path's counters: the families are their
/// sums, per port by name.
#[test]
fn sums_the_workers_queues_and_data_paths() {
    let queue = |frames, missed, sent, dropped| {
        (
            dta_netio::RxStats {
                frames,
                missed,
                ..Default::default()
            },
            dta_netio::TxStats {
                frames: sent,
                dropped,
                ..Default::default()
            },
        )
    };
    let a = Snapshot {
        ports: vec![queue(10, 2, 1, 0), queue(5, 0, 20, 3)],
        plane: PlaneCounters {
            forwarded: 4,
            handed_off: 6,
            handoff_waits: 1,
            ..PlaneCounters::default()
        },
        ..Snapshot::default()
    };
    let b = Snapshot {
        ports: vec![queue(20, 1, 2, 0), queue(7, 0, 30, 0)],
        plane: PlaneCounters {
            forwarded: 3,
            startup_drops: 8,
            ..PlaneCounters::default()
        },
        ..Snapshot::default()
    };
    let named = |n: &str| (n.to_string(), Default::default(), Default::default());
    let src = Sources {
        workers: Arc::new(Mutex::new(vec![a, b])),
        ports: Arc::new(Mutex::new(vec![named("r"), named("c")])),
        control: vec![Arc::new(ControlCounters::default())],
    };
    let text = src.render_for_test();
    for line in [
        "dta_translator_port_rx_frames_total{port=\"r\"} 30\n",
        "dta_translator_port_rx_frames_total{port=\"c\"} 12\n",
        "dta_translator_port_rx_missed_total{port=\"r\"} 3\n",
        "dta_translator_port_tx_frames_total{port=\"c\"} 50\n",
        "dta_translator_port_tx_dropped_total{port=\"c\"} 3\n",
        "dta_translator_forwarded_total 7\n",
        "dta_translator_handed_off_total 6\n",
        "dta_translator_handoff_waits_total 1\n",
        "dta_translator_startup_drops_total 8\n",
    ] {
        assert!(text.contains(line), "{line} in\n{text}");
    }
    assert!(src.summary().contains("frames forwarded      7"));
}

fn get(addr: SocketAddr, path: &str) -> std::io::Result<String> {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(addr)?;
    c.set_read_timeout(Some(std::time::Duration::from_secs(5)))?;
    let _ = c.write_all(format!("GET {path} HTTP/1.0\r\n\r\n").as_bytes());
    let mut text = String::new();
    c.read_to_string(&mut text)?;
    Ok(text)
}

/// The endpoint is served through `dta-httpd` within the given limits: `/metrics` has the translator's
/// metrics and the server's counters as `dta_translator_http_*`; anything else is 404, and a connection
/// over the cap is refused in plain text. (The server's behaviour under abusive clients is tested in
/// dta-httpd.)
#[test]
fn metrics_endpoint_is_served_through_the_bounded_server() {
    use std::time::Duration;
    let src = Sources {
        workers: Arc::new(Mutex::new(vec![Snapshot::default()])),
        ports: Arc::new(Mutex::new(Vec::new())),
        control: vec![Arc::new(ControlCounters::default())],
    };
    let limits = Limits {
        max_connections: 1,
        read_timeout: Duration::from_secs(1),
        ..Limits::default()
    };
    let server = MetricsServer::start_with("127.0.0.1:0".parse().unwrap(), src, limits).unwrap();
    let addr = server.addr;

    let text = get(addr, "/metrics").unwrap();
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    assert!(text.contains(&format!("Content-Type: {CONTENT_TYPE}\r\n")));
    assert!(text.contains("dta_translator_reports_total"), "{text}");
    assert!(
        text.contains("dta_translator_http_requests_total 0\n"),
        "{text}"
    );
    assert!(text.contains("dta_translator_http_refused_total{reason=\"connection_cap\"} 0\n"));

    // The cap is one connection, and the previous one's slot is freed when its thread ends, which a
    // loaded machine may not have run yet: ask again while the answer is "busy".
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let text = loop {
        let t = get(addr, "/other").unwrap();
        if !t.starts_with("HTTP/1.1 503") || std::time::Instant::now() > deadline {
            break t;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(text.starts_with("HTTP/1.1 404 Not Found\r\n"), "{text}");
    assert!(
        text.ends_with("no such endpoint /other; try /metrics\n"),
        "{text}"
    );

    // One idle connection fills the cap of one: the next is refused in plain text.
    // On a loaded machine two races can hide the cap: the server may take the idle connection before the
    // previous request's slot is freed (then the idle one is the one refused), or close it on its 1-s read
    // timeout before we ask. Either way the probe is answered 200: open a fresh idle connection and ask
    // again (bounded).
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let (idle, text) = loop {
        let idle = std::net::TcpStream::connect(addr).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let t = get(addr, "/metrics").unwrap();
        if t.starts_with("HTTP/1.1 503") || std::time::Instant::now() > deadline {
            break (idle, t);
        }
        drop(idle);
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        text.starts_with("HTTP/1.1 503 Service Unavailable\r\n"),
        "{text}"
    );
    assert!(
        text.ends_with("too many connections; try again later\n"),
        "{text}"
    );
    drop(idle);
    drop(server);
}
