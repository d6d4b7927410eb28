//! One region's bytes and geometry read under the arena's read lock: what every reader of the exporter
//! starts from (a leaf below them, so that the exporter's root and its readers do not import each other).

use crate::error::{Error, Result};
use crate::memory::{Arena, KindGeometry};

/// Runs `f` on the bytes and geometry of the region of geometry `G` with `id`, under the arena's read
/// lock (as `QueryEngine` does, without counting it as a query).
pub(crate) fn region<G: KindGeometry, T>(
    arena: &Arena,
    id: Option<u32>,
    f: impl FnOnce(&[u8], &G) -> Result<T>,
) -> Result<T> {
    let (slot, g) = arena.find_geometry::<G>(id)?;
    let mem = arena.read();
    let bytes = mem
        .as_slice()
        .get(slot.offset..slot.offset + slot.len())
        .ok_or_else(|| Error::BadQuery(format!("region {id:?} lies beyond the arena")))?;
    f(bytes, g)
}
