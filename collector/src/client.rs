//! A minimal HTTP/1.0 GET client for `dta-collector query`: one request, one JSON body, no dependencies.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use crate::error::{Error, Result};

/// How long a query may take end to end.
const TIMEOUT: Duration = Duration::from_secs(10);

/// GETs `path` from `server` (`host:port`) and returns the status and body.
pub fn get(server: &str, path: &str) -> Result<(u16, String)> {
    let addr = server
        .to_socket_addrs()
        .map_err(|e| Error::io(format!("resolving {server}"), e))?
        .next()
        .ok_or_else(|| Error::Config(format!("{server} resolves to no address")))?;
    let mut s = TcpStream::connect_timeout(&addr, TIMEOUT)
        .map_err(|e| Error::io(format!("connecting to the collector at {server}"), e))?;
    s.set_read_timeout(Some(TIMEOUT))
        .map_err(|e| Error::io("timeout", e))?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {server}\r\n\r\n")
        .map_err(|e| Error::io("sending", e))?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)
        .map_err(|e| Error::io("reading the answer", e))?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| Error::BadQuery("malformed HTTP answer".into()))?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| Error::BadQuery(format!("no HTTP status in {head:?}")))?;
    Ok((status, body.to_string()))
}
