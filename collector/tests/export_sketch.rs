//! The sketches' history (issue 28): known counters written into a sum-merged (count-min) and a
//! max-merged (HyperLogLog) sketch, changed between two epochs, come back from the Parquet files (read by
//! pyarrow and chdb) and from a real `clickhouse-server` as exactly the counters that changed in each
//! epoch, with the values they replaced, and one summary row per changed sketch.
//!
//! Skips (loudly) without the venv's pyarrow and chdb or Debian's clickhouse-server, unless
//! `DTA_REQUIRE_ORACLES` is set (as `make test` does).

#![cfg(feature = "export")]

mod export_support;

use std::collections::BTreeMap;
use std::time::Duration;

use dta_collector::config::Config;
use dta_collector::export::Exporter;
use dta_collector::metrics::ExportMetrics;
use export_support::*;
use serde_json::{json, Value};

/// Sketch 1: count-min, 2 rows × 8 columns. Sketch 2: HyperLogLog, 1 row × 16 registers.
const SKETCHES: &str = r#"
[[region]]
kind = "sketch"
id = 1
merge = "sum"
rows = 2
columns = 8

[[region]]
kind = "sketch"
id = 2
merge = "max"
rows = 1
columns = 16
"#;

fn counter(sketch: u32, row: u32, column: u32, value: u32, previous: u32) -> Value {
    json!({"sketch": sketch, "row": row, "column": column, "value": value, "previous": previous})
}

fn summary(sketch: u32, merge: &str, changed: u64, nonzero: u64, total: u64, card: u64) -> Value {
    json!({"sketch": sketch, "merge": merge, "changed": changed, "nonzero": nonzero,
           "total": total, "cardinality": card})
}

/// The epoch's rows, in memory order: sketch, then column, then row.
fn sort(mut rows: Vec<Value>) -> Vec<Value> {
    // Every field in the key: a cell changed in two epochs gives two rows that differ only in their
    // values (a sketch's summaries likewise), and a reader (chdb) returns rows in no fixed order.
    rows.sort_by_key(|r| {
        (
            r["sketch"].as_u64(),
            r["column"].as_u64(),
            r["row"].as_u64(),
            r["previous"].as_u64(),
            r["value"].as_u64(),
            // A summary's.
            r["changed"].as_u64(),
            r["nonzero"].as_u64(),
            r["total"].as_u64(),
            r["cardinality"].as_u64(),
        )
    });
    rows
}

/// `rows` grouped by `epoch_ms` in time order, each group without its time and sorted.
fn by_epoch(rows: &[Value]) -> Vec<Vec<Value>> {
    let mut epochs: BTreeMap<i64, Vec<Value>> = BTreeMap::new();
    for r in rows {
        let ms = r["epoch_ms"].as_i64().expect("epoch_ms");
        epochs
            .entry(ms)
            .or_default()
            .extend(without(std::slice::from_ref(r), &["epoch_ms"]));
    }
    epochs.into_values().map(sort).collect()
}

/// The epochs' times of `rows`.
fn epochs_of(rows: &[Value]) -> Vec<i64> {
    let mut t: Vec<i64> = rows.iter().filter_map(|r| r["epoch_ms"].as_i64()).collect();
    t.sort_unstable();
    t.dedup();
    t
}

#[test]
fn changed_sketch_counters_per_epoch_land_exactly_in_parquet_and_clickhouse() {
    let (Some(python), Some(binary)) = (oracle_python(), clickhouse_binary()) else {
        return;
    };
    let dir = TempDir::new("sketch");
    let out = dir.0.join("out");
    let port = free_port();
    let server = ClickHouse::start(&binary, port);
    let config = Config::parse(&format!(
        "{SKETCHES}\n[export]\nepoch_secs = 1\npoll_ms = 5\n\
         [export.parquet]\ndir = \"{}\"\nrotate_secs = 1\n\
         [export.clickhouse]\nurl = \"http://127.0.0.1:{port}\"\ndatabase = \"dta_sketch\"\nflush_ms = 100\n",
        out.display()
    ))
    .unwrap();
    let arena = arena(&config);
    let metrics = ExportMetrics::default();
    let mut exporter = Exporter::start(arena.clone(), &config, metrics.clone()).unwrap();
    // Both sinks have written `n` counter rows and `s` summaries: every epoch that read the last
    // change is in, so the next change falls in a later epoch.
    let wait = |n: u64, s: u64| {
        for sink in ["parquet", "clickhouse"] {
            wait_until(Duration::from_secs(30), sink, || {
                metrics.rows_of(sink, "sketch_counters") >= n
                    && metrics.rows_of(sink, "sketch_summaries") >= s
            });
        }
    };

    // Epoch A, in one write: count-min counters (column, row, value); four HyperLogLog registers at
    // rank 1.
    let mut a: Vec<_> = [(0, 0, 5), (0, 1, 7), (3, 0, 100), (3, 1, 1), (7, 1, 42)]
        .map(|(c, r, v)| (1, 2, c, r, v))
        .to_vec();
    a.extend([0, 5, 9, 15].map(|c| (2, 1, c, 0, 1)));
    sketch_set(&arena, &a);
    wait(9, 2);
    // Epoch B: (0, 0) rewritten with its value (no row), (0, 1) down, (3, 0) to zero, (5, 0) new;
    // every register at rank 3.
    let mut b: Vec<_> = [(0, 0, 5), (0, 1, 3), (3, 0, 0), (5, 0, 9)]
        .map(|(c, r, v)| (1, 2, c, r, v))
        .to_vec();
    b.extend((0..16).map(|c| (2, 1, c, 0, 3)));
    sketch_set(&arena, &b);
    wait(9 + 3 + 16, 4);
    // A few idle epochs: they add nothing.
    std::thread::sleep(Duration::from_millis(2500));
    exporter.stop();
    for sink in ["parquet", "clickhouse"] {
        assert_eq!(metrics.rows_of(sink, "sketch_counters"), 28, "{sink}");
        assert_eq!(metrics.rows_of(sink, "sketch_summaries"), 4, "{sink}");
        assert_eq!(metrics.dropped_of(sink), 0, "{sink}");
    }

    let mut epoch_a = vec![
        counter(1, 0, 0, 5, 0),
        counter(1, 1, 0, 7, 0),
        counter(1, 0, 3, 100, 0),
        counter(1, 1, 3, 1, 0),
        counter(1, 1, 7, 42, 0),
    ];
    epoch_a.extend([0, 5, 9, 15].map(|c| counter(2, 0, c, 1, 0)));
    let mut epoch_b = vec![
        counter(1, 1, 0, 3, 7),
        counter(1, 0, 3, 0, 100),
        counter(1, 0, 5, 9, 0),
    ];
    epoch_b.extend((0..16).map(|c| counter(2, 0, c, 3, u32::from([0, 5, 9, 15].contains(&c)))));
    let counters = vec![sort(epoch_a), sort(epoch_b)];
    // Row 0's totals: 5 + 100, then 5 + 0 + 9. HyperLogLog over 16 registers (alpha 0.673): four at
    // rank 1 is linear counting, 16 ln(16/12) = 4.60; all at rank 3 is 0.673 · 16² / (16 · 2^-3) =
    // 86.14.
    let summaries = vec![
        vec![
            summary(1, "sum", 5, 5, 105, 0),
            summary(2, "max", 4, 4, 4, 5),
        ],
        vec![
            summary(1, "sum", 3, 5, 14, 0),
            summary(2, "max", 16, 16, 48, 86),
        ],
    ];

    // Parquet, through pyarrow (with the times) and chdb.
    let got = read_back(&python, &out, &["sketch_counters", "sketch_summaries"]);
    let arrow = |t: &str| got["pyarrow"][t].as_array().cloned().unwrap_or_default();
    assert_eq!(by_epoch(&arrow("sketch_counters")), counters, "pyarrow");
    assert_eq!(by_epoch(&arrow("sketch_summaries")), summaries, "pyarrow");
    assert_eq!(
        epochs_of(&arrow("sketch_counters")),
        epochs_of(&arrow("sketch_summaries")),
        "a summary per epoch that changed a counter"
    );
    let chdb = |t: &str| sort(got["chdb"][t].as_array().cloned().unwrap_or_default());
    assert_eq!(chdb("sketch_counters"), sort(counters.concat()), "chdb");
    assert_eq!(chdb("sketch_summaries"), sort(summaries.concat()), "chdb");
    assert_eq!(
        got["schema"]["sketch_counters"],
        json!([
            "epoch_ms:timestamp[ms, tz=UTC]",
            "sketch:uint32",
            "row:uint8",
            "column:uint16",
            "value:uint32",
            "previous:uint32"
        ])
    );
    for f in got["files"]["sketch_counters"].as_array().unwrap() {
        assert!(
            f.as_str().unwrap().starts_with("sketch_counters/hour="),
            "{f}"
        );
    }

    // The same in the ClickHouse server.
    let ch = |t: &str| server.rows(&format!("SELECT * FROM dta_sketch.{t} FINAL"));
    assert_eq!(by_epoch(&ch("sketch_counters")), counters, "clickhouse");
    assert_eq!(by_epoch(&ch("sketch_summaries")), summaries, "clickhouse");
    // An operator's question: the count-min sketch as it stood at the end, from the history alone.
    let last = server.rows(
        "SELECT row, column, argMax(value, epoch_ms) AS value FROM dta_sketch.sketch_counters FINAL \
         WHERE sketch = 1 GROUP BY row, column HAVING value > 0 ORDER BY column, row",
    );
    assert_eq!(
        last,
        [(0, 0, 5), (1, 0, 3), (1, 3, 1), (0, 5, 9), (1, 7, 42)]
            .map(|(row, column, value)| json!({"row": row, "column": column, "value": value}))
    );
}
