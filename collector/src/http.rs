//! The HTTP JSON API: the queries of [`QueryEngine`] under `/query/...`, the region table under `/regions`
//! and Prometheus text under `/metrics`. GET only; parameters in the query string.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;

use serde::Serialize;
use tiny_http::{Header, Method, Response, Server};

use crate::engine::QueryEngine;
use crate::error::{Error, Result};
use crate::metrics::Metrics;

/// Most entries one Append request returns.
pub const MAX_APPEND_BATCH: usize = 65536;

/// A running HTTP server; stops when dropped.
pub struct HttpServer {
    server: Arc<Server>,
    addr: SocketAddr,
    thread: Option<JoinHandle<()>>,
}

impl HttpServer {
    /// Binds `addr` and serves in a background thread.
    pub fn start(
        addr: SocketAddr,
        engine: Arc<QueryEngine>,
        metrics: Arc<Metrics>,
    ) -> Result<Self> {
        let server = Server::http(addr)
            .map_err(|e| Error::io(format!("binding HTTP on {addr}"), std::io::Error::other(e)))?;
        let addr = server
            .server_addr()
            .to_ip()
            .ok_or_else(|| Error::Config("HTTP server has no IP address".into()))?;
        let server = Arc::new(server);
        let s = server.clone();
        let thread = std::thread::Builder::new()
            .name("dta-http".into())
            .spawn(move || {
                for req in s.incoming_requests() {
                    let (status, ctype, body) = route(req.method(), req.url(), &engine, &metrics);
                    let header = Header::from_bytes(&b"Content-Type"[..], ctype.as_bytes())
                        .unwrap_or_else(|()| {
                            Header::from_bytes(&b"X-Bad"[..], &b"1"[..]).expect("static header")
                        });
                    let resp = Response::from_string(body)
                        .with_status_code(status)
                        .with_header(header);
                    if let Err(e) = req.respond(resp) {
                        log::debug!("HTTP response: {e}");
                    }
                }
            })
            .map_err(|e| Error::io("spawning the HTTP thread", e))?;
        log::info!("HTTP API on {addr}");
        Ok(HttpServer {
            server,
            addr,
            thread: Some(thread),
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn params(query: &str) -> HashMap<&str, &str> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| p.split_once('=').unwrap_or((p, "")))
        .collect()
}

fn param<T: std::str::FromStr>(p: &HashMap<&str, &str>, name: &str) -> Result<Option<T>> {
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

fn required<T: std::str::FromStr>(p: &HashMap<&str, &str>, name: &str) -> Result<T> {
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

/// Answers one request: status, content type and body.
pub fn route(
    method: &Method,
    url: &str,
    engine: &QueryEngine,
    metrics: &Metrics,
) -> (u16, &'static str, String) {
    if *method != Method::Get {
        return error(405, "only GET is supported");
    }
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    let p = params(query);
    match path {
        "/metrics" => (200, "text/plain; version=0.0.4", metrics.render()),
        "/regions" => json(Ok(engine.arena().regions())),
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
