//! The reporter library's error type.

use dta_protocol::dta::Opcode;

/// Why a report could not be built, sent or a NACK handled.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The report does not fit the wire format (bad redundancy, wrong data size, ...).
    #[error("invalid report: {0}")]
    Wire(#[from] dta_protocol::Error),
    /// A retransmittable report needs the seq base header: the compact form has no seqnum to NACK.
    #[error("{0:?} report marked retransmittable, but the compact header form has no seqnum")]
    RetransmitNeedsSeq(Opcode),
    /// A socket operation failed.
    #[error("socket: {0}")]
    Io(#[from] std::io::Error),
    /// DART mode could not be set up or driven.
    #[error("DART: {0}")]
    Dart(String),
}

/// Result with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
