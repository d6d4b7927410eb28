//! What a sink does with rows: the Parquet files and the ClickHouse server both take batches of one
//! table at a time, are told the time passes (rotation), and are closed at the end.

use super::table::{Batch, Table};
use crate::error::{Error, Result};

/// A write that failed part way.
#[derive(Debug)]
pub struct WriteError {
    /// The leading batches that were written (the caller keeps the rest and retries them).
    pub written: usize,
    /// Rows written earlier that the failure destroyed (a Parquet file abandoned mid-write).
    pub lost: u64,
    /// Why.
    pub error: Error,
}

impl From<Error> for WriteError {
    fn from(error: Error) -> Self {
        WriteError {
            written: 0,
            lost: 0,
            error,
        }
    }
}

/// A destination of exported rows.
pub trait Sink: Send {
    /// Its name, the `sink` label of the metrics.
    fn name(&self) -> &'static str;
    /// Writes `batches`, all of `table`, in order.
    fn write(&mut self, table: Table, batches: &[Batch]) -> std::result::Result<(), WriteError>;
    /// The time is `now_ms`: close what is due.
    fn tick(&mut self, now_ms: u64) -> Result<()>;
    /// Closes everything open, making it readable.
    fn close(&mut self) -> Result<()>;
}
