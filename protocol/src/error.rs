//! One error type for every parser and builder in the crate, with enough context to count drops by reason.

/// Why a header or frame could not be parsed or emitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The buffer ends before the header does.
    #[error("truncated {header}: need {needed} bytes, have {available}")]
    Truncated {
        /// Which header was being read.
        header: &'static str,
        /// Bytes the header needs.
        needed: usize,
        /// Bytes the buffer has.
        available: usize,
    },
    /// The buffer has a different length than the header's fields say.
    #[error("length mismatch in {header}: expected {expected} bytes, got {actual}")]
    LengthMismatch {
        /// Which header was being read.
        header: &'static str,
        /// Length the fields or the configuration imply.
        expected: usize,
        /// Length actually present.
        actual: usize,
    },
    /// A DTA base header carries an opcode this crate does not know.
    #[error("unknown DTA opcode {0:#04x}")]
    UnknownOpcode(u8),
    /// A Key-Write or Key-Increment redundancy outside `1..=N_MAX`.
    #[error("redundancy {value} outside 1..={max}")]
    BadRedundancy {
        /// The redundancy the report asked for.
        value: u8,
        /// The largest redundancy accepted.
        max: u8,
    },
    /// A field holds a value that the format does not allow.
    #[error("{header}: invalid {field} {value:#x}")]
    InvalidField {
        /// Which header was being read.
        header: &'static str,
        /// Which field.
        field: &'static str,
        /// The offending value.
        value: u64,
    },
    /// A BTH opcode that this crate does not build or parse.
    #[error("unsupported BTH opcode {0:#04x}")]
    UnsupportedBthOpcode(u8),
    /// The frame is not Ethernet/IPv4/UDP to the RoCEv2 port (or is malformed below the BTH).
    #[error("not a RoCEv2 frame: {0}")]
    NotRoce(&'static str),
    /// The iCRC carried by a frame does not match its contents.
    #[error("iCRC mismatch: frame carries {carried:#010x}, contents give {computed:#010x}")]
    IcrcMismatch {
        /// The iCRC the frame carries.
        carried: u32,
        /// The iCRC computed over the frame.
        computed: u32,
    },
    /// The output buffer is too small for what is being emitted.
    #[error("buffer too small: need {needed} bytes, have {available}")]
    BufferTooSmall {
        /// Bytes needed.
        needed: usize,
        /// Bytes available.
        available: usize,
    },
}

impl Error {
    /// [`Error::Truncated`]: `header` needs `needed` bytes where the buffer has `available`.
    pub(crate) fn truncated(header: &'static str, needed: usize, available: usize) -> Error {
        Error::Truncated {
            header,
            needed,
            available,
        }
    }

    /// [`Error::LengthMismatch`]: `header`'s fields say `expected` bytes where there are `actual`.
    pub(crate) fn mismatch(header: &'static str, expected: usize, actual: usize) -> Error {
        Error::LengthMismatch {
            header,
            expected,
            actual,
        }
    }
}

/// The crate's result type.
pub type Result<T> = core::result::Result<T, Error>;

/// Checks that `buf` holds at least `needed` bytes of `header`.
pub(crate) fn check_len(header: &'static str, buf: &[u8], needed: usize) -> Result<()> {
    if buf.len() < needed {
        Err(Error::Truncated {
            header,
            needed,
            available: buf.len(),
        })
    } else {
        Ok(())
    }
}

/// Checks that an output buffer can take `needed` bytes.
pub(crate) fn check_room(buf: &[u8], needed: usize) -> Result<()> {
    if buf.len() < needed {
        Err(Error::BufferTooSmall {
            needed,
            available: buf.len(),
        })
    } else {
        Ok(())
    }
}
