//! Errors of the library: configuration and collector setup. Reports and responses never produce errors
//! for the caller; they are dropped and counted.

use thiserror::Error;

/// A configuration or regions file the engine cannot run with.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ConfigError {
    /// The TOML did not parse or had an unknown field.
    #[error("configuration: {0}")]
    Toml(String),
    /// A value outside what the engine supports.
    #[error("configuration: {field} = {value} is invalid ({why})")]
    Invalid {
        /// Dotted field name.
        field: &'static str,
        /// Offending value.
        value: u64,
        /// What it must be instead.
        why: &'static str,
    },
    /// The report format (sizes, header form) is inconsistent.
    #[error("configuration: report format: {0}")]
    Report(String),
    /// A collector's advertised regions or QPs do not fit the configuration.
    #[error("collector {collector}: {why}")]
    Collector {
        /// Index of the collector.
        collector: usize,
        /// What is wrong.
        why: String,
    },
}
