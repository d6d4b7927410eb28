//! A throwaway `clickhouse-server` (Debian 12's 18.16, `make setup`): its scratch configuration, its
//! readiness check and the HTTP query every test sends it. The one copy of this code: `history.rs`
//! starts the server in a network namespace for the e2e and the demo, and the collector's exporter
//! tests (`collector/tests/export_support`, which cannot depend on this crate) include this file by
//! path and start it on loopback. So it uses nothing but `std`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Debian's server binary (`make setup` installs the `clickhouse-server` package).
pub const CLICKHOUSE_SERVER: &str = "/usr/sbin/clickhouse-server";

/// How long a fresh server may take to answer its first query (18.16 starts in about a second; a
/// loaded machine is given plenty).
const START_LIMIT: Duration = Duration::from_secs(60);

/// Writes the server's configuration under `dir` (its data, temp and log files go there too): HTTP on
/// `addr` and nothing else, user `default` without a password from the networks `networks` (e.g.
/// `127.0.0.1`, or `::/0` inside a namespace of its own). Returns the server's arguments.
pub fn configure(dir: &Path, addr: SocketAddr, networks: &str) -> std::io::Result<Vec<String>> {
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
    let users = format!(
        r#"<?xml version="1.0"?>
<yandex>
  <profiles><default></default></profiles>
  <users><default><password></password><networks><ip>{networks}</ip></networks>
    <profile>default</profile><quota>default</quota></default></users>
  <quotas><default></default></quotas>
</yandex>
"#
    );
    std::fs::write(dir.join("config.xml"), config)?;
    std::fs::write(dir.join("users.xml"), users)?;
    Ok(vec![format!("--config-file={d}/config.xml")])
}

/// Where [`configure`] sends the server's output.
pub fn log_path(dir: &Path) -> PathBuf {
    dir.join("server.log")
}

/// Waits until `select_one` (a `SELECT 1` sent however the caller reaches the server) answers `1`;
/// an error with the server's log if it has not after a minute.
pub fn wait_ready(
    dir: &Path,
    mut select_one: impl FnMut() -> Option<String>,
) -> Result<(), String> {
    let start = Instant::now();
    while select_one().map(|s| s.trim() == "1") != Some(true) {
        if start.elapsed() > START_LIMIT {
            return Err(format!(
                "clickhouse-server did not answer within {START_LIMIT:?}; its log:\n{}",
                std::fs::read_to_string(log_path(dir)).unwrap_or_default()
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

/// Runs `sql` over the HTTP interface at `addr` (64-bit integers unquoted in JSON formats); the
/// answer's body, or why not (the whole answer when it is not 200).
pub fn query(addr: SocketAddr, sql: &str) -> Result<String, String> {
    let io = |what: &str, e: std::io::Error| format!("{what} clickhouse at {addr}: {e}");
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .map_err(|e| io("connecting to", e))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .map_err(|e| io("setting a timeout for", e))?;
    write!(
        s,
        "POST /?output_format_json_quote_64bit_integers=0 HTTP/1.0\r\nHost: {addr}\r\nContent-Length: {}\r\n\r\n{sql}",
        sql.len()
    )
    .map_err(|e| io("sending to", e))?;
    let mut raw = String::new();
    s.read_to_string(&mut raw)
        .map_err(|e| io("reading the answer of", e))?;
    let Some((head, body)) = raw.split_once("\r\n\r\n") else {
        return Err(format!(
            "no HTTP header in clickhouse's answer to {sql}: {raw}"
        ));
    };
    if !head.lines().next().unwrap_or_default().contains(" 200 ") {
        return Err(format!("clickhouse answered {sql}: {raw}"));
    }
    Ok(body.to_string())
}
