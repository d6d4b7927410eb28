//! `[export]`: the history exporter (`src/export/`) that `serve` runs beside the regions, with its Parquet
//! and ClickHouse sinks. Parsed in every server build, so a configuration stays valid whatever features
//! the binary was built with; a build without the `export` feature refuses to start with one.

use std::path::PathBuf;

use serde::Deserialize;

use crate::error::{Error, Result};

/// `[export]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportSection {
    /// Seconds between epochs: drop-count deltas and the key set's answers (default 10).
    #[serde(default = "default_epoch_secs")]
    pub epoch_secs: u64,
    /// Milliseconds between two reads of a list that had nothing new (default 100).
    #[serde(default = "default_poll_ms")]
    pub poll_ms: u64,
    /// Nodes whose drop counters every epoch reads, beside those seen in drop events.
    #[serde(default)]
    pub drop_nodes: Vec<u32>,
    /// A file of keys whose Key-Write and Key-Increment answers every epoch exports: one per line,
    /// `keywrite 42`, `keyincrement 42`, or a bare `42` for both; `#` starts a comment.
    pub keys: Option<PathBuf>,
    /// This collector's share of the keys among a translator's collectors, `I/N` (default `0/1`):
    /// drop counters and keys it does not hold are not read.
    #[serde(default = "default_shard")]
    pub shard: String,
    /// Parquet files; absent: none.
    pub parquet: Option<ParquetSection>,
    /// A ClickHouse server; absent: none.
    pub clickhouse: Option<ClickHouseSection>,
}

/// `[export.parquet]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParquetSection {
    /// The directory the partitions are made under.
    pub dir: PathBuf,
    /// A file is closed (and appears under its final name) after this many seconds (default 60).
    #[serde(default = "default_rotate_secs")]
    pub rotate_secs: u64,
    /// ... or once it holds this many MiB (default 128).
    #[serde(default = "default_rotate_mib")]
    pub rotate_mib: u64,
}

/// `[export.clickhouse]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClickHouseSection {
    /// The HTTP interface, `http://host:8123`.
    pub url: String,
    /// The database, created if missing (default `dta`).
    #[serde(default = "default_database")]
    pub database: String,
    /// The user (default: the server's `default`).
    pub user: Option<String>,
    /// The user's password.
    pub password: Option<String>,
    /// A table's rows are inserted once this many wait (default 10000) ...
    #[serde(default = "default_batch_rows")]
    pub batch_rows: usize,
    /// ... or once the oldest has waited this many milliseconds (default 1000).
    #[serde(default = "default_flush_ms")]
    pub flush_ms: u64,
    /// Rows held while the server is down (default 1000000). Beyond them the lists are no longer
    /// read (their rings keep the entries, until they overwrite them: counted as overruns) and epoch
    /// rows are dropped (counted).
    #[serde(default = "default_buffer_rows")]
    pub buffer_rows: usize,
}

fn default_epoch_secs() -> u64 {
    10
}
fn default_poll_ms() -> u64 {
    100
}
fn default_shard() -> String {
    "0/1".into()
}
fn default_rotate_secs() -> u64 {
    60
}
fn default_rotate_mib() -> u64 {
    128
}
fn default_database() -> String {
    "dta".into()
}
fn default_batch_rows() -> usize {
    10_000
}
fn default_flush_ms() -> u64 {
    1000
}
fn default_buffer_rows() -> usize {
    1_000_000
}

impl ExportSection {
    /// Checks what the types cannot say.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::Config(format!("[export] {m}")));
        if self.parquet.is_none() && self.clickhouse.is_none() {
            return bad("has no sink: add [export.parquet] and/or [export.clickhouse]".into());
        }
        if self.epoch_secs == 0 || self.poll_ms == 0 {
            return bad("epoch_secs and poll_ms must be at least 1".into());
        }
        crate::query::int::Shard::parse(&self.shard)
            .map_err(|e| Error::Config(format!("[export] shard: {e}")))?;
        if let Some(p) = &self.parquet {
            if p.rotate_secs == 0 || p.rotate_mib == 0 {
                return bad("parquet rotate_secs and rotate_mib must be at least 1".into());
            }
        }
        if let Some(c) = &self.clickhouse {
            if !c.url.starts_with("http://") {
                return bad(format!(
                    "clickhouse url {:?} is not http://host:port (the HTTP interface; TLS is not \
                     supported: put a local proxy in front)",
                    c.url
                ));
            }
            let ident = |s: &str| {
                !s.is_empty() && s.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
            };
            if !ident(&c.database) {
                return bad(format!(
                    "clickhouse database {:?} is not a plain identifier",
                    c.database
                ));
            }
            if c.batch_rows == 0 || c.buffer_rows < c.batch_rows {
                return bad(format!(
                    "clickhouse buffer_rows ({}) must hold at least batch_rows ({}), and batch_rows \
                     be at least 1",
                    c.buffer_rows, c.batch_rows
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;

    #[test]
    fn export_sections_are_checked_with_reasons() {
        let c = Config::parse("[export]\n[export.parquet]\ndir = \"/tmp/x\"\n").unwrap();
        let e = c.export.unwrap();
        assert_eq!(
            (e.epoch_secs, e.poll_ms, e.shard.as_str()),
            (10, 100, "0/1")
        );
        assert_eq!(e.parquet.unwrap().rotate_secs, 60);
        let cases = [
            ("[export]\n", "has no sink"),
            (
                "[export]\nepoch_secs = 0\n[export.parquet]\ndir = \"d\"\n",
                "epoch_secs",
            ),
            (
                "[export]\nshard = \"2/2\"\n[export.parquet]\ndir = \"d\"\n",
                "[export] shard",
            ),
            (
                "[export]\n[export.clickhouse]\nurl = \"https://x\"\n",
                "TLS is not supported",
            ),
            (
                "[export]\n[export.clickhouse]\nurl = \"http://x\"\ndatabase = \"a;b\"\n",
                "not a plain identifier",
            ),
            (
                "[export]\n[export.clickhouse]\nurl = \"http://x\"\nbuffer_rows = 5\n",
                "must hold at least batch_rows",
            ),
            (
                "[export]\nepoch = 3\n[export.parquet]\ndir = \"d\"\n",
                "unknown field `epoch`",
            ),
        ];
        for (text, why) in cases {
            let e = Config::parse(text).unwrap_err().to_string();
            assert!(e.contains(why), "{text:?}: {e}");
        }
    }
}
