//! The registered regions as plain numbers, for the fast path's R_Key and bounds check.
//!
//! `memory::resolve` asks each region for its length, which walks its geometry; the regions never change
//! after the responder is built, so their ends are computed once here. [`Bounds::resolve`] answers exactly
//! what `checks::checked_range` (`resolve` plus the arena length check) answers, which the tests compare.

use crate::memory::RegionSlot;

#[derive(Debug, Clone, Copy)]
struct Entry {
    rkey: u32,
    va: u64,
    /// One past the last VA, saturated as `Region::contains` saturates it.
    end: u64,
    offset: usize,
}

/// Every region's R_Key, VA range and arena offset, in the order of the slots.
#[derive(Debug, Clone, Default)]
pub(crate) struct Bounds {
    entries: Vec<Entry>,
}

impl Bounds {
    pub fn new(slots: &[RegionSlot]) -> Self {
        Bounds {
            entries: slots
                .iter()
                .map(|s| Entry {
                    rkey: s.region.rkey,
                    va: s.region.va,
                    end: s.region.va.saturating_add(s.region.len()),
                    offset: s.offset,
                })
                .collect(),
        }
    }

    /// The arena offset of `[va, va + len)` in the region `rkey` names (the first such region, as
    /// `memory::resolve` picks), if it lies inside that region and inside an arena of `mem_len` bytes.
    #[inline]
    pub fn resolve(&self, mem_len: usize, rkey: u32, va: u64, len: usize) -> Option<usize> {
        let e = self.entries.iter().find(|e| e.rkey == rkey)?;
        let last = va.checked_add(len as u64)?;
        if va < e.va || last > e.end {
            return None;
        }
        // Inside the region, so `va - e.va` is below the region's length, which fits the arena.
        let at = e.offset.checked_add(usize::try_from(va - e.va).ok()?)?;
        at.checked_add(len)
            .filter(|end| *end <= mem_len)
            .map(|_| at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::Arena;
    use crate::responder::checks::checked_range;
    use dta_protocol::layout::{Geometry, KeyWriteGeometry, SketchGeometry};
    use rand_chacha::ChaCha8Rng;
    use rand_core::{RngCore, SeedableRng};

    #[test]
    fn agrees_with_checked_range() {
        let arena = Arena::new_normal(&[
            (
                0,
                Geometry::KeyWrite(KeyWriteGeometry::new(256, 8, 4).unwrap()),
            ),
            (3, Geometry::Sketch(SketchGeometry::new(2, 3).unwrap())),
        ])
        .unwrap();
        let mut slots = arena.slots().to_vec();
        // A second region under the first one's key: only the first may be used.
        slots.push(RegionSlot {
            offset: 0,
            ..slots[1]
        });
        slots[2].region.rkey = slots[0].region.rkey;
        let mem_len = arena.read().as_slice().len();
        let b = Bounds::new(&slots);
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let mut ok = 0;
        for _ in 0..200_000 {
            let s = slots[rng.next_u32() as usize % slots.len()];
            let rkey = match rng.next_u32() % 8 {
                0 => rng.next_u32(),
                _ => s.region.rkey,
            };
            let va = match rng.next_u32() % 6 {
                0 => rng.next_u64(),
                1 => u64::MAX - u64::from(rng.next_u32() % 16),
                _ => s
                    .region
                    .va
                    .wrapping_add(u64::from(rng.next_u32() % 2200))
                    .wrapping_sub(64),
            };
            let len = match rng.next_u32() % 4 {
                0 => rng.next_u64() as usize,
                _ => rng.next_u32() as usize % 64,
            };
            // Arenas shorter than the table says, too.
            let mem = match rng.next_u32() % 4 {
                0 => rng.next_u32() as usize % (mem_len + 1),
                _ => mem_len,
            };
            let want = checked_range(&slots, mem, rkey, va, len).ok();
            assert_eq!(
                b.resolve(mem, rkey, va, len),
                want,
                "{rkey:#x} {va:#x} {len}"
            );
            ok += usize::from(want.is_some());
        }
        assert!(ok > 15_000, "{ok}");
    }
}
