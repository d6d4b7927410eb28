//! One error type for every backend, each variant carrying what was being done when it failed.

use std::path::PathBuf;

/// Errors of `dta-netio`. Per-frame conditions (queue full, oversize frame) are not errors: backends count
/// them in [`RxStats`](crate::RxStats) / [`TxStats`](crate::TxStats) and go on with the burst.
#[derive(Debug, thiserror::Error)]
pub enum NetioError {
    /// A system call failed; `context` names the call and the object (interface, file, namespace).
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// Reading or writing a pcap file failed.
    #[error("pcap file {path}: {source}")]
    Pcap {
        path: PathBuf,
        #[source]
        source: pcap_file::PcapError,
    },
    /// The pcap file holds frames of a link type other than Ethernet, which no dta component can parse.
    #[error("pcap file {path}: link type {link_type} is not Ethernet (1)")]
    PcapLinkType { path: PathBuf, link_type: u32 },
    /// A frame was pushed into a batch whose slots are smaller than the frame.
    #[error("frame of {len} bytes does not fit a {slot_size}-byte batch slot")]
    FrameTooLong { len: usize, slot_size: usize },
    /// A frame was pushed into a batch that already holds `capacity` frames.
    #[error("frame batch is full ({capacity} frames)")]
    BatchFull { capacity: usize },
    /// A configuration value is out of range (interface name, queue count, burst size, ...).
    #[error("invalid configuration: {0}")]
    Config(String),
    /// A DPDK call returned an error; `errno` is the positive error code (from the return value or `rte_errno`).
    #[error("DPDK {call} failed: {message} (errno {errno})")]
    Dpdk {
        call: String,
        errno: i32,
        message: String,
    },
}

impl NetioError {
    /// Wraps the calling thread's last OS error (`errno`) with a context string.
    pub(crate) fn last_os(context: impl Into<String>) -> Self {
        NetioError::Io {
            context: context.into(),
            source: std::io::Error::last_os_error(),
        }
    }

    /// Whether this is the link being down (ENETDOWN, or ENXIO for an interface without carrier): a state
    /// that passes when the link comes back, which a daemon waits out rather than exits on.
    pub fn is_link_down(&self) -> bool {
        matches!(
            self,
            NetioError::Io { source, .. }
                if matches!(source.raw_os_error(), Some(libc::ENETDOWN | libc::ENXIO))
        )
    }

    /// Wraps an `io::Error` with a context string.
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        NetioError::Io {
            context: context.into(),
            source,
        }
    }
}
