//! The paper's model, as a second opinion beside the real system: N copies placed by *independent* uniform
//! hashes.
//!
//! The analysis in appendix A.5-A.6 assumes each copy's location is independent of the others. The real
//! placement (one CRC polynomial per copy, DESIGN.md section 3) is built to behave so (see
//! [`crate::placement`]), and the real engine is tested against the formulas directly; this module runs the
//! assumption itself, with no CRC at all, so a disagreement between the two points at the placement or the
//! engine rather than at the formulas. It places copies with SplitMix64 of (seed, key, n) and applies
//! writes directly: Key-Write entries hold (b-bit checksum, value) and are voted on by the same rule as
//! the collector's query (strict plurality with at least T votes); Postcarding chunks are built and
//! decoded with the real `encode_chunk` and `decode_chunk`.

use dta_collector::query::PostcardDecoder;
use dta_protocol::hash::key_checksum;
use dta_protocol::layout::{PostcardGeometry, CHUNK_STRIDE};

use crate::rng::{self, mix64};
use crate::tally::Tally;

fn place(seed: u64, key: u32, n: u8, mask: u64) -> usize {
    (mix64(seed ^ (u64::from(key) << 8 | u64::from(n))) & mask) as usize
}

/// Key-Write under independent placement: same parameters and schedule as [`crate::keywrite::run`].
pub fn key_write(p: &crate::keywrite::KeyWriteParams) -> Vec<Tally> {
    let mask = p.slots - 1;
    let cs_mask = if p.b >= 32 { u32::MAX } else { (1 << p.b) - 1 };
    // (checksum, value); value u32::MAX marks a never-written slot (no key index reaches it).
    let mut mem = vec![(0u32, u32::MAX); p.slots as usize];
    let hseed = mix64(p.seed ^ 0xA5A5);
    let mut tallies: Vec<Tally> = p.ages.iter().map(|&a| Tally::new(a, p.slots)).collect();
    let max_age = p.ages.iter().copied().max().unwrap_or(0);
    for t in 0..max_age + p.queries {
        let key = rng::key(p.seed, t as u32);
        for c in 0..p.n {
            mem[place(hseed, key, c, mask)] = (key_checksum(key) & cs_mask, t as u32);
        }
        for tally in tallies.iter_mut() {
            let Some(j) = t.checked_sub(tally.age).filter(|&j| j < p.queries) else {
                continue;
            };
            let q = rng::key(p.seed, j as u32);
            let want = key_checksum(q) & cs_mask;
            let mut slots: Vec<usize> = (0..p.n).map(|c| place(hseed, q, c, mask)).collect();
            slots.sort_unstable();
            slots.dedup();
            let mut votes: Vec<(u32, u32)> = Vec::new();
            for s in slots {
                let (cs, v) = mem[s];
                if cs == want && v != u32::MAX {
                    match votes.iter_mut().find(|(x, _)| *x == v) {
                        Some((_, n)) => *n += 1,
                        None => votes.push((v, 1)),
                    }
                }
            }
            votes.sort_by_key(|x| std::cmp::Reverse(x.1));
            tally.queries += 1;
            let winner = match votes.as_slice() {
                [(v, n), rest @ ..]
                    if rest.first().map_or(true, |r| r.1 < *n) && *n >= p.threshold.max(1) =>
                {
                    Some(*v)
                }
                _ => None,
            };
            match winner {
                Some(v) if v == j as u32 => tally.found += 1,
                Some(_) => tally.wrong += 1,
                None => tally.empty += 1,
            }
        }
    }
    tallies
}

/// Postcarding under independent chunk placement: same schedule as [`crate::postcard::run`].
pub fn postcard(p: &crate::postcard::PostcardParams, decoder: &PostcardDecoder) -> Vec<Tally> {
    let g = PostcardGeometry::new(p.chunks, p.hops, p.n).expect("valid geometry");
    let mask = p.chunks - 1;
    let mut mem = vec![[0u8; CHUNK_STRIDE]; p.chunks as usize];
    let hseed = mix64(p.seed ^ 0x5A5A);
    let mut tallies: Vec<Tally> = p.ages.iter().map(|&a| Tally::new(a, p.chunks)).collect();
    let max_age = p.ages.iter().copied().max().unwrap_or(0);
    for t in 0..max_age + p.queries {
        let key = rng::key(p.seed, t as u32);
        let chunk = g.encode_chunk(key, &crate::postcard::path(p, t));
        for c in 0..p.n {
            mem[place(hseed, key, c, mask)] = chunk;
        }
        for tally in tallies.iter_mut() {
            let Some(j) = t.checked_sub(tally.age).filter(|&j| j < p.queries) else {
                continue;
            };
            let q = rng::key(p.seed, j as u32);
            let mut paths: Vec<Vec<u32>> = Vec::new();
            for c in 0..p.n {
                if let Some(path) = decoder.decode_chunk(&g, q, &mem[place(hseed, q, c, mask)]) {
                    if !paths.contains(&path) {
                        paths.push(path);
                    }
                }
            }
            tally.queries += 1;
            match paths.as_slice() {
                [one] if *one == crate::postcard::path(p, j) => tally.found += 1,
                [_] => tally.wrong += 1,
                _ => tally.empty += 1,
            }
        }
    }
    tallies
}
