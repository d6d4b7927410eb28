//! The exported tables: one description per table (its columns and their types), from which the Parquet
//! schema, the ClickHouse DDL and the docs' schema tables all come, and the column-wise batches of rows
//! the sinks take.

use crate::error::{Error, Result};

/// A column's type, as both sinks store it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    /// Milliseconds since the Unix epoch (UTC): Parquet `TIMESTAMP(MILLIS, UTC)`, ClickHouse `UInt64`
    /// (18.16 has no `DateTime64`).
    TimeMs,
    /// Parquet `UINT_8`, ClickHouse `UInt8`.
    U8,
    /// Parquet `UINT_16`, ClickHouse `UInt16`.
    U16,
    /// Parquet `UINT_32`, ClickHouse `UInt32`.
    U32,
    /// Parquet `UINT_64`, ClickHouse `UInt64`.
    U64,
    /// Parquet `STRING`, ClickHouse `String`.
    Str,
}

impl Type {
    /// The ClickHouse type.
    pub fn clickhouse(self) -> &'static str {
        match self {
            Type::TimeMs | Type::U64 => "UInt64",
            Type::U8 => "UInt8",
            Type::U16 => "UInt16",
            Type::U32 => "UInt32",
            Type::Str => "String",
        }
    }
}

/// The exported tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Table {
    /// INT drop events (`[int] drop_list`), decoded.
    DropEvents,
    /// INT congestion events (`[int] queue_list`), decoded.
    QueueEvents,
    /// Entries of every other Append list, raw.
    AppendEntries,
    /// Entries a ring overwrote before the exporter read them: one row per gap.
    AppendGaps,
    /// INT drop counters per (node, reason): what each epoch added.
    DropCounts,
    /// Key-Write answers of the key set, per epoch.
    KeyWriteValues,
    /// Key-Increment answers of the key set, per epoch.
    KeyIncrementValues,
    /// Sketch counters that changed since the previous epoch.
    SketchCounters,
    /// One row per sketch that changed in an epoch.
    SketchSummaries,
}

use Type::*;

impl Table {
    /// Every table.
    pub const ALL: [Table; 9] = [
        Table::DropEvents,
        Table::QueueEvents,
        Table::AppendEntries,
        Table::AppendGaps,
        Table::DropCounts,
        Table::KeyWriteValues,
        Table::KeyIncrementValues,
        Table::SketchCounters,
        Table::SketchSummaries,
    ];

    /// Its name: the Parquet directory and the ClickHouse table.
    pub fn name(self) -> &'static str {
        match self {
            Table::DropEvents => "drop_events",
            Table::QueueEvents => "queue_events",
            Table::AppendEntries => "append_entries",
            Table::AppendGaps => "append_gaps",
            Table::DropCounts => "drop_counts",
            Table::KeyWriteValues => "keywrite_values",
            Table::KeyIncrementValues => "keyincrement_values",
            Table::SketchCounters => "sketch_counters",
            Table::SketchSummaries => "sketch_summaries",
        }
    }

    /// Its columns, in order; the first is always the row's time.
    pub fn columns(self) -> &'static [(&'static str, Type)] {
        match self {
            Table::DropEvents => &[
                ("exported_ms", TimeMs),
                ("list", U32),
                ("index", U64),
                ("flow", U32),
                ("node", U32),
                ("port", U16),
                ("reason", U8),
                ("queue_id", U8),
                ("timestamp", U32),
            ],
            Table::QueueEvents => &[
                ("exported_ms", TimeMs),
                ("list", U32),
                ("index", U64),
                ("node", U32),
                ("port", U16),
                ("queue_id", U8),
                ("occupancy", U32),
                ("timestamp", U32),
            ],
            Table::AppendEntries => &[
                ("exported_ms", TimeMs),
                ("list", U32),
                ("index", U64),
                ("entry", Str),
            ],
            Table::AppendGaps => &[
                ("exported_ms", TimeMs),
                ("list", U32),
                ("first", U64),
                ("lost", U64),
            ],
            Table::DropCounts => &[
                ("epoch_ms", TimeMs),
                ("node", U32),
                ("reason", U8),
                ("count", U64),
                ("total", U64),
            ],
            Table::KeyWriteValues => &[
                ("epoch_ms", TimeMs),
                ("key", U32),
                ("outcome", Str),
                ("value", Str),
                ("votes", U32),
            ],
            Table::KeyIncrementValues => &[
                ("epoch_ms", TimeMs),
                ("key", U32),
                ("estimate", U64),
                ("delta", U64),
            ],
            Table::SketchCounters => &[
                ("epoch_ms", TimeMs),
                ("sketch", U32),
                ("row", U8),
                ("column", U16),
                ("value", U32),
                ("previous", U32),
            ],
            Table::SketchSummaries => &[
                ("epoch_ms", TimeMs),
                ("sketch", U32),
                ("merge", Str),
                ("changed", U64),
                ("nonzero", U64),
                ("total", U64),
                ("cardinality", U64),
            ],
        }
    }

    /// The ClickHouse sorting key, which is also what identifies a row: the tables are
    /// `ReplacingMergeTree`s, so a retried insert's rows (the same rows, times included) collapse into
    /// one. It ends with the row's time so that a collector restarted with fresh rings (indices from 0
    /// again) adds rows rather than replacing the old ones.
    pub fn order_by(self) -> &'static str {
        match self {
            Table::DropEvents | Table::QueueEvents | Table::AppendEntries => {
                "(list, index, exported_ms)"
            }
            Table::AppendGaps => "(list, first, exported_ms)",
            Table::DropCounts => "(node, reason, epoch_ms)",
            Table::KeyWriteValues | Table::KeyIncrementValues => "(key, epoch_ms)",
            Table::SketchCounters => "(sketch, row, column, epoch_ms)",
            Table::SketchSummaries => "(sketch, epoch_ms)",
        }
    }

    /// Whether its rows come from one list each (partitioned by `list=<id>`).
    pub fn by_list(self) -> bool {
        matches!(
            self,
            Table::DropEvents | Table::QueueEvents | Table::AppendEntries | Table::AppendGaps
        )
    }
}

/// One column's values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Column {
    /// [`Type::TimeMs`] and [`Type::U64`].
    U64(Vec<u64>),
    /// [`Type::U8`].
    U8(Vec<u8>),
    /// [`Type::U16`].
    U16(Vec<u16>),
    /// [`Type::U32`].
    U32(Vec<u32>),
    /// [`Type::Str`].
    Str(Vec<String>),
}

impl Column {
    fn of(t: Type, cap: usize) -> Self {
        match t {
            TimeMs | U64 => Column::U64(Vec::with_capacity(cap)),
            U8 => Column::U8(Vec::with_capacity(cap)),
            U16 => Column::U16(Vec::with_capacity(cap)),
            U32 => Column::U32(Vec::with_capacity(cap)),
            Str => Column::Str(Vec::with_capacity(cap)),
        }
    }

    fn push(&mut self, v: Value) -> bool {
        match (self, v) {
            (Column::U64(c), Value::U64(x)) => c.push(x),
            (Column::U8(c), Value::U8(x)) => c.push(x),
            (Column::U16(c), Value::U16(x)) => c.push(x),
            (Column::U32(c), Value::U32(x)) => c.push(x),
            (Column::Str(c), Value::Str(x)) => c.push(x),
            _ => return false,
        }
        true
    }
}

/// One value of a row being added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A time or a u64.
    U64(u64),
    /// A u8.
    U8(u8),
    /// A u16.
    U16(u16),
    /// A u32.
    U32(u32),
    /// A string.
    Str(String),
}

/// Rows of one table (and one list, for the list tables), column by column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    /// The table.
    pub table: Table,
    /// The list the rows came from (list tables only).
    pub list: Option<u32>,
    /// When the rows were read (ms since the Unix epoch): the Parquet hour partition.
    pub time_ms: u64,
    /// The columns, as [`Table::columns`] orders them.
    pub columns: Vec<Column>,
    rows: usize,
}

impl Batch {
    /// An empty batch with room for `cap` rows.
    pub fn new(table: Table, list: Option<u32>, time_ms: u64, cap: usize) -> Self {
        Batch {
            table,
            list,
            time_ms,
            columns: table
                .columns()
                .iter()
                .map(|&(_, t)| Column::of(t, cap))
                .collect(),
            rows: 0,
        }
    }

    /// Adds a row; its values must match the table's columns (a bug otherwise, refused whole).
    pub fn push(&mut self, row: Vec<Value>) -> Result<()> {
        if row.len() != self.columns.len() {
            return Err(self.mismatch());
        }
        // Check every type first, so that a bad row leaves no column longer than the others.
        let fits = self
            .columns
            .iter()
            .zip(&row)
            .all(|(c, v)| Column::of_value_kind(c) == Value::kind(v));
        if !fits {
            return Err(self.mismatch());
        }
        for (c, v) in self.columns.iter_mut().zip(row) {
            c.push(v);
        }
        self.rows += 1;
        Ok(())
    }

    fn mismatch(&self) -> Error {
        Error::Export {
            sink: "exporter",
            message: format!("a row that does not fit table {}", self.table.name()),
        }
    }

    /// Rows held.
    pub fn len(&self) -> usize {
        self.rows
    }

    /// Whether it holds no row.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }
}

impl Column {
    fn of_value_kind(&self) -> u8 {
        match self {
            Column::U64(_) => 0,
            Column::U8(_) => 1,
            Column::U16(_) => 2,
            Column::U32(_) => 3,
            Column::Str(_) => 4,
        }
    }
}

impl Value {
    fn kind(&self) -> u8 {
        match self {
            Value::U64(_) => 0,
            Value::U8(_) => 1,
            Value::U16(_) => 2,
            Value::U32(_) => 3,
            Value::Str(_) => 4,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_must_fit_the_table() {
        let mut b = Batch::new(Table::AppendGaps, Some(3), 0, 1);
        let good = vec![Value::U64(1), Value::U32(3), Value::U64(0), Value::U64(5)];
        b.push(good).unwrap();
        assert!(b
            .push(vec![
                Value::U64(1),
                Value::U64(3),
                Value::U64(0),
                Value::U64(5)
            ])
            .is_err());
        assert!(b.push(vec![Value::U64(1)]).is_err());
        assert_eq!(b.len(), 1);
        assert!(b.columns.iter().all(|c| match c {
            Column::U64(v) => v.len() == 1,
            Column::U32(v) => v.len() == 1,
            _ => false,
        }));
    }

    #[test]
    fn every_table_starts_with_its_time() {
        for t in Table::ALL {
            assert_eq!(t.columns()[0].1, Type::TimeMs, "{}", t.name());
        }
    }
}
