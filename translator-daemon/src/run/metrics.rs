//! Prometheus text metrics of the running translator, summed over workers, and the counter summary printed
//! at shutdown. Workers and the I/O thread publish snapshots; this module only reads them.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use anyhow::{anyhow, Result};
use dta_httpd::{Config, Limits, Request, Response, Server};
use dta_translator::{Counters, DropReason};

use super::control::ControlCounters;
use super::io_loop::{IoCounters, PortStats};
use super::worker::Snapshot;

/// Everything the exporter reads.
#[derive(Clone)]
pub struct Sources {
    /// One snapshot per worker.
    pub workers: Arc<Mutex<Vec<Snapshot>>>,
    /// The I/O thread.
    pub io: Arc<IoCounters>,
    /// Ports.
    pub ports: Arc<Mutex<PortStats>>,
    /// One per collector.
    pub control: Vec<Arc<ControlCounters>>,
}

const PRIMITIVES: [&str; 6] = [
    "key_write",
    "append",
    "key_increment",
    "postcard",
    "sketch_merge",
    "postcard_path_len",
];

/// Engine counters summed over workers, and the restart counts.
pub struct Totals {
    /// Summed counters.
    pub c: Counters,
    /// Writes lost to collector restarts.
    pub lost_on_restart: u64,
    /// QP re-establishments applied by workers.
    pub reestablished: u64,
    /// Collector restarts workers started over from.
    pub restarts: u64,
    /// Writes still queued or unacknowledged when the workers stopped.
    pub abandoned_at_stop: u64,
}

impl Sources {
    /// Sums the workers' counters.
    pub fn totals(&self) -> Totals {
        let mut t = Totals {
            c: Counters::default(),
            lost_on_restart: 0,
            reestablished: 0,
            restarts: 0,
            abandoned_at_stop: 0,
        };
        let snaps = self.workers.lock().map(|s| s.clone()).unwrap_or_default();
        for s in &snaps {
            add(&mut t.c, &s.counters);
            t.lost_on_restart += s.lost_on_restart;
            t.reestablished += s.reestablished;
            t.restarts += s.restarts;
            t.abandoned_at_stop += s.abandoned_at_stop;
        }
        t
    }

    /// The Prometheus text.
    pub fn render(&self) -> String {
        let t = self.totals();
        let c = &t.c;
        let mut o = String::new();
        let mut metric = |name: &str, help: &str, kind: &str, samples: &[(String, u64)]| {
            let _ = writeln!(
                o,
                "# HELP dta_translator_{name} {help}\n# TYPE dta_translator_{name} {kind}"
            );
            for (labels, v) in samples {
                let _ = writeln!(o, "dta_translator_{name}{labels} {v}");
            }
        };
        let one = |v: u64| vec![(String::new(), v)];
        let per_primitive = |a: &[u64; 6]| -> Vec<(String, u64)> {
            PRIMITIVES
                .iter()
                .zip(a)
                .map(|(p, v)| (format!("{{primitive=\"{p}\"}}"), *v))
                .collect()
        };
        metric(
            "frames_in_total",
            "Frames handed to the engines.",
            "counter",
            &one(c.frames_in),
        );
        metric(
            "reports_total",
            "Well-formed reports by primitive.",
            "counter",
            &per_primitive(&c.reports_in),
        );
        metric(
            "rdma_ops_total",
            "RDMA operations first sent, by primitive.",
            "counter",
            &per_primitive(&c.ops_out),
        );
        let drops: Vec<(String, u64)> = DropReason::ALL
            .iter()
            .map(|r| (format!("{{reason=\"{}\"}}", r.label()), c.dropped(*r)))
            .collect();
        metric(
            "report_drops_total",
            "Reports dropped, by reason.",
            "counter",
            &drops,
        );
        for (name, help, v) in [
            (
                "roce_frames_out_total",
                "RoCE frames sent, retransmissions included.",
                c.roce_frames_out,
            ),
            (
                "roce_bytes_out_total",
                "RoCE bytes sent, retransmissions included.",
                c.roce_bytes_out,
            ),
            (
                "retransmitted_frames_total",
                "RoCE frames sent again.",
                c.retransmitted_frames,
            ),
            (
                "retransmit_timeouts_total",
                "Retransmit timeouts.",
                c.retransmit_timeouts,
            ),
            ("acks_total", "ACKs received.", c.acks),
            (
                "atomic_acks_total",
                "ATOMIC ACKNOWLEDGEs received.",
                c.atomic_acks,
            ),
            (
                "naks_psn_sequence_total",
                "PSN sequence error NAKs.",
                c.nak_psn_sequence,
            ),
            ("naks_rnr_total", "RNR NAKs.", c.nak_rnr),
            (
                "naks_remote_total",
                "Invalid request, remote access and remote operational NAKs.",
                c.nak_invalid_request + c.nak_remote_access + c.nak_remote_operational,
            ),
            (
                "stale_responses_total",
                "Responses matching nothing in flight.",
                c.stale_responses,
            ),
            ("cnps_total", "Congestion notification packets.", c.cnps),
            ("qp_errors_total", "QPs that went into error.", c.qp_errors),
            (
                "rate_limited_total",
                "Times a frame waited for rate-limiter tokens.",
                c.rate_limited,
            ),
            (
                "dta_nacks_total",
                "DTA NACKs sent to reporters.",
                c.dta_nacks_sent,
            ),
            (
                "append_head_writes_total",
                "Append head-word writes.",
                c.append_head_writes,
            ),
            (
                "increments_coalesced_total",
                "Increments folded into earlier ones.",
                c.increments_coalesced,
            ),
            (
                "postcard_evictions_total",
                "Postcard chunks written on eviction.",
                c.postcard_evictions,
            ),
            (
                "postcard_timeouts_total",
                "Postcard chunks written on idle.",
                c.postcard_timeouts,
            ),
            (
                "qp_reestablished_total",
                "QPs resumed after an error (per worker).",
                t.reestablished,
            ),
            (
                "collector_restarts_seen_total",
                "Collector restarts the workers started over from (per worker).",
                t.restarts,
            ),
            (
                "writes_lost_on_restart_total",
                "Queued or unacknowledged writes lost because their collector restarted.",
                t.lost_on_restart,
            ),
            (
                "writes_abandoned_at_stop_total",
                "Writes still queued or unacknowledged when the translator stopped (collector down or slow).",
                t.abandoned_at_stop,
            ),
            (
                "forwarded_total",
                "Frames forwarded untouched between the ports.",
                self.io.forwarded.load(Ordering::Relaxed),
            ),
            (
                "not_forwarded_total",
                "Foreign frames dropped in single-port mode.",
                self.io.not_forwarded.load(Ordering::Relaxed),
            ),
            (
                "arp_replies_total",
                "ARP requests for our address answered.",
                self.io.arp_replies.load(Ordering::Relaxed),
            ),
            (
                "worker_backlog_drops_total",
                "Frames dropped because their worker fell behind.",
                self.io.worker_backlog_drops.load(Ordering::Relaxed),
            ),
            (
                "startup_drops_total",
                "Reports and responses that arrived before the workers started (collectors still connecting).",
                self.io.startup_drops.load(Ordering::Relaxed),
            ),
        ] {
            metric(name, help, "counter", &one(v));
        }
        let snaps = self.workers.lock().map(|s| s.clone()).unwrap_or_default();
        let per_worker: Vec<(String, u64)> = snaps
            .iter()
            .enumerate()
            .map(|(k, s)| {
                (
                    format!("{{worker=\"{k}\"}}"),
                    s.counters.reports_in.iter().sum(),
                )
            })
            .collect();
        metric(
            "worker_reports_total",
            "Well-formed reports taken by each worker (how the I/O thread spreads them).",
            "counter",
            &per_worker,
        );
        let mut window = Vec::new();
        let mut queue = Vec::new();
        let mut rto = Vec::new();
        let mut limit = Vec::new();
        let mut srtt = Vec::new();
        for (k, s) in snaps.iter().enumerate() {
            for (i, q) in s.qps.iter().enumerate() {
                let l = format!("{{worker=\"{k}\",collector=\"{i}\"}}");
                window.push((l.clone(), q.window as u64));
                queue.push((l.clone(), q.queue as u64));
                rto.push((l.clone(), q.timeout_ns / 1000));
                limit.push((l.clone(), u64::from(q.window_limit)));
                if let Some(s) = q.srtt_ns {
                    srtt.push((l, s / 1000));
                }
            }
        }
        metric("qp_window", "Frames in flight per QP.", "gauge", &window);
        metric("qp_queue", "Work requests waiting per QP.", "gauge", &queue);
        metric(
            "qp_window_limit",
            "Frames allowed in flight per QP (halved on loss, regrown by ACKs).",
            "gauge",
            &limit,
        );
        metric(
            "qp_retransmit_timeout_microseconds",
            "Base retransmit timeout per QP (adaptive: smoothed RTT + 4 x variation, clamped).",
            "gauge",
            &rto,
        );
        metric(
            "qp_smoothed_rtt_microseconds",
            "Smoothed round-trip time per QP, once measured.",
            "gauge",
            &srtt,
        );
        let ctl = |f: fn(&ControlCounters) -> u64| -> Vec<(String, u64)> {
            self.control
                .iter()
                .enumerate()
                .map(|(i, c)| (format!("{{collector=\"{i}\"}}"), f(c)))
                .collect()
        };
        metric(
            "control_welcomes_total",
            "Welcomes from each collector.",
            "counter",
            &ctl(|c| c.welcomes.load(Ordering::Relaxed)),
        );
        metric(
            "control_failures_total",
            "Failed control connections or handshakes.",
            "counter",
            &ctl(|c| c.failures.load(Ordering::Relaxed)),
        );
        metric(
            "collector_restarts_total",
            "Collector restarts detected (new memory).",
            "counter",
            &ctl(|c| c.restarts.load(Ordering::Relaxed)),
        );
        metric(
            "control_reestablished_total",
            "QP sets re-created after errors.",
            "counter",
            &ctl(|c| c.reestablished.load(Ordering::Relaxed)),
        );
        let ports = self.ports.lock().map(|p| p.clone()).unwrap_or_default();
        let per_port = |f: &dyn Fn(&(String, dta_netio::RxStats, dta_netio::TxStats)) -> u64| -> Vec<(String, u64)> {
            ports.iter().map(|p| (format!("{{port=\"{}\"}}", p.0), f(p))).collect()
        };
        metric(
            "port_rx_frames_total",
            "Frames received per port.",
            "counter",
            &per_port(&|p| p.1.frames),
        );
        metric(
            "port_rx_dropped_total",
            "Frames received but dropped (oversize) per port.",
            "counter",
            &per_port(&|p| p.1.dropped),
        );
        metric(
            "port_rx_missed_total",
            "Frames lost before they were received (socket buffer or NIC ring full), where the port can tell.",
            "counter",
            &per_port(&|p| p.1.missed),
        );
        metric(
            "port_tx_frames_total",
            "Frames sent per port.",
            "counter",
            &per_port(&|p| p.2.frames),
        );
        metric(
            "port_tx_dropped_total",
            "Frames the port refused (queue full) per port.",
            "counter",
            &per_port(&|p| p.2.dropped),
        );
        o
    }

    /// The lines printed at shutdown.
    pub fn summary(&self) -> String {
        let t = self.totals();
        let c = &t.c;
        let mut s = String::new();
        let _ = writeln!(s, "dta-translator summary");
        let _ = writeln!(
            s,
            "  reports in            {}",
            c.reports_in.iter().sum::<u64>()
        );
        for (p, (n, ops)) in PRIMITIVES.iter().zip(c.reports_in.iter().zip(&c.ops_out)) {
            if *n > 0 || *ops > 0 {
                let _ = writeln!(s, "    {p:<20} {n} reports, {ops} RDMA ops");
            }
        }
        let _ = writeln!(s, "  RoCE frames out       {}", c.roce_frames_out);
        let _ = writeln!(s, "  retransmitted frames  {}", c.retransmitted_frames);
        let _ = writeln!(
            s,
            "    after timeouts / sequence NAKs  {} / {}",
            c.retransmit_timeouts, c.nak_psn_sequence
        );
        let _ = writeln!(s, "  ACKs / atomic ACKs    {} / {}", c.acks, c.atomic_acks);
        let _ = writeln!(s, "  DTA NACKs sent        {}", c.dta_nacks_sent);
        let _ = writeln!(s, "  reports dropped       {}", c.drops.iter().sum::<u64>());
        for r in DropReason::ALL {
            if c.dropped(r) > 0 {
                let _ = writeln!(s, "    {:<20} {}", r.label(), c.dropped(r));
            }
        }
        let _ = writeln!(s, "  QP errors             {}", c.qp_errors);
        let _ = writeln!(
            s,
            "  collector restarts    {}",
            self.control
                .iter()
                .map(|c| c.restarts.load(Ordering::Relaxed))
                .sum::<u64>()
        );
        let _ = writeln!(s, "  writes lost (restart) {}", t.lost_on_restart);
        let _ = writeln!(s, "  writes lost (stop)    {}", t.abandoned_at_stop);
        let _ = writeln!(
            s,
            "  frames forwarded      {}",
            self.io.forwarded.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            s,
            "  worker backlog drops  {}",
            self.io.worker_backlog_drops.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            s,
            "  startup drops         {}",
            self.io.startup_drops.load(Ordering::Relaxed)
        );
        s
    }
}

fn add(a: &mut Counters, b: &Counters) {
    a.frames_in += b.frames_in;
    a.not_for_us += b.not_for_us;
    for i in 0..6 {
        a.reports_in[i] += b.reports_in[i];
        a.ops_out[i] += b.ops_out[i];
    }
    for (x, y) in a.drops.iter_mut().zip(&b.drops) {
        *x += y;
    }
    a.append_head_writes += b.append_head_writes;
    a.increments_coalesced += b.increments_coalesced;
    a.postcard_evictions += b.postcard_evictions;
    a.postcard_timeouts += b.postcard_timeouts;
    a.append_idle_flushes += b.append_idle_flushes;
    a.dta_nacks_sent += b.dta_nacks_sent;
    a.retransmitted_frames += b.retransmitted_frames;
    a.retransmit_timeouts += b.retransmit_timeouts;
    a.nak_psn_sequence += b.nak_psn_sequence;
    a.nak_rnr += b.nak_rnr;
    a.nak_invalid_request += b.nak_invalid_request;
    a.nak_remote_access += b.nak_remote_access;
    a.nak_remote_operational += b.nak_remote_operational;
    a.acks += b.acks;
    a.atomic_acks += b.atomic_acks;
    a.stale_responses += b.stale_responses;
    a.cnps += b.cnps;
    a.qp_errors += b.qp_errors;
    a.rate_limited += b.rate_limited;
    a.roce_frames_out += b.roce_frames_out;
    a.roce_bytes_out += b.roce_bytes_out;
}

/// The metrics HTTP server, `dta-httpd`'s bounded server answering `GET /metrics` with [`Sources::render`]
/// and the server's own counters as `dta_translator_http_*`; stops when dropped.
pub struct MetricsServer {
    _server: Server,
    /// The bound address.
    pub addr: SocketAddr,
}

impl MetricsServer {
    /// Serves `GET /metrics` on `addr`, within the default HTTP limits.
    pub fn start(addr: SocketAddr, sources: Sources) -> Result<Self> {
        Self::start_with(addr, sources, Limits::default())
    }

    fn start_with(addr: SocketAddr, sources: Sources, limits: Limits) -> Result<Self> {
        let listener = std::net::TcpListener::bind(addr)
            .map_err(|e| anyhow!("binding the metrics endpoint on {addr}: {e}"))?;
        let addr = listener.local_addr()?;
        let config = Config {
            name: "dta-metrics".into(),
            limits,
            refusal: dta_httpd::plain_refusal,
        };
        let server = Server::start(listener, config, move |req: &Request| match req.target() {
            "/metrics" => {
                let mut body = sources.render();
                body.push_str(&req.stats().render("dta_translator"));
                Response::new(200, "text/plain; version=0.0.4", body)
            }
            other => Response::new(
                404,
                "text/plain; charset=utf-8",
                format!("no such endpoint {other}; try /metrics\n"),
            ),
        })?;
        Ok(MetricsServer {
            _server: server,
            addr,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            io: Arc::new(IoCounters::default()),
            ports: Arc::new(Mutex::new(Vec::new())),
            control: vec![Arc::new(ControlCounters::default())],
        };
        let text = src.render();
        assert!(
            text.contains("dta_translator_reports_total{primitive=\"key_write\"} 7\n"),
            "{text}"
        );
        assert!(text.contains("dta_translator_report_drops_total{reason=\"malformed\"} 1\n"));
        assert!(text.contains("dta_translator_roce_frames_out_total 9\n"));
        assert!(text.contains("dta_translator_worker_reports_total{worker=\"0\"} 3\n"));
        assert!(text.contains("dta_translator_worker_reports_total{worker=\"1\"} 4\n"));
        assert!(text.contains("dta_translator_writes_lost_on_restart_total 2\n"));
        assert!(text.contains("dta_translator_collector_restarts_total{collector=\"0\"} 0\n"));
        assert!(src.summary().contains("reports in            7"));
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
            io: Arc::new(IoCounters::default()),
            ports: Arc::new(Mutex::new(Vec::new())),
            control: vec![Arc::new(ControlCounters::default())],
        };
        let limits = Limits {
            max_connections: 1,
            read_timeout: Duration::from_secs(1),
            ..Limits::default()
        };
        let server =
            MetricsServer::start_with("127.0.0.1:0".parse().unwrap(), src, limits).unwrap();
        let addr = server.addr;

        let text = get(addr, "/metrics").unwrap();
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        assert!(text.contains("Content-Type: text/plain; version=0.0.4\r\n"));
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
        let idle = std::net::TcpStream::connect(addr).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let text = get(addr, "/metrics").unwrap();
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
}
