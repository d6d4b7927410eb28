//! Postcarding lookup (paper section 4, DESIGN.md section 3): decode each of a flow's chunk copies with the
//! table {g(v) → v} over the configured value universe, keep chunks in which every hop decodes and blanks
//! only form a suffix, and return the path the valid chunks agree on.

use std::collections::HashMap;

use dta_protocol::hash::{hop_checksum, postcard_g, POSTCARD_BLANK};
use dta_protocol::layout::{PostcardGeometry, CELL_LEN, CHUNK_STRIDE};
use serde::Serialize;

use super::{bytes, check_n};
use crate::error::Result;

/// The outcome of a path query.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum PathAnswer {
    /// Every valid chunk holds this path.
    Found {
        /// Values hop by hop, blanks removed.
        path: Vec<u32>,
        /// Chunks that decoded to it.
        chunks: u32,
    },
    /// No chunk decodes (never written, or overwritten by other flows).
    Empty,
    /// Valid chunks decode to different paths.
    Conflict {
        /// The distinct paths.
        paths: Vec<Vec<u32>>,
    },
}

/// The decoding table for one value universe, built once and reused by every query.
#[derive(Debug, Clone)]
pub struct PostcardDecoder {
    table: HashMap<u32, u32>,
}

/// The decoded cell of one hop.
enum Cell {
    Value(u32),
    Blank,
    Invalid,
}

impl PostcardDecoder {
    /// A decoder for `universe`. The blank value is never a hop value, so it is left out if listed.
    pub fn new(universe: &[u32]) -> Self {
        // g is CRC-32C of 4 bytes, a bijection on u32, so distinct values never share an entry.
        let table = universe
            .iter()
            .filter(|&&v| v != POSTCARD_BLANK)
            .map(|&v| (postcard_g(v), v))
            .collect();
        PostcardDecoder { table }
    }

    /// Values in the universe.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether the universe is empty.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    fn cell(&self, key: u32, hop: u8, cell: u32) -> Cell {
        let Some(sum) = hop_checksum(hop, key) else {
            return Cell::Invalid;
        };
        let g = cell ^ sum;
        if g == postcard_g(POSTCARD_BLANK) {
            return Cell::Blank;
        }
        self.table
            .get(&g)
            .map_or(Cell::Invalid, |&v| Cell::Value(v))
    }

    /// Decodes one chunk: the path if every hop decodes, blanks only trail, and at least one hop is set.
    pub fn decode_chunk(&self, g: &PostcardGeometry, key: u32, chunk: &[u8]) -> Option<Vec<u32>> {
        let mut path = Vec::with_capacity(usize::from(g.hops()));
        let mut blank_seen = false;
        for hop in 1..=g.hops() {
            let at = usize::from(hop - 1) * CELL_LEN;
            let c = u32::from_be_bytes(chunk.get(at..at + CELL_LEN)?.try_into().ok()?);
            match self.cell(key, hop, c) {
                Cell::Invalid => return None,
                Cell::Blank => blank_seen = true,
                // A value after a blank means the chunk mixes flows: not a path.
                Cell::Value(_) if blank_seen => return None,
                Cell::Value(v) => path.push(v),
            }
        }
        // All blanks is what no postcard ever writes (a flow has at least one hop): not evidence.
        (!path.is_empty()).then_some(path)
    }

    /// Looks up the path of flow `key` over `n` chunk copies in the Postcarding region `mem`.
    pub fn query(&self, mem: &[u8], g: &PostcardGeometry, key: u32, n: u8) -> Result<PathAnswer> {
        check_n(n, g.n_max())?;
        let mut paths: Vec<(Vec<u32>, u32)> = Vec::new();
        for i in 0..n {
            let chunk = bytes(mem, g.offset(key, i), CHUNK_STRIDE)?;
            if let Some(p) = self.decode_chunk(g, key, chunk) {
                match paths.iter_mut().find(|(q, _)| *q == p) {
                    Some((_, c)) => *c += 1,
                    None => paths.push((p, 1)),
                }
            }
        }
        Ok(match paths.len() {
            0 => PathAnswer::Empty,
            1 => {
                let (path, chunks) = paths.remove(0);
                PathAnswer::Found { path, chunks }
            }
            _ => PathAnswer::Conflict {
                paths: paths.into_iter().map(|(p, _)| p).collect(),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Hand-computed from the protocol crate's golden values: for key 1, hopsum_1..5 =
    // ff56867b eeb36582 8b01ac8b d190216b f71ea390; g(0) = 48674bc7, g(1) = ba0cc8c4, g(blank) = ffffffff.
    const KEY1_HOPSUMS: [u32; 5] = [0xff56867b, 0xeeb36582, 0x8b01ac8b, 0xd190216b, 0xf71ea390];
    const G0: u32 = 0x48674bc7;
    const G1: u32 = 0xba0cc8c4;
    const GBLANK: u32 = 0xffff_ffff;

    fn chunk(gs: [u32; 5]) -> [u8; 32] {
        let mut c = [0u8; 32];
        for (i, g) in gs.iter().enumerate() {
            c[i * 4..i * 4 + 4].copy_from_slice(&(KEY1_HOPSUMS[i] ^ g).to_be_bytes());
        }
        c
    }

    fn geometry() -> PostcardGeometry {
        PostcardGeometry::new(1024, 5, 2).unwrap()
    }

    fn place(mem: &mut [u8], copy: u8, c: [u8; 32]) {
        let at = geometry().offset(1, copy) as usize;
        mem[at..at + 32].copy_from_slice(&c);
    }

    #[test]
    fn decodes_a_path_with_trailing_blanks() {
        let dec = PostcardDecoder::new(&[0, 1, 2, 3]);
        let mut mem = vec![0u8; 1024 * 32];
        let c = chunk([G1, G0, G1, GBLANK, GBLANK]);
        place(&mut mem, 0, c);
        place(&mut mem, 1, c);
        assert_eq!(
            dec.query(&mem, &geometry(), 1, 2).unwrap(),
            PathAnswer::Found {
                path: vec![1, 0, 1],
                chunks: 2
            }
        );
        // The encoder in dta-protocol agrees with the hand-built chunk.
        assert_eq!(geometry().encode_chunk(1, &[1, 0, 1]), c);
    }

    #[test]
    fn blanks_in_the_middle_and_unknown_values_are_rejected() {
        let dec = PostcardDecoder::new(&[0, 1]);
        let g = geometry();
        assert_eq!(
            dec.decode_chunk(&g, 1, &chunk([G1, GBLANK, G0, GBLANK, GBLANK])),
            None
        );
        assert_eq!(dec.decode_chunk(&g, 1, &chunk([GBLANK; 5])), None);
        // Value 5 is outside the universe {0, 1}.
        let g5 = postcard_g(5);
        assert_eq!(
            dec.decode_chunk(&g, 1, &chunk([G1, g5, GBLANK, GBLANK, GBLANK])),
            None
        );
        assert_eq!(dec.decode_chunk(&g, 1, &[0u8; 32]), None);
        // The chunk of key 1 does not decode as key 2's.
        assert_eq!(dec.decode_chunk(&g, 2, &chunk([G1, G0, G1, G0, G1])), None);
        assert_eq!(
            dec.decode_chunk(&g, 1, &chunk([G1, G0, G1, G0, G1])),
            Some(vec![1, 0, 1, 0, 1])
        );
    }

    #[test]
    fn empty_one_valid_copy_and_conflict() {
        let dec = PostcardDecoder::new(&[0, 1]);
        let mut mem = vec![0u8; 1024 * 32];
        assert_eq!(
            dec.query(&mem, &geometry(), 1, 2).unwrap(),
            PathAnswer::Empty
        );
        place(&mut mem, 1, chunk([G0, G0, GBLANK, GBLANK, GBLANK]));
        assert_eq!(
            dec.query(&mem, &geometry(), 1, 2).unwrap(),
            PathAnswer::Found {
                path: vec![0, 0],
                chunks: 1
            }
        );
        place(&mut mem, 0, chunk([G1, GBLANK, GBLANK, GBLANK, GBLANK]));
        assert_eq!(
            dec.query(&mem, &geometry(), 1, 2).unwrap(),
            PathAnswer::Conflict {
                paths: vec![vec![1], vec![0, 0]]
            }
        );
        assert_eq!(dec.len(), 2);
    }
}
