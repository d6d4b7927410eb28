//! Whether a key's N copies land independently under the real placement hash, beside the reference's.
//!
//! Both placements are CRC-32 over `key_le ‖ n`, so for a fixed `n` the slot is an affine function of the
//! key's 32 bits over GF(2). A key's N slots (s bits each) are then as independent as such a map can make
//! them exactly when the stacked linear parts have rank min(N·s, 32): no combination of copy slots is fixed
//! for every key. The real hash ([`dta_protocol::hash::placement`]) uses one polynomial per copy and has
//! full rank; the reference's `crc32(key_le ‖ n)` with one shared polynomial has rank s whatever N is
//! (copy n sits at a key-independent XOR offset from copy 0), which is why it loses all copies at once
//! ([`crate::bounds::crc_all_overwritten`]). The simulator prints both ranks beside its tables.

use dta_protocol::hash::{crc32, placement};

/// The reference placement (DESIGN.md section 3 before the per-copy polynomials): one CRC-32 for every
/// copy, `crc32(key_le ‖ n) & (slots - 1)`. Kept only to show why it loses data.
pub fn reference_slot(key: u32, n: u8, slots: u64) -> u64 {
    let k = key.to_le_bytes();
    u64::from(crc32(&[k[0], k[1], k[2], k[3], n])) & (slots - 1)
}

/// GF(2) rank of the map key ↦ (slot of copy 0, ..., slot of copy N-1) for an affine `slot` function, and
/// the largest rank possible, min(N·s, 32) with s = log2(slots).
pub fn copy_rank(slot: impl Fn(u32, u8, u64) -> u64, slots: u64, n: u8) -> (u32, u32) {
    let s = slots.trailing_zeros();
    let mut basis: Vec<u32> = Vec::new();
    for c in 0..n {
        let base = slot(0, c, slots);
        let images: Vec<u64> = (0..32).map(|bit| slot(1 << bit, c, slots) ^ base).collect();
        for out_bit in 0..s {
            // Row: which key bits flip this output bit.
            let mut row = 0u32;
            for (key_bit, image) in images.iter().enumerate() {
                row |= (((image >> out_bit) & 1) as u32) << key_bit;
            }
            for b in &basis {
                row = row.min(row ^ b);
            }
            if row != 0 {
                basis.push(row);
            }
        }
    }
    (basis.len() as u32, (u32::from(n) * s).min(32))
}

/// The real placement's copies are independent (full rank) for `slots` and `n`.
pub fn copies_independent(slots: u64, n: u8) -> bool {
    let (rank, max) = copy_rank(placement, slots, n);
    rank == max
}

/// One line for the tables: both placements' ranks.
pub fn describe(slots: u64, n: u8) -> String {
    let (real, max) = copy_rank(placement, slots, n);
    let (reference, _) = copy_rank(reference_slot, slots, n);
    format!(
        "placement of N = {n} copies among {slots} slots, GF(2) rank of the copies' slot bits (max {max}): \
         real engine {real} ({}), reference shared polynomial {reference} ({})",
        if real == max { "independent" } else { "DEPENDENT" },
        if reference == max { "independent" } else { "copies at fixed XOR offsets" },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_copies_are_independent() {
        for s in [8u32, 10, 16, 20] {
            for n in 1..=4u8 {
                assert!(copies_independent(1 << s, n), "s = {s}, N = {n}");
            }
        }
    }

    #[test]
    fn reference_copies_sit_at_fixed_offsets() {
        // DESIGN.md's vectors for the shared polynomial: key 0 → 29, 139, 49, 167 and key 1 → 173, 59,
        // 129, 23 for S = 256: both have offsets 0x96, 0x2c, 0xba from copy 0.
        let slots: Vec<u64> = (0..4).map(|n| reference_slot(0, n, 256)).collect();
        assert_eq!(slots, [29, 139, 49, 167]);
        let slots: Vec<u64> = (0..4).map(|n| reference_slot(1, n, 256)).collect();
        assert_eq!(slots, [173, 59, 129, 23]);
        for n in 1..=4u8 {
            assert_eq!(
                copy_rank(reference_slot, 1 << 16, n),
                (16, (16 * u32::from(n)).min(32))
            );
        }
        // Copy 0 is the same hash in both.
        for k in [0u32, 1, 123, 0xdead_beef] {
            assert_eq!(reference_slot(k, 0, 1 << 16), placement(k, 0, 1 << 16));
        }
    }
}
