//! A real Prometheus for the tests (issue 28): the Debian package's `prometheus` started in a namespace
//! with its own configuration and a scratch TSDB, scraping both daemons every second and evaluating the
//! shipped rules (`deploy/prometheus/rules.yml`); its HTTP API (`/api/v1/query`, `/api/v1/rules`) read
//! back; the dashboard's (`deploy/grafana/`) expressions extracted. `promtool` and `prometheus` come
//! from `make setup`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::http;
use crate::netns::enter_and_run;
use crate::procs::Proc;

/// Where Prometheus listens: the loopback of the namespace it runs in.
const LISTEN: &str = "127.0.0.1:9090";

/// The repository's `deploy/` folder.
pub fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy")
}

/// The shipped rules file.
pub fn rules_file() -> PathBuf {
    deploy_dir().join("prometheus/rules.yml")
}

/// The shipped Grafana dashboard.
pub fn dashboard_file() -> PathBuf {
    deploy_dir().join("grafana/dta-dashboard.json")
}

/// `name` on the PATH, or why the caller should skip: `Ok(None)` with SKIP printed, unless
/// DTA_REQUIRE_PROMETHEUS=1 or DTA_REQUIRE_NETNS=1 (as `make unit` sets), which make a missing tool an
/// error so CI cannot pass by skipping.
pub fn tool_or_skip(name: &str) -> Result<Option<PathBuf>> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    });
    if found.is_some() {
        return Ok(found);
    }
    let required = ["DTA_REQUIRE_PROMETHEUS", "DTA_REQUIRE_NETNS"]
        .iter()
        .find(|v| std::env::var(v).as_deref() == Ok("1"));
    if let Some(v) = required {
        bail!("{v}=1 but `{name}` is not installed (make setup installs Debian's prometheus)");
    }
    eprintln!("SKIP: `{name}` is not installed (make setup installs Debian's prometheus package)");
    Ok(None)
}

/// A running Prometheus; dropping it kills it.
pub struct Prometheus {
    proc: Proc,
    ns: String,
    addr: SocketAddr,
}

/// Its configuration: 1-s scrapes of one translator and one collector, the shipped rules evaluated every
/// second.
fn config(translator: SocketAddr, collector: SocketAddr, rules: &Path) -> String {
    format!(
        r#"global:
  scrape_interval: 1s
  scrape_timeout: 900ms
  evaluation_interval: 1s
rule_files:
  - "{rules}"
scrape_configs:
  - job_name: dta-translator
    static_configs:
      - targets: ["{translator}"]
  - job_name: dta-collector
    static_configs:
      - targets: ["{collector}"]
"#,
        rules = rules.display(),
    )
}

impl Prometheus {
    /// Starts `bin` in namespace `ns` (which must reach both addresses), its configuration and TSDB
    /// under `dir`, and waits until it is ready.
    pub fn start(
        bin: &Path,
        ns: &str,
        dir: &Path,
        translator: SocketAddr,
        collector: SocketAddr,
    ) -> Result<Prometheus> {
        std::fs::create_dir_all(dir.join("tsdb"))?;
        let cfg = dir.join("prometheus.yml");
        std::fs::write(&cfg, config(translator, collector, &rules_file()))?;
        let arg = |k: &str, v: &Path| format!("--{k}={}", v.display());
        let args = [
            arg("config.file", &cfg),
            arg("storage.tsdb.path", &dir.join("tsdb")),
            format!("--web.listen-address={LISTEN}"),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let proc = Proc::spawn("prometheus", ns, bin, &args, &dir.join("prometheus.log"))?;
        let p = Prometheus {
            proc,
            ns: ns.to_string(),
            addr: LISTEN.parse()?,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while p.get("/-/ready").is_err() {
            if Instant::now() > deadline {
                bail!(
                    "prometheus not ready within 60 s; its log:\n{}",
                    std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Ok(p)
    }

    /// Its PID (for a watchdog).
    pub fn pid(&self) -> u32 {
        self.proc.pid()
    }

    fn get(&self, path: &str) -> Result<String> {
        let (addr, path) = (self.addr, path.to_string());
        enter_and_run(&self.ns, move || http::get(addr, &path))?
    }

    fn api(&self, path: &str) -> Result<Value> {
        let body = self.get(path)?;
        let v: Value = serde_json::from_str(&body).with_context(|| format!("JSON of {path}"))?;
        if v["status"] != "success" {
            bail!("{path}: {body}");
        }
        Ok(v["data"].clone())
    }

    /// `expr` evaluated at `at` (Unix seconds; now if None): its result's samples (an instant vector's
    /// elements, or a scalar as one).
    pub fn query(&self, expr: &str, at: Option<f64>) -> Result<Vec<Value>> {
        let mut path = format!("/api/v1/query?query={}", urlencode(expr));
        if let Some(t) = at {
            path += &format!("&time={t:.3}");
        }
        let data = self.api(&path).with_context(|| format!("query {expr}"))?;
        Ok(match &data["result"] {
            Value::Array(a) => a.clone(),
            Value::Null => Vec::new(),
            other => vec![other.clone()],
        })
    }

    /// `expr`'s single value at `at` (its result must have exactly one sample).
    pub fn value(&self, expr: &str, at: Option<f64>) -> Result<f64> {
        let r = self.query(expr, at)?;
        let [one] = r.as_slice() else {
            bail!("{expr}: {} samples, not one: {r:?}", r.len());
        };
        one["value"][1]
            .as_str()
            .and_then(|s| s.parse().ok())
            .with_context(|| format!("{expr}: no value in {one}"))
    }

    /// The loaded rules: (group, name, expression, health, last error).
    pub fn rules(&self) -> Result<Vec<Rule>> {
        let data = self.api("/api/v1/rules")?;
        let mut out = Vec::new();
        for g in data["groups"].as_array().context("groups")? {
            for r in g["rules"].as_array().context("rules")? {
                let s = |k: &str| r[k].as_str().unwrap_or_default().to_string();
                out.push(Rule {
                    group: g["name"].as_str().unwrap_or_default().to_string(),
                    name: s("name"),
                    query: s("query"),
                    health: s("health"),
                    error: s("lastError"),
                });
            }
        }
        Ok(out)
    }

    /// Scrape targets' health: (job, health, last error).
    pub fn targets(&self) -> Result<Vec<(String, String, String)>> {
        let data = self.api("/api/v1/targets")?;
        let t = data["activeTargets"].as_array().context("activeTargets")?;
        Ok(t.iter()
            .map(|t| {
                let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
                (s(&t["labels"]["job"]), s(&t["health"]), s(&t["lastError"]))
            })
            .collect())
    }
}

/// One rule as Prometheus loaded it.
#[derive(Debug, Clone)]
pub struct Rule {
    /// Its group.
    pub group: String,
    /// Alert or recorded series name.
    pub name: String,
    /// The expression.
    pub query: String,
    /// `ok`, `err` or `unknown` (not evaluated yet).
    pub health: String,
    /// The last evaluation's error.
    pub error: String,
}

/// Percent-encodes a query parameter (everything but unreserved characters).
pub fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// An alert expression's signal: the left side of its last comparison at the top level (outside
/// parentheses, braces, brackets and strings), e.g. `up{job="x"}` of `up{job="x"} == 0`; the whole
/// expression when it has none. The signal returns data whenever its series exist; the comparison
/// only when the alert fires.
pub fn signal(expr: &str) -> &str {
    let b = expr.as_bytes();
    let (mut depth, mut quote, mut cut) = (0i32, None, None);
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match quote {
            // Inside a string: skip escapes, and wait for its closing quote.
            Some(q) => {
                if c == b'\\' {
                    i += 1;
                } else if c == q {
                    quote = None;
                }
            }
            None => match c {
                b'"' | b'\'' | b'`' => quote = Some(c),
                b'(' | b'{' | b'[' => depth += 1,
                b')' | b'}' | b']' => depth -= 1,
                b'>' | b'<' | b'=' | b'!' if depth == 0 => {
                    // `==`, `!=`, `>=`, `<=`, `>`, `<` (not `=~`/`!~`, which live inside braces).
                    let two = b.get(i + 1) == Some(&b'=');
                    // `=` and `!` compare only as `==` and `!=`; `>` and `<` alone too.
                    if two || matches!(c, b'>' | b'<') {
                        cut = Some(i);
                    }
                    if two {
                        i += 1;
                    }
                }
                _ => {}
            },
        }
        i += 1;
    }
    cut.map_or(expr, |at| expr[..at].trim())
}

/// Every `expr` of the dashboard's panels, with Grafana's `$__rate_interval` set to `rate_interval`.
pub fn dashboard_exprs(dashboard: &Value, rate_interval: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for p in dashboard["panels"].as_array().into_iter().flatten() {
        let title = p["title"].as_str().unwrap_or_default();
        for t in p["targets"].as_array().into_iter().flatten() {
            if let Some(e) = t["expr"].as_str() {
                out.push((
                    title.to_string(),
                    e.replace("$__rate_interval", rate_interval),
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_and_encoding() {
        assert_eq!(
            signal(r#"up{job="dta-translator"} == 0"#),
            r#"up{job="dta-translator"}"#
        );
        assert_eq!(
            signal(r#"sum by (n) (rate(x{reason!="a",b=~"c>d"}[5m])) > 1"#),
            r#"sum by (n) (rate(x{reason!="a",b=~"c>d"}[5m]))"#
        );
        assert_eq!(signal("a + b >= 0"), "a + b");
        assert_eq!(signal("sum(rate(x[1m]))"), "sum(rate(x[1m]))");
        assert_eq!(
            urlencode("a{b=\"c\"}[1m] + 1"),
            "a%7Bb%3D%22c%22%7D%5B1m%5D%20%2B%201"
        );
    }
}
