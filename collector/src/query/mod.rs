//! Queries on region memory (DESIGN.md section 3, paper appendix A). Each takes the region's bytes and its
//! geometry, so it runs the same on a live arena, a copy, or memory a test filled by hand.

mod append;
pub mod int;
mod keyincrement;
mod keywrite;
mod postcard;
mod sketch;

pub use append::{append_read, AppendRead};
pub use keyincrement::{key_increment, KeyIncrementAnswer};
pub use keywrite::{key_write, Candidate, KeyWriteAnswer};
pub use postcard::{PathAnswer, PostcardDecoder};
pub use sketch::{count_min, hyperloglog, sketch_column};

use crate::error::{Error, Result};

/// Checks a query's redundancy against the region's N_max.
fn check_n(n: u8, n_max: u8) -> Result<()> {
    if n == 0 || n > n_max {
        return Err(Error::BadQuery(format!(
            "redundancy {n} outside 1..={n_max} for this region"
        )));
    }
    Ok(())
}

/// The region's bytes at `offset..offset + len`, or an error if the memory is shorter than the geometry.
fn bytes(mem: &[u8], offset: u64, len: usize) -> Result<&[u8]> {
    usize::try_from(offset)
        .ok()
        .and_then(|o| mem.get(o..o.checked_add(len)?))
        .ok_or_else(|| Error::BadQuery(format!("offset {offset} + {len} beyond region memory")))
}

/// Lower-case hex, how the HTTP API shows raw data bytes.
pub fn to_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
