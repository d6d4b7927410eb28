//! The history exporter's engines for the tests and the demo (issue 28): Debian's `clickhouse-server`
//! started in a namespace with a scratch configuration and data directory, queried over its HTTP
//! interface; the venv's Python with pyarrow and chdb, which reads the exported Parquet files back
//! (`tests/oracle/export_check.py`) and answers SQL over them.
//!
//! The server's configuration, readiness check and HTTP query are [`crate::clickhouse_server`]'s, which
//! the collector's own exporter tests share (they start it on loopback; this one runs it where the
//! collector reaches it, in the collector's namespace).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::netns::enter_and_run;
use crate::procs::Proc;

pub use crate::clickhouse_server::CLICKHOUSE_SERVER;
use crate::clickhouse_server::{configure, log_path, query, wait_ready};

/// Whether a missing engine is an error rather than a skip: DTA_REQUIRE_ORACLES=1 (as `make unit` sets).
fn required() -> bool {
    std::env::var("DTA_REQUIRE_ORACLES").as_deref() == Ok("1")
}

/// The venv's Python with pyarrow and chdb (`DTA_ORACLE_PYTHON`, else `.venv/bin/python` at the
/// repository root), or `Ok(None)` with SKIP printed, unless DTA_REQUIRE_ORACLES=1.
pub fn python_or_skip() -> Result<Option<PathBuf>> {
    let python = std::env::var_os("DTA_ORACLE_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".venv/bin/python"));
    let ok = python.exists()
        && Command::new(&python)
            .args(["-c", "import pyarrow, chdb"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    if ok {
        return Ok(Some(python));
    }
    if required() {
        bail!(
            "DTA_REQUIRE_ORACLES=1 but {} has no pyarrow and chdb (run `make setup`)",
            python.display()
        );
    }
    eprintln!(
        "SKIP: no Python with pyarrow and chdb at {} (run `make setup`)",
        python.display()
    );
    Ok(None)
}

/// Debian's clickhouse-server, or `Ok(None)` with SKIP printed, unless DTA_REQUIRE_ORACLES=1.
pub fn clickhouse_or_skip() -> Result<Option<PathBuf>> {
    let p = PathBuf::from(CLICKHOUSE_SERVER);
    if p.exists() {
        return Ok(Some(p));
    }
    if required() {
        bail!("DTA_REQUIRE_ORACLES=1 but there is no {CLICKHOUSE_SERVER} (run `make setup`)");
    }
    eprintln!("SKIP: no {CLICKHOUSE_SERVER} (run `make setup`)");
    Ok(None)
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `tests/oracle/export_check.py` over the Parquet files under `dir`: per table the files (relative to
/// `dir`), the Arrow schema, the rows as pyarrow reads them (`pyarrow`) and as chdb reads them (`chdb`,
/// without the time column), and chdb's drops per node.
pub fn read_parquet(python: &Path, dir: &Path, tables: &[&str]) -> Result<Value> {
    let out = Command::new(python)
        .arg(repo_root().join("tests/oracle/export_check.py"))
        .arg(dir)
        .arg(tables.join(","))
        .output()
        .context("running export_check.py")?;
    if !out.status.success() {
        bail!(
            "export_check.py failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    serde_json::from_slice(&out.stdout).context("export_check.py's JSON")
}

/// `sql` over the Parquet files with chdb (in `python`), in ClickHouse's `format`: what an operator
/// types. The files are named by the glob `files` (e.g. `<dir>/drop_events/*/*/*.parquet`) as `{files}`
/// in `sql`.
pub fn chdb_query(python: &Path, sql: &str, format: &str) -> Result<String> {
    let script = "import sys, chdb\nprint(chdb.query(sys.argv[1], sys.argv[2]).data(), end='')\n";
    let out = Command::new(python)
        .args(["-c", script, sql, format])
        .output()
        .context("running chdb")?;
    if !out.status.success() {
        bail!(
            "chdb refused {sql}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A clickhouse-server of our own in a namespace: its config, data and logs under a directory, HTTP on
/// one address and nothing else; killed when dropped.
pub struct ClickHouse {
    proc: Proc,
    ns: String,
    /// Its HTTP interface (reachable from its namespace).
    pub addr: SocketAddr,
}

impl ClickHouse {
    /// Starts `binary` in namespace `ns` (`""`: this one) listening on `addr`, its files under `dir`,
    /// and waits (at most 60 s) until it answers.
    pub fn start(binary: &Path, ns: &str, addr: SocketAddr, dir: &Path) -> Result<ClickHouse> {
        // Inside a namespace of its own, any address may reach it.
        let args = configure(dir, addr, "::/0")?;
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let proc = Proc::spawn("clickhouse-server", ns, binary, &args, &log_path(dir))?;
        let ch = ClickHouse {
            proc,
            ns: ns.to_string(),
            addr,
        };
        wait_ready(dir, || ch.query("SELECT 1").ok()).map_err(anyhow::Error::msg)?;
        Ok(ch)
    }

    /// Its PID (for a watchdog).
    pub fn pid(&self) -> u32 {
        self.proc.pid()
    }

    /// Its URL, for `[export.clickhouse] url`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Runs `sql` over the HTTP interface (from its namespace); its answer, or an error when the
    /// server does not answer 200.
    pub fn query(&self, sql: &str) -> Result<String> {
        let (addr, sql) = (self.addr, sql.to_string());
        enter_and_run(&self.ns, move || {
            query(addr, &sql).map_err(anyhow::Error::msg)
        })?
    }

    /// The rows of `sql` (JSONEachRow, 64-bit integers as numbers).
    pub fn rows(&self, sql: &str) -> Result<Vec<Value>> {
        let text = self.query(&format!("{sql} FORMAT JSONEachRow"))?;
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).with_context(|| format!("row {l}")))
            .collect()
    }
}
