//! The history end to end (issue 28, item 3): reporters -> translator -> collector -> exporter in network
//! namespaces, with a known workload: standard INT reports (drops and congested queues on two workers,
//! so two drop lists and two queue lists), two DTA Append streams, one of which overruns its ring, and
//! Sketch-Merge reports of 4 reporters merged by the translator into a count-min sketch, whose counters
//! come out of the exporter's last epoch exactly as the workload's model merges them.
//! After the collector stops (SIGTERM: the exporter drains, reads a last epoch and closes its files),
//! the Parquet files read back by pyarrow and chdb, and the rows a real `clickhouse-server` (started by
//! the test in the collector's namespace) received, equal the events sent, row for row; the drop counts
//! per (node, reason) summed over the epochs equal the drops sent; and the overrun is counted exactly, in
//! `dta_collector_export_overruns_total` and as a gap row.
//!
//! The exporter here reads the lists when it starts and when the collector stops, never between
//! (`poll_ms` longer than the run; the stop wakes it): what the small ring overwrote before it was read
//! is then known exactly, whatever the machine's speed.
//!
//! Needs root (namespaces), the venv's pyarrow and chdb and Debian's clickhouse-server (`make setup`);
//! skips without them unless DTA_REQUIRE_NETNS=1 / DTA_REQUIRE_ORACLES=1.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use dta_e2e::history::{clickhouse_or_skip, python_or_skip, read_parquet};
use dta_e2e::http::metric;
use dta_e2e::int_workload::{int_with_history, IntHistory, INT_DROP_LISTS, INT_QUEUE_LISTS};
use dta_e2e::system::{Export, Io, Options, Responder, System, CLICKHOUSE_DATABASE};
use dta_e2e::workload::{
    self, APPEND_LIST, APPEND_WRAP_ENTRIES, APPEND_WRAP_LIST, SKETCH_ID, SKETCH_ROWS,
};
use serde_json::{json, Value};

/// Entries of the DTA Append stream that stays within its ring.
const APPEND_N: u32 = 700;
/// Entries of the stream into the 1,024-entry ring [`APPEND_WRAP_LIST`]: it overruns by
/// `WRAP_N - 1024` before the exporter's next read.
const WRAP_N: u32 = 3_000;

/// Sketch-Merge epochs sent (the sketch holds the last one's merged counters), and the salt of their
/// values.
const SKETCH_EPOCHS: u32 = 2;
const SKETCH_SALT: u64 = 28;

const TABLES: [&str; 7] = [
    "drop_events",
    "queue_events",
    "append_entries",
    "append_gaps",
    "drop_counts",
    "sketch_counters",
    "sketch_summaries",
];

/// The rows every sink must hold, without their time column, sorted by (list, index).
struct Want {
    rows: BTreeMap<&'static str, Vec<Value>>,
}

fn want(h: &IntHistory, got_drops: &[Value], got_queues: &[Value]) -> Result<Want> {
    let mut rows = BTreeMap::new();
    // Which worker's list an event landed in is the workers' business: each list holds a subsequence
    // of the events in send order, indexed from 0, and together they hold every event once.
    let drops: Vec<Value> = h
        .drop_events
        .iter()
        .map(|e| {
            json!({"flow": e.flow, "node": e.node, "port": e.port, "reason": e.reason,
                   "queue_id": e.queue_id, "timestamp": e.timestamp})
        })
        .collect();
    let queues: Vec<Value> = h
        .queue_events
        .iter()
        .map(|e| {
            json!({"node": e.node, "port": e.port, "queue_id": e.queue_id,
                   "occupancy": e.occupancy, "timestamp": e.timestamp})
        })
        .collect();
    rows.insert(
        "drop_events",
        split_like(&drops, got_drops, &INT_DROP_LISTS, "drop events")?,
    );
    rows.insert(
        "queue_events",
        split_like(&queues, got_queues, &INT_QUEUE_LISTS, "queue events")?,
    );
    let oldest = u64::from(WRAP_N) - APPEND_WRAP_ENTRIES;
    let mut entries: Vec<Value> = (0..APPEND_N)
        .map(|i| json!({"list": APPEND_LIST, "index": i, "entry": format!("{i:08x}")}))
        .collect();
    entries.extend(
        (oldest..u64::from(WRAP_N))
            .map(|i| json!({"list": APPEND_WRAP_LIST, "index": i, "entry": format!("{i:08x}")})),
    );
    rows.insert("append_entries", entries);
    rows.insert(
        "append_gaps",
        vec![json!({"list": APPEND_WRAP_LIST, "first": 0, "lost": oldest})],
    );
    Ok(Want { rows })
}

/// The events `sent` (in send order, without list and index) as the lists `lists` must hold them,
/// given how `got` (rows with list and index) spread them over the lists: each list's rows, by index
/// from 0 without a hole, are a subsequence of `sent`, and all lists together are `sent` as a multiset.
/// Returns `sent` with list and index as `got` placed them, sorted by (list, index).
fn split_like(sent: &[Value], got: &[Value], lists: &[u32], what: &str) -> Result<Vec<Value>> {
    let mut per_list: BTreeMap<u64, Vec<Value>> = BTreeMap::new();
    for r in sorted(got.to_vec()) {
        let list = r["list"].as_u64().context("list")?;
        ensure!(
            lists.iter().any(|&l| u64::from(l) == list),
            "{what}: a row of list {list}, not one of {lists:?}: {r}"
        );
        per_list.entry(list).or_default().push(r);
    }
    let mut placed = Vec::new();
    let mut all = Vec::new();
    for (list, rows) in &per_list {
        let mut rest = sent.iter();
        for (i, r) in rows.iter().enumerate() {
            ensure!(
                r["index"].as_u64() == Some(i as u64),
                "{what}: list {list}'s rows skip from index {i}: {r}"
            );
            let bare = strip(r, &["list", "index"]);
            ensure!(
                rest.any(|s| *s == bare),
                "{what}: list {list} row {i} ({bare}) is not the next event sent in that list's order"
            );
            all.push(bare.to_string());
            let mut v = bare;
            v["list"] = json!(list);
            v["index"] = json!(i);
            placed.push(v);
        }
    }
    let mut want: Vec<String> = sent.iter().map(Value::to_string).collect();
    want.sort();
    all.sort();
    ensure!(
        all == want,
        "{what}: the lists hold {} events, {} were sent (or not the same ones)",
        all.len(),
        want.len()
    );
    Ok(sorted(placed))
}

/// `r` without the columns `drop`.
fn strip(r: &Value, drop: &[&str]) -> Value {
    let mut r = r.clone();
    if let Some(o) = r.as_object_mut() {
        for d in drop {
            o.remove(*d);
        }
    }
    // Keys in a fixed order (serde_json's map is sorted), so equal rows print equal.
    r
}

fn sorted(mut rows: Vec<Value>) -> Vec<Value> {
    rows.sort_by_key(|v| {
        (
            v["list"].as_u64().unwrap_or(0),
            v["index"].as_u64().or(v["first"].as_u64()).unwrap_or(0),
        )
    });
    rows
}

/// The sketch rows the exporter's one epoch after the workload must hold: every counter of the merged
/// sketch that is not 0 (it was 0 before), in the region's order, and the sketch's summary.
fn sketch_want() -> (Vec<Value>, Value) {
    let merged = workload::sketch_merged(SKETCH_EPOCHS - 1, SKETCH_SALT);
    let rows = SKETCH_ROWS as usize;
    let counters: Vec<Value> = merged
        .iter()
        .enumerate()
        .filter(|(_, &v)| v != 0)
        .map(|(i, &v)| {
            json!({"sketch": SKETCH_ID, "row": i % rows, "column": i / rows, "value": v,
                   "previous": 0})
        })
        .collect();
    let total: u64 = merged.iter().step_by(rows).map(|&v| u64::from(v)).sum();
    let n = counters.len();
    let summary = json!({"sketch": SKETCH_ID, "merge": "sum", "changed": n, "nonzero": n,
                         "total": total, "cardinality": 0});
    (counters, summary)
}

/// `rows` (with `epoch_ms`) checked to come from one epoch, without it, in the region's order.
fn one_epoch(rows: &[Value], what: &str) -> Result<(u64, Vec<Value>)> {
    let epochs: std::collections::BTreeSet<u64> =
        rows.iter().filter_map(|r| r["epoch_ms"].as_u64()).collect();
    ensure!(
        epochs.len() == 1,
        "{what}: rows of {} epochs, expected the one after the workload: {epochs:?}",
        epochs.len()
    );
    Ok((
        epochs.into_iter().next().unwrap_or(0),
        sketch_sorted(rows.iter().map(|r| strip(r, &["epoch_ms"])).collect()),
    ))
}

fn sketch_sorted(mut rows: Vec<Value>) -> Vec<Value> {
    rows.sort_by_key(|r| (r["column"].as_u64(), r["row"].as_u64()));
    rows
}

/// Checks the sketch tables' rows (with their `epoch_ms`) against the model.
fn check_sketch(counters: &[Value], summaries: &[Value], from: &str) -> Result<()> {
    let (want_counters, want_summary) = sketch_want();
    let (t, got) = one_epoch(counters, from)?;
    ensure!(
        got == want_counters,
        "{from}: sketch_counters has {} rows, the model {} (or other values)",
        got.len(),
        want_counters.len()
    );
    let (ts, got) = one_epoch(summaries, from)?;
    ensure!(
        t == ts,
        "{from}: the summary's epoch {ts} is not the counters' {t}"
    );
    ensure!(
        got == [want_summary.clone()],
        "{from}: sketch_summaries {got:?}, the model {want_summary}"
    );
    Ok(())
}

/// Sums the drop_counts rows' deltas per (node, reason), checking each `total` is the running sum.
fn drop_sums(rows: &[Value]) -> Result<BTreeMap<(u32, u8), u64>> {
    let mut rows = rows.to_vec();
    rows.sort_by_key(|r| r["epoch_ms"].as_u64().unwrap_or(0));
    let mut sums: BTreeMap<(u32, u8), u64> = BTreeMap::new();
    for r in rows {
        let k = (
            r["node"].as_u64().context("node")? as u32,
            r["reason"].as_u64().context("reason")? as u8,
        );
        let s = sums.entry(k).or_default();
        *s += r["count"].as_u64().context("count")?;
        ensure!(
            r["total"].as_u64() == Some(*s),
            "drop_counts: total is not the running sum: {r}"
        );
    }
    Ok(sums)
}

#[test]
fn int_and_append_history_lands_exactly_in_parquet_and_clickhouse() -> Result<()> {
    let Some(python) = python_or_skip()? else {
        return Ok(());
    };
    if clickhouse_or_skip()?.is_none() {
        return Ok(());
    }
    let opts = Options {
        io: Io::AfPacket,
        faults: None,
        limit: Duration::from_secs(400),
        workers: 2,
        collector_io: Io::AfPacket,
        responder: Responder::Soft,
        translators: 1,
        int: true,
        // Read at the start and at the stop only: one hour is longer than the run.
        export: Some(Export {
            poll_ms: 3_600_000,
            epoch_secs: 1,
            clickhouse: true,
        }),
    };
    let Some(mut sys) = System::start("h", opts)? else {
        return Ok(());
    };
    let (w, _, history) = int_with_history(1_000, 300, 1_500, 11)?;
    eprintln!(
        "INT: {} reports, {} drop events, {} queue events",
        w.reports.len(),
        history.drop_events.len(),
        history.queue_events.len()
    );
    sys.run_int(&w)?;
    sys.run(&workload::append(APPEND_N)?)?;
    sys.run(&workload::append_wrapping(WRAP_N)?)?;
    // Checks the collector's count-min answers against the model too.
    sys.run(&workload::sketch(SKETCH_EPOCHS, 200, SKETCH_SALT)?)?;
    let m = sys.collector_metrics()?;
    ensure!(
        metric(
            &m,
            "dta_collector_export_overruns_total",
            &format!("list=\"{APPEND_WRAP_LIST}\"")
        ) == 0,
        "the exporter read the lists between its start and the stop:\n{m}"
    );
    let summary = sys.stop_collector()?;
    eprintln!("collector's summary at its stop:\n{summary}");
    // Its lines are the non-zero samples of /metrics, indented.
    let counters: String = summary
        .lines()
        .map(|l| l.trim_start().to_string() + "\n")
        .collect();
    let lost = u64::from(WRAP_N) - APPEND_WRAP_ENTRIES;
    for sink in ["parquet", "clickhouse"] {
        for list in [APPEND_LIST, APPEND_WRAP_LIST]
            .iter()
            .chain(&INT_DROP_LISTS)
            .chain(&INT_QUEUE_LISTS)
        {
            let want = if *list == APPEND_WRAP_LIST { lost } else { 0 };
            let labels = format!("list=\"{list}\",sink=\"{sink}\"");
            ensure!(
                metric(&counters, "dta_collector_export_overruns_total", &labels) == want,
                "overruns {{{labels}}}: expected {want}; the summary:\n{summary}"
            );
        }
        let labels = format!("sink=\"{sink}\"");
        ensure!(
            metric(
                &counters,
                "dta_collector_export_dropped_rows_total",
                &labels
            ) == 0,
            "rows dropped by {sink}:\n{summary}"
        );
    }

    // Parquet, through pyarrow and chdb.
    let got = read_parquet(&python, &sys.history_dir(), &TABLES)?;
    let arrow = |t: &str| -> Vec<Value> {
        let rows = got["pyarrow"][t].as_array().cloned().unwrap_or_default();
        rows.iter()
            .map(|r| strip(r, &["exported_ms", "epoch_ms"]))
            .collect()
    };
    let x = want(&history, &arrow("drop_events"), &arrow("queue_events"))?;
    for (t, rows) in &x.rows {
        ensure!(
            sorted(arrow(t)) == *rows,
            "{t} via pyarrow: {} rows, {} expected",
            arrow(t).len(),
            rows.len()
        );
        let chdb = got["chdb"][t].as_array().cloned().unwrap_or_default();
        ensure!(
            sorted(chdb.clone()) == *rows,
            "{t} via chdb: {} rows, {} expected",
            chdb.len(),
            rows.len()
        );
    }
    let counts = got["pyarrow"]["drop_counts"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    ensure!(
        drop_sums(&counts)? == history.drops,
        "Parquet drop_counts per (node, reason) {:?}, sent {:?}",
        drop_sums(&counts)?,
        history.drops
    );
    let table = |t: &str| got["pyarrow"][t].as_array().cloned().unwrap_or_default();
    check_sketch(
        &table("sketch_counters"),
        &table("sketch_summaries"),
        "Parquet via pyarrow",
    )?;
    let (want_counters, want_summary) = sketch_want();
    let chdb = |t: &str| got["chdb"][t].as_array().cloned().unwrap_or_default();
    ensure!(
        sketch_sorted(chdb("sketch_counters")) == want_counters,
        "sketch_counters via chdb: {} rows, the model {}",
        chdb("sketch_counters").len(),
        want_counters.len()
    );
    ensure!(
        chdb("sketch_summaries") == [want_summary],
        "sketch_summaries via chdb: {:?}",
        chdb("sketch_summaries")
    );
    let mut per_node = BTreeMap::<u32, u64>::new();
    for ((node, _), n) in &history.drops {
        *per_node.entry(*node).or_default() += n;
    }
    let per_node: Vec<Value> = per_node
        .iter()
        .map(|(n, d)| json!({"node": n, "drops": d}))
        .collect();
    ensure!(
        got["chdb_drops_per_node"] == json!(per_node),
        "chdb's drops per node: {}, sent {per_node:?}",
        got["chdb_drops_per_node"]
    );

    // The same rows in the ClickHouse server.
    let ch = sys.clickhouse.as_ref().context("no clickhouse")?;
    for (t, rows) in &x.rows {
        let order = if *t == "append_gaps" {
            "list, first"
        } else {
            "list, index"
        };
        let got = ch.rows(&format!(
            "SELECT * FROM {CLICKHOUSE_DATABASE}.{t} ORDER BY {order}"
        ))?;
        let got: Vec<Value> = got.iter().map(|r| strip(r, &["exported_ms"])).collect();
        ensure!(
            got == *rows,
            "{t} in clickhouse: {} rows, {} expected",
            got.len(),
            rows.len()
        );
    }
    let counts = ch.rows(&format!("SELECT * FROM {CLICKHOUSE_DATABASE}.drop_counts"))?;
    ensure!(
        drop_sums(&counts)? == history.drops,
        "ClickHouse drop_counts per (node, reason) {:?}, sent {:?}",
        drop_sums(&counts)?,
        history.drops
    );
    check_sketch(
        &ch.rows(&format!(
            "SELECT * FROM {CLICKHOUSE_DATABASE}.sketch_counters FINAL"
        ))?,
        &ch.rows(&format!(
            "SELECT * FROM {CLICKHOUSE_DATABASE}.sketch_summaries FINAL"
        ))?,
        "ClickHouse",
    )?;
    // An operator's question to the server: drops per switch.
    let per_switch = ch.rows(&format!(
        "SELECT node, count() AS drops FROM {CLICKHOUSE_DATABASE}.drop_events GROUP BY node ORDER BY node"
    ))?;
    ensure!(
        per_switch == per_node,
        "clickhouse's drops per switch {per_switch:?}, sent {per_node:?}"
    );
    sys.quiet = true;
    Ok(())
}
