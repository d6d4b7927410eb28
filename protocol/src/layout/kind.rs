//! The region kinds, declared once ([`with_region_kinds!`]): [`RegionKind`], what a region is without its
//! sizes (the name configuration files, the HTTP API and error messages use for it), [`Geometry`], the
//! tagged union of their layouts, and [`KindGeometry`], the typed lookup of one kind's layout, all come
//! from the one table below. A new region kind is one line there plus its geometry type; every collector
//! match on a kind is exhaustive, so the compiler names each place that must handle it. (A file of its
//! own so that `layout.rs` does not grow.)

use std::fmt;

use serde::{Deserialize, Serialize};

use super::{AppendGeometry, KeyIncrementGeometry, KeyWriteGeometry};
use super::{PostcardGeometry, SketchGeometry};

/// The table of region kinds: the variant (of [`RegionKind`] and of [`Geometry`], whose serde tag is its
/// snake_case name), its geometry type, its name (the same snake_case), its label in the collector's
/// query metrics (`kind="keywrite"`, as dashboards read it), whether a collector holds several
/// told apart by id (`ids yes`), and whether a region takes a redundancy up to its geometry's `n_max()`
/// (`redundancy yes`). `with_region_kinds!(m)` calls the macro `m` with it.
macro_rules! with_region_kinds {
    ($then:ident) => {
        $then! {
            /// Key-Write.
            KeyWrite(KeyWriteGeometry), name "key_write", query "keywrite",
                ids no, redundancy yes;
            /// Key-Increment.
            KeyIncrement(KeyIncrementGeometry), name "key_increment", query "keyincrement",
                ids no, redundancy yes;
            /// Postcarding.
            Postcarding(PostcardGeometry), name "postcarding", query "postcard",
                ids no, redundancy yes;
            /// Append list.
            Append(AppendGeometry), name "append", query "append",
                ids yes, redundancy no;
            /// Sketch.
            Sketch(SketchGeometry), name "sketch", query "sketch",
                ids yes, redundancy no;
        }
    };
}

/// A `yes`/`no` column of the table as a `bool`.
macro_rules! yes {
    (yes) => {
        true
    };
    (no) => {
        false
    };
}

/// A region's `n_max`, for kinds that take a redundancy.
macro_rules! n_max {
    (yes, $g:expr) => {
        Some($g.n_max())
    };
    (no, $g:expr) => {{
        let _ = $g;
        None
    }};
}

macro_rules! region_kinds {
    ($(
        $(#[$doc:meta])*
        $variant:ident($geometry:ty), name $name:literal, query $query:literal, ids $ids:ident,
        redundancy $red:ident;
    )*) => {
        /// The kind of a region, as [`Geometry`]'s `kind` tag spells it (`key_write`, `key_increment`,
        /// `postcarding`, `append`, `sketch`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum RegionKind {
            $($(#[$doc])* $variant,)*
        }

        impl RegionKind {
            /// Every kind, in [`Geometry`]'s order.
            pub const ALL: [RegionKind; [$($name),*].len()] = [$(RegionKind::$variant),*];

            /// The snake_case name, as configuration and the HTTP API spell it.
            pub const fn name(self) -> &'static str {
                match self {
                    $(RegionKind::$variant => $name,)*
                }
            }

            /// Its label in the collector's query metrics (`dta_collector_queries{kind="keywrite"}`).
            pub const fn query_label(self) -> &'static str {
                match self {
                    $(RegionKind::$variant => $query,)*
                }
            }

            /// Whether a collector holds several regions of this kind, told apart by id (append lists,
            /// sketches).
            pub const fn has_ids(self) -> bool {
                match self {
                    $(RegionKind::$variant => yes!($ids),)*
                }
            }
        }

        /// The geometry of one region, tagged by kind, as configuration files and the control channel
        /// carry it.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(tag = "kind", rename_all = "snake_case")]
        pub enum Geometry {
            $($(#[$doc])* $variant($geometry),)*
        }

        impl Geometry {
            /// The kind of region this geometry lays out.
            pub const fn kind(&self) -> RegionKind {
                match self {
                    $(Geometry::$variant(_) => RegionKind::$variant,)*
                }
            }

            /// Region size in bytes.
            pub const fn len(&self) -> u64 {
                match self {
                    $(Geometry::$variant(g) => g.len(),)*
                }
            }

            /// Always false.
            pub const fn is_empty(&self) -> bool {
                false
            }

            /// The largest redundancy a region of this geometry takes; `None` for kinds that take none.
            pub const fn n_max(&self) -> Option<u8> {
                match self {
                    $(Geometry::$variant(g) => n_max!($red, g),)*
                }
            }
        }

        $(
            impl KindGeometry for $geometry {
                const KIND: RegionKind = RegionKind::$variant;
                fn of(g: &Geometry) -> Option<&Self> {
                    match g {
                        Geometry::$variant(g) => Some(g),
                        _ => None,
                    }
                }
            }
        )*
    };
}

/// A geometry type of one region kind, so that a lookup asks for a `KeyWriteGeometry` and gets one: no
/// "found a region of the wrong kind" case is left for callers.
pub trait KindGeometry: Sized {
    /// The kind it lays out.
    const KIND: RegionKind;
    /// The geometry, if `g` is of this kind.
    fn of(g: &Geometry) -> Option<&Self>;
}

with_region_kinds!(region_kinds);

impl fmt::Display for RegionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
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

    /// Each kind's columns, as configuration files, the HTTP API and the query metrics spell them.
    #[test]
    fn the_table_gives_each_kind_its_names_ids_and_redundancy() {
        let columns: Vec<_> = RegionKind::ALL
            .iter()
            .map(|k| (k.name(), k.query_label(), k.has_ids()))
            .collect();
        assert_eq!(
            columns,
            [
                ("key_write", "keywrite", false),
                ("key_increment", "keyincrement", false),
                ("postcarding", "postcard", false),
                ("append", "append", true),
                ("sketch", "sketch", true),
            ]
        );
        use super::super::*;
        let geometries = [
            Geometry::KeyWrite(KeyWriteGeometry::new(256, 8, 4).unwrap()),
            Geometry::KeyIncrement(KeyIncrementGeometry::new(256, 3).unwrap()),
            Geometry::Postcarding(PostcardGeometry::new(1024, 5, 2).unwrap()),
            Geometry::Append(AppendGeometry::new(8, 4, 4).unwrap()),
            Geometry::Sketch(SketchGeometry::new(2, 4).unwrap()),
        ];
        let n_max: Vec<_> = geometries.iter().map(|g| (g.kind(), g.n_max())).collect();
        assert_eq!(
            n_max,
            [
                (RegionKind::KeyWrite, Some(4)),
                (RegionKind::KeyIncrement, Some(3)),
                (RegionKind::Postcarding, Some(2)),
                (RegionKind::Append, None),
                (RegionKind::Sketch, None),
            ]
        );
        assert!(KeyWriteGeometry::of(&geometries[0]).is_some());
        assert!(KeyWriteGeometry::of(&geometries[1]).is_none());
        assert_eq!(SketchGeometry::KIND, RegionKind::Sketch);
    }
}
