//! A minimal HTTP/1.0 POST for the ClickHouse sink: one request per connection, the answer read to its
//! end (HTTP/1.0, so the server sends it unchunked and closes), no dependencies.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use crate::error::{Error, Result};

/// Largest answer kept: ClickHouse's error texts are short; an insert's answer is empty.
const MAX_ANSWER: u64 = 1 << 20;

/// Where requests go: `host:port` and a path prefix, from `http://host:port[/prefix]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// `host:port`.
    pub authority: String,
    /// The path prefix, without a trailing `/` (empty for none).
    pub prefix: String,
}

impl Endpoint {
    /// Parses `http://host[:port][/prefix]` (port 8123, ClickHouse's HTTP port, by default).
    pub fn parse(url: &str) -> Result<Self> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| Error::Config(format!("{url:?}: only http:// URLs are supported")))?;
        let (authority, prefix) = match rest.find('/') {
            Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
            None => (rest, ""),
        };
        if authority.is_empty() {
            return Err(Error::Config(format!("{url:?} names no host")));
        }
        // A bracketed IPv6 address has colons of its own; a port follows its `]`.
        let has_port = match authority.rfind(']') {
            Some(close) => authority[close..].contains(':'),
            None => authority.contains(':'),
        };
        let authority = if has_port {
            authority.to_string()
        } else {
            format!("{authority}:8123")
        };
        Ok(Endpoint {
            authority,
            prefix: prefix.to_string(),
        })
    }
}

/// POSTs `body` to `path` (with its query string) at `e`; the status and the answer's body.
pub fn post(e: &Endpoint, path: &str, body: &[u8], timeout: Duration) -> Result<(u16, String)> {
    let io = |what: &str, err| Error::io(format!("{what} {}", e.authority), err);
    let addr = e
        .authority
        .to_socket_addrs()
        .map_err(|err| io("resolving", err))?
        .next()
        .ok_or_else(|| Error::Config(format!("{} resolves to no address", e.authority)))?;
    let mut s =
        TcpStream::connect_timeout(&addr, timeout).map_err(|err| io("connecting to", err))?;
    s.set_read_timeout(Some(timeout))
        .and_then(|()| s.set_write_timeout(Some(timeout)))
        .map_err(|err| io("setting timeouts for", err))?;
    let head = format!(
        "POST {}{path} HTTP/1.0\r\nHost: {}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n",
        e.prefix,
        e.authority,
        body.len()
    );
    s.write_all(head.as_bytes())
        .and_then(|()| s.write_all(body))
        .map_err(|err| io("sending to", err))?;
    let mut raw = Vec::new();
    s.take(MAX_ANSWER)
        .read_to_end(&mut raw)
        .map_err(|err| io("reading the answer of", err))?;
    let text = String::from_utf8_lossy(&raw);
    let (head, answer) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| Error::Export {
            sink: "clickhouse",
            message: format!("no HTTP status in the answer of {}: {head:?}", e.authority),
        })?;
    Ok((status, answer.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints() {
        let e = Endpoint::parse("http://ch.example:8124/proxy/").unwrap();
        assert_eq!(
            (e.authority.as_str(), e.prefix.as_str()),
            ("ch.example:8124", "/proxy")
        );
        let e = Endpoint::parse("http://127.0.0.1").unwrap();
        assert_eq!(
            (e.authority.as_str(), e.prefix.as_str()),
            ("127.0.0.1:8123", "")
        );
        assert_eq!(
            Endpoint::parse("http://[::1]").unwrap().authority,
            "[::1]:8123"
        );
        assert_eq!(
            Endpoint::parse("http://[::1]:9").unwrap().authority,
            "[::1]:9"
        );
        assert!(Endpoint::parse("https://x").is_err());
        assert!(Endpoint::parse("http:///x").is_err());
    }
}
