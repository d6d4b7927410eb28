//! Append: a list's entries in order, and a ring that wraps.

use anyhow::{bail, ensure, Context, Result};
use dta_protocol::dta::{AppendRepr, Body};

use crate::http::get_json;

use super::common::{emit, Verify, Workload};
use super::regions::{APPEND_ENTRIES, APPEND_LIST, APPEND_WRAP_ENTRIES, APPEND_WRAP_LIST};

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
