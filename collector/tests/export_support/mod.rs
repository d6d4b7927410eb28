//! The exporter's integration tests: a collector's regions written by hand the way DESIGN.md section 3
//! says the translator writes them (entries into the ring, then the head word; counters native-endian
//! at 8 × slot), the events each test expects back, and the real engines that read the export: the
//! venv's pyarrow and chdb, and Debian's `clickhouse-server` run unprivileged on loopback.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dta_collector::config::Config;
use dta_collector::memory::Arena;
use dta_protocol::hash::placement;
use dta_protocol::int::mapping::drop_counter_key;
use dta_protocol::layout::RegionKind;
use serde_json::Value;

/// Drop lists 4 and 6 (two translator workers), queue list 5, raw list 7 (8-byte entries); rings of 32.
pub const REGIONS: &str = r#"
[int]
drop_list = [4, 6]
queue_list = 5

[[region]]
kind = "key_write"
slots = 1024
entry_size = 16
n_max = 2
redundancy = 2

[[region]]
kind = "key_increment"
slots = 1024
n_max = 2
redundancy = 2

[[region]]
kind = "append"
id = 4
entries = 32
entry_size = 16
batch_size = 16

[[region]]
kind = "append"
id = 5
entries = 32
entry_size = 16
batch_size = 16

[[region]]
kind = "append"
id = 6
entries = 32
entry_size = 16
batch_size = 16

[[region]]
kind = "append"
id = 7
entries = 32
entry_size = 8
batch_size = 16
"#;

const SLOTS: u64 = 1024;

/// A fresh directory under the system's temp dir, removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(what: &str) -> Self {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let d = std::env::temp_dir().join(format!("dta-export-{what}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn arena(config: &Config) -> Arc<Arena> {
    Arc::new(Arena::new_normal(&config.region_layout()).unwrap())
}

/// Appends `entries` to list `list` (ring of 32 after a 64-byte header) under one write lock: a reader
/// sees all of them or none, so what it misses is known exactly.
pub fn append(arena: &Arena, list: u32, entries: &[Vec<u8>]) {
    let slot = arena.find(RegionKind::Append, Some(list)).unwrap();
    let mut mem = arena.write();
    let region = &mut mem.as_mut_slice()[slot.offset..slot.offset + slot.len()];
    let head = u64::from_le_bytes(region[..8].try_into().unwrap());
    for (i, e) in entries.iter().enumerate() {
        let at = 64 + ((head + i as u64) % 32) as usize * e.len();
        region[at..at + e.len()].copy_from_slice(e);
    }
    region[..8].copy_from_slice(&(head + entries.len() as u64).to_le_bytes());
}

/// Adds `by` to both copies (N = 2) of Key-Increment `key`.
pub fn increment(arena: &Arena, key: u32, by: u64) {
    let slot = arena.find(RegionKind::KeyIncrement, None).unwrap();
    let mut mem = arena.write();
    for copy in 0..2 {
        let at = slot.offset + placement(key, copy, SLOTS) as usize * 8;
        let old = u64::from_ne_bytes(mem.as_slice()[at..at + 8].try_into().unwrap());
        mem.as_mut_slice()[at..at + 8].copy_from_slice(&(old + by).to_ne_bytes());
    }
}

/// Key-Write `key` = `data` (12 bytes, an INT hop record's size) in both copies: the checksum
/// little-endian, then the data.
pub fn key_write(arena: &Arena, key: u32, data: [u8; 12]) {
    let slot = arena.find(RegionKind::KeyWrite, None).unwrap();
    let mut mem = arena.write();
    for copy in 0..2 {
        let at = slot.offset + placement(key, copy, SLOTS) as usize * 16;
        let sum = dta_protocol::hash::key_checksum(key);
        mem.as_mut_slice()[at..at + 4].copy_from_slice(&sum.to_le_bytes());
        mem.as_mut_slice()[at + 4..at + 16].copy_from_slice(&data);
    }
}

/// Sets sketch counters under one write lock, each `(sketch, its rows, column, row, value)`:
/// big-endian at `4 · (rows · column + row)`, as the translator's column writes leave them.
pub fn sketch_set(arena: &Arena, counters: &[(u32, u32, u32, u32, u32)]) {
    let mut mem = arena.write();
    for &(id, rows, column, row, value) in counters {
        let slot = arena.find(RegionKind::Sketch, Some(id)).unwrap();
        let at = slot.offset + 4 * (rows * column + row) as usize;
        mem.as_mut_slice()[at..at + 4].copy_from_slice(&value.to_be_bytes());
    }
}

/// A drop event: `pack('<IIHBBI', flow, node, port, reason, queue_id, timestamp)`, and its row.
pub fn drop_event(flow: u32, node: u32, port: u16, reason: u8, queue: u8, ts: u32) -> Vec<u8> {
    let mut b = vec![0u8; 16];
    b[0..4].copy_from_slice(&flow.to_le_bytes());
    b[4..8].copy_from_slice(&node.to_le_bytes());
    b[8..10].copy_from_slice(&port.to_le_bytes());
    b[10] = reason;
    b[11] = queue;
    b[12..16].copy_from_slice(&ts.to_le_bytes());
    b
}

/// A queue event: `pack('<IHBxII', node, port, queue_id, occupancy, timestamp)`.
pub fn queue_event(node: u32, port: u16, queue: u8, occupancy: u32, ts: u32) -> Vec<u8> {
    let mut b = vec![0u8; 16];
    b[0..4].copy_from_slice(&node.to_le_bytes());
    b[4..6].copy_from_slice(&port.to_le_bytes());
    b[6] = queue;
    b[8..12].copy_from_slice(&occupancy.to_le_bytes());
    b[12..16].copy_from_slice(&ts.to_le_bytes());
    b
}

/// The rows one scenario expects, by table, each row a JSON object of the non-time columns.
#[derive(Default)]
pub struct Expected {
    pub rows: BTreeMap<&'static str, Vec<Value>>,
    /// Drops written per (node, reason): what the epochs' deltas must add up to.
    pub drops: BTreeMap<(u32, u8), u64>,
}

/// Writes the scenario every sink test runs, in steps that `wait` lets the exporter catch up with:
/// drops on lists 4 and 6 (their counters incremented alongside), queue events on list 5, raw entries
/// on list 7, a Key-Write key 42 and a Key-Increment key 43; then 100 queue events at once into the ring
/// of 32 that holds 10 unread-free: an overrun of exactly 68.
pub fn scenario(arena: &Arena, wait: &mut dyn FnMut(&str, u64)) -> Expected {
    let mut x = Expected::default();
    let drops_on = |list: u32, events: &[(u32, u32, u16, u8, u8, u32)], x: &mut Expected| {
        let first = x
            .rows
            .get("drop_events")
            .map_or(0, |r| r.iter().filter(|v| v["list"] == list).count() as u64);
        let bytes: Vec<Vec<u8>> = events
            .iter()
            .map(|&(f, n, p, r, q, t)| drop_event(f, n, p, r, q, t))
            .collect();
        append(arena, list, &bytes);
        for (i, &(flow, node, port, reason, queue_id, timestamp)) in events.iter().enumerate() {
            increment(arena, drop_counter_key(node, reason), 1);
            *x.drops.entry((node, reason)).or_default() += 1;
            x.rows.entry("drop_events").or_default().push(serde_json::json!({
                "list": list, "index": first + i as u64, "flow": flow, "node": node, "port": port,
                "reason": reason, "queue_id": queue_id, "timestamp": timestamp,
            }));
        }
    };
    for round in 0..4u32 {
        let events: Vec<_> = (0..5u32)
            .map(|i| {
                let k = round * 5 + i;
                (
                    0x1000 + k,
                    7 + k % 3,
                    100 + k as u16,
                    [71u8, 3][k as usize % 2],
                    (k % 4) as u8,
                    5000 + k,
                )
            })
            .collect();
        drops_on(4, &events, &mut x);
        std::thread::sleep(Duration::from_millis(20));
    }
    let events: Vec<_> = (0..7u32)
        .map(|k| (0x2000 + k, 8, 200, 9, 1, 6000 + k))
        .collect();
    drops_on(6, &events, &mut x);
    let queue = |k: u32| {
        (
            11 + k % 2,
            300 + k as u16,
            (k % 8) as u8,
            1000 * k,
            7000 + k,
        )
    };
    let q: Vec<Vec<u8>> = (0..10)
        .map(|k| {
            let (n, p, id, o, t) = queue(k);
            queue_event(n, p, id, o, t)
        })
        .collect();
    append(arena, 5, &q);
    let raw: Vec<Vec<u8>> = (0..3u8).map(|k| vec![k, 1, 2, 3, 4, 5, 6, 0xff]).collect();
    append(arena, 7, &raw);
    for (i, e) in raw.iter().enumerate() {
        x.rows
            .entry("append_entries")
            .or_default()
            .push(serde_json::json!({
                "list": 7, "index": i, "entry": hex::encode(e),
            }));
    }
    key_write(arena, 42, [0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0, 0, 0, 0, 1]);
    increment(arena, 43, 1234);
    wait("drop_events", 27);
    wait("queue_events", 10);
    // The overrun: 100 entries at once into a ring of 32 whose reader is at 10. Indices 10..78 are lost.
    let q: Vec<Vec<u8>> = (10..110)
        .map(|k| {
            let (n, p, id, o, t) = queue(k);
            queue_event(n, p, id, o, t)
        })
        .collect();
    append(arena, 5, &q);
    for k in (0..10).chain(78..110) {
        let (node, port, queue_id, occupancy, timestamp) = queue(k);
        x.rows
            .entry("queue_events")
            .or_default()
            .push(serde_json::json!({
                "list": 5, "index": k, "node": node, "port": port, "queue_id": queue_id,
                "occupancy": occupancy, "timestamp": timestamp,
            }));
    }
    x.rows.insert(
        "append_gaps",
        vec![serde_json::json!({"list": 5, "first": 10, "lost": 68})],
    );
    wait("queue_events", 42);
    // A second wave of drops after an epoch (tests run with 1 s epochs): a later epoch's delta counts it.
    std::thread::sleep(Duration::from_millis(1200));
    let events: Vec<_> = (0..4u32)
        .map(|k| (0x3000 + k, 7, 1, 3, 0, 8000 + k))
        .collect();
    drops_on(4, &events, &mut x);
    wait("drop_events", 31);
    x
}

/// Sorts rows by (list, index), or (list, first) for gaps.
pub fn sorted(mut rows: Vec<Value>) -> Vec<Value> {
    let key = |v: &Value| {
        (
            v["list"].as_u64().unwrap_or(0),
            v["index"].as_u64().or(v["first"].as_u64()).unwrap_or(0),
        )
    };
    rows.sort_by_key(key);
    rows
}

/// `rows` without the columns `drop`.
pub fn without(rows: &[Value], drop: &[&str]) -> Vec<Value> {
    rows.iter()
        .map(|r| {
            let mut r = r.clone();
            if let Some(o) = r.as_object_mut() {
                for d in drop {
                    o.remove(*d);
                }
            }
            r
        })
        .collect()
}

/// Sums the drop_counts rows' deltas per (node, reason), checking each `total` is the running sum.
pub fn drop_sums(rows: &[Value]) -> BTreeMap<(u32, u8), u64> {
    let mut rows = rows.to_vec();
    rows.sort_by_key(|r| r["epoch_ms"].as_u64().unwrap_or(0));
    let mut sums: BTreeMap<(u32, u8), u64> = BTreeMap::new();
    for r in rows {
        let k = (
            r["node"].as_u64().unwrap() as u32,
            r["reason"].as_u64().unwrap() as u8,
        );
        let s = sums.entry(k).or_default();
        *s += r["count"].as_u64().unwrap();
        assert_eq!(
            r["total"].as_u64(),
            Some(*s),
            "total is the running sum: {r}"
        );
    }
    sums
}

/// The venv's Python (`DTA_ORACLE_PYTHON`, else `.venv/bin/python` at the repository root) with
/// pyarrow and chdb; none (said loudly) when missing, unless `DTA_REQUIRE_ORACLES` is set.
pub fn oracle_python() -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let python = std::env::var_os("DTA_ORACLE_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join(".venv/bin/python"));
    let ok = python.exists()
        && Command::new(&python)
            .args(["-c", "import pyarrow, chdb"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var_os("DTA_REQUIRE_ORACLES").is_none(),
            "no Python with pyarrow and chdb at {} (run `make setup`)",
            python.display()
        );
        eprintln!(
            "SKIPPING the Parquet check: no Python with pyarrow and chdb at {} (run `make setup`)",
            python.display()
        );
        return None;
    }
    Some(python)
}

/// Runs tests/oracle/export_check.py over `dir` for `tables`.
pub fn read_back(python: &Path, dir: &Path, tables: &[&str]) -> Value {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new(python)
        .arg(root.join("tests/oracle/export_check.py"))
        .arg(dir)
        .arg(tables.join(","))
        .output()
        .expect("running export_check.py");
    assert!(
        out.status.success(),
        "export_check.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("export_check.py's JSON")
}

/// Waits until `done` or panics after `limit`, saying what it waited for.
pub fn wait_until(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < limit,
            "timed out after {limit:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A free loopback port (bound, then released for the server to take).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The throwaway server's configuration, readiness check and HTTP query: the e2e crate's one copy,
/// included by path (this crate cannot depend on dta-e2e, which builds on it).
#[path = "../../../e2e/src/clickhouse_server.rs"]
mod clickhouse_server;

/// Debian's clickhouse-server, or none (said loudly) unless `DTA_REQUIRE_ORACLES` is set.
pub fn clickhouse_binary() -> Option<PathBuf> {
    let p = PathBuf::from(clickhouse_server::CLICKHOUSE_SERVER);
    if p.exists() {
        return Some(p);
    }
    assert!(
        std::env::var_os("DTA_REQUIRE_ORACLES").is_none(),
        "no {} (run `make setup`)",
        p.display()
    );
    eprintln!(
        "SKIPPING the ClickHouse check: no {} (run `make setup`)",
        p.display()
    );
    None
}

/// A clickhouse-server of our own: its config, data and logs in a temp dir, HTTP on one loopback port
/// and nothing else; killed and removed when dropped.
pub struct ClickHouse {
    child: Child,
    pub port: u16,
    _dir: TempDir,
}

impl ClickHouse {
    /// Starts it on `port` and waits until it answers.
    pub fn start(binary: &Path, port: u16) -> Self {
        let dir = TempDir::new("clickhouse");
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        let args = clickhouse_server::configure(&dir.0, addr, "127.0.0.1").unwrap();
        let log = std::fs::File::create(clickhouse_server::log_path(&dir.0)).unwrap();
        let child = Command::new(binary)
            .args(&args)
            .current_dir(&dir.0)
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("starting clickhouse-server");
        let ch = ClickHouse {
            child,
            port,
            _dir: dir,
        };
        if let Err(e) = clickhouse_server::wait_ready(&ch._dir.0, || ch.query("SELECT 1")) {
            panic!("{e}");
        }
        ch
    }

    /// Runs `sql` over the HTTP interface; its answer, or none when the server does not answer 200.
    pub fn query(&self, sql: &str) -> Option<String> {
        clickhouse_server::query(std::net::SocketAddr::from(([127, 0, 0, 1], self.port)), sql).ok()
    }

    /// Runs `sql`, panicking with the server's answer when it is not 200.
    pub fn run(&self, sql: &str) -> String {
        clickhouse_server::query(std::net::SocketAddr::from(([127, 0, 0, 1], self.port)), sql)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// The rows of `sql` (JSONEachRow, 64-bit integers as numbers).
    pub fn rows(&self, sql: &str) -> Vec<Value> {
        let text = self.run(&format!("{sql} FORMAT JSONEachRow"));
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

impl Drop for ClickHouse {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
