//! The hash functions that place data in collector memory (DESIGN.md section 3).
//!
//! `key_le` is a 32-bit key's four bytes in little-endian order: the reference byte-swaps to match what
//! an x86 `memcpy` of the key gives, and its collector hashes those bytes.

use crc::{Algorithm, Crc};

pub use crate::polynomials::{HOP_POLYNOMIALS, PLACEMENT_POLYNOMIALS};
use crate::roce::crc_table::CRC32_ISO_HDLC;

/// CRC-32/ISO-HDLC (zlib's `crc32`).
#[inline]
pub fn crc32(data: &[u8]) -> u32 {
    crc32fast::hash(data)
}

/// CRC-32C (Castagnoli), as `g(v)` uses it.
const CRC32C: Crc<u32> = Crc::<u32>::new(&crc::CRC_32_ISCSI);

/// The Key-Write checksum stored with each entry: `crc32(key_le)`, zlib's CRC-32 of the key's four
/// little-endian bytes. Through the slice-by-4 table of [`roce::crc_table`](crate::roce::crc_table), four
/// lookups, where `crc32fast` costs ~90 instructions on 4 bytes (its set-up); it is on the translator's
/// per-report path. Tests check it against `crc32fast` and DESIGN.md's vectors.
#[inline]
pub fn key_checksum(key: u32) -> u32 {
    !CRC32_ISO_HDLC.update_u32_le(!0, key)
}

const PLACEMENT_ALGORITHMS: [Algorithm<u32>; 8] = [
    reflected_crc32(PLACEMENT_POLYNOMIALS[0]),
    reflected_crc32(PLACEMENT_POLYNOMIALS[1]),
    reflected_crc32(PLACEMENT_POLYNOMIALS[2]),
    reflected_crc32(PLACEMENT_POLYNOMIALS[3]),
    reflected_crc32(PLACEMENT_POLYNOMIALS[4]),
    reflected_crc32(PLACEMENT_POLYNOMIALS[5]),
    reflected_crc32(PLACEMENT_POLYNOMIALS[6]),
    reflected_crc32(PLACEMENT_POLYNOMIALS[7]),
];

const PLACEMENT_CRCS: [Crc<u32>; 8] = [
    Crc::<u32>::new(&PLACEMENT_ALGORITHMS[0]),
    Crc::<u32>::new(&PLACEMENT_ALGORITHMS[1]),
    Crc::<u32>::new(&PLACEMENT_ALGORITHMS[2]),
    Crc::<u32>::new(&PLACEMENT_ALGORITHMS[3]),
    Crc::<u32>::new(&PLACEMENT_ALGORITHMS[4]),
    Crc::<u32>::new(&PLACEMENT_ALGORITHMS[5]),
    Crc::<u32>::new(&PLACEMENT_ALGORITHMS[6]),
    Crc::<u32>::new(&PLACEMENT_ALGORITHMS[7]),
];

/// The placement hash of copy `n` of `key`: CRC-32 with copy `n`'s polynomial
/// ([`PLACEMENT_POLYNOMIALS`]; reflected, init and xorout all ones) over `key_le ‖ n`. Key-Write slots,
/// Key-Increment counters and Postcarding chunks all use it, masked to their power-of-two slot count.
/// Copies are numbered `0..8` ([`N_MAX`](crate::dta::N_MAX)); `n` is taken modulo 8.
#[inline]
pub fn placement_hash(key: u32, n: u8) -> u32 {
    let k = key.to_le_bytes();
    let input = [k[0], k[1], k[2], k[3], n];
    match n % 8 {
        // zlib's CRC-32: crc32fast's hardware path.
        0 => crc32(&input),
        i => PLACEMENT_CRCS[usize::from(i)].checksum(&input),
    }
}

/// `placement_hash(key, n) & (slots - 1)`; `slots` must be a power of two (the geometry types check it).
#[inline]
pub fn placement(key: u32, n: u8, slots: u64) -> u64 {
    u64::from(placement_hash(key, n)) & (slots - 1)
}

/// The value of a Postcarding cell for a hop that is not on the path.
pub const POSTCARD_BLANK: u32 = 0xFFFF_FFFF;

const fn reflected_crc32(poly: u32) -> Algorithm<u32> {
    // Reflected in and out, init and xorout all ones: TNA's CRCPolynomial(poly, reversed = true,
    // msb = false, extended = false, init = 0xFFFFFFFF, xor = 0xFFFFFFFF). `check` and `residue` are
    // informational in the crc crate and not used to compute.
    Algorithm {
        width: 32,
        poly,
        init: 0xFFFF_FFFF,
        refin: true,
        refout: true,
        xorout: 0xFFFF_FFFF,
        check: 0,
        residue: 0,
    }
}

const HOP_ALGORITHMS: [Algorithm<u32>; 8] = [
    reflected_crc32(HOP_POLYNOMIALS[0]),
    reflected_crc32(HOP_POLYNOMIALS[1]),
    reflected_crc32(HOP_POLYNOMIALS[2]),
    reflected_crc32(HOP_POLYNOMIALS[3]),
    reflected_crc32(HOP_POLYNOMIALS[4]),
    reflected_crc32(HOP_POLYNOMIALS[5]),
    reflected_crc32(HOP_POLYNOMIALS[6]),
    reflected_crc32(HOP_POLYNOMIALS[7]),
];

const HOP_CRCS: [Crc<u32>; 8] = [
    Crc::<u32>::new(&HOP_ALGORITHMS[0]),
    Crc::<u32>::new(&HOP_ALGORITHMS[1]),
    Crc::<u32>::new(&HOP_ALGORITHMS[2]),
    Crc::<u32>::new(&HOP_ALGORITHMS[3]),
    Crc::<u32>::new(&HOP_ALGORITHMS[4]),
    Crc::<u32>::new(&HOP_ALGORITHMS[5]),
    Crc::<u32>::new(&HOP_ALGORITHMS[6]),
    Crc::<u32>::new(&HOP_ALGORITHMS[7]),
];

/// `hopsum_i(key)`: the per-hop checksum of a flow key for 1-based hop `hop` in 1..=8, or `None` outside.
#[inline]
pub fn hop_checksum(hop: u8, key: u32) -> Option<u32> {
    let crc = HOP_CRCS.get(usize::from(hop).checked_sub(1)?)?;
    Some(crc.checksum(&key.to_le_bytes()))
}

/// `g(v) = crc32c(v as 4 big-endian bytes)`: spreads a postcard value over 32 bits before it is XORed
/// with the hop checksum, so a decoder can tell values from noise.
#[inline]
pub fn postcard_g(value: u32) -> u32 {
    CRC32C.checksum(&value.to_be_bytes())
}

/// The cell that hop `hop` of flow `key` holds for `value`: `hopsum_hop(key) XOR g(value)`.
#[inline]
pub fn postcard_cell(key: u32, hop: u8, value: u32) -> Option<u32> {
    Some(hop_checksum(hop, key)? ^ postcard_g(value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The table-driven checksum is zlib's CRC-32 of `key_le`, as `crc32fast` (an independent
        /// implementation, not the table) computes it.
        #[test]
        fn key_checksum_is_zlibs_crc32(key in any::<u32>()) {
            prop_assert_eq!(key_checksum(key), crc32fast::hash(&key.to_le_bytes()));
        }
    }

    #[test]
    fn key_write_vectors() {
        // Checksums from DESIGN.md section 3. Slots for S = 256, n = 0..3: copy 0 as DESIGN.md gives it;
        // copies 1..3 moved with the per-copy polynomials (values from a bit-at-a-time CRC in Python,
        // checked against zlib.crc32 on "123456789"; DESIGN.md's shared-polynomial values were 139, 49,
        // 167 / 59, 129, 23 / 85, 239, 121).
        let cases: [(u32, u32, [u64; 4]); 3] = [
            (0, 0x2144_df1c, [29, 104, 84, 26]),
            (1, 0x99f8_b879, [173, 100, 212, 95]),
            (123, 0x9d7a_f881, [195, 93, 86, 128]),
        ];
        for (key, checksum, slots) in cases {
            assert_eq!(key_checksum(key), checksum, "key {key}");
            for (n, slot) in slots.iter().enumerate() {
                assert_eq!(placement(key, n as u8, 256), *slot, "key {key} n {n}");
            }
        }
    }

    #[test]
    fn full_placement_hashes_match_a_bitwise_crc() {
        // Key 0xdeadbeef, copies 0..8, from the same independent Python CRC.
        let want = [
            0x5f10b818, 0xfc8a4ffc, 0x678fdc15, 0x117dfd67, 0x9fd3ab7a, 0xabde766f, 0xc0a0d3a1,
            0xd9b855ca,
        ];
        for (n, w) in want.iter().enumerate() {
            assert_eq!(placement_hash(0xdeadbeef, n as u8), *w, "copy {n}");
        }
    }

    /// The image of each key bit under copy `n`'s placement, minus the image of key 0: the linear part
    /// of the affine map `key -> placement_hash(key, n)`.
    fn linear_part(n: u8) -> [u32; 32] {
        let base = placement_hash(0, n);
        core::array::from_fn(|bit| placement_hash(1 << bit, n) ^ base)
    }

    /// Rank over GF(2) of the rows: for each copy in `copies`, its low `s` output bits as functions of
    /// the 32 key bits.
    fn stacked_rank(copies: &[[u32; 32]], s: u32) -> u32 {
        let mut basis: Vec<u32> = Vec::new();
        for lin in copies {
            for out_bit in 0..s {
                let mut row = 0u32;
                for (key_bit, image) in lin.iter().enumerate() {
                    row |= ((image >> out_bit) & 1) << key_bit;
                }
                for b in &basis {
                    row = row.min(row ^ b);
                }
                if row != 0 {
                    basis.push(row);
                }
            }
        }
        basis.len() as u32
    }

    #[test]
    fn copies_land_independently() {
        // For every N and slot-count bits s with N·s <= 32, the N copies' slot bits are jointly full
        // rank: knowing where a key's first copies are says nothing about the others. With one shared
        // polynomial the rank stays at s whatever N is.
        let lin: Vec<[u32; 32]> = (0..8).map(linear_part).collect();
        for n in 1..=8usize {
            for s in 1..=32u32 {
                let want = (n as u32 * s).min(32);
                assert_eq!(stacked_rank(&lin[..n], s), want, "N = {n}, s = {s}");
            }
        }
    }

    #[test]
    fn consecutive_and_strided_keys_spread() {
        // A linear map can squeeze structured key sets into few slots (a sparse polynomial put 256
        // consecutive keys into 2 of 256 slots). Every copy must do at least as well as random keys
        // (1 - 1/e ~ 0.63 of the slots) on consecutive and strided keys, or be a bijection on them.
        for n in 0..8u8 {
            for (keys, slots) in [
                ((0..256u32).collect::<Vec<_>>(), 256u64),
                ((0..4096u32).collect(), 4096),
                ((0..4096u32).map(|k| k * 7).collect(), 4096),
                ((0..4096u32).map(|k| k << 8).collect(), 4096),
            ] {
                let mut used = vec![false; slots as usize];
                for k in &keys {
                    used[placement(*k, n, slots) as usize] = true;
                }
                let fill = used.iter().filter(|u| **u).count() as f64 / slots as f64;
                assert!(fill >= 0.5, "copy {n}: {fill} of {slots} slots used");
            }
        }
    }

    #[test]
    fn crc32c_and_hop6_are_castagnoli() {
        // The standard CRC-32C check value, and hop 6's polynomial is CRC-32C's.
        assert_eq!(CRC32C.checksum(b"123456789"), 0xE306_9283);
        assert_eq!(hop_checksum(6, 0x3433_3231), Some(CRC32C.checksum(b"1234")));
        assert_eq!(hop_checksum(0, 1), None);
        assert_eq!(hop_checksum(9, 1), None);
    }

    #[test]
    fn hop_checksums_and_g_match_a_bitwise_crc() {
        // Golden values from a bit-at-a-time reflected CRC written in Python (checked against zlib.crc32
        // on "123456789" with the CRC-32 polynomial), not from this crate.
        let table: [(u32, [u32; 8]); 4] = [
            (
                0,
                [
                    0xff4e0b45, 0xf759b2c1, 0x146125d7, 0x58399ad9, 0xfb8f51c8, 0x48674bc7,
                    0xf7bccdc4, 0xb53d5af6,
                ],
            ),
            (
                1,
                [
                    0xff56867b, 0xeeb36582, 0x8b01ac8b, 0xd190216b, 0xf71ea390, 0x9522e17f,
                    0xef799b88, 0x6a7ab5ec,
                ],
            ),
            (
                123,
                [
                    0xffa6ac71, 0xd50bebf5, 0x495f273e, 0x8e703b72, 0xe74f66b0, 0x49e65b49,
                    0x483a1afe, 0x3a710429,
                ],
            ),
            (
                0xdeadbeef,
                [
                    0xff8fe6b4, 0xa01d0464, 0xd791554f, 0xcf9a9897, 0xf85cb0be, 0x41fe56d3,
                    0x34e27a05, 0x7ca57bdf,
                ],
            ),
        ];
        for (key, sums) in table {
            for (i, sum) in sums.iter().enumerate() {
                assert_eq!(
                    hop_checksum(i as u8 + 1, key),
                    Some(*sum),
                    "key {key:#x} hop {}",
                    i + 1
                );
            }
        }
        assert_eq!(postcard_g(0), 0x48674bc7);
        assert_eq!(postcard_g(1), 0xba0cc8c4);
        assert_eq!(postcard_g(0x12345678), 0x4300918a);
        // The blank value happens to be a fixed point of g, so a blank cell is the complement of hopsum.
        assert_eq!(postcard_g(POSTCARD_BLANK), 0xFFFF_FFFF);
        assert_eq!(
            postcard_cell(1, 2, 0x12345678),
            Some(0xeeb36582 ^ 0x4300918a)
        );
    }
}
