//! The HTTP JSON API: the queries of [`QueryEngine`] under `/query/...`, the region table under `/regions`
//! and Prometheus text under `/metrics`. GET only; parameters in the query string, percent-decoded.
//!
//! The server is `dta-httpd`'s, the translator's metrics endpoint's too: a small HTTP/1.1 server on std
//! threads, bounded so that no client can stall the others or grow the process (see [`Limits`]; the
//! crate's docs say how). This module is the collector's side: [`route`], the JSON bodies of the server's
//! refusals, and the server's counters rendered after the collector's metrics under `/metrics` as
//! `dta_collector_http_*`.

use std::borrow::Cow;
use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;

use dta_httpd::openmetrics::CONTENT_TYPE;
use dta_httpd::{Config, Request, Response, Server};
use serde::Serialize;

use crate::engine::{DropsQuery, QueryEngine};
use crate::error::{Error, Result};
use crate::metrics::Metrics;
use crate::query::int::{parse_flow, Shard, Window};
use dta_protocol::int::inner::FlowKey;

pub use dta_httpd::{HttpStats, Limits};

/// Most entries one Append request returns.
pub const MAX_APPEND_BATCH: usize = 65536;

/// A running HTTP server; stops when dropped (closing every connection it holds).
pub struct HttpServer {
    server: Server,
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
        let config = Config {
            name: "dta-http".into(),
            limits,
            refusal: |status, why| error(status, why).into(),
        };
        let server = Server::start(listener, config, move |req: &Request| {
            let (status, ctype, body) =
                route(req.method(), req.target(), &engine, &metrics, req.stats());
            Response::new(status, ctype, body)
        })
        .map_err(|e| Error::io("spawning the HTTP thread", e))?;
        log::info!("HTTP API on {addr}");
        Ok(HttpServer { server })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.server.local_addr()
    }

    /// What the server accepted and refused.
    pub fn stats(&self) -> &HttpStats {
        self.server.stats()
    }
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

/// The `flow` parameter, `SRC,DST,PROTO,SPORT,DPORT`.
fn flow(p: &HashMap<Cow<str>, Cow<str>>) -> Result<FlowKey> {
    let v = p.get("flow").ok_or_else(|| {
        Error::BadQuery("missing parameter flow (SRC,DST,PROTO,SPORT,DPORT)".into())
    })?;
    parse_flow(v)
}

/// The `shard` parameter, `I/N`: answer only for the keys collector I of N holds (default: all).
fn shard(p: &HashMap<Cow<str>, Cow<str>>) -> Result<Shard> {
    p.get("shard").map_or(Ok(Shard::ALL), |v| Shard::parse(v))
}

/// The `tail` and `max` parameters of an event list read (`max` at most [`MAX_APPEND_BATCH`]).
fn window(p: &HashMap<Cow<str>, Cow<str>>) -> Result<Window> {
    Ok(Window {
        tail: param(p, "tail")?,
        max: param::<usize>(p, "max")?
            .unwrap_or(1024)
            .min(MAX_APPEND_BATCH),
    })
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
    http: &HttpStats,
) -> (u16, &'static str, String) {
    if method != "GET" {
        return error(405, "only GET is supported");
    }
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    let p = params(query);
    match path {
        "/metrics" => (200, CONTENT_TYPE, metrics.render(http)),
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
        "/query/int-path" => json((|| engine.int_path(&flow(&p)?, param(&p, "n")?))()),
        "/query/int-flow" => json((|| {
            engine.int_flow(
                &flow(&p)?,
                param(&p, "n")?,
                param(&p, "t")?.unwrap_or(1),
                shard(&p)?,
            )
        })()),
        "/query/int-drops" => json((|| {
            engine.int_drops(&DropsQuery {
                node: required(&p, "node")?,
                reason: param(&p, "reason")?,
                n: param(&p, "n")?,
                window: window(&p)?,
                shard: shard(&p)?,
            })
        })()),
        "/query/int-queues" => json((|| {
            engine.int_queues(required(&p, "node")?, param(&p, "queue")?, window(&p)?)
        })()),
        _ => error(404, &format!("no such endpoint {path}")),
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::time::Duration;

    use super::*;
    use crate::config::Config;
    use crate::memory::Arena;

    fn get(addr: SocketAddr, request: &str) -> String {
        let mut c = TcpStream::connect(addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        c.write_all(request.as_bytes()).unwrap();
        let mut text = String::new();
        c.read_to_string(&mut text).unwrap();
        text
    }

    /// The API is served through `dta-httpd`: routes answered, the server's counters under
    /// `dta_collector_http_*` after the collector's metrics, its own refusals in the API's JSON.
    #[test]
    fn api_is_served_through_the_bounded_server() {
        let config =
            Config::parse("[[region]]\nkind = \"key_increment\"\nslots = 256\nn_max = 2\n")
                .unwrap();
        let arena = Arc::new(Arena::new_normal(&config.region_layout()).unwrap());
        let metrics = Arc::new(Metrics::default());
        let engine = Arc::new(QueryEngine::new(arena, &config, metrics.clone()).unwrap());
        let server = HttpServer::start("127.0.0.1:0".parse().unwrap(), engine, metrics).unwrap();
        let addr = server.local_addr();

        let text = get(addr, "GET /regions HTTP/1.0\r\n\r\n");
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        assert!(
            text.contains("Content-Type: application/json\r\n"),
            "{text}"
        );

        let text = get(addr, "GET /metrics?x=1 HTTP/1.0\r\n\r\n");
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        assert!(
            text.contains("dta_collector_http_requests_total 1\n"),
            "{text}"
        );
        assert!(text.contains("dta_collector_http_refused_total{reason=\"bad_request\"} 0\n"));

        let text = get(addr, "GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
        assert!(text.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{text}");
        assert!(
            text.ends_with("{\"error\":\"Transfer-Encoding is not supported\"}"),
            "{text}"
        );
        let stats = server.stats();
        assert_eq!(
            stats
                .bad_requests
                .load(std::sync::atomic::Ordering::Relaxed),
            1
        );
        assert_eq!(stats.requests.load(std::sync::atomic::Ordering::Relaxed), 2);
    }
}
