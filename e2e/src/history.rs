//! The history exporter's engines for the tests and the demo (issue 28): Debian's `clickhouse-server`
//! started in a namespace with a scratch configuration and data directory, queried over its HTTP
//! interface; the venv's Python with pyarrow and chdb, which reads the exported Parquet files back
//! (`tests/oracle/export_check.py`) and answers SQL over them.
//!
//! (The collector's own exporter tests, `collector/tests/export_support`, start the server the same way
//! on loopback; this one runs it where the collector reaches it, in the collector's namespace.)

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::netns::enter_and_run;
use crate::procs::Proc;

/// Debian's server binary (`make setup` installs the `clickhouse-server` package).
pub const CLICKHOUSE_SERVER: &str = "/usr/sbin/clickhouse-server";

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
        for sub in ["data", "tmp", "user_files", "format_schemas"] {
            std::fs::create_dir_all(dir.join(sub))?;
        }
        let d = dir.display();
        let (host, port) = (addr.ip(), addr.port());
        let config = format!(
            r#"<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><console>1</console></logger>
  <http_port>{port}</http_port>
  <listen_host>{host}</listen_host>
  <path>{d}/data/</path>
  <tmp_path>{d}/tmp/</tmp_path>
  <user_files_path>{d}/user_files/</user_files_path>
  <format_schema_path>{d}/format_schemas/</format_schema_path>
  <mark_cache_size>5368709</mark_cache_size>
  <users_config>{d}/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mlock_executable>false</mlock_executable>
</yandex>
"#
        );
        let users = r#"<?xml version="1.0"?>
<yandex>
  <profiles><default></default></profiles>
  <users><default><password></password><networks><ip>::/0</ip></networks>
    <profile>default</profile><quota>default</quota></default></users>
  <quotas><default></default></quotas>
</yandex>
"#;
        std::fs::write(dir.join("config.xml"), config)?;
        std::fs::write(dir.join("users.xml"), users)?;
        let cfg = format!("--config-file={d}/config.xml");
        let proc = Proc::spawn(
            "clickhouse-server",
            ns,
            binary,
            &[&cfg],
            &dir.join("server.log"),
        )?;
        let ch = ClickHouse {
            proc,
            ns: ns.to_string(),
            addr,
        };
        let start = Instant::now();
        while ch.query("SELECT 1").map(|s| s.trim() == "1").ok() != Some(true) {
            if start.elapsed() > Duration::from_secs(60) {
                bail!(
                    "clickhouse-server did not answer within 60 s; its log:\n{}",
                    std::fs::read_to_string(dir.join("server.log")).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
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
        enter_and_run(&self.ns, move || post(addr, &sql))?
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

fn post(addr: SocketAddr, sql: &str) -> Result<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    write!(
        s,
        "POST /?output_format_json_quote_64bit_integers=0 HTTP/1.0\r\nHost: {addr}\r\nContent-Length: {}\r\n\r\n{sql}",
        sql.len()
    )?;
    let mut raw = String::new();
    s.read_to_string(&mut raw)?;
    let (head, body) = raw.split_once("\r\n\r\n").context("no HTTP header")?;
    if !head.lines().next().unwrap_or_default().contains(" 200 ") {
        bail!("clickhouse answered {sql}: {raw}");
    }
    Ok(body.to_string())
}
