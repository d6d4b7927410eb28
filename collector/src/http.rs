//! The HTTP JSON API: the queries of [`QueryEngine`] under `/query/...`, the region table under `/regions`
//! and Prometheus text under `/metrics`. GET only; parameters in the query string, percent-decoded.
//!
//! The server is a small HTTP/1.1 server on std threads, bounded so that no client can stall the others or
//! grow the process (see [`Limits`]): one thread per connection up to a cap (a connection beyond it gets a
//! 503 at once and is closed), a deadline for each request's head and body and another for writing each
//! response (a client that pipelines requests and never reads loses its connection when the deadline
//! passes, and only its own thread waited), a limit on the request line and headers (431, then the
//! connection is closed without reading the rest) and on bodies (413). Heads are parsed by `httparse`.
//! What it refused is counted and rendered after the collector's metrics under `/metrics`.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::engine::QueryEngine;
use crate::error::{Error, Result};
use crate::metrics::Metrics;

/// Most entries one Append request returns.
pub const MAX_APPEND_BATCH: usize = 65536;

/// Most header lines a request may carry.
const MAX_HEADERS: usize = 64;

/// The bounds of the HTTP server.
#[derive(Debug, Clone)]
pub struct Limits {
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
pub struct HttpStats {
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

/// A running HTTP server; stops when dropped (closing every connection it holds).
pub struct HttpServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    stats: Arc<HttpStats>,
    thread: Option<JoinHandle<()>>,
}

impl HttpServer {
    /// Binds `addr` and serves in background threads, with the default [`Limits`].
    pub fn start(
        addr: SocketAddr,
        engine: Arc<QueryEngine>,
        metrics: Arc<Metrics>,
    ) -> Result<Self> {
        Self::start_with(addr, engine, metrics, Limits::default())
    }

    /// Binds `addr` and serves in background threads within `limits`.
    pub fn start_with(
        addr: SocketAddr,
        engine: Arc<QueryEngine>,
        metrics: Arc<Metrics>,
        limits: Limits,
    ) -> Result<Self> {
        let listener =
            TcpListener::bind(addr).map_err(|e| Error::io(format!("binding HTTP on {addr}"), e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::io("the HTTP address", e))?;
        let stats = Arc::new(HttpStats::default());
        let s = stats.clone();
        let handler: Handler = Arc::new(move |method: &str, url: &str| {
            let (status, ctype, mut body) = route(method, url, &engine, &metrics);
            if status == 200 && url.split('?').next() == Some("/metrics") {
                body.push_str(&s.render("dta_collector"));
            }
            (status, ctype, body)
        });
        let stop = Arc::new(AtomicBool::new(false));
        let thread = spawn_acceptor(
            "dta-http",
            listener,
            limits,
            stats.clone(),
            stop.clone(),
            handler,
            error,
        )
        .map_err(|e| Error::io("spawning the HTTP thread", e))?;
        log::info!("HTTP API on {addr}");
        Ok(HttpServer {
            addr,
            stop,
            stats,
            thread: Some(thread),
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// What the server accepted and refused.
    pub fn stats(&self) -> &HttpStats {
        &self.stats
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Answers one request: method and request target in, status, content type and body out.
type Handler = Arc<dyn Fn(&str, &str) -> (u16, &'static str, String) + Send + Sync>;

/// The body of a refusal the server makes itself.
type ErrorBody = fn(u16, &str) -> (u16, &'static str, String);

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

fn spawn_acceptor(
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

fn accept_loop(listener: TcpListener, shared: Arc<Shared>, stop: Arc<AtomicBool>, name: String) {
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
                        return finish(&mut s, shared, 431, "request line and headers too large");
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

fn params(query: &str) -> HashMap<Cow<'_, str>, Cow<'_, str>> {
    form_urlencoded::parse(query.as_bytes()).collect()
}

fn param<T: std::str::FromStr>(p: &HashMap<Cow<str>, Cow<str>>, name: &str) -> Result<Option<T>> {
    p.get(name)
        .map(|v| {
            // Keys are often given in hex (flow IDs, switch IDs).
            let parsed = match v.strip_prefix("0x") {
                Some(h) => u64::from_str_radix(h, 16)
                    .ok()
                    .and_then(|x| x.to_string().parse().ok()),
                None => v.parse().ok(),
            };
            parsed.ok_or_else(|| {
                Error::BadQuery(format!("parameter {name}={v:?} is not a valid number"))
            })
        })
        .transpose()
}

fn required<T: std::str::FromStr>(p: &HashMap<Cow<str>, Cow<str>>, name: &str) -> Result<T> {
    param(p, name)?.ok_or_else(|| Error::BadQuery(format!("missing parameter {name}")))
}

fn json<T: Serialize>(r: Result<T>) -> (u16, &'static str, String) {
    match r {
        Ok(v) => match serde_json::to_string(&v) {
            Ok(s) => (200, "application/json", s),
            Err(e) => error(500, &e.to_string()),
        },
        Err(e @ Error::NoRegion { .. }) => error(404, &e.to_string()),
        Err(e) => error(400, &e.to_string()),
    }
}

fn error(status: u16, msg: &str) -> (u16, &'static str, String) {
    (
        status,
        "application/json",
        serde_json::json!({ "error": msg }).to_string(),
    )
}

/// A region as `/regions` shows it to anyone who reaches the API: its id and layout, what a query needs.
/// Not its virtual address and R_Key: with those and a live QPN a host on the data path could write the
/// memory. Translators get them in the control channel's welcome, after the token check.
#[derive(Debug, serde::Serialize)]
struct PublicRegion {
    id: u32,
    len: u64,
    #[serde(flatten)]
    geometry: dta_protocol::layout::Geometry,
}

impl From<dta_protocol::layout::Region> for PublicRegion {
    fn from(r: dta_protocol::layout::Region) -> Self {
        PublicRegion {
            id: r.id,
            len: r.len(),
            geometry: r.geometry,
        }
    }
}

/// Answers one request: status, content type and body.
pub fn route(
    method: &str,
    url: &str,
    engine: &QueryEngine,
    metrics: &Metrics,
) -> (u16, &'static str, String) {
    if method != "GET" {
        return error(405, "only GET is supported");
    }
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    let p = params(query);
    match path {
        "/metrics" => (200, "text/plain; version=0.0.4", metrics.render()),
        "/regions" => json(Ok(engine
            .arena()
            .regions()
            .into_iter()
            .map(PublicRegion::from)
            .collect::<Vec<_>>())),
        "/query/keywrite" => json((|| {
            engine.key_write(
                required(&p, "key")?,
                param(&p, "n")?,
                param(&p, "t")?.unwrap_or(1),
            )
        })()),
        "/query/keyincrement" => json((|| {
            engine.key_increment(required(&p, "key")?, param(&p, "n")?)
        })()),
        "/query/postcard" => json((|| engine.postcard(required(&p, "key")?, param(&p, "n")?))()),
        "/query/append" => json((|| {
            let max = param::<usize>(&p, "max")?
                .unwrap_or(1024)
                .min(MAX_APPEND_BATCH);
            engine.append(required(&p, "list")?, param(&p, "tail")?.unwrap_or(0), max)
        })()),
        "/query/sketch" => json((|| engine.sketch(required(&p, "id")?, param(&p, "key")?))()),
        _ => error(404, &format!("no such endpoint {path}")),
    }
}
