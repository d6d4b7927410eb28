//! The collector's history exporter (issue 28, item 5), its own code: `dta_collector::export::Exporter`
//! with its Parquet sink tailing an INT drop-event list in an arena this bench fills the way the
//! translator's writes do (entries into the ring, then the head word, under the arena's write lock).
//!
//! * **Rows per second per core**: the writer keeps the ring half full ahead of the exporter (closed
//!   loop), so the exporter's thread never waits; rows exported per second of wall time and per second
//!   of the export thread's CPU time.
//! * **The highest Append rate it keeps up with**: open-loop writes at a fixed rate for a while, the
//!   exporter as configured (`poll_ms`, a ring of `ring` entries); a rate passes if no entry was
//!   overwritten before the exporter read it (`dta_collector_export_overruns_total` unchanged). Doubling,
//!   then bisection. Between reads the exporter sleeps `poll_ms` once it has caught up, so a ring of R
//!   entries bounds the rate at R / poll_ms besides the thread's own speed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use dta_collector::config::Config;
use dta_collector::export::Exporter;
use dta_collector::memory::Arena;
use dta_collector::metrics::ExportMetrics;
use dta_protocol::int::mapping::DropEvent;
use dta_protocol::layout::RegionKind;
use serde::Serialize;

const LIST: u32 = 10;
const ENTRY: usize = 16;

#[derive(Debug, Serialize)]
pub struct ExportResult {
    /// Entries of the tailed ring.
    pub ring_entries: u64,
    /// `[export] poll_ms`.
    pub poll_ms: u64,
    /// Closed loop: rows the exporter wrote (Parquet, `drop_events`), per second of wall time ...
    pub rows_per_s: f64,
    /// ... and per second of the export thread's CPU time (one core).
    pub rows_per_cpu_s: f64,
    /// Rows exported in the closed-loop run.
    pub rows: u64,
    /// Parquet bytes written per row.
    pub bytes_per_row: f64,
    /// The highest open-loop Append rate (entries/s) with no overrun, and the lowest probed with one.
    pub max_rate_no_overrun: f64,
    pub min_rate_overrun: Option<f64>,
    /// `ring_entries / poll_ms`: the bound polling puts on the rate.
    pub poll_bound_per_s: f64,
    /// Every open-loop probe: (offered entries/s, achieved entries/s, overruns).
    pub probes: Vec<(f64, f64, u64)>,
}

fn config(dir: &std::path::Path, ring: u64, poll_ms: u64) -> Result<Config> {
    let text = format!(
        "[int]\ndrop_list = {LIST}\n\n[[region]]\nkind = \"append\"\nid = {LIST}\nentries = {ring}\nentry_size = {ENTRY}\nbatch_size = 16\n\n[export]\nepoch_secs = 3600\npoll_ms = {poll_ms}\n\n[export.parquet]\ndir = \"{}\"\nrotate_secs = 3600\nrotate_mib = 64\n",
        dir.display()
    );
    Config::parse(&text).context("the bench's collector config")
}

/// The region's writer: appends drop events the way the translator's WRITEs land.
struct Writer {
    arena: Arc<Arena>,
    offset: usize,
    ring: u64,
    head: u64,
}

impl Writer {
    fn new(arena: Arc<Arena>, ring: u64) -> Result<Writer> {
        let offset = arena.find(RegionKind::Append, Some(LIST))?.offset;
        Ok(Writer {
            arena,
            offset,
            ring,
            head: 0,
        })
    }

    /// Appends `n` events under one write lock, then advances the head word.
    fn append(&mut self, n: u64) {
        let mut mem = self.arena.write();
        let region = &mut mem.as_mut_slice()[self.offset..];
        for i in self.head..self.head + n {
            let e = DropEvent {
                flow: (i as u32).wrapping_mul(2_654_435_761),
                node: 1 + (i % 64) as u32,
                port: (i % 48) as u16,
                reason: [71u8, 80, 89][(i % 3) as usize],
                queue_id: (i % 8) as u8,
                timestamp: i as u32,
            }
            .encode();
            let at = 64 + (i % self.ring) as usize * ENTRY;
            region[at..at + ENTRY].copy_from_slice(&e);
        }
        self.head += n;
        region[..8].copy_from_slice(&self.head.to_le_bytes());
    }
}

/// The export thread's CPU time (ns), from /proc: the thread named `dta-export-parq(uet)`.
fn export_thread_cpu_ns() -> Result<u64> {
    let tick = 1e9 / (unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64);
    for t in std::fs::read_dir("/proc/self/task")? {
        let p = t?.path();
        let comm = std::fs::read_to_string(p.join("comm")).unwrap_or_default();
        if comm.trim().starts_with("dta-export-parq") {
            let stat = std::fs::read_to_string(p.join("stat"))?;
            // After the `(comm)` field: state is field 3, utime 14 and stime 15.
            let rest = stat.rsplit_once(')').context("stat")?.1;
            let f: Vec<&str> = rest.split_whitespace().collect();
            let (u, s): (f64, f64) = (f[11].parse()?, f[12].parse()?);
            return Ok(((u + s) * tick) as u64);
        }
    }
    bail!("no export thread")
}

fn dir_bytes(dir: &std::path::Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return 0;
    };
    rd.filter_map(Result::ok)
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_bytes(&e.path()),
            _ => e.metadata().map_or(0, |m| m.len()),
        })
        .sum()
}

struct Run {
    metrics: ExportMetrics,
    exporter: Exporter,
    writer: Writer,
}

impl Run {
    fn start(dir: &std::path::Path, ring: u64, poll_ms: u64) -> Result<Run> {
        let config = config(dir, ring, poll_ms)?;
        let arena = Arc::new(Arena::new_normal(&config.region_layout())?);
        let metrics = ExportMetrics::default();
        let exporter = Exporter::start(arena.clone(), &config, metrics.clone())?;
        let writer = Writer::new(arena.clone(), ring)?;
        Ok(Run {
            metrics,
            exporter,
            writer,
        })
    }

    fn exported(&self) -> u64 {
        self.metrics.rows_of("parquet", "drop_events")
    }

    fn lost(&self) -> u64 {
        self.metrics.overruns_of(LIST, "parquet")
    }

    /// Waits (at most 30 s) until every entry written is exported or counted lost.
    fn settle(&self) -> Result<()> {
        let t = Instant::now();
        while self.exported() + self.lost() < self.writer.head {
            if t.elapsed() > Duration::from_secs(30) {
                bail!(
                    "the exporter did not catch up: {} exported, {} lost of {}",
                    self.exported(),
                    self.lost(),
                    self.writer.head
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(())
    }
}

/// Closed loop for `secs`: the ring kept at most half full ahead of the exporter.
fn throughput(dir: &std::path::Path, ring: u64, secs: f64) -> Result<(f64, f64, u64, f64)> {
    let mut r = Run::start(dir, ring, 1)?;
    let batch = (ring / 16).clamp(1, 4096);
    // Warm up: the first row groups and files.
    r.writer.append(batch);
    r.settle()?;
    let (rows0, cpu0, t) = (r.exported(), export_thread_cpu_ns()?, Instant::now());
    while t.elapsed().as_secs_f64() < secs {
        if r.writer.head - r.exported() + batch <= ring / 2 {
            r.writer.append(batch);
        } else {
            std::thread::yield_now();
        }
    }
    let wall = t.elapsed().as_secs_f64();
    let (rows, cpu) = (r.exported() - rows0, export_thread_cpu_ns()? - cpu0);
    if r.lost() != 0 {
        bail!("the closed loop overran the ring");
    }
    r.exporter.stop();
    let bytes = dir_bytes(dir) as f64 / (rows + batch) as f64;
    Ok((
        rows as f64 / wall,
        rows as f64 / (cpu as f64 / 1e9),
        rows,
        bytes,
    ))
}

/// Open loop at `rate` entries/s for `secs`: (achieved rate, entries lost).
fn probe(r: &mut Run, rate: f64, secs: f64) -> Result<(f64, u64)> {
    r.settle()?;
    let (lost0, head0) = (r.lost(), r.writer.head);
    let t = Instant::now();
    let tick = Duration::from_micros(500);
    let mut next = t;
    while t.elapsed().as_secs_f64() < secs {
        let due = (t.elapsed().as_secs_f64() * rate) as u64;
        let n = due.saturating_sub(r.writer.head - head0);
        if n > 0 {
            r.writer.append(n);
        }
        next += tick;
        if let Some(d) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(d);
        }
    }
    let achieved = (r.writer.head - head0) as f64 / t.elapsed().as_secs_f64();
    r.settle()?;
    Ok((achieved, r.lost() - lost0))
}

pub fn run(secs: f64, probe_secs: f64, ring: u64, poll_ms: u64) -> Result<ExportResult> {
    let base = std::env::temp_dir().join(format!("dta-bench-export-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let result = (|| {
        let (rows_per_s, rows_per_cpu_s, rows, bytes_per_row) =
            throughput(&base.join("closed"), ring, secs)?;
        let _ = std::fs::remove_dir_all(base.join("closed"));
        let mut r = Run::start(&base.join("open"), ring, poll_ms)?;
        let mut probes = Vec::new();
        // Doubling from a tenth of the polling bound, then bisection.
        let poll_bound = ring as f64 / (poll_ms as f64 / 1e3);
        let (mut ok, mut bad): (f64, Option<f64>) = (0.0, None);
        let mut rate = (poll_bound / 10.0).max(1_000.0);
        for _ in 0..12 {
            let (achieved, lost) = probe(&mut r, rate, probe_secs)?;
            eprintln!("export: offered {rate:.0}/s, achieved {achieved:.0}/s, overruns {lost}");
            probes.push((rate, achieved, lost));
            if lost == 0 && achieved >= 0.95 * rate {
                ok = ok.max(rate);
            } else {
                bad = Some(bad.map_or(rate, |b: f64| b.min(rate)));
            }
            rate = match bad {
                None => rate * 2.0,
                Some(b) if (b - ok) / b > 0.1 => (ok + b) / 2.0,
                Some(_) => break,
            };
        }
        r.exporter.stop();
        Ok(ExportResult {
            ring_entries: ring,
            poll_ms,
            rows_per_s,
            rows_per_cpu_s,
            rows,
            bytes_per_row,
            max_rate_no_overrun: ok,
            min_rate_overrun: bad,
            poll_bound_per_s: poll_bound,
            probes,
        })
    })();
    let _ = std::fs::remove_dir_all(&base);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A short closed-loop run exports rows; an open-loop probe accounts for every entry written,
    /// exported or counted as overrun.
    #[test]
    fn every_entry_is_exported_or_counted_lost() {
        let dir = std::env::temp_dir().join(format!("dta-bench-export-t{}", std::process::id()));
        let (per_s, per_cpu, rows, _) = throughput(&dir.join("c"), 4096, 0.3).unwrap();
        assert!(rows > 0 && per_s > 0.0 && per_cpu > 0.0);
        let mut r = Run::start(&dir.join("o"), 256, 200).unwrap();
        let (achieved, _) = probe(&mut r, 100_000.0, 0.3).unwrap();
        assert!(achieved > 0.0);
        assert_eq!(r.exported() + r.lost(), r.writer.head);
        r.exporter.stop();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
