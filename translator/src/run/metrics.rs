//! Prometheus text metrics of the running translator, summed over workers, and the counter summary printed
//! at shutdown. Workers and the I/O thread publish snapshots; this module only reads them.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use anyhow::{anyhow, Result};
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
}

impl Sources {
    /// Sums the workers' counters.
    pub fn totals(&self) -> Totals {
        let mut t = Totals {
            c: Counters::default(),
            lost_on_restart: 0,
            reestablished: 0,
            restarts: 0,
        };
        let snaps = self.workers.lock().map(|s| s.clone()).unwrap_or_default();
        for s in &snaps {
            add(&mut t.c, &s.counters);
            t.lost_on_restart += s.lost_on_restart;
            t.reestablished += s.reestablished;
            t.restarts += s.restarts;
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

/// The metrics HTTP server; stops when dropped.
pub struct MetricsServer {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    /// The bound address.
    pub addr: SocketAddr,
}

impl MetricsServer {
    /// Serves `GET /metrics` on `addr`, within the default HTTP limits.
    pub fn start(addr: SocketAddr, sources: Sources) -> Result<Self> {
        Self::start_with(addr, sources, httpd::Limits::default())
    }

    fn start_with(addr: SocketAddr, sources: Sources, limits: httpd::Limits) -> Result<Self> {
        let listener = std::net::TcpListener::bind(addr)
            .map_err(|e| anyhow!("binding the metrics endpoint on {addr}: {e}"))?;
        let addr = listener.local_addr()?;
        let stats = Arc::new(httpd::HttpStats::default());
        let s = stats.clone();
        let handler: httpd::Handler = Arc::new(move |_method: &str, url: &str| match url {
            "/metrics" => {
                let mut body = sources.render();
                body.push_str(&s.render("dta_translator"));
                (200, "text/plain; version=0.0.4", body)
            }
            other => (
                404,
                "text/plain; charset=utf-8",
                format!("no such endpoint {other}; try /metrics\n"),
            ),
        });
        let stop = Arc::new(AtomicBool::new(false));
        let thread = httpd::spawn_acceptor(
            "dta-metrics",
            listener,
            limits,
            stats,
            stop.clone(),
            handler,
            |status, msg| (status, "text/plain; charset=utf-8", format!("{msg}\n")),
        )?;
        Ok(MetricsServer {
            stop,
            thread: Some(thread),
            addr,
        })
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A small bounded HTTP/1.1 server on std threads, the same as the collector's HTTP API
/// (`collector/src/http.rs`): one thread per connection up to a cap (503 beyond it), a deadline to read each
/// request and another to write each response, a limit on the request line and headers (431) and on bodies
/// (413). A scraper that pipelines requests and never reads holds only its own connection, and only until
/// the write deadline.
mod httpd {
    use std::collections::HashMap;
    use std::fmt::Write as _;
    use std::io::{self, Read, Write};
    use std::net::{Shutdown, TcpListener, TcpStream};
    use std::os::fd::AsRawFd;
    use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use std::thread::JoinHandle;
    use std::time::{Duration, Instant};

    /// Most header lines a request may carry.
    const MAX_HEADERS: usize = 64;

    /// The bounds of the HTTP server.
    #[derive(Debug, Clone)]
    pub(super) struct Limits {
        /// Connections served at once; one more is answered 503 and closed.
        pub max_connections: usize,
        /// From the moment the server waits for a request (a new connection, or the next request on a kept-alive
        /// one) until its head and body are read. An idle connection is closed when it passes.
        pub read_timeout: Duration,
        /// To write one response.
        pub write_timeout: Duration,
        /// Bytes of request line and headers.
        pub max_head: usize,
        /// Bytes of a request body (the API takes none; a small one is read and ignored).
        pub max_body: usize,
    }

    impl Default for Limits {
        fn default() -> Self {
            Limits {
                max_connections: 64,
                read_timeout: Duration::from_secs(10),
                write_timeout: Duration::from_secs(10),
                max_head: 16 * 1024,
                max_body: 1024,
            }
        }
    }

    /// What the server accepted and refused, by reason.
    #[derive(Debug, Default)]
    pub(super) struct HttpStats {
        /// Connections accepted and served.
        pub connections: AtomicU64,
        /// Connections refused with 503 because `max_connections` were open.
        pub refused_connection_cap: AtomicU64,
        /// Requests answered.
        pub requests: AtomicU64,
        /// Connections closed idle (no byte of a request before the read deadline).
        pub idle_timeouts: AtomicU64,
        /// Connections closed in the middle of a request's head or body at the read deadline.
        pub read_timeouts: AtomicU64,
        /// Connections closed because a response could not be written before the write deadline.
        pub write_timeouts: AtomicU64,
        /// Requests refused with 431: request line and headers longer than `max_head`, or too many headers.
        pub head_too_large: AtomicU64,
        /// Requests refused with 413: a body longer than `max_body`.
        pub body_too_large: AtomicU64,
        /// Requests refused with 400: not HTTP, or a body framing the server does not take.
        pub bad_requests: AtomicU64,
        /// Connections open now.
        pub active: AtomicUsize,
    }

    impl HttpStats {
        /// Prometheus text of the counters, every name starting with `prefix`.
        pub fn render(&self, prefix: &str) -> String {
            let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
            let mut o = String::new();
            let _ = writeln!(
                o,
                "# HELP {prefix}_http_connections_total HTTP connections accepted.\n\
             # TYPE {prefix}_http_connections_total counter\n\
             {prefix}_http_connections_total {}",
                l(&self.connections)
            );
            let _ = writeln!(
                o,
                "# HELP {prefix}_http_connections_active HTTP connections open now.\n\
             # TYPE {prefix}_http_connections_active gauge\n\
             {prefix}_http_connections_active {}",
                self.active.load(Ordering::Relaxed)
            );
            let _ = writeln!(
                o,
                "# HELP {prefix}_http_requests_total HTTP requests answered.\n\
             # TYPE {prefix}_http_requests_total counter\n\
             {prefix}_http_requests_total {}",
                l(&self.requests)
            );
            let _ = writeln!(
            o,
            "# HELP {prefix}_http_refused_total HTTP connections and requests refused or closed, by reason.\n\
             # TYPE {prefix}_http_refused_total counter"
        );
            for (reason, n) in [
                ("connection_cap", &self.refused_connection_cap),
                ("idle_timeout", &self.idle_timeouts),
                ("read_timeout", &self.read_timeouts),
                ("write_timeout", &self.write_timeouts),
                ("head_too_large", &self.head_too_large),
                ("body_too_large", &self.body_too_large),
                ("bad_request", &self.bad_requests),
            ] {
                let _ = writeln!(
                    o,
                    "{prefix}_http_refused_total{{reason=\"{reason}\"}} {}",
                    l(n)
                );
            }
            o
        }
    }

    /// Answers one request: method and request target in, status, content type and body out.
    pub(super) type Handler = Arc<dyn Fn(&str, &str) -> (u16, &'static str, String) + Send + Sync>;

    /// The body of a refusal the server makes itself.
    pub(super) type ErrorBody = fn(u16, &str) -> (u16, &'static str, String);

    struct Shared {
        limits: Limits,
        stats: Arc<HttpStats>,
        handler: Handler,
        error: ErrorBody,
        /// A handle on every open connection, to close them all when the server stops.
        open: Mutex<HashMap<u64, TcpStream>>,
    }

    /// Leaves the connection table and the active count when a connection's thread ends.
    struct Slot<'a> {
        shared: &'a Shared,
        id: u64,
    }

    impl Drop for Slot<'_> {
        fn drop(&mut self) {
            if let Ok(mut open) = self.shared.open.lock() {
                open.remove(&self.id);
            }
            self.shared.stats.active.fetch_sub(1, Ordering::Relaxed);
        }
    }

    pub(super) fn spawn_acceptor(
        name: &str,
        listener: TcpListener,
        limits: Limits,
        stats: Arc<HttpStats>,
        stop: Arc<AtomicBool>,
        handler: Handler,
        error: ErrorBody,
    ) -> io::Result<JoinHandle<()>> {
        // Non-blocking, so that the acceptor sees `stop` (it polls the listener between accepts).
        listener.set_nonblocking(true)?;
        let shared = Arc::new(Shared {
            limits,
            stats,
            handler,
            error,
            open: Mutex::new(HashMap::new()),
        });
        let conn_name = format!("{name}-conn");
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || accept_loop(listener, shared, stop, conn_name))
    }

    fn accept_loop(
        listener: TcpListener,
        shared: Arc<Shared>,
        stop: Arc<AtomicBool>,
        name: String,
    ) {
        let mut threads: Vec<JoinHandle<()>> = Vec::new();
        let mut next_id = 0u64;
        while !stop.load(Ordering::Relaxed) {
            let stream = match listener.accept() {
                Ok((s, _)) => s,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    wait_readable(&listener, 200);
                    continue;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // Out of descriptors, or the peer gave up before the accept: try again shortly.
                    log::debug!("HTTP accept: {e}");
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                }
            };
            threads.retain(|t| !t.is_finished());
            let stats = &shared.stats;
            if stats.active.load(Ordering::Relaxed) >= shared.limits.max_connections {
                stats.refused_connection_cap.fetch_add(1, Ordering::Relaxed);
                refuse(stream, shared.error);
                continue;
            }
            let handle = match stream
                .set_nonblocking(false)
                .and_then(|()| stream.try_clone())
            {
                Ok(h) => h,
                Err(e) => {
                    log::debug!("HTTP connection: {e}");
                    continue;
                }
            };
            let id = next_id;
            next_id += 1;
            stats.active.fetch_add(1, Ordering::Relaxed);
            stats.connections.fetch_add(1, Ordering::Relaxed);
            if let Ok(mut open) = shared.open.lock() {
                open.insert(id, handle);
            }
            let sh = shared.clone();
            let spawned = std::thread::Builder::new()
                .name(name.clone())
                .stack_size(256 * 1024)
                .spawn(move || {
                    let slot = Slot { shared: &sh, id };
                    serve_connection(stream, slot.shared);
                });
            match spawned {
                Ok(t) => threads.push(t),
                Err(e) => {
                    log::warn!("HTTP: cannot spawn a connection thread: {e}");
                    if let Ok(mut open) = shared.open.lock() {
                        if let Some(s) = open.remove(&id) {
                            refuse(s, shared.error);
                        }
                    }
                    shared.stats.active.fetch_sub(1, Ordering::Relaxed);
                }
            }
        }
        if let Ok(open) = shared.open.lock() {
            for s in open.values() {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
        for t in threads {
            let _ = t.join();
        }
    }

    /// Waits up to `ms` milliseconds for a connection to accept.
    fn wait_readable(listener: &TcpListener, ms: i32) {
        let mut p = libc::pollfd {
            fd: listener.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd on the stack, for the duration of the call.
        unsafe { libc::poll(&mut p, 1, ms) };
    }

    /// Answers 503 without blocking (the answer fits in any socket buffer) and closes.
    fn refuse(mut s: TcpStream, error: ErrorBody) {
        let _ = s.set_nonblocking(true);
        let (status, ctype, body) = error(503, "too many connections; try again later");
        let _ = s.write_all(&response(status, ctype, &body, false));
        let _ = s.shutdown(Shutdown::Write);
    }

    /// The head of one request, owned (the buffer it was parsed from moves on).
    struct Head {
        method: String,
        target: String,
        len: usize,
        body: usize,
        keep_alive: bool,
    }

    enum Parsed {
        Complete(Head),
        Partial,
        /// A refusal: status and reason; the connection is closed after it.
        Refuse(u16, &'static str),
    }

    fn parse(buf: &[u8], max_body: usize) -> Parsed {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut req = httparse::Request::new(&mut headers);
        let len = match req.parse(buf) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => return Parsed::Partial,
            Err(httparse::Error::TooManyHeaders) => return Parsed::Refuse(431, "too many headers"),
            Err(_) => return Parsed::Refuse(400, "malformed request"),
        };
        let mut body = 0usize;
        let mut keep_alive = req.version == Some(1);
        for h in req.headers.iter() {
            if h.name.eq_ignore_ascii_case("content-length") {
                match std::str::from_utf8(h.value)
                    .ok()
                    .and_then(|v| v.trim().parse::<u64>().ok())
                {
                    Some(n) if n <= max_body as u64 => body = n as usize,
                    Some(_) => return Parsed::Refuse(413, "request body too large"),
                    None => return Parsed::Refuse(400, "bad Content-Length"),
                }
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                return Parsed::Refuse(400, "Transfer-Encoding is not supported");
            } else if h.name.eq_ignore_ascii_case("connection") {
                let v = String::from_utf8_lossy(h.value).to_ascii_lowercase();
                if v.split(',').any(|t| t.trim() == "close") {
                    keep_alive = false;
                }
            }
        }
        Parsed::Complete(Head {
            method: req.method.unwrap_or_default().to_string(),
            target: req.path.unwrap_or_default().to_string(),
            len,
            body,
            keep_alive,
        })
    }

    enum ReadEnd {
        Closed,
        Deadline,
        Failed,
    }

    /// Reads once into `buf`, by `deadline`.
    fn read_by(
        s: &mut TcpStream,
        buf: &mut Vec<u8>,
        deadline: Instant,
    ) -> std::result::Result<(), ReadEnd> {
        let mut chunk = [0u8; 4096];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ReadEnd::Deadline);
            }
            s.set_read_timeout(Some(left))
                .map_err(|_| ReadEnd::Failed)?;
            match s.read(&mut chunk) {
                Ok(0) => return Err(ReadEnd::Closed),
                Ok(n) => {
                    buf.extend_from_slice(&chunk[..n]);
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    return Err(ReadEnd::Deadline)
                }
                Err(_) => return Err(ReadEnd::Failed),
            }
        }
    }

    /// Writes all of `data` by `deadline`.
    fn write_by(s: &mut TcpStream, mut data: &[u8], deadline: Instant) -> io::Result<()> {
        while !data.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::ErrorKind::TimedOut.into());
            }
            s.set_write_timeout(Some(left))?;
            match s.write(data) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => data = &data[n..],
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    return Err(io::ErrorKind::TimedOut.into())
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn serve_connection(mut s: TcpStream, shared: &Shared) {
        let _ = s.set_nodelay(true);
        let limits = &shared.limits;
        let stats = &shared.stats;
        // Bytes of the current request and of any pipelined behind it.
        let mut buf: Vec<u8> = Vec::with_capacity(1024);
        loop {
            let deadline = Instant::now() + limits.read_timeout;
            let head = loop {
                if !buf.is_empty() {
                    match parse(&buf, limits.max_body) {
                        Parsed::Complete(h) => break h,
                        Parsed::Refuse(status, why) => {
                            let counter = match status {
                                431 => &stats.head_too_large,
                                413 => &stats.body_too_large,
                                _ => &stats.bad_requests,
                            };
                            counter.fetch_add(1, Ordering::Relaxed);
                            return finish(&mut s, shared, status, why);
                        }
                        Parsed::Partial if buf.len() >= limits.max_head => {
                            stats.head_too_large.fetch_add(1, Ordering::Relaxed);
                            return finish(
                                &mut s,
                                shared,
                                431,
                                "request line and headers too large",
                            );
                        }
                        Parsed::Partial => {}
                    }
                }
                match read_by(&mut s, &mut buf, deadline) {
                    Ok(()) => {}
                    Err(ReadEnd::Deadline) => {
                        let c = if buf.is_empty() {
                            &stats.idle_timeouts
                        } else {
                            &stats.read_timeouts
                        };
                        c.fetch_add(1, Ordering::Relaxed);
                        return;
                    }
                    Err(ReadEnd::Closed | ReadEnd::Failed) => return,
                }
            };
            if head.len > limits.max_head {
                stats.head_too_large.fetch_add(1, Ordering::Relaxed);
                return finish(&mut s, shared, 431, "request line and headers too large");
            }
            let end = head.len + head.body;
            while buf.len() < end {
                match read_by(&mut s, &mut buf, deadline) {
                    Ok(()) => {}
                    Err(ReadEnd::Deadline) => {
                        stats.read_timeouts.fetch_add(1, Ordering::Relaxed);
                        return;
                    }
                    Err(_) => return,
                }
            }
            buf.drain(..end);
            let (status, ctype, body) = (shared.handler)(&head.method, &head.target);
            stats.requests.fetch_add(1, Ordering::Relaxed);
            let out = response(status, ctype, &body, head.keep_alive);
            if let Err(e) = write_by(&mut s, &out, Instant::now() + limits.write_timeout) {
                if e.kind() == io::ErrorKind::TimedOut {
                    stats.write_timeouts.fetch_add(1, Ordering::Relaxed);
                }
                return;
            }
            if !head.keep_alive {
                let _ = s.shutdown(Shutdown::Write);
                return;
            }
        }
    }

    /// Answers a refusal (bounded by the write deadline) and closes without reading what else was sent.
    fn finish(s: &mut TcpStream, shared: &Shared, status: u16, why: &str) {
        let (status, ctype, body) = (shared.error)(status, why);
        let deadline = Instant::now() + shared.limits.write_timeout.min(Duration::from_secs(1));
        let _ = write_by(s, &response(status, ctype, &body, false), deadline);
        let _ = s.shutdown(Shutdown::Both);
    }

    fn response(status: u16, ctype: &str, body: &str, keep_alive: bool) -> Vec<u8> {
        let reason = match status {
            200 => "OK",
            400 => "Bad Request",
            404 => "Not Found",
            405 => "Method Not Allowed",
            413 => "Payload Too Large",
            431 => "Request Header Fields Too Large",
            500 => "Internal Server Error",
            503 => "Service Unavailable",
            _ => "",
        };
        let connection = if keep_alive { "keep-alive" } else { "close" };
        let mut out = format!(
            "HTTP/1.1 {status} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n\
         Connection: {connection}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        out.extend_from_slice(body.as_bytes());
        out
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

    fn scrape(addr: SocketAddr) -> std::io::Result<String> {
        use std::io::{Read, Write};
        let mut c = std::net::TcpStream::connect(addr)?;
        c.set_read_timeout(Some(std::time::Duration::from_secs(5)))?;
        let _ = c.write_all(b"GET /metrics HTTP/1.0\r\n\r\n");
        let mut text = String::new();
        c.read_to_string(&mut text)?;
        Ok(text)
    }

    /// The metrics endpoint holds under a scraper that pipelines and never reads, an endless request line
    /// and more connections than its cap (small limits here; the collector's tests use the defaults).
    #[test]
    fn metrics_endpoint_holds_under_abusive_clients() {
        use std::io::Write;
        use std::time::{Duration, Instant};
        let src = Sources {
            workers: Arc::new(Mutex::new(vec![Snapshot::default()])),
            io: Arc::new(IoCounters::default()),
            ports: Arc::new(Mutex::new(Vec::new())),
            control: vec![Arc::new(ControlCounters::default())],
        };
        let limits = httpd::Limits {
            max_connections: 3,
            read_timeout: Duration::from_secs(1),
            write_timeout: Duration::from_secs(1),
            ..httpd::Limits::default()
        };
        let server =
            MetricsServer::start_with("127.0.0.1:0".parse().unwrap(), src, limits).unwrap();
        let addr = server.addr;

        // Three idle connections fill the cap: one more is answered 503.
        let idle: Vec<_> = (0..3)
            .map(|_| std::net::TcpStream::connect(addr).unwrap())
            .collect();
        std::thread::sleep(Duration::from_millis(300));
        let text = scrape(addr).unwrap();
        assert!(text.starts_with("HTTP/1.1 503"), "{text}");
        // The read deadline frees them.
        let deadline = Instant::now() + Duration::from_secs(10);
        let text = loop {
            let text = scrape(addr).unwrap();
            if text.starts_with("HTTP/1.1 200") {
                break text;
            }
            assert!(Instant::now() < deadline, "the cap was never freed: {text}");
            std::thread::sleep(Duration::from_millis(100));
        };
        assert!(text.contains("dta_translator_http_refused_total{reason=\"connection_cap\"}"));
        assert!(!text.contains("dta_translator_http_refused_total{reason=\"connection_cap\"} 0\n"));
        drop(idle);

        // Pipelines until the server stops reading; a scrape on another connection is still answered.
        let mut abuser = std::net::TcpStream::connect(addr).unwrap();
        abuser
            .set_write_timeout(Some(Duration::from_secs(1)))
            .unwrap();
        let batch = "GET /metrics HTTP/1.1\r\n\r\n".repeat(100);
        for _ in 0..2000 {
            if abuser.write_all(batch.as_bytes()).is_err() {
                break;
            }
        }
        let text = scrape(addr).unwrap();
        assert!(text.starts_with("HTTP/1.1 200"), "{text}");
        assert!(text.contains("dta_translator_reports_total"));

        // 8 MiB of request line: refused after the head limit, the rest never read.
        let mut long = std::net::TcpStream::connect(addr).unwrap();
        long.set_write_timeout(Some(Duration::from_secs(2)))
            .unwrap();
        let chunk = vec![b'a'; 64 * 1024];
        let mut accepted = 0usize;
        while accepted < 8 << 20 {
            match long.write(&chunk) {
                Ok(n) => accepted += n,
                Err(_) => break,
            }
        }
        assert!(
            accepted < 8 << 20,
            "{accepted} bytes of one request line taken"
        );
        drop(long);

        // The abuser's connection is closed at the write deadline.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let text = scrape(addr).unwrap();
            if text.contains("dta_translator_http_refused_total{reason=\"write_timeout\"} 1\n") {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the abuser was never closed: {text}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        drop(abuser);
        drop(server);
    }
}
