//! Region memory: one mapping (hugepages when the system has them) holding every configured region, with
//! guard gaps between regions, and the table that maps an R_Key and a VA to bytes of that mapping.

mod arena;
mod mapping;
mod typed;

pub use arena::{resolve, Arena, RegionSlot, Resolve, GUARD_LEN};
pub use mapping::{Mapping, PageKind};
pub use typed::KindGeometry;
