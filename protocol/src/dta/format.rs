//! [`ReportFormat`]: the translator's configuration that a report's parse needs (the base header form and
//! the data sizes that are not on the wire). Its own file, below the sub-headers, so that each sub-header's
//! parse can take it without importing the report that gathers them; its checks are in `report.rs`.

use super::base::HeaderForm;

/// What a report looks like under the translator's configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReportFormat {
    /// Base header form.
    pub form: HeaderForm,
    /// Key-Write data size D: one of [`DATA_LENS`](super::keywrite::DATA_LENS) (4, 12 or 28).
    pub keywrite_data_len: usize,
    /// Append entry size E, `1..=MAX_APPEND_ENTRY_LEN`.
    pub append_entry_len: usize,
}

impl Default for ReportFormat {
    /// Seq form, 4-byte Key-Write data, 4-byte Append entries (the reference's sizes).
    fn default() -> Self {
        ReportFormat {
            form: HeaderForm::Seq,
            keywrite_data_len: 4,
            append_entry_len: 4,
        }
    }
}
