//! The five workloads, each with a model of exactly what the collector's memory must answer afterwards.
//! The models replay the writes in send order with the collector's own layout functions (one worker, one
//! QP per collector, and an in-order responder make the memory a deterministic function of the reports),
//! so a check is "every query answers what the model says", plus "the model finds every key" so a layout
//! that loses keys to collisions fails loudly instead of weakening the test.
//!
//! (Over 500 lines: one model per workload, each beside the reports it checks.)

use std::collections::HashMap;
use std::net::SocketAddr;

use anyhow::{bail, ensure, Context, Result};
use dta_protocol::dta::{
    AppendRepr, Body, HeaderForm, KeyIncrementRepr, KeyWriteRepr, PostcardRepr, ReportFormat,
    ReportRepr, SketchOp, SketchRepr,
};
use dta_protocol::hash::{key_checksum, placement_hash};
use dta_protocol::layout::{KeyIncrementGeometry, KeyWriteGeometry, PostcardGeometry};

use crate::http::get_json;

/// Key-Write region: 2^20 slots of 8 bytes, reports with N = 4.
pub const KW_SLOTS: u64 = 1 << 20;
/// Key-Write redundancy used by the reports.
pub const KW_N: u8 = 4;
/// Key-Increment region: 2^18 counters, N = 2.
pub const KI_SLOTS: u64 = 1 << 18;
/// Key-Increment redundancy.
pub const KI_N: u8 = 2;
/// Postcarding: 2^18 chunks, 5 hops, 4 copies.
pub const PC_CHUNKS: u64 = 1 << 18;
/// Postcarding copies (translator `postcard.redundancy` and region `n_max`).
pub const PC_N: u8 = 4;
/// Hops per path.
pub const PC_HOPS: u8 = 5;
/// Switch ids are 1..=64.
pub const PC_UNIVERSE: u32 = 64;
/// The Append list.
pub const APPEND_LIST: u32 = 3;
/// Its capacity (holds every entry of a run, so all can be read back in order).
pub const APPEND_ENTRIES: u64 = 1 << 17;
/// A small Append list that a run wraps many times.
pub const APPEND_WRAP_LIST: u32 = 4;
/// Its capacity.
pub const APPEND_WRAP_ENTRIES: u64 = 1024;
/// The sketch.
pub const SKETCH_ID: u8 = 1;
/// Sketch rows.
pub const SKETCH_ROWS: u32 = 4;
/// Sketch columns.
pub const SKETCH_COLUMNS: u32 = 1024;
/// Reporters merged per column (translator `sketch.reporters`).
pub const SKETCH_REPORTERS: u16 = 4;

/// Append lists of drop events: one per translator worker (two at most here; one worker uses the first).
pub const INT_DROP_LISTS: [u32; 2] = [10, 12];
/// Append lists of queue events, likewise.
pub const INT_QUEUE_LISTS: [u32; 2] = [11, 13];
/// Entries of each INT list.
pub const INT_LIST_ENTRIES: u64 = 1 << 14;

/// The collector regions an INT run adds (16-byte events).
pub fn int_lists() -> String {
    INT_DROP_LISTS
        .iter()
        .chain(&INT_QUEUE_LISTS)
        .map(|id| {
            format!(
                "\n[[region]]\nkind = \"append\"\nid = {id}\nentries = {INT_LIST_ENTRIES}\nentry_size = 16\nbatch_size = 16\n"
            )
        })
        .collect()
}

/// The collector's regions for these workloads, as its TOML; with `int`, 16-byte Key-Write entries (INT's
/// 12-byte hop records) and the INT event lists.
pub fn collector_regions(int: bool) -> String {
    let kw_entry = if int { 16 } else { 8 };
    let lists = if int { int_lists() } else { String::new() };
    format!(
        r#"
[postcarding]
ranges = [[1, {PC_UNIVERSE}]]

[[region]]
kind = "key_write"
slots = {KW_SLOTS}
entry_size = {kw_entry}
n_max = {KW_N}

[[region]]
kind = "key_increment"
slots = {KI_SLOTS}
n_max = {KI_N}

[[region]]
kind = "postcarding"
chunks = {PC_CHUNKS}
hops = {PC_HOPS}
n_max = {PC_N}

[[region]]
kind = "append"
id = {APPEND_LIST}
entries = {APPEND_ENTRIES}
entry_size = 4
batch_size = 16

[[region]]
kind = "append"
id = {APPEND_WRAP_LIST}
entries = {APPEND_WRAP_ENTRIES}
entry_size = 4
batch_size = 16

[[region]]
kind = "sketch"
id = {SKETCH_ID}
merge = "sum"
rows = {SKETCH_ROWS}
columns = {SKETCH_COLUMNS}
{lists}"#
    )
}

/// The translator's engine sections these workloads rely on.
pub fn translator_engine_sections() -> String {
    format!(
        r#"
[requester]
queue_capacity = 65536

[key_increment]
coalesce_us = 200

# A flow's five postcards arrive back to back; a long idle timeout keeps a slow (debug) translator from
# writing a flow in two halves, which the query would rightly reject.
[postcard]
hops = {PC_HOPS}
redundancy = {PC_N}
idle_timeout_us = 2000000

[sketch]
reporters = {SKETCH_REPORTERS}
"#
    )
}

fn format() -> ReportFormat {
    ReportFormat {
        form: HeaderForm::Seq,
        keywrite_data_len: 4,
        append_entry_len: 4,
    }
}

fn emit(body: Body<'_>, seq: u32) -> Vec<u8> {
    let fmt = format();
    let r = ReportRepr::new(body, HeaderForm::Seq, seq as u8);
    let mut buf = vec![0u8; r.buffer_len(&fmt)];
    let n = r
        .emit(&mut buf, &fmt)
        .expect("a report the harness built is valid");
    buf.truncate(n);
    buf
}

/// A small deterministic mix for values (splitmix64's finaliser).
pub(crate) fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Queries the collector and compares; returns how many answers were checked.
pub type Verify = Box<dyn Fn(SocketAddr) -> Result<u64> + Send + Sync>;

/// Reports to send and the check to run afterwards.
pub struct Workload {
    /// Name for tables and errors.
    pub name: &'static str,
    /// UDP payloads in send order.
    pub reports: Vec<Vec<u8>>,
    /// The check.
    pub verify: Verify,
}

/// Key-Write: `keys` keys, each updated `rounds` times with N = [`KW_N`]; the last value must be found for
/// every key.
pub fn key_write(keys: u32, rounds: u32, salt: u64) -> Result<Workload> {
    key_write_n(keys, rounds, salt, KW_N)
}

/// [`key_write`] with reports of redundancy `n` (1..=[`KW_N`], the region's `n_max`).
pub fn key_write_n(keys: u32, rounds: u32, salt: u64, n: u8) -> Result<Workload> {
    let (writes, verify) = key_write_model(keys, rounds, salt, n, 0)?;
    let reports = writes
        .iter()
        .map(|(key, data)| {
            emit(
                Body::KeyWrite(KeyWriteRepr {
                    redundancy: n,
                    key: *key,
                    data,
                }),
                *key,
            )
        })
        .collect();
    Ok(Workload {
        name: match n {
            1 => "key-write N=1",
            2 => "key-write N=2",
            3 => "key-write N=3",
            _ => "key-write",
        },
        reports,
        verify,
    })
}

/// First key of the DART workload: above the translator workloads' keys, so their models stay apart.
pub const DART_KEY_BASE: u32 = 1 << 24;

/// DART: the Key-Writes a reporter writes straight into the collector (`dta-report dart`), as its
/// `--writes` file (`<key> <data-hex>` per line), with the check of every key. Keys from
/// [`DART_KEY_BASE`], `rounds` values each, redundancy `n`.
pub fn dart_key_write(keys: u32, rounds: u32, salt: u64, n: u8) -> Result<(String, Verify)> {
    let (writes, verify) = key_write_model(keys, rounds, salt, n, DART_KEY_BASE)?;
    let mut file = String::with_capacity(writes.len() * 20);
    for (key, data) in &writes {
        file.push_str(&format!("{key} {}\n", hex(data)));
    }
    Ok((file, verify))
}

/// One Key-Write: key and data.
type KeyWriteOp = (u32, [u8; 4]);

/// The Key-Writes of `keys` keys from `base`, `rounds` rounds of changing values, in send order, and the
/// check that every key's last value is found with redundancy `n`.
fn key_write_model(
    keys: u32,
    rounds: u32,
    salt: u64,
    n: u8,
    base: u32,
) -> Result<(Vec<KeyWriteOp>, Verify)> {
    ensure!(
        (1..=KW_N).contains(&n),
        "Key-Write redundancy {n} is not 1..={KW_N}"
    );
    let g = KeyWriteGeometry::new(KW_SLOTS, 8, KW_N).context("Key-Write geometry")?;
    let mut writes = Vec::with_capacity((keys * rounds) as usize);
    let mut mem: HashMap<u64, (u32, [u8; 4])> = HashMap::new();
    let mut last = vec![[0u8; 4]; keys as usize];
    for round in 0..rounds {
        for i in 0..keys {
            let key = base + i;
            let data = (mix(salt ^ (u64::from(round) << 32) ^ u64::from(key)) as u32).to_be_bytes();
            writes.push((key, data));
            for copy in 0..n {
                mem.insert(g.slot(key, copy), (key_checksum(key), data));
            }
            last[i as usize] = data;
        }
    }
    // The model must find every key: otherwise the layout, not the system, would lose data.
    for i in 0..keys {
        let key = base + i;
        let found = (0..n)
            .filter_map(|copy| mem.get(&g.slot(key, copy)))
            .any(|&(c, d)| c == key_checksum(key) && d == last[i as usize]);
        ensure!(
            found,
            "Key-Write layout loses key {key} to collisions; enlarge the region"
        );
    }
    let verify: Verify = Box::new(move |http| {
        for i in 0..keys {
            let key = base + i;
            let a = get_json(http, &format!("/query/keywrite?key={key}&n={n}"))?;
            let want = hex(&last[i as usize]);
            if a["outcome"] != "found" || a["data"] != want.as_str() {
                bail!("Key-Write key {key}: expected found {want}, collector says {a}");
            }
        }
        Ok(u64::from(keys))
    });
    Ok((writes, verify))
}

/// Key-Increment: `reports` increments over `keys` keys; every key's estimate must be its exact sum.
pub fn key_increment(keys: u32, reports_n: u32, salt: u64) -> Result<Workload> {
    let g = KeyIncrementGeometry::new(KI_SLOTS, KI_N).context("Key-Increment geometry")?;
    let mut reports = Vec::with_capacity(reports_n as usize);
    let mut sums = vec![0u64; keys as usize];
    let mut counters: HashMap<u64, u64> = HashMap::new();
    for i in 0..reports_n {
        let key = i % keys;
        let counter = 1 + mix(salt ^ u64::from(i)) % 13;
        reports.push(emit(
            Body::KeyIncrement(KeyIncrementRepr {
                redundancy: KI_N,
                key,
                counter,
            }),
            i,
        ));
        sums[key as usize] += counter;
        // One FETCH_ADD per copy, even when two copies share a counter.
        for n in 0..KI_N {
            *counters.entry(g.offset(key, n)).or_default() += counter;
        }
    }
    for key in 0..keys {
        let est = (0..KI_N).map(|n| counters[&g.offset(key, n)]).min();
        ensure!(
            est == Some(sums[key as usize]),
            "Key-Increment layout overestimates key {key}; enlarge the region"
        );
    }
    let verify: Verify = Box::new(move |http| {
        for key in 0..keys {
            let a = get_json(http, &format!("/query/keyincrement?key={key}&n={KI_N}"))?;
            if a["estimate"].as_u64() != Some(sums[key as usize]) {
                bail!(
                    "Key-Increment key {key}: expected {}, collector says {a}",
                    sums[key as usize]
                );
            }
        }
        Ok(u64::from(keys))
    });
    Ok(Workload {
        name: "key-increment",
        reports,
        verify,
    })
}

/// Append: `n` entries (their index, big-endian) to one list; all must be read back in order.
pub fn append(n: u32) -> Result<Workload> {
    append_from(0, n)
}

/// Append continued: entries `first..first + n` (their index, big-endian) to a list that already holds
/// `first`; the head must be `first + n` and a read from `tail = first` must return them in order.
pub fn append_from(first: u32, n: u32) -> Result<Workload> {
    let end = first.checked_add(n).context("entry indices past u32")?;
    ensure!(
        u64::from(end) <= APPEND_ENTRIES,
        "more entries than the list holds"
    );
    let reports = (first..end)
        .map(|i| {
            let data = i.to_be_bytes();
            emit(
                Body::Append(AppendRepr {
                    list_id: APPEND_LIST,
                    data: &data,
                }),
                i,
            )
        })
        .collect();
    let verify: Verify = Box::new(move |http| {
        let mut tail = u64::from(first);
        while tail < u64::from(end) {
            let a = get_json(
                http,
                &format!("/query/append?list={APPEND_LIST}&tail={tail}&max=65536"),
            )?;
            if a["head"].as_u64() != Some(u64::from(end)) || a["overrun"].as_u64() != Some(0) {
                bail!(
                    "Append: expected head {end} and no overrun, collector says head {} overrun {}",
                    a["head"],
                    a["overrun"]
                );
            }
            let entries = a["entries"].as_array().context("entries")?;
            ensure!(!entries.is_empty(), "Append: no entries from {tail}");
            for (k, e) in entries.iter().enumerate() {
                let want = format!("{:08x}", tail + k as u64);
                if e.as_str() != Some(want.as_str()) {
                    bail!(
                        "Append entry {}: expected {want}, collector says {e}",
                        tail + k as u64
                    );
                }
            }
            tail += entries.len() as u64;
        }
        Ok(u64::from(n))
    });
    Ok(Workload {
        name: "append",
        reports,
        verify,
    })
}

/// Append past the end: `n` entries (their index, big-endian) to the [`APPEND_WRAP_ENTRIES`]-entry list
/// [`APPEND_WRAP_LIST`], which wraps; the head word must count all `n`, and a read from the start must
/// report the overwritten entries as overrun and return exactly the newest [`APPEND_WRAP_ENTRIES`] in
/// order.
pub fn append_wrapping(n: u32) -> Result<Workload> {
    let n64 = u64::from(n);
    ensure!(
        n64 > 2 * APPEND_WRAP_ENTRIES,
        "{n} entries do not wrap the list twice"
    );
    let reports = (0..n)
        .map(|i| {
            let data = i.to_be_bytes();
            emit(
                Body::Append(AppendRepr {
                    list_id: APPEND_WRAP_LIST,
                    data: &data,
                }),
                i,
            )
        })
        .collect();
    let verify: Verify = Box::new(move |http| {
        let a = get_json(
            http,
            &format!("/query/append?list={APPEND_WRAP_LIST}&tail=0&max=65536"),
        )?;
        let oldest = n64 - APPEND_WRAP_ENTRIES;
        if a["head"].as_u64() != Some(n64)
            || a["first"].as_u64() != Some(oldest)
            || a["overrun"].as_u64() != Some(oldest)
        {
            bail!(
                "Append (wrapping): expected head {n}, first and overrun {oldest}, collector says head {} first {} overrun {}",
                a["head"],
                a["first"],
                a["overrun"]
            );
        }
        let entries = a["entries"].as_array().context("entries")?;
        ensure!(
            entries.len() as u64 == APPEND_WRAP_ENTRIES,
            "Append (wrapping): {} entries, expected {APPEND_WRAP_ENTRIES}",
            entries.len()
        );
        for (k, e) in entries.iter().enumerate() {
            let want = format!("{:08x}", oldest + k as u64);
            if e.as_str() != Some(want.as_str()) {
                bail!(
                    "Append (wrapping) entry {}: expected {want}, collector says {e}",
                    oldest + k as u64
                );
            }
        }
        Ok(APPEND_WRAP_ENTRIES + 1)
    });
    Ok(Workload {
        name: "append wrapping",
        reports,
        verify,
    })
}

/// Postcarding: `flows` flows of 5 hops, reported `rounds` times with changing paths; every flow's last
/// path must come back.
pub fn postcard(flows: u32, rounds: u32, salt: u64) -> Result<Workload> {
    let g = PostcardGeometry::new(PC_CHUNKS, PC_HOPS, PC_N).context("Postcarding geometry")?;
    let mut reports = Vec::with_capacity((flows * rounds * u32::from(PC_HOPS)) as usize);
    let mut chunks: HashMap<u64, u32> = HashMap::new();
    let mut last: Vec<Vec<u32>> = vec![Vec::new(); flows as usize];
    let mut seq = 0u32;
    for round in 0..rounds {
        for f in 0..flows {
            let key = f + 1;
            let path: Vec<u32> = (0..PC_HOPS)
                .map(|h| {
                    1 + (mix(salt ^ (u64::from(round) << 40) ^ (u64::from(f) << 8) ^ u64::from(h))
                        % u64::from(PC_UNIVERSE)) as u32
                })
                .collect();
            for (h, &v) in path.iter().enumerate() {
                reports.push(emit(
                    Body::Postcard(PostcardRepr {
                        key,
                        hop: h as u8 + 1,
                        data: v,
                    }),
                    seq,
                ));
                seq += 1;
            }
            for n in 0..PC_N {
                chunks.insert(g.offset(key, n), key);
            }
            last[f as usize] = path;
        }
    }
    for f in 0..flows {
        let key = f + 1;
        ensure!(
            (0..PC_N).any(|n| chunks[&g.offset(key, n)] == key),
            "Postcarding layout loses flow {key}; enlarge the region"
        );
    }
    let verify: Verify = Box::new(move |http| {
        for f in 0..flows {
            let a = get_json(http, &format!("/query/postcard?key={}&n={PC_N}", f + 1))?;
            let want = serde_json::json!(last[f as usize]);
            if a["outcome"] != "found" || a["path"] != want {
                bail!(
                    "Postcarding flow {}: expected {want}, collector says {a}",
                    f + 1
                );
            }
        }
        Ok(u64::from(flows))
    });
    Ok(Workload {
        name: "postcarding",
        reports,
        verify,
    })
}

/// Sketch-Merge: 4 reporters send `epochs` whole sketches column by column; the collector must hold the
/// last epoch's merged counters, checked through count-min estimates of `probe_keys` keys.
pub fn sketch(epochs: u32, probe_keys: u32, salt: u64) -> Result<Workload> {
    let (rows, cols) = (SKETCH_ROWS as usize, SKETCH_COLUMNS as usize);
    let value = |e: u32, r: u16, c: usize, row: usize| sketch_value(salt, e, r, c, row);
    let mut reports = Vec::with_capacity(epochs as usize * cols * usize::from(SKETCH_REPORTERS));
    let mut seq = 0u32;
    for e in 0..epochs {
        for c in 0..cols {
            for r in 0..SKETCH_REPORTERS {
                let counters: Vec<u8> = (0..rows)
                    .flat_map(|row| value(e, r, c, row).to_be_bytes())
                    .collect();
                reports.push(emit(
                    Body::SketchMerge(SketchRepr {
                        sketch_id: SKETCH_ID,
                        op: SketchOp::Sum,
                        reporter_id: r,
                        column: c as u16,
                        counters: &counters,
                    }),
                    seq,
                ));
                seq += 1;
            }
        }
    }
    let last = epochs.checked_sub(1).context("at least one epoch")?;
    let merged = sketch_merged(last, salt);
    let verify: Verify = Box::new(move |http| {
        for key in 0..probe_keys {
            let want = (0..rows)
                .map(|row| {
                    let c = (placement_hash(key, row as u8) % SKETCH_COLUMNS) as usize;
                    merged[c * rows + row]
                })
                .min()
                .unwrap_or(0);
            let a = get_json(http, &format!("/query/sketch?id={SKETCH_ID}&key={key}"))?;
            if a["estimate"].as_u64() != Some(u64::from(want)) {
                bail!("sketch key {key}: expected count-min {want}, collector says {a}");
            }
        }
        Ok(u64::from(probe_keys))
    });
    Ok(Workload {
        name: "sketch-merge",
        reports,
        verify,
    })
}

/// What reporter `r` counted in counter (`c`, `row`) in epoch `e` of [`sketch`].
fn sketch_value(salt: u64, e: u32, r: u16, c: usize, row: usize) -> u32 {
    (mix(salt ^ (u64::from(e) << 48) ^ (u64::from(r) << 32) ^ ((c as u64) << 8) ^ row as u64)
        % 1000) as u32
}

/// The merged (summed) counters of epoch `e` of [`sketch`], in the region's order (column by column,
/// `SKETCH_ROWS` counters each): what the collector holds after that epoch.
pub fn sketch_merged(e: u32, salt: u64) -> Vec<u32> {
    let rows = SKETCH_ROWS as usize;
    (0..SKETCH_COLUMNS as usize * rows)
        .map(|i| {
            (0..SKETCH_REPORTERS)
                .map(|r| sketch_value(salt, e, r, i / rows, i % rows))
                .sum()
        })
        .collect()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
