//! Typed region lookups: each geometry type names its [`RegionKind`], so a query asks the arena for a
//! `KeyWriteGeometry` and gets one; no "found a region of the wrong kind" case is left for callers.

use dta_protocol::layout::{
    AppendGeometry, Geometry, KeyIncrementGeometry, KeyWriteGeometry, PostcardGeometry, RegionKind,
    SketchGeometry,
};

use super::{Arena, RegionSlot};
use crate::error::{Error, Result};

/// A geometry type of one region kind.
pub trait KindGeometry: Sized {
    /// The kind it lays out.
    const KIND: RegionKind;
    /// The geometry, if `g` is of this kind.
    fn of(g: &Geometry) -> Option<&Self>;
}

macro_rules! kind_geometry {
    ($($ty:ty => $variant:ident),* $(,)?) => {$(
        impl KindGeometry for $ty {
            const KIND: RegionKind = RegionKind::$variant;
            fn of(g: &Geometry) -> Option<&Self> {
                match g {
                    Geometry::$variant(g) => Some(g),
                    _ => None,
                }
            }
        }
    )*};
}

kind_geometry! {
    KeyWriteGeometry => KeyWrite,
    KeyIncrementGeometry => KeyIncrement,
    PostcardGeometry => Postcarding,
    AppendGeometry => Append,
    SketchGeometry => Sketch,
}

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
