//! Key-Write (and DART's Key-Writes): every key's last value found with its redundancy.

use std::collections::HashMap;

use anyhow::{bail, ensure, Context, Result};
use dta_protocol::dta::{Body, KeyWriteRepr};
use dta_protocol::hash::key_checksum;
use dta_protocol::layout::KeyWriteGeometry;

use crate::http::get_json;

use super::common::{emit, hex, mix, Verify, Workload};
use super::regions::{KW_N, KW_SLOTS};

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
