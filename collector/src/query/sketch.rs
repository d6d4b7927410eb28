//! Sketch queries: a count-min estimate for a key on a sum-merged sketch, and the HyperLogLog cardinality
//! of a max-merged one. Counters are big-endian u32, column-major: column c is `rows` counters at
//! `4 · rows · c`.
//!
//! DESIGN.md does not say how a reporter maps a key to a column in each row. The collector uses
//! `placement_hash(key, row) mod columns` (the crc32 placement of section 3 with the row as the copy index),
//! and reporters that want key estimates from the collector must hash the same way.

use dta_protocol::hash::placement_hash;
use dta_protocol::layout::{SketchGeometry, SKETCH_COUNTER_LEN};

use super::bytes;
use crate::error::Result;

/// The column of `key` in `row`.
pub fn sketch_column(g: &SketchGeometry, key: u32, row: u8) -> u32 {
    placement_hash(key, row) % g.columns()
}

fn counter(mem: &[u8], g: &SketchGeometry, column: u32, row: u32) -> Result<u32> {
    let at = g.column_offset(column) + u64::from(row) * SKETCH_COUNTER_LEN;
    let b = bytes(mem, at, SKETCH_COUNTER_LEN as usize)?;
    Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// Count-min: the smallest of the key's counters over all rows (at most 255 rows, so row fits in u8).
pub fn count_min(mem: &[u8], g: &SketchGeometry, key: u32) -> Result<u32> {
    let mut best = u32::MAX;
    for row in 0..g.rows() {
        let c = counter(mem, g, sketch_column(g, key, row as u8), row)?;
        best = best.min(c);
    }
    Ok(best)
}

/// HyperLogLog cardinality over all `rows × columns` registers (Flajolet et al. 2007, with the
/// linear-counting correction for small cardinalities).
pub fn hyperloglog(mem: &[u8], g: &SketchGeometry) -> Result<f64> {
    let m = f64::from(g.rows()) * f64::from(g.columns());
    let mut sum = 0.0;
    let mut zeros = 0u64;
    for column in 0..g.columns() {
        for row in 0..g.rows() {
            // Registers hold a rank of at most 33 for 32-bit hashes; clamp so garbage cannot underflow.
            let r = counter(mem, g, column, row)?.min(64);
            if r == 0 {
                zeros += 1;
            }
            sum += (-f64::from(r)).exp2();
        }
    }
    let alpha = match m as u64 {
        0..=16 => 0.673,
        17..=32 => 0.697,
        33..=64 => 0.709,
        _ => 0.7213 / (1.0 + 1.079 / m),
    };
    let raw = alpha * m * m / sum;
    Ok(if raw <= 2.5 * m && zeros > 0 {
        m * (m / zeros as f64).ln()
    } else {
        raw
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_min_takes_the_smallest_row() {
        let g = SketchGeometry::new(3, 16).unwrap();
        let mut mem = vec![0u8; g.len() as usize];
        let key = 42;
        for (row, v) in [(0u32, 9u32), (1, 4), (2, 7)] {
            let col = sketch_column(&g, key, row as u8);
            let at = (g.column_offset(col) + u64::from(row) * 4) as usize;
            mem[at..at + 4].copy_from_slice(&v.to_be_bytes());
        }
        assert_eq!(count_min(&mem, &g, key).unwrap(), 4);
        // Column of key 42 in row 0: crc32(2a 00 00 00 00) mod 16.
        assert_eq!(sketch_column(&g, 42, 0), placement_hash(42, 0) % 16);
    }

    #[test]
    fn hyperloglog_small_and_large_ranges() {
        let g = SketchGeometry::new(1, 64).unwrap();
        let mut mem = vec![0u8; g.len() as usize];
        assert_eq!(hyperloglog(&mem, &g).unwrap(), 0.0);
        // 8 of 64 registers set: linear counting gives 64 ln(64/56).
        for c in 0..8u32 {
            mem[c as usize * 4..c as usize * 4 + 4].copy_from_slice(&1u32.to_be_bytes());
        }
        let e = hyperloglog(&mem, &g).unwrap();
        assert!((e - 64.0 * (64.0f64 / 56.0).ln()).abs() < 1e-9, "{e}");
        // All registers 10: raw estimate 0.709 · 64² / (64 · 2^-10) = 0.709 · 64 · 1024.
        for c in 0..64usize {
            mem[c * 4..c * 4 + 4].copy_from_slice(&10u32.to_be_bytes());
        }
        let e = hyperloglog(&mem, &g).unwrap();
        assert!((e - 0.709 * 64.0 * 1024.0).abs() < 1e-6, "{e}");
    }
}
