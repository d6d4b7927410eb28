//! A small bounded HTTP/1.1 server on std threads, shared by DTA's daemons: the collector's JSON API
//! (`collector/src/http.rs`: `/regions`, `/query/...`, `/metrics`) and the translator's metrics endpoint
//! (`translator-daemon/src/run/metrics.rs`). The application supplies a [`Handler`]: a [`Request`] (method and
//! request target) in, a [`Response`] (status, content type, body) out. Everything else is here: the
//! listener, one thread per connection, parsing, deadlines, the refusals and their counters.
//!
//! # Why it exists
//!
//! Both endpoints are reachable by whoever reaches the daemon's address, and a scraper or a query client
//! must not be able to stall the others or grow the process. The server is bounded (see [`Limits`]):
//!
//! - one thread per connection up to a cap; one connection beyond it gets a 503 at once and is closed;
//! - a deadline for each request's head and body (one deadline, not a timeout per read, so a client
//!   trickling a byte at a time is cut), and another for writing each response: a client that pipelines
//!   requests and never reads loses its connection when the deadline passes, and only its own thread waited;
//! - a limit on the request line and headers (431, then the connection is closed without reading the rest)
//!   and on bodies (413); `Transfer-Encoding` is refused (400).
//!
//! What it accepted and refused is counted in [`HttpStats`], which renders as OpenMetrics families under a
//! prefix the application chooses (`dta_collector_http_*`, `dta_translator_http_*`); [`openmetrics`] has the
//! shared exposition (prometheus-client's text encoder) that both daemons' `/metrics` use.
//!
//! It replaced tiny_http, which served on one thread with no write timeout and no limit on the request
//! head, so one client that never read its responses, or sent an endless request line, held the endpoint.
//! A general-purpose server such as hyper would bring an async runtime into daemons that are otherwise
//! plain std threads, for two GET-only endpoints; this is a few hundred lines over `httparse`.
//!
//! It was first written twice, once in each daemon; this crate is the one copy.
//!
//! # Example
//!
//! ```no_run
//! use dta_httpd::{Config, Response, Server};
//!
//! let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
//! let server = Server::start(listener, Config::default(), |req| match req.path() {
//!     "/metrics" => Response::new(200, "text/plain", req.stats().render("demo")),
//!     _ => Response::new(404, "text/plain; charset=utf-8", "no such endpoint\n".into()),
//! })
//! .unwrap();
//! println!("serving on {}", server.local_addr());
//! // Dropping `server` stops it and closes every connection it holds.
//! ```

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

pub mod openmetrics;
mod serve;

/// The bounds of the HTTP server.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Connections served at once; one more is answered 503 and closed.
    pub max_connections: usize,
    /// Connections served at once from one client address; one more from it is answered 503 and closed, so
    /// that one host's keep-alive connections cannot take every slot from the others.
    pub max_per_address: usize,
    /// From the moment the server waits for a request (a new connection, or the next request on a kept-alive
    /// one) until its head and body are read. An idle connection is closed when it passes.
    pub read_timeout: Duration,
    /// To write one response.
    pub write_timeout: Duration,
    /// Bytes of request line and headers.
    pub max_head: usize,
    /// Bytes of a request body (the endpoints take none; a small one is read and ignored).
    pub max_body: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 64,
            max_per_address: 8,
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
    /// Connections refused with 503 because `max_per_address` were open from the same address.
    pub refused_address_cap: AtomicU64,
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

/// One request, as the handler sees it: its head has been read within the limits, its body (if any, at
/// most `max_body` bytes) read and ignored.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    method: &'a str,
    target: &'a str,
    stats: &'a HttpStats,
}

impl<'a> Request<'a> {
    /// The method, as sent (`GET`).
    pub fn method(&self) -> &'a str {
        self.method
    }

    /// The request target, as sent: the path and the query string if any (`/query/keywrite?key=42`). Not
    /// percent-decoded.
    pub fn target(&self) -> &'a str {
        self.target
    }

    /// The target's path: before the first `?`.
    pub fn path(&self) -> &'a str {
        self.target.split_once('?').map_or(self.target, |(p, _)| p)
    }

    /// The target's query string: after the first `?`, empty without one. Not percent-decoded.
    pub fn query(&self) -> &'a str {
        self.target.split_once('?').map_or("", |(_, q)| q)
    }

    /// The counters of the server answering, to render under a metrics path.
    pub fn stats(&self) -> &'a HttpStats {
        self.stats
    }
}

/// An answer: status, content type and body. The server adds `Content-Length` and `Connection`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The `Content-Type`.
    pub content_type: &'static str,
    /// The body.
    pub body: String,
}

impl Response {
    /// A response of `status` with a body of type `content_type`.
    pub fn new(status: u16, content_type: &'static str, body: String) -> Self {
        Response {
            status,
            content_type,
            body,
        }
    }
}

impl From<(u16, &'static str, String)> for Response {
    fn from((status, content_type, body): (u16, &'static str, String)) -> Self {
        Response::new(status, content_type, body)
    }
}

/// Answers one request. Called on the connection's thread; it should not block for long (the read and
/// write deadlines do not cover it).
pub trait Handler: Fn(&Request<'_>) -> Response + Send + Sync + 'static {}

impl<F: Fn(&Request<'_>) -> Response + Send + Sync + 'static> Handler for F {}

/// The body of a refusal the server makes itself (503, 400, 413, 431): status and a reason in.
pub type Refusal = fn(u16, &str) -> Response;

/// A refusal as plain text: the reason and a newline.
pub fn plain_refusal(status: u16, why: &str) -> Response {
    Response::new(status, "text/plain; charset=utf-8", format!("{why}\n"))
}

/// How a [`Server`] runs.
#[derive(Debug, Clone)]
pub struct Config {
    /// The acceptor thread's name; connection threads are named `{name}-conn`.
    pub name: String,
    /// The bounds.
    pub limits: Limits,
    /// The body of the server's own refusals; [`plain_refusal`] by default.
    pub refusal: Refusal,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            name: "httpd".into(),
            limits: Limits::default(),
            refusal: plain_refusal,
        }
    }
}

/// A running HTTP server; stops when dropped (closing every connection it holds and joining its threads).
pub struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    stats: Arc<HttpStats>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Serves `listener` in background threads: an acceptor, and one thread per connection up to
    /// `config.limits.max_connections`. The caller binds, so that its errors name what it binds.
    pub fn start(
        listener: TcpListener,
        config: Config,
        handler: impl Handler,
    ) -> io::Result<Server> {
        let addr = listener.local_addr()?;
        let stats = Arc::new(HttpStats::default());
        let stop = Arc::new(AtomicBool::new(false));
        let thread = serve::spawn_acceptor(
            listener,
            config,
            stats.clone(),
            stop.clone(),
            Box::new(handler),
        )?;
        Ok(Server {
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

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests;
