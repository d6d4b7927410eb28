//! Typed region lookups: each geometry type names its [`RegionKind`](dta_protocol::layout::RegionKind),
//! so a query asks the arena for a `KeyWriteGeometry` and gets one; no "found a region of the wrong kind"
//! case is left for callers.

// The trait and its impls come from the protocol's table of region kinds (`layout/kind.rs`), so every
// kind has its typed lookup.
pub use dta_protocol::layout::KindGeometry;

use super::{Arena, RegionSlot};
use crate::error::{Error, Result};

impl Arena {
    /// The first region of geometry `G` with `id` (any id when `None`), and its geometry.
    pub fn find_geometry<G: KindGeometry>(&self, id: Option<u32>) -> Result<(&RegionSlot, &G)> {
        self.slots()
            .iter()
            .find_map(|s| {
                let g = G::of(&s.region.geometry)?;
                id.map_or(true, |i| s.region.id == i).then_some((s, g))
            })
            .ok_or(Error::NoRegion { kind: G::KIND, id })
    }
}
