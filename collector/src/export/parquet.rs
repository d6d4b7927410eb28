//! The Parquet sink: one open file per (table, list, hour), partitioned as
//! `<dir>/<table>/list=<id>/hour=<YYYY-MM-DDTHH>/part-<opened ms>-<seq>.parquet` (tables of no list have
//! no `list=` level), Snappy-compressed, rotated by age and size.
//!
//! A file is written as `.part-….parquet.tmp` and renamed when closed: a Parquet file is readable only
//! once its footer is written, and engines skip dot-files, so a reader never meets a half-written one.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{
    ArrayRef, RecordBatch, StringArray, TimestampMillisecondArray, UInt16Array, UInt32Array,
    UInt64Array, UInt8Array,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use super::sink::{Sink, WriteError};
use super::table::{Batch, Column, Table, Type};
use super::time::hour;
use crate::config::ParquetSection;
use crate::error::{Error, Result};

/// Rows per row group: bounds the memory an open file holds before it reaches the disk.
const ROW_GROUP_ROWS: usize = 128 * 1024;

/// The Arrow schema of `table`.
pub fn schema(table: Table) -> SchemaRef {
    let fields: Vec<Field> = table
        .columns()
        .iter()
        .map(|&(name, t)| {
            let dt = match t {
                Type::TimeMs => DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
                Type::U8 => DataType::UInt8,
                Type::U16 => DataType::UInt16,
                Type::U32 => DataType::UInt32,
                Type::U64 => DataType::UInt64,
                Type::Str => DataType::Utf8,
            };
            Field::new(name, dt, false)
        })
        .collect();
    Arc::new(Schema::new(fields))
}

/// A batch as an Arrow record batch.
fn record_batch(b: &Batch) -> Result<RecordBatch> {
    let arrays: Vec<ArrayRef> = b
        .columns
        .iter()
        .zip(b.table.columns())
        .map(|(c, &(_, t))| -> ArrayRef {
            match c {
                Column::U64(v) if t == Type::TimeMs => Arc::new(
                    TimestampMillisecondArray::from(
                        v.iter()
                            .map(|&ms| i64::try_from(ms).unwrap_or(i64::MAX))
                            .collect::<Vec<_>>(),
                    )
                    .with_timezone("UTC"),
                ),
                Column::U64(v) => Arc::new(UInt64Array::from(v.clone())),
                Column::U8(v) => Arc::new(UInt8Array::from(v.clone())),
                Column::U16(v) => Arc::new(UInt16Array::from(v.clone())),
                Column::U32(v) => Arc::new(UInt32Array::from(v.clone())),
                Column::Str(v) => Arc::new(StringArray::from_iter_values(v)),
            }
        })
        .collect();
    RecordBatch::try_new(schema(b.table), arrays).map_err(|e| fail(e.to_string()))
}

fn fail(message: String) -> Error {
    Error::Export {
        sink: "parquet",
        message,
    }
}

/// Where a batch's rows go: table, list, hour.
type Partition = (Table, Option<u32>, String);

struct OpenFile {
    writer: ArrowWriter<File>,
    /// Rows written into it, lost if it has to be abandoned.
    rows: u64,
    tmp: PathBuf,
    done: PathBuf,
    opened_ms: u64,
}

/// Parquet files under a directory.
pub struct ParquetSink {
    dir: PathBuf,
    rotate_ms: u64,
    rotate_bytes: usize,
    open: BTreeMap<Partition, OpenFile>,
    /// Distinguishes files opened in the same millisecond.
    seq: u64,
    /// The newest time seen: files of an older hour are closed at the next tick.
    now_ms: u64,
}

impl ParquetSink {
    /// Files under `c.dir` (made if missing).
    pub fn new(c: &ParquetSection) -> Result<Self> {
        std::fs::create_dir_all(&c.dir)
            .map_err(|e| Error::io(format!("making the export dir {}", c.dir.display()), e))?;
        Ok(ParquetSink {
            dir: c.dir.clone(),
            rotate_ms: c.rotate_secs.saturating_mul(1000),
            rotate_bytes: usize::try_from(c.rotate_mib.saturating_mul(1 << 20))
                .unwrap_or(usize::MAX),
            open: BTreeMap::new(),
            seq: 0,
            now_ms: 0,
        })
    }

    fn partition_dir(&self, p: &Partition) -> PathBuf {
        let mut d = self.dir.join(p.0.name());
        if let Some(list) = p.1 {
            d = d.join(format!("list={list}"));
        }
        d.join(format!("hour={}", p.2))
    }

    fn open_file(&mut self, p: &Partition, now_ms: u64) -> Result<OpenFile> {
        let dir = self.partition_dir(p);
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::io(format!("making {}", dir.display()), e))?;
        self.seq += 1;
        let name = format!("part-{now_ms}-{:06}.parquet", self.seq);
        let tmp = dir.join(format!(".{name}.tmp"));
        let file =
            File::create(&tmp).map_err(|e| Error::io(format!("creating {}", tmp.display()), e))?;
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_max_row_group_size(ROW_GROUP_ROWS)
            .build();
        let writer = ArrowWriter::try_new(file, schema(p.0), Some(props))
            .map_err(|e| fail(format!("{}: {e}", tmp.display())))?;
        Ok(OpenFile {
            writer,
            rows: 0,
            tmp,
            done: dir.join(name),
            opened_ms: now_ms,
        })
    }

    fn close_file(f: OpenFile) -> Result<()> {
        f.writer
            .close()
            .map_err(|e| fail(format!("closing {}: {e}", f.tmp.display())))?;
        std::fs::rename(&f.tmp, &f.done)
            .map_err(|e| Error::io(format!("renaming {}", f.tmp.display()), e))
    }

    /// Closes the files `due` says are done; the first error is returned after trying them all.
    fn close_where(&mut self, due: impl Fn(&Partition, &OpenFile) -> bool) -> Result<()> {
        let keys: Vec<Partition> = self
            .open
            .iter()
            .filter(|(p, f)| due(p, f))
            .map(|(p, _)| p.clone())
            .collect();
        let mut first = Ok(());
        for p in keys {
            if let Some(f) = self.open.remove(&p) {
                if let Err(e) = Self::close_file(f) {
                    first = first.and(Err(e));
                }
            }
        }
        first
    }

    /// The directory the files are written under.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Sink for ParquetSink {
    fn name(&self) -> &'static str {
        "parquet"
    }

    fn write(&mut self, table: Table, batches: &[Batch]) -> std::result::Result<(), WriteError> {
        for (written, b) in batches.iter().enumerate() {
            let at = |error: Error| WriteError {
                written,
                lost: 0,
                error,
            };
            if b.is_empty() {
                continue;
            }
            let p: Partition = (table, b.list, hour(b.time_ms));
            self.now_ms = self.now_ms.max(b.time_ms);
            if !self.open.contains_key(&p) {
                let f = self.open_file(&p, b.time_ms).map_err(at)?;
                self.open.insert(p.clone(), f);
            }
            let rb = record_batch(b).map_err(at)?;
            let Some(f) = self.open.get_mut(&p) else {
                continue;
            };
            if let Err(e) = f.writer.write(&rb) {
                // A writer that failed mid-batch is in an unknown state: abandon the file (its earlier
                // rows go with it, counted as lost) rather than append after a torn batch.
                let lost = self.open.remove(&p).map_or(0, |f| {
                    let _ = std::fs::remove_file(&f.tmp);
                    f.rows
                });
                return Err(WriteError {
                    written,
                    lost,
                    error: fail(format!("writing {}: {e}", table.name())),
                });
            }
            f.rows += b.len() as u64;
            if f.writer.bytes_written() + f.writer.in_progress_size() >= self.rotate_bytes {
                if let Some(f) = self.open.remove(&p) {
                    // The batch is in the file's buffers: a failed close loses it with the file.
                    let rows = f.rows;
                    Self::close_file(f).map_err(|error| WriteError {
                        written: written + 1,
                        lost: rows,
                        error,
                    })?;
                }
            }
        }
        Ok(())
    }

    fn tick(&mut self, now_ms: u64) -> Result<()> {
        self.now_ms = self.now_ms.max(now_ms);
        let (now, rotate, this_hour) = (self.now_ms, self.rotate_ms, hour(self.now_ms));
        self.close_where(|p, f| now.saturating_sub(f.opened_ms) >= rotate || p.2 != this_hour)
    }

    fn close(&mut self) -> Result<()> {
        self.close_where(|_, _| true)
    }
}

impl Drop for ParquetSink {
    fn drop(&mut self) {
        if let Err(e) = self.close() {
            log::warn!("export: closing the Parquet files: {e}");
        }
    }
}
