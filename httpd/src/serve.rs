//! The acceptor, the connection threads, request parsing and the deadlines.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Shutdown, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::{Config, HttpStats, Limits, Refusal, Request, Response};

/// Most header lines a request may carry.
const MAX_HEADERS: usize = 64;

/// The application's handler, boxed.
pub(crate) type BoxHandler = Box<dyn Fn(&Request<'_>) -> Response + Send + Sync>;

struct Shared {
    limits: Limits,
    stats: Arc<HttpStats>,
    handler: BoxHandler,
    refusal: Refusal,
    /// A handle on every open connection and its client's address: to close them all when the server
    /// stops, and to count a client's connections.
    open: Mutex<HashMap<u64, (IpAddr, TcpStream)>>,
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

pub(crate) fn spawn_acceptor(
    listener: TcpListener,
    config: Config,
    stats: Arc<HttpStats>,
    stop: Arc<AtomicBool>,
    handler: BoxHandler,
) -> io::Result<JoinHandle<()>> {
    let Config {
        name,
        limits,
        refusal,
    } = config;
    // Non-blocking, so that the acceptor sees `stop` (it polls the listener between accepts).
    listener.set_nonblocking(true)?;
    let shared = Arc::new(Shared {
        limits,
        stats,
        handler,
        refusal,
        open: Mutex::new(HashMap::new()),
    });
    let conn_name = format!("{name}-conn");
    std::thread::Builder::new()
        .name(name)
        .spawn(move || accept_loop(listener, shared, stop, conn_name))
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>, stop: Arc<AtomicBool>, name: String) {
    let mut threads: Vec<JoinHandle<()>> = Vec::new();
    let mut next_id = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let (stream, peer) = match listener.accept() {
            Ok((s, a)) => (s, a.ip()),
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
            refuse(stream, shared.refusal);
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
        if let Ok(mut open) = shared.open.lock() {
            // At most max_connections entries: counting them is cheaper than keeping a second table.
            let mine = open.values().filter(|(ip, _)| *ip == peer).count();
            if mine >= shared.limits.max_per_address {
                drop(open);
                stats.refused_address_cap.fetch_add(1, Ordering::Relaxed);
                refuse(stream, shared.refusal);
                continue;
            }
            open.insert(id, (peer, handle));
        }
        stats.active.fetch_add(1, Ordering::Relaxed);
        stats.connections.fetch_add(1, Ordering::Relaxed);
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
                    if let Some((_, s)) = open.remove(&id) {
                        refuse(s, shared.refusal);
                    }
                }
                shared.stats.active.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }
    if let Ok(open) = shared.open.lock() {
        for (_, s) in open.values() {
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
fn refuse(mut s: TcpStream, refusal: Refusal) {
    let _ = s.set_nonblocking(true);
    let r = refusal(503, "too many connections; try again later");
    let _ = s.write_all(&response(r.status, r.content_type, &r.body, false));
    let _ = s.shutdown(Shutdown::Write);
}

/// The head of one request, owned (the buffer it was parsed from moves on).
pub(crate) struct Head {
    pub(crate) method: String,
    pub(crate) target: String,
    /// Bytes of request line and headers.
    pub(crate) len: usize,
    /// Bytes of body (its Content-Length).
    pub(crate) body: usize,
    pub(crate) keep_alive: bool,
}

pub(crate) enum Parsed {
    Complete(Head),
    Partial,
    /// A refusal: status and reason; the connection is closed after it.
    Refuse(u16, &'static str),
}

pub(crate) fn parse(buf: &[u8], max_body: usize) -> Parsed {
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
        let r = (shared.handler)(&Request {
            method: &head.method,
            target: &head.target,
            stats,
        });
        stats.requests.fetch_add(1, Ordering::Relaxed);
        let out = response(r.status, r.content_type, &r.body, head.keep_alive);
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
    let r = (shared.refusal)(status, why);
    let deadline = Instant::now() + shared.limits.write_timeout.min(Duration::from_secs(1));
    let _ = write_by(
        s,
        &response(r.status, r.content_type, &r.body, false),
        deadline,
    );
    let _ = s.shutdown(Shutdown::Both);
}

pub(crate) fn response(status: u16, ctype: &str, body: &str, keep_alive: bool) -> Vec<u8> {
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
