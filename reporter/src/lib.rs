//! `dta-reporter`: the host side of DTA.
//!
//! * [`report`]: owned, typed reports for every opcode, emitted in either base-header form through
//!   `dta-protocol` (this crate never writes DTA bytes by hand).
//! * [`seq`]: sequence numbers per collector and opcode.
//! * [`retransmit`]: the bounded buffer of retransmittable reports that a DTA NACK replays.
//! * [`sender`]: a [`Reporter`] over a std `UdpSocket` that ties the three together.
//! * [`pace`]: a packets-per-second pacer shared by the CLI and `dta-pktgen`.
//! * [`dart`]: DART mode, writing Key-Write data straight into a collector with the translator's requester.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod dart;
pub mod error;
pub mod pace;
pub mod report;
pub mod retransmit;
pub mod sender;
pub mod seq;

pub use error::{Error, Result};
pub use report::Report;
pub use sender::{Reporter, ReporterConfig, Stats};
