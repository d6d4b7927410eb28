//! RoCEv2 as the translator sends and consumes it (DESIGN.md section 4).
//!
//! One file per header: [`bth`], [`reth`], [`atomic_eth`], [`aeth`], [`atomic_ack_eth`]; the invariant CRC in
//! [`icrc`]; PSN arithmetic in [`psn`]; and [`frame`], which builds and parses whole
//! Ethernet/IPv4/UDP/BTH/.../iCRC frames (responses also at fixed offsets, in `response`); [`at`], the
//! frame offsets of every header's fields, which the fast paths index with; [`ack_template`], ACK frames
//! patched from a template.

pub mod ack_template;
pub mod aeth;
pub mod at;
pub mod atomic_ack_eth;
pub mod atomic_eth;
pub mod bth;
pub mod crc_table;
pub mod frame;
pub mod icrc;
pub mod psn;
mod response;
pub mod response_icrc;
pub mod reth;
pub mod short_crc;

pub use ack_template::AckTemplate;
pub use aeth::{AckKind, AethRepr, NakCode};
pub use atomic_ack_eth::AtomicAckEthRepr;
pub use atomic_eth::AtomicEthRepr;
pub use bth::{BthOpcode, BthRepr};
pub use frame::{Extension, FrameRepr};
pub use icrc::IcrcPrefix;
pub use psn::Psn;
pub use response::AckFields;
pub use response_icrc::ResponseIcrc;
pub use reth::RethRepr;

/// UDP destination port of RoCEv2.
pub const ROCEV2_UDP_PORT: u16 = 4791;
/// Length of the invariant CRC trailer.
pub const ICRC_LEN: usize = 4;
/// The default partition key.
pub const DEFAULT_PKEY: u16 = 0xFFFF;
/// The partition number bits of a P_Key: the top bit is the membership type (full or limited), which two
/// ends of one partition may differ in, so partitions are compared under this mask.
pub const PKEY_PARTITION_MASK: u16 = 0x7FFF;
/// PSNs are 24 bits wide and wrap; [`Psn`] does the arithmetic.
pub const PSN_MASK: u32 = 0x00FF_FFFF;
/// QP numbers are 24 bits wide. The same value as [`PSN_MASK`], kept apart because it masks another field:
/// a QPN is a name, never stepped or ordered as a PSN is.
pub const QPN_MASK: u32 = 0x00FF_FFFF;
