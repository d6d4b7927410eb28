//! Metrics exposition shared by both daemons' `/metrics`: OpenMetrics text written by `prometheus-client`
//! (the Prometheus project's Rust client), the server's own counters as `{prefix}_http_*` families, and
//! small helpers for collectors that read published snapshots at scrape time.
//!
//! Counter families are named without `_total`: the encoder appends it to every counter sample (and the
//! `# TYPE` line names the family without it, as OpenMetrics wants).

use std::fmt;
use std::sync::atomic::Ordering;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use crate::HttpStats;

/// The content type of [`exposition`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The `/metrics` body: the application's registry, the server's counters under the same prefix, `# EOF`.
pub fn exposition(registry: &Registry, stats: &HttpStats, prefix: &str) -> String {
    let mut o = String::new();
    // Writing into a String fails only if an encoder does, and ours do not.
    let _ = prometheus_client::encoding::text::encode_registry(&mut o, registry);
    o.push_str(&stats.render(prefix));
    let _ = prometheus_client::encoding::text::encode_eof(&mut o);
    o
}

/// One counter family without labels, named without `_total`.
pub fn counter(enc: &mut DescriptorEncoder, name: &str, help: &str, v: u64) -> fmt::Result {
    let c = ConstCounter::new(v);
    c.encode(enc.encode_descriptor(name, help, None, MetricType::Counter)?)
}

/// One gauge family without labels.
pub fn gauge(enc: &mut DescriptorEncoder, name: &str, help: &str, v: i64) -> fmt::Result {
    let g = ConstGauge::new(v);
    g.encode(enc.encode_descriptor(name, help, None, MetricType::Gauge)?)
}

/// One counter family, one sample per label set, named without `_total`.
pub fn counters<L: EncodeLabelSet>(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    samples: impl IntoIterator<Item = (L, u64)>,
) -> fmt::Result {
    let mut m = enc.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (labels, v) in samples {
        ConstCounter::new(v).encode(m.encode_family(&labels)?)?;
    }
    Ok(())
}

/// One gauge family, one sample per label set.
pub fn gauges<L: EncodeLabelSet>(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    samples: impl IntoIterator<Item = (L, u64)>,
) -> fmt::Result {
    let mut m = enc.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for (labels, v) in samples {
        ConstGauge::new(v).encode(m.encode_family(&labels)?)?;
    }
    Ok(())
}

/// The server's counters read once, for one scrape.
#[derive(Debug)]
struct HttpCounts {
    connections: u64,
    active: i64,
    requests: u64,
    refused: [(&'static str, u64); 8],
}

impl Collector for HttpCounts {
    fn encode(&self, mut enc: DescriptorEncoder) -> fmt::Result {
        counter(
            &mut enc,
            "http_connections",
            "HTTP connections accepted.",
            self.connections,
        )?;
        gauge(
            &mut enc,
            "http_connections_active",
            "HTTP connections open now.",
            self.active,
        )?;
        counter(
            &mut enc,
            "http_requests",
            "HTTP requests answered.",
            self.requests,
        )?;
        counters(
            &mut enc,
            "http_refused",
            "HTTP connections and requests refused or closed, by reason.",
            self.refused.iter().map(|(r, n)| ([("reason", *r)], *n)),
        )
    }
}

impl HttpStats {
    /// The counters as OpenMetrics families (no `# EOF`), every name starting with `prefix`
    /// (`{prefix}_http_...`); [`exposition`] puts them after the application's own.
    pub fn render(&self, prefix: &str) -> String {
        let l = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        let counts = HttpCounts {
            connections: l(&self.connections),
            active: i64::try_from(self.active.load(Ordering::Relaxed)).unwrap_or(i64::MAX),
            requests: l(&self.requests),
            refused: [
                ("connection_cap", l(&self.refused_connection_cap)),
                ("address_cap", l(&self.refused_address_cap)),
                ("idle_timeout", l(&self.idle_timeouts)),
                ("read_timeout", l(&self.read_timeouts)),
                ("write_timeout", l(&self.write_timeouts)),
                ("head_too_large", l(&self.head_too_large)),
                ("body_too_large", l(&self.body_too_large)),
                ("bad_request", l(&self.bad_requests)),
            ],
        };
        let mut registry = Registry::with_prefix(prefix);
        registry.register_collector(Box::new(counts));
        let mut o = String::new();
        let _ = prometheus_client::encoding::text::encode_registry(&mut o, &registry);
        o
    }
}

/// The series of an exposition text, each as `name{label="value",...}` with labels sorted and `le` bounds
/// written as Rust prints the number (`1e-5` and `0.00001` are one bound): what dashboards select on.
/// For tests that pin the names and labels a daemon exposes.
pub fn series(text: &str) -> std::collections::BTreeSet<String> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| {
            let (series, _value) = l.rsplit_once(' ')?;
            let Some((name, labels)) = series.split_once('{') else {
                return Some(series.to_string());
            };
            let mut labels: Vec<String> = labels
                .trim_end_matches('}')
                .split(',')
                .map(|kv| match kv.strip_prefix("le=\"") {
                    Some(v) => {
                        let v = v.trim_end_matches('"');
                        match v.parse::<f64>() {
                            Ok(x) if x.is_finite() => format!("le=\"{x}\""),
                            _ => format!("le=\"{v}\""),
                        }
                    }
                    None => kv.to_string(),
                })
                .collect();
            labels.sort();
            Some(format!("{name}{{{}}}", labels.join(",")))
        })
        .collect()
}

/// Checks an exposition against the series a daemon promised (`want`: `name{labels}` as [`series`] writes
/// them) and the `# TYPE` of each family (`types`: the sample name, counters with their `_total`, and the
/// type): no series more or less, every type declared under the OpenMetrics family name, `_total` once,
/// help texts ending in one full stop, and the closing `# EOF`. For the daemons' tests; panics with the
/// difference.
pub fn assert_exposition(text: &str, want: &[&str], types: &[(&str, &str)]) {
    let want: std::collections::BTreeSet<String> = want.iter().map(|s| s.to_string()).collect();
    let got = series(text);
    let new: Vec<_> = got.difference(&want).collect();
    assert!(new.is_empty(), "new series: {new:?}");
    let missing: Vec<_> = want.difference(&got).collect();
    assert!(missing.is_empty(), "missing series: {missing:?}");
    for (name, kind) in types {
        let family = match *kind {
            "counter" => name.strip_suffix("_total").expect("counters end in _total"),
            _ => name,
        };
        assert!(
            text.contains(&format!("# TYPE {family} {kind}\n")),
            "{family} {kind} in\n{text}"
        );
    }
    assert!(!text.contains("_total_total"));
    assert!(!text.contains(".."), "help text ends in one full stop");
    assert!(text.ends_with("# EOF\n"));
}
