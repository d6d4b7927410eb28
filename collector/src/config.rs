//! The collector's TOML configuration: addresses, the control and HTTP endpoints, fault injection and the
//! regions with their geometry (the `dta-protocol` geometry types, so that a bad geometry is refused here
//! with the same message the translator would give).
//!
//! One job a file: `sections` (the file's shape), `validate` (the checks it passes), `export` (the
//! exporter's sections) and this root (reading a file, and what the collector asks of it).

use std::path::Path;

use dta_protocol::layout::Geometry;

mod export;
mod sections;
mod validate;

pub use export::{ClickHouseSection, ExportSection, ParquetSection};
pub use sections::{
    CollectorSection, Config, ControlSection, HttpSection, IntSection, PostcardingSection,
    RegionConfig, SketchMerge, MAX_DEST_RD_ATOMIC, MAX_UNIVERSE,
};

use crate::error::{Error, Result};

impl Config {
    /// Reads and checks a file.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
        Self::parse(&text).map_err(|e| match e {
            Error::Config(m) => Error::Config(format!("{}: {m}", path.display())),
            other => other,
        })
    }

    /// Parses and checks TOML text.
    pub fn parse(text: &str) -> Result<Self> {
        let c: Config = toml::from_str(text).map_err(|e| Error::Config(e.to_string()))?;
        c.validate()?;
        Ok(c)
    }

    /// Hops `int-flow` reads per flow: `[int] hops`, else the postcarding region's, else none.
    pub fn int_hops(&self) -> Option<u8> {
        self.int.as_ref().and_then(|i| i.hops).or_else(|| {
            self.regions.iter().find_map(|r| match r.geometry {
                Geometry::Postcarding(g) => Some(g.hops()),
                _ => None,
            })
        })
    }

    /// `(id, geometry)` of every region, in order, as [`crate::memory::Arena::new`] takes them.
    pub fn region_layout(&self) -> Vec<(u32, Geometry)> {
        self.regions.iter().map(|r| (r.id, r.geometry)).collect()
    }
}

#[cfg(test)]
mod tests;
