//! A minimal HTTP/1.0 GET client and a Prometheus text reader, enough for the collector's query API and
//! the translator's metrics.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use anyhow::{bail, Context, Result};

/// GETs `path` from `addr`; returns the body of a 200 answer, an error with the body otherwise.
pub fn get(addr: SocketAddr, path: &str) -> Result<String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .with_context(|| format!("connecting to {addr}"))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n")?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)
        .with_context(|| format!("reading {path}"))?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .with_context(|| format!("malformed HTTP answer to {path}"))?;
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .with_context(|| format!("no status in {head:?}"))?;
    if status != 200 {
        bail!("GET {path}: HTTP {status}: {body}");
    }
    Ok(body.to_string())
}

/// GETs and parses JSON.
pub fn get_json(addr: SocketAddr, path: &str) -> Result<serde_json::Value> {
    let body = get(addr, path)?;
    serde_json::from_str(&body).with_context(|| format!("JSON of {path}: {body}"))
}

/// Sum of every sample of metric `name` whose label set contains `label` (e.g. `reason="queue_full"`;
/// empty for all samples).
pub fn metric(text: &str, name: &str, label: &str) -> u64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            let (metric, labels) = series.split_once('{').unwrap_or((series, ""));
            (metric == name && labels.contains(label)).then(|| value.parse::<f64>().ok())?
        })
        .map(|v| v as u64)
        .sum()
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_prometheus_samples() {
        let t = "# HELP x y\nx_total{a=\"1\"} 3\nx_total{a=\"2\"} 4\nx_total_more 9\ny 1\n";
        assert_eq!(super::metric(t, "x_total", ""), 7);
        assert_eq!(super::metric(t, "x_total", "a=\"2\""), 4);
        assert_eq!(super::metric(t, "y", ""), 1);
        assert_eq!(super::metric(t, "z", ""), 0);
    }
}
