//! Region memory: one mapping (hugepages when the system has them, or a file whose bytes outlive the
//! process) holding every configured region, with guard gaps between regions, and the table that maps an R_Key and a VA to bytes of that mapping.

mod arena;
mod mapping;
mod persist;
mod typed;

pub use arena::{resolve, Arena, RegionSlot, Resolve, GUARD_LEN};
pub use mapping::{Mapping, PageKind};
pub use persist::Opened;
pub use typed::KindGeometry;
