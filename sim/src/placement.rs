//! A check of what the real placement hash does with a key's N copies: whether `slot(k, n) ⊕ slot(k, 0)` is
//! the same for every key (it is for CRC; see [`crate::bounds::crc_all_overwritten`]). The simulator prints
//! the result beside its tables, so the reason the measured rates differ from the paper's is visible.

use dta_protocol::hash::placement;

use crate::rng;

/// The key-independent offsets d_1..d_{N-1} of copies 1..N-1 from copy 0 among `slots` slots, or `None` if
/// some key's offsets differ from the first key's (the copies then behave like independent hashes).
pub fn affine_offsets(slots: u64, n: u8, samples: u32) -> Option<Vec<u64>> {
    let offsets = |k: u32| -> Vec<u64> {
        let s0 = placement(k, 0, slots);
        (1..n).map(|j| placement(k, j, slots) ^ s0).collect()
    };
    let first = offsets(rng::key(0, 0));
    (1..samples)
        .all(|i| offsets(rng::key(0, i)) == first)
        .then_some(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_placement_is_affine() {
        // DESIGN.md's vectors: key 0 → 29, 139, 49, 167 and key 1 → 173, 59, 129, 23 for S = 256: both
        // have offsets 0x96, 0x2c, 0xba, and 0x96 ⊕ 0x2c = 0xba.
        assert_eq!(affine_offsets(256, 4, 1000), Some(vec![0x96, 0x2c, 0xba]));
        let d = affine_offsets(1 << 20, 4, 1000).unwrap();
        assert_eq!(d[0] ^ d[1], d[2]);
        assert!(d.iter().all(|&x| x != 0));
    }
}
