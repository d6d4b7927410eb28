//! `dta-protocol`: the contract between the DTA reporter, translator, collector and pktgen.
//!
//! * [`dta`]: DTA reports (reporter → translator) and DTA NACKs, in both base-header forms.
//! * [`roce`]: RoCEv2 headers (BTH, RETH, AtomicETH, AETH, AtomicAckETH), the iCRC and a frame builder.
//! * [`hash`]: the hash functions that place data in collector memory.
//! * [`layout`]: region geometries that the translator writes and the collector queries.
//! * [`int`]: In-band Network Telemetry reports (v0.5 as fabric-tna sends them, v2.0) and INT-MD stacks.
//! * [`mac`]: [`MacAddr`], the one MAC syntax of every configuration (`"02:00:00:00:00:01"`).
//!
//! Every header follows the smoltcp `wire` shape: a zero-copy `Packet<T: AsRef<[u8]>>` view whose
//! `new_checked` constructor validates the length once, so its accessors cannot go out of bounds, and a
//! `Repr` with `parse`, `emit` and `buffer_len` for the high-level form. Nothing here does I/O, reads a
//! clock or allocates on the hot path.
// Deny, not forbid: `roce::short_crc`'s PCLMULQDQ path (detected at run time, with a table fallback) is
// the one module allowed `unsafe`, for the per-frame iCRC.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod contract;
pub mod control;
pub mod dta;
mod error;
mod field;
pub mod hash;
pub mod int;
pub mod layout;
pub mod mac;
mod polynomials;
mod refusal;
pub mod roce;
pub mod udp;

pub use error::{Error, Result};
pub use mac::MacAddr;
