//! The ClickHouse sink, over the HTTP interface in the forms every server since 2016 takes (checked
//! against Debian 12's 18.16): `CREATE ... IF NOT EXISTS` of a `ReplacingMergeTree` table partitioned by
//! day, and `INSERT INTO db.table (columns) FORMAT TabSeparated` with the rows in the body. One insert
//! per table per flush; ClickHouse applies a block of up to a million rows atomically, so a failed
//! insert is retried whole.
//!
//! A retry can repeat rows that landed: an insert whose answer was lost (a timeout after the server
//! applied it) is sent again, with whatever rows joined it since. 18.16 has neither
//! `insert_deduplication_token` nor `non_replicated_deduplication_window` (block deduplication is for
//! replicated tables only, and would miss a retry that carries more rows anyway), so the tables
//! deduplicate by row instead: each table's sorting key identifies a row ([`Table::order_by`]), and a
//! `ReplacingMergeTree` keeps one row per key. Merges run in the background: queries that must be exact
//! read `FROM table FINAL`.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::time::Duration;

use super::http::{post, Endpoint};
use super::sink::{Sink, WriteError};
use super::table::{Batch, Column, Table};
use crate::config::ClickHouseSection;
use crate::error::{Error, Result};

/// How long one request may take.
const TIMEOUT: Duration = Duration::from_secs(30);

/// The `CREATE TABLE` of `table` in `database`.
pub fn ddl(database: &str, table: Table) -> String {
    let cols: Vec<String> = table
        .columns()
        .iter()
        .map(|&(name, t)| format!("`{name}` {}", t.clickhouse()))
        .collect();
    let time = table.columns()[0].0;
    format!(
        "CREATE TABLE IF NOT EXISTS {database}.{} ({}) ENGINE = ReplacingMergeTree() \
         PARTITION BY toYYYYMMDD(toDateTime(intDiv(`{time}`, 1000))) ORDER BY {}",
        table.name(),
        cols.join(", "),
        table.order_by()
    )
}

/// The `INSERT` query of `table` (its rows go in the body).
fn insert(database: &str, table: Table) -> String {
    let cols: Vec<String> = table
        .columns()
        .iter()
        .map(|&(name, _)| format!("`{name}`"))
        .collect();
    format!(
        "INSERT INTO {database}.{} ({}) FORMAT TabSeparated",
        table.name(),
        cols.join(", ")
    )
}

/// Appends `batches` as TabSeparated rows to `out`.
pub fn tsv(batches: &[Batch], out: &mut String) {
    for b in batches {
        for row in 0..b.len() {
            for (i, c) in b.columns.iter().enumerate() {
                if i > 0 {
                    out.push('\t');
                }
                // `write!` into a String cannot fail.
                let _ = match c {
                    Column::U64(v) => write!(out, "{}", v[row]),
                    Column::U8(v) => write!(out, "{}", v[row]),
                    Column::U16(v) => write!(out, "{}", v[row]),
                    Column::U32(v) => write!(out, "{}", v[row]),
                    Column::Str(v) => {
                        escape(&v[row], out);
                        Ok(())
                    }
                };
            }
            out.push('\n');
        }
    }
}

/// TabSeparated escaping: backslash, tab and newline (and the rest of the control bytes ClickHouse
/// escapes) as backslash sequences.
fn escape(s: &str, out: &mut String) {
    for ch in s.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            c => out.push(c),
        }
    }
}

/// A ClickHouse server.
pub struct ClickHouseSink {
    endpoint: Endpoint,
    database: String,
    auth: Vec<(String, String)>,
    /// Tables known to exist (created, or found by `IF NOT EXISTS`).
    created: HashSet<Table>,
    database_created: bool,
}

impl ClickHouseSink {
    /// The server of `c` (not contacted until the first write).
    pub fn new(c: &ClickHouseSection) -> Result<Self> {
        let mut auth = Vec::new();
        if let Some(u) = &c.user {
            auth.push(("user".to_string(), u.clone()));
        }
        if let Some(p) = &c.password {
            auth.push(("password".to_string(), p.clone()));
        }
        Ok(ClickHouseSink {
            endpoint: Endpoint::parse(&c.url)?,
            database: c.database.clone(),
            auth,
            created: HashSet::new(),
            database_created: false,
        })
    }

    /// Runs `query` with `body` appended to it (the data of an INSERT).
    fn run(&self, query: &str, body: &[u8]) -> Result<()> {
        let mut params: Vec<(&str, &str)> = vec![("query", query)];
        params.extend(self.auth.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let qs: String = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(params)
            .finish();
        let (status, answer) = post(&self.endpoint, &format!("/?{qs}"), body, TIMEOUT)?;
        if status != 200 {
            return Err(Error::Export {
                sink: "clickhouse",
                message: format!(
                    "HTTP {status} to {:?}: {}",
                    query.chars().take(80).collect::<String>(),
                    answer.trim_end()
                ),
            });
        }
        Ok(())
    }

    fn ensure(&mut self, table: Table) -> Result<()> {
        if !self.database_created {
            self.run(
                &format!("CREATE DATABASE IF NOT EXISTS {}", self.database),
                b"",
            )?;
            self.database_created = true;
        }
        if !self.created.contains(&table) {
            self.run(&ddl(&self.database, table), b"")?;
            self.created.insert(table);
        }
        Ok(())
    }
}

impl Sink for ClickHouseSink {
    fn name(&self) -> &'static str {
        "clickhouse"
    }

    fn write(&mut self, table: Table, batches: &[Batch]) -> std::result::Result<(), WriteError> {
        if let Err(e) = self.ensure(table) {
            // The server may have been replaced by an empty one: ask again next time.
            self.database_created = false;
            return Err(e.into());
        }
        let mut body = String::new();
        tsv(batches, &mut body);
        if body.is_empty() {
            return Ok(());
        }
        self.run(&insert(&self.database, table), body.as_bytes())
            .map_err(|e| {
                // A table dropped behind our back comes back with the next try.
                self.created.remove(&table);
                e.into()
            })
    }

    fn tick(&mut self, _now_ms: u64) -> Result<()> {
        Ok(())
    }

    fn close(&mut self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::table::Value;

    #[test]
    fn ddl_and_rows_in_the_old_server_forms() {
        assert_eq!(
            ddl("dta", Table::AppendGaps),
            "CREATE TABLE IF NOT EXISTS dta.append_gaps (`exported_ms` UInt64, `list` UInt32, \
             `first` UInt64, `lost` UInt64) ENGINE = ReplacingMergeTree() PARTITION BY \
             toYYYYMMDD(toDateTime(intDiv(`exported_ms`, 1000))) ORDER BY (list, first, exported_ms)"
        );
        let mut b = Batch::new(Table::KeyWriteValues, None, 9, 2);
        for (k, v) in [(1u32, "a\tb\\c\n"), (2, "")] {
            b.push(vec![
                Value::U64(9),
                Value::U32(k),
                Value::Str("found".into()),
                Value::Str(v.into()),
                Value::U32(2),
            ])
            .unwrap();
        }
        let mut out = String::new();
        tsv(&[b], &mut out);
        assert_eq!(out, "9\t1\tfound\ta\\tb\\\\c\\n\t2\n9\t2\tfound\t\t2\n");
    }

    #[test]
    fn the_deploy_docs_show_every_tables_ddl() {
        let docs =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/deploy.md"))
                .unwrap();
        for t in Table::ALL {
            assert!(
                docs.contains(&ddl("dta", t)),
                "docs/deploy.md lacks {}'s DDL",
                t.name()
            );
        }
    }
}
