//! [`RegionKind`]: what a region is, without its sizes; the name configuration files, the HTTP API and
//! error messages use for it. (A file of its own so that `layout.rs` does not grow.)

use std::fmt;

use serde::{Deserialize, Serialize};

use super::Geometry;

/// The kind of a region, as [`Geometry`]'s `kind` tag spells it (`key_write`, `key_increment`,
/// `postcarding`, `append`, `sketch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RegionKind {
    /// Key-Write.
    KeyWrite,
    /// Key-Increment.
    KeyIncrement,
    /// Postcarding.
    Postcarding,
    /// Append list.
    Append,
    /// Sketch.
    Sketch,
}

impl RegionKind {
    /// Every kind, in [`Geometry`]'s order.
    pub const ALL: [RegionKind; 5] = [
        RegionKind::KeyWrite,
        RegionKind::KeyIncrement,
        RegionKind::Postcarding,
        RegionKind::Append,
        RegionKind::Sketch,
    ];

    /// The snake_case name, as configuration and the HTTP API spell it.
    pub const fn name(self) -> &'static str {
        match self {
            RegionKind::KeyWrite => "key_write",
            RegionKind::KeyIncrement => "key_increment",
            RegionKind::Postcarding => "postcarding",
            RegionKind::Append => "append",
            RegionKind::Sketch => "sketch",
        }
    }

    /// Whether a collector holds several regions of this kind, told apart by id (append lists, sketches).
    pub const fn has_ids(self) -> bool {
        matches!(self, RegionKind::Append | RegionKind::Sketch)
    }
}

impl fmt::Display for RegionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Geometry {
    /// The kind of region this geometry lays out.
    pub const fn kind(&self) -> RegionKind {
        match self {
            Geometry::KeyWrite(_) => RegionKind::KeyWrite,
            Geometry::KeyIncrement(_) => RegionKind::KeyIncrement,
            Geometry::Postcarding(_) => RegionKind::Postcarding,
            Geometry::Append(_) => RegionKind::Append,
            Geometry::Sketch(_) => RegionKind::Sketch,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The name is the geometry's serde tag and the kind's own serde form.
    #[test]
    fn names_match_the_geometry_tag() {
        let g = Geometry::Sketch(super::super::SketchGeometry::new(2, 4).unwrap());
        let json = serde_json::to_value(g).unwrap();
        assert_eq!(json["kind"], g.kind().name());
        for k in RegionKind::ALL {
            assert_eq!(serde_json::to_string(&k).unwrap(), format!("\"{k}\""));
        }
    }
}
