//! A whole DTA report: base header and the opcode's sub-header, parsed from and emitted to a UDP payload.
//!
//! The data sizes of Key-Write and Append are not on the wire, so parsing needs the [`ReportFormat`] the
//! translator is configured with; the base header form is configuration for the same reason. The parse
//! itself is in `parse.rs`: one body, specialised for callers that want the reason and callers that do not.

use super::append;
use super::base::{BaseRepr, HeaderForm};
use super::keywrite::{self, DATA_LENS};
use super::Opcode;
use crate::error::check_room;
use crate::{Error, Result};

pub use super::format::ReportFormat;

const HEADER: &str = "DTA report";

/// Largest Append entry a format accepts. 1024 bytes keep a report (3 + 4 + 1024 bytes) well inside a
/// 1500-byte MTU and bound the translator's per-list batch buffer (16 entries) to 16 KiB.
pub const MAX_APPEND_ENTRY_LEN: usize = 1024;

impl ReportFormat {
    /// A format whose sizes are checked (see [`validate`](Self::validate)).
    pub fn new(
        form: HeaderForm,
        keywrite_data_len: usize,
        append_entry_len: usize,
    ) -> Result<Self> {
        let fmt = ReportFormat {
            form,
            keywrite_data_len,
            append_entry_len,
        };
        fmt.validate()?;
        Ok(fmt)
    }

    /// Checks that D is one of [`DATA_LENS`] and E is in `1..=MAX_APPEND_ENTRY_LEN`. The fields are public,
    /// so a format built by hand may skip this; parsing then simply requires the sizes it names.
    pub fn validate(&self) -> Result<()> {
        if !DATA_LENS.contains(&self.keywrite_data_len) {
            return Err(Error::InvalidField {
                header: HEADER,
                field: "keywrite_data_len",
                value: self.keywrite_data_len as u64,
            });
        }
        if self.append_entry_len == 0 || self.append_entry_len > MAX_APPEND_ENTRY_LEN {
            return Err(Error::InvalidField {
                header: HEADER,
                field: "append_entry_len",
                value: self.append_entry_len as u64,
            });
        }
        Ok(())
    }
}

/// The report's [`Body`] from the primitives' list (`with_primitives!` in `mod.rs`): one variant per
/// opcode, named as the opcode and holding its sub-header's type.
macro_rules! bodies {
    ($(
        $(#[$doc:meta])*
        $variant:ident = $code:literal, $constant:ident, body $body:ty,
        label $label:literal, contract $contract:literal, summary $summary:literal;
    )*) => {
        /// The sub-header of a report, one variant per opcode.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Body<'a> {
            $(
                #[doc = concat!("Opcode ", stringify!($code), ".")]
                $variant($body),
            )*
        }

        impl Body<'_> {
            /// The opcode that carries this sub-header.
            pub const fn opcode(&self) -> Opcode {
                match self {
                    $(Body::$variant(_) => Opcode::$variant,)*
                }
            }

            /// Bytes the sub-header takes.
            pub const fn buffer_len(&self) -> usize {
                match self {
                    $(Body::$variant(r) => r.buffer_len(),)*
                }
            }

            fn emit(&self, buf: &mut [u8]) -> Result<()> {
                match self {
                    $(Body::$variant(r) => r.emit(buf),)*
                }
            }
        }
    };
}

with_primitives!(bodies);

/// A parsed DTA report; variable data borrows the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReportRepr<'a> {
    /// The base header; its opcode must be the body's.
    pub base: BaseRepr,
    /// The sub-header.
    pub body: Body<'a>,
}

impl<'a> ReportRepr<'a> {
    /// A report carrying `body` with a base header of `form` (seqnum dropped in the compact form), flags clear.
    pub const fn new(body: Body<'a>, form: HeaderForm, seqnum: u8) -> Self {
        ReportRepr {
            base: BaseRepr::new(body.opcode(), form, seqnum),
            body,
        }
    }

    /// Bytes [`emit`](Self::emit) writes under `fmt`.
    pub const fn buffer_len(&self, fmt: &ReportFormat) -> usize {
        fmt.form.header_len() + self.body.buffer_len()
    }

    /// Writes the report at the start of `buf` and returns the bytes written. The report must be one that
    /// [`parse`](Self::parse) would accept under `fmt`: base form and data sizes as configured, the base
    /// opcode the body's. Nothing is written when it is not.
    pub fn emit(&self, buf: &mut [u8], fmt: &ReportFormat) -> Result<usize> {
        if self.base.form() != fmt.form {
            return Err(Error::InvalidField {
                header: HEADER,
                field: "seqnum",
                value: self.base.seqnum.map_or(0, u64::from),
            });
        }
        if self.base.opcode != self.body.opcode() {
            return Err(Error::InvalidField {
                header: HEADER,
                field: "opcode",
                value: self.base.opcode.code().into(),
            });
        }
        match self.body {
            Body::KeyWrite(r) => data_len(
                "DTA Key-Write",
                keywrite::HEADER_LEN,
                r.data,
                fmt.keywrite_data_len,
            )?,
            Body::Append(r) => data_len(
                "DTA Append",
                append::HEADER_LEN,
                r.data,
                fmt.append_entry_len,
            )?,
            _ => {}
        }
        let len = self.buffer_len(fmt);
        check_room(buf, len)?;
        let (head, rest) = buf[..len].split_at_mut(fmt.form.header_len());
        // The body validates its own fields, so emit it first: a bad body leaves the buffer untouched.
        self.body.emit(rest)?;
        self.base.emit(head)?;
        Ok(len)
    }
}

/// Requires configured-size data to have exactly the configured size; lengths are reported for the whole
/// sub-header, as [`ReportRepr::parse`] reports them.
fn data_len(header: &'static str, fixed: usize, data: &[u8], expected: usize) -> Result<()> {
    if data.len() != expected {
        return Err(Error::LengthMismatch {
            header,
            expected: fixed + expected,
            actual: fixed + data.len(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests;
