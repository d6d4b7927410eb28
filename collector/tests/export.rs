//! The history exporter against the real engines (issue 28): entries written into a collector's
//! regions come back row for row from the Parquet files (read by pyarrow and by chdb, ClickHouse
//! in-process) and from a real `clickhouse-server`; the overrun forced by writing more than a ring holds
//! between two reads is counted exactly; the epochs' drop deltas add up to the drops written; an insert
//! retried after its answer was lost, though it had landed, is counted once.
//!
//! `make test` sets DTA_REQUIRE_ORACLES=1: without the venv's pyarrow and chdb or Debian's
//! clickhouse-server (`make setup`) these tests fail there, and skip with a message under a bare
//! `cargo test`.

#![cfg(feature = "export")]

mod export_support;

use std::time::{Duration, Instant};

use dta_collector::config::Config;
use dta_collector::export::clickhouse::ClickHouseSink;
use dta_collector::export::pipeline::{Pipeline, Policy};
use dta_collector::export::sink::{Sink, WriteError};
use dta_collector::export::table::{Batch, Table, Value as TableValue};
use dta_collector::export::time::now_ms;
use dta_collector::export::Exporter;
use dta_collector::metrics::ExportMetrics;
use export_support::*;
use serde_json::{json, Value};

const LIST_TABLES: [&str; 4] = [
    "drop_events",
    "queue_events",
    "append_entries",
    "append_gaps",
];
const EPOCH_TABLES: [&str; 3] = ["drop_counts", "keywrite_values", "keyincrement_values"];

fn config(dir: &TempDir, sink: &str) -> Config {
    let keys = dir.0.join("keys.txt");
    std::fs::write(
        &keys,
        "# the operator's keys\nkeywrite 42\nkeyincrement 43\n",
    )
    .unwrap();
    let text = format!(
        "{REGIONS}\n[export]\nepoch_secs = 1\npoll_ms = 5\nkeys = \"{}\"\n{sink}",
        keys.display()
    );
    Config::parse(&text).unwrap()
}

/// Checks the epoch tables' rows: drop deltas add up to the drops written, key answers are right.
fn check_epochs(x: &Expected, rows: &dyn Fn(&str) -> Vec<Value>, from: &str) {
    let counts = rows("drop_counts");
    assert_eq!(
        drop_sums(&counts),
        x.drops,
        "{from}: drop deltas per (node, reason)"
    );
    let epochs: std::collections::BTreeSet<u64> = counts
        .iter()
        .filter_map(|r| r["epoch_ms"].as_u64())
        .collect();
    assert!(
        epochs.len() >= 2,
        "{from}: drops counted in one epoch only: {counts:?}"
    );
    // Epochs before the scenario wrote the keys answer "empty" and 0; every later one the values.
    let writes = rows("keywrite_values");
    let found: Vec<Value> = without(&writes, &["epoch_ms"])
        .into_iter()
        .filter(|r| r["outcome"] != "empty")
        .collect();
    assert!(!found.is_empty(), "{from}: key 42 never found: {writes:?}");
    for r in found {
        assert_eq!(
            r,
            json!({"key": 42, "outcome": "found", "value": "deadbeef0000000000000001", "votes": 2}),
            "{from}"
        );
    }
    let incs = rows("keyincrement_values");
    assert!(
        incs.iter()
            .all(|r| r["key"] == 43 && (r["estimate"] == 1234 || r["estimate"] == 0)),
        "{from}: {incs:?}"
    );
    let delta: u64 = incs.iter().filter_map(|r| r["delta"].as_u64()).sum();
    assert_eq!(delta, 1234, "{from}: key 43's deltas");
}

#[test]
fn parquet_files_read_back_by_pyarrow_and_chdb_equal_the_entries_written() {
    let Some(python) = oracle_python() else {
        return;
    };
    let dir = TempDir::new("parquet");
    let out = dir.0.join("out");
    let config = config(
        &dir,
        &format!(
            "[export.parquet]\ndir = \"{}\"\nrotate_secs = 1\n",
            out.display()
        ),
    );
    let arena = arena(&config);
    let metrics = ExportMetrics::default();
    let started = now_ms();
    let mut exporter = Exporter::start(arena.clone(), &config, metrics.clone()).unwrap();
    let m = metrics.clone();
    let x = scenario(&arena, &mut |table, n| {
        wait_until(Duration::from_secs(20), table, || {
            m.rows_of("parquet", table) >= n
        })
    });
    assert_eq!(
        metrics.overruns_of(5, "parquet"),
        68,
        "the forced overrun, exactly"
    );
    assert_eq!(metrics.overruns_of(4, "parquet"), 0);
    exporter.stop();
    let stopped = now_ms();
    assert_eq!(metrics.dropped_of("parquet"), 0);

    let tables: Vec<&str> = LIST_TABLES.iter().chain(&EPOCH_TABLES).copied().collect();
    let got = read_back(&python, &out, &tables);
    for t in LIST_TABLES {
        let want = sorted(x.rows[t].clone());
        let arrow = got["pyarrow"][t].as_array().cloned().unwrap_or_default();
        for r in &arrow {
            let ms = r["exported_ms"].as_u64().unwrap();
            assert!(
                (started..=stopped).contains(&ms),
                "{t}: exported_ms {ms} outside the run"
            );
        }
        assert_eq!(
            sorted(without(&arrow, &["exported_ms"])),
            want,
            "{t} via pyarrow"
        );
        let chdb = got["chdb"][t].as_array().cloned().unwrap_or_default();
        assert_eq!(sorted(chdb), want, "{t} via chdb");
    }
    let rows = |t: &str| got["pyarrow"][t].as_array().cloned().unwrap_or_default();
    let epoch_rows = |t: &str| {
        rows(t)
            .into_iter()
            .map(|mut r| {
                r["epoch_ms"] = r["epoch_ms"].as_i64().map_or(Value::Null, |v| json!(v));
                r
            })
            .collect()
    };
    check_epochs(&x, &epoch_rows, "parquet");
    // SQL over the history: drops per node, as an operator would ask.
    let mut per_node = std::collections::BTreeMap::<u32, u64>::new();
    for ((node, _), n) in &x.drops {
        *per_node.entry(*node).or_default() += n;
    }
    let want: Vec<Value> = per_node
        .iter()
        .map(|(n, d)| json!({"node": n, "drops": d}))
        .collect();
    assert_eq!(got["chdb_drops_per_node"], json!(want));
    // The documented schema and partitions.
    assert_eq!(
        got["schema"]["drop_events"],
        json!([
            "exported_ms:timestamp[ms, tz=UTC]",
            "list:uint32",
            "index:uint64",
            "flow:uint32",
            "node:uint32",
            "port:uint16",
            "reason:uint8",
            "queue_id:uint8",
            "timestamp:uint32"
        ])
    );
    for f in got["files"]["drop_events"].as_array().unwrap() {
        let parts: Vec<&str> = f.as_str().unwrap().split('/').collect();
        assert!(
            parts.len() == 4
                && (parts[1] == "list=4" || parts[1] == "list=6")
                && parts[2].starts_with("hour=20")
                && parts[2].len() == "hour=2026-11-26T22".len()
                && parts[3].starts_with("part-")
                && parts[3].ends_with(".parquet"),
            "{f}"
        );
    }
    for f in got["files"]["drop_counts"].as_array().unwrap() {
        assert!(f.as_str().unwrap().starts_with("drop_counts/hour="), "{f}");
    }
}

#[test]
fn the_same_rows_land_in_a_clickhouse_server_that_comes_up_after_the_exporter() {
    let Some(binary) = clickhouse_binary() else {
        return;
    };
    let dir = TempDir::new("ch-export");
    let port = free_port();
    let config = config(
        &dir,
        &format!(
            "[export.clickhouse]\nurl = \"http://127.0.0.1:{port}\"\ndatabase = \"dta_test\"\nflush_ms = 100\n"
        ),
    );
    let arena = arena(&config);
    let metrics = ExportMetrics::default();
    let mut exporter = Exporter::start(arena.clone(), &config, metrics.clone()).unwrap();
    // Nothing listens yet: the first epochs' rows wait in the buffer and are retried.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(metrics.rows_of("clickhouse", "keyincrement_values"), 0);
    let before_server = now_ms();
    let server = ClickHouse::start(&binary, port);
    let m = metrics.clone();
    let t0 = Instant::now();
    let x = scenario(&arena, &mut |table, n| {
        wait_until(Duration::from_secs(60), table, || {
            m.rows_of("clickhouse", table) >= n
        })
    });
    assert_eq!(
        metrics.overruns_of(5, "clickhouse"),
        68,
        "the forced overrun, exactly"
    );
    exporter.stop();
    eprintln!("rows landed {:?} after the server came up", t0.elapsed());
    assert_eq!(metrics.dropped_of("clickhouse"), 0);

    for t in LIST_TABLES {
        let order = if t == "append_gaps" {
            "list, first"
        } else {
            "list, index"
        };
        let got = server.rows(&format!("SELECT * FROM dta_test.{t} ORDER BY {order}"));
        assert_eq!(
            sorted(without(&got, &["exported_ms"])),
            sorted(x.rows[t].clone()),
            "{t} in clickhouse"
        );
    }
    let rows = |t: &str| server.rows(&format!("SELECT * FROM dta_test.{t}"));
    check_epochs(&x, &rows, "clickhouse");
    // The epoch read while the server was down landed too.
    let first = rows("keyincrement_values")
        .iter()
        .filter_map(|r| r["epoch_ms"].as_u64())
        .min()
        .unwrap();
    assert!(first < before_server, "the buffered epoch rows were lost");
}

/// The ClickHouse sink, except that its first `lose` answers are lost after the insert landed (a
/// timeout after the server applied it): the pipeline sees a failure and retries.
struct LostAnswers {
    inner: ClickHouseSink,
    lose: usize,
}

impl Sink for LostAnswers {
    fn name(&self) -> &'static str {
        "clickhouse"
    }
    fn write(&mut self, table: Table, batches: &[Batch]) -> Result<(), WriteError> {
        self.inner.write(table, batches)?;
        if self.lose == 0 {
            return Ok(());
        }
        self.lose -= 1;
        Err(dta_collector::error::Error::Export {
            sink: "clickhouse",
            message: "timed out (after the server applied the insert)".into(),
        }
        .into())
    }
    fn tick(&mut self, now_ms: u64) -> dta_collector::error::Result<()> {
        self.inner.tick(now_ms)
    }
    fn close(&mut self) -> dta_collector::error::Result<()> {
        self.inner.close()
    }
}

/// `n` rows of list 3's raw entries from index `first`, exported at `ms`.
fn entries(first: u64, n: u64, ms: u64) -> Batch {
    let mut b = Batch::new(Table::AppendEntries, Some(3), ms, n as usize);
    for i in first..first + n {
        b.push(vec![
            TableValue::U64(ms),
            TableValue::U32(3),
            TableValue::U64(i),
            TableValue::Str(format!("{i:08x}")),
        ])
        .unwrap();
    }
    b
}

#[test]
fn a_retried_insert_that_had_landed_is_counted_once_in_clickhouse() {
    let Some(binary) = clickhouse_binary() else {
        return;
    };
    let port = free_port();
    let server = ClickHouse::start(&binary, port);
    let config = Config::parse(&format!(
        "[export]\n[export.clickhouse]\nurl = \"http://127.0.0.1:{port}\"\ndatabase = \"dta_retry\"\n"
    ))
    .unwrap();
    let section = config.export.unwrap().clickhouse.unwrap();
    let sink = LostAnswers {
        inner: ClickHouseSink::new(&section).unwrap(),
        lose: 2,
    };
    let metrics = ExportMetrics::default();
    let policy = Policy {
        batch_rows: 1,
        flush: Duration::ZERO,
        buffer_rows: 10_000,
    };
    let mut p = Pipeline::new(Box::new(sink), policy, metrics.clone());
    let t0 = Instant::now();
    // 100 rows land, but the answer is lost: the pipeline keeps them and retries.
    p.push(entries(0, 100, 1_000), t0);
    p.flush(t0, true);
    assert_eq!(p.buffered(), 100);
    // The retry carries them again with 50 that came meanwhile; it lands, and its answer is lost too.
    p.push(entries(100, 50, 2_000), t0);
    p.flush(t0, true);
    assert_eq!(p.buffered(), 150);
    // The third try is answered. The server received 100 + 150 + 150 rows.
    p.flush(t0, true);
    assert_eq!(p.buffered(), 0);
    assert_eq!(metrics.rows_of("clickhouse", "append_entries"), 150);
    // A collector restarted with fresh rings exports indices 0.. again, later: new rows, kept.
    p.push(entries(0, 10, 3_000), t0);
    p.flush(t0, true);
    assert_eq!(p.buffered(), 0);

    let count = |sql: &str| server.run(sql).trim().parse::<u64>().unwrap();
    let raw = count("SELECT count() FROM dta_retry.append_entries");
    eprintln!("rows stored before a merge: {raw} (410 received)");
    assert!((160..=410).contains(&raw), "{raw}");
    assert_eq!(
        count("SELECT count() FROM dta_retry.append_entries FINAL"),
        160
    );
    assert_eq!(
        count("SELECT uniqExact(index, exported_ms) FROM dta_retry.append_entries FINAL"),
        160
    );
    // Once merged, plain reads are exact too.
    server.run("OPTIMIZE TABLE dta_retry.append_entries FINAL");
    assert_eq!(count("SELECT count() FROM dta_retry.append_entries"), 160);
    let rows = server.rows(
        "SELECT index, entry FROM dta_retry.append_entries WHERE exported_ms = 3000 ORDER BY index",
    );
    assert_eq!(
        rows,
        (0..10u64)
            .map(|i| json!({"index": i, "entry": format!("{i:08x}")}))
            .collect::<Vec<_>>()
    );
}
