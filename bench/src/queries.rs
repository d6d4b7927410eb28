//! Collector queries on one core, through dta-collector's query functions, over regions filled the way the
//! translator's writes leave them (entries encoded by dta-protocol's layouts).

use std::time::Instant;

use anyhow::{anyhow, Result};
use dta_collector::query::{
    append_read, key_increment, key_write, KeyWriteAnswer, PathAnswer, PostcardDecoder,
};
use dta_protocol::layout::{
    AppendGeometry, KeyIncrementGeometry, KeyWriteGeometry, PostcardGeometry,
};
use serde::Serialize;

use crate::sys::{thread_cpu_ns, vm_hwm_kib};
use crate::workloads::{key_of, KEYWRITE_SLOTS};

#[derive(Debug, Serialize)]
pub struct QueryResult {
    pub name: String,
    pub region: String,
    pub region_bytes: u64,
    pub ops: u64,
    /// Queries (or, for Append, entries) per second of wall time on one core.
    pub per_s: f64,
    /// The same per second of the thread's CPU time: what one core does when it has the core to itself.
    pub per_cpu_s: f64,
    pub hits: u64,
}

#[derive(Debug, Serialize)]
pub struct QueriesResult {
    pub results: Vec<QueryResult>,
    /// Peak RSS of the process holding all four regions (the collector's memory for these regions).
    pub vm_hwm_kib: u64,
}

/// xorshift64*: a query stream the prefetcher cannot predict, cheaper than the query itself.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// Runs `f` until `secs` have passed (checking the clock every 1024 calls); returns (calls, wall s, cpu s, hits).
fn timed(secs: f64, mut f: impl FnMut() -> Result<bool>) -> Result<(u64, f64, f64, u64)> {
    let cpu0 = thread_cpu_ns();
    let t = Instant::now();
    let (mut n, mut hits) = (0u64, 0u64);
    while t.elapsed().as_secs_f64() < secs {
        for _ in 0..1024 {
            hits += u64::from(f()?);
            n += 1;
        }
    }
    Ok((
        n,
        t.elapsed().as_secs_f64(),
        (thread_cpu_ns() - cpu0) as f64 / 1e9,
        hits,
    ))
}

fn push(
    out: &mut Vec<QueryResult>,
    name: &str,
    region: String,
    bytes: u64,
    (ops, wall, cpu, hits): (u64, f64, f64, u64),
) {
    out.push(QueryResult {
        name: name.into(),
        region,
        region_bytes: bytes,
        ops,
        per_s: ops as f64 / wall,
        per_cpu_s: ops as f64 / cpu.max(1e-9),
        hits,
    });
}

pub fn run(secs: f64) -> Result<QueriesResult> {
    let ge = |e: dta_protocol::layout::GeometryError| anyhow!("geometry: {e}");
    let mut out = Vec::new();
    let mut rng = Rng(0x1234_5678_9abc_def1);

    // Key-Write, N = 2, on 2^26 slots of 8 bytes: 2^24 keys written twice, load factor 1/2.
    let kw = KeyWriteGeometry::new(KEYWRITE_SLOTS, 8, 4).map_err(ge)?;
    let mut kw_mem = vec![0u8; kw.len() as usize];
    let kw_keys = 1usize << 24;
    for i in 0..kw_keys {
        let key = key_of(i);
        for c in 0..2 {
            let at = kw.offset(key, c) as usize;
            kw.encode_entry(key, &(i as u32).to_be_bytes(), &mut kw_mem[at..at + 8])
                .ok_or_else(|| anyhow!("encode"))?;
        }
    }
    let r = timed(secs, || {
        let key = key_of((rng.next() % kw_keys as u64) as usize);
        let a = key_write(&kw_mem, &kw, key, 2, 1).map_err(|e| anyhow!("{e}"))?;
        Ok(matches!(a, KeyWriteAnswer::Found { .. }))
    })?;
    push(
        &mut out,
        "keywrite_n2",
        "2^26 slots x 8 B, 2^24 keys x 2 copies".into(),
        kw.len(),
        r,
    );

    // Key-Increment, N = 2, on 2^24 counters: 2^22 keys incremented once per copy.
    let ki = KeyIncrementGeometry::new(1 << 24, 4).map_err(ge)?;
    let mut ki_mem = vec![0u8; ki.len() as usize];
    let ki_keys = 1usize << 22;
    for i in 0..ki_keys {
        let key = key_of(i);
        for c in 0..2 {
            let at = ki.offset(key, c) as usize;
            let mut w = [0u8; 8];
            w.copy_from_slice(&ki_mem[at..at + 8]);
            let v = u64::from_ne_bytes(w) + 1;
            ki_mem[at..at + 8].copy_from_slice(&v.to_ne_bytes());
        }
    }
    let r = timed(secs, || {
        let key = key_of((rng.next() % ki_keys as u64) as usize);
        let a = key_increment(&ki_mem, &ki, key, 2).map_err(|e| anyhow!("{e}"))?;
        Ok(a.estimate > 0)
    })?;
    push(
        &mut out,
        "keyincrement_n2",
        "2^24 counters x 8 B, 2^22 keys".into(),
        ki.len(),
        r,
    );

    // Postcarding, 5 hops, N = 2, on 2^22 chunks: 2^20 flows over a universe of 1024 switch IDs.
    let pc = PostcardGeometry::new(1 << 22, 5, 4).map_err(ge)?;
    let mut pc_mem = vec![0u8; pc.len() as usize];
    let flows = 1usize << 20;
    let universe: Vec<u32> = (100..1124).collect();
    for i in 0..flows {
        let key = key_of(i);
        let path: Vec<u32> = (0..5).map(|h| universe[(i * 7 + h * 131) % 1024]).collect();
        let chunk = pc.encode_chunk(key, &path);
        for c in 0..2 {
            let at = pc.offset(key, c) as usize;
            pc_mem[at..at + chunk.len()].copy_from_slice(&chunk);
        }
    }
    let dec = PostcardDecoder::new(&universe);
    let r = timed(secs, || {
        let key = key_of((rng.next() % flows as u64) as usize);
        let a = dec
            .query(&pc_mem, &pc, key, 2)
            .map_err(|e| anyhow!("{e}"))?;
        Ok(matches!(a, PathAnswer::Found { .. }))
    })?;
    push(
        &mut out,
        "postcard5_n2",
        "2^22 chunks x 32 B, 2^20 flows, 1024 values".into(),
        pc.len(),
        r,
    );

    // Append: one list of 2^24 4-byte entries, full, read front to back in reads of 4096 entries.
    let ap = AppendGeometry::new(1 << 24, 4, 16).map_err(ge)?;
    let mut ap_mem = vec![0u8; ap.len() as usize];
    let entries = ap.entries();
    for i in 0..entries {
        let at = ap.entry_offset(i) as usize;
        ap_mem[at..at + 4].copy_from_slice(&(i as u32).to_be_bytes());
    }
    ap_mem[..8].copy_from_slice(&AppendGeometry::encode_head(entries));
    let mut tail = 0u64;
    let cpu0 = thread_cpu_ns();
    let t = Instant::now();
    let mut read = 0u64;
    while t.elapsed().as_secs_f64() < secs {
        let a = append_read(&ap_mem, &ap, tail, 4096).map_err(|e| anyhow!("{e}"))?;
        read += a.entries.len() as u64;
        tail = if a.next_tail >= entries {
            0
        } else {
            a.next_tail
        };
    }
    let wall = t.elapsed().as_secs_f64();
    let cpu = (thread_cpu_ns() - cpu0) as f64 / 1e9;
    push(
        &mut out,
        "append_entries_read",
        "2^24 entries x 4 B, reads of 4096".into(),
        ap.len(),
        (read, wall, cpu, read),
    );

    Ok(QueriesResult {
        results: out,
        vm_hwm_kib: vm_hwm_kib(),
    })
}
