//! The library's error type: one enum, so that the binary can report any failure with context.

use std::io;

/// What can go wrong while setting up or running the collector.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The configuration file could not be read or is invalid.
    #[error("configuration: {0}")]
    Config(String),
    /// A region geometry that cannot be laid out.
    #[error(transparent)]
    Geometry(#[from] dta_protocol::layout::GeometryError),
    /// Memory for the regions could not be mapped.
    #[error("cannot map {len} bytes for the regions: {source}")]
    Map {
        /// Bytes requested.
        len: usize,
        /// The OS error.
        source: io::Error,
    },
    /// The memory file that keeps the regions across restarts cannot be used as it is.
    #[error("memory file {path}: {message}")]
    MemoryFile {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong and what to do about it.
        message: String,
    },
    /// A query named a region that is not configured.
    #[error("no {kind} region{}", id.map(|i| format!(" with id {i}")).unwrap_or_default())]
    NoRegion {
        /// Region kind.
        kind: dta_protocol::layout::RegionKind,
        /// List or sketch id, when the kind has several.
        id: Option<u32>,
    },
    /// A query's arguments do not fit the region.
    #[error("bad query: {0}")]
    BadQuery(String),
    /// The RDMA backend failed.
    #[error("{0}")]
    Rdma(String),
    /// The history exporter could not write to a sink (Parquet files, ClickHouse).
    #[error("export to {sink}: {message}")]
    Export {
        /// The sink.
        sink: &'static str,
        /// What failed.
        message: String,
    },
    /// Socket or file I/O failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The OS error.
        source: io::Error,
    },
}

impl Error {
    /// Wraps an I/O error with what was being done.
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }
}

/// The library's result type.
pub type Result<T> = std::result::Result<T, Error>;
