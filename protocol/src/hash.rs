//! The hash functions that place data in collector memory (DESIGN.md section 3).
//!
//! `key_le` is a 32-bit key's four bytes in little-endian order: the reference byte-swaps to match what
//! an x86 `memcpy` of the key gives, and its collector hashes those bytes.

use crc::{Algorithm, Crc};

/// CRC-32/ISO-HDLC (zlib's `crc32`).
#[inline]
pub fn crc32(data: &[u8]) -> u32 {
    crc32fast::hash(data)
}

/// CRC-32C (Castagnoli), as `g(v)` uses it.
const CRC32C: Crc<u32> = Crc::<u32>::new(&crc::CRC_32_ISCSI);

/// The Key-Write checksum stored with each entry: `crc32(key_le)`.
#[inline]
pub fn key_checksum(key: u32) -> u32 {
    crc32(&key.to_le_bytes())
}

/// The placement hash of copy `n` of `key`: `crc32(key_le ‖ n)`. Key-Write slots, Key-Increment
/// counters and Postcarding chunks all use it, masked to their power-of-two slot count.
#[inline]
pub fn placement_hash(key: u32, n: u8) -> u32 {
    let k = key.to_le_bytes();
    crc32(&[k[0], k[1], k[2], k[3], n])
}

/// `placement_hash(key, n) & (slots - 1)`; `slots` must be a power of two (the geometry types check it).
#[inline]
pub fn placement(key: u32, n: u8, slots: u64) -> u64 {
    u64::from(placement_hash(key, n)) & (slots - 1)
}

/// The value of a Postcarding cell for a hop that is not on the path.
pub const POSTCARD_BLANK: u32 = 0xFFFF_FFFF;

/// The reference's per-hop CRC-32 polynomials (normal form), hop 1 first.
pub const HOP_POLYNOMIALS: [u32; 8] = [
    0x1e12_a700,
    0x65b9_6595,
    0x49cf_878b,
    0x3651_8f0d,
    0x7a40_a908,
    0x1edc_6f41,
    0x741b_8cd7,
    0x8141_41ab,
];

const fn hop_algorithm(poly: u32) -> Algorithm<u32> {
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
    hop_algorithm(HOP_POLYNOMIALS[0]),
    hop_algorithm(HOP_POLYNOMIALS[1]),
    hop_algorithm(HOP_POLYNOMIALS[2]),
    hop_algorithm(HOP_POLYNOMIALS[3]),
    hop_algorithm(HOP_POLYNOMIALS[4]),
    hop_algorithm(HOP_POLYNOMIALS[5]),
    hop_algorithm(HOP_POLYNOMIALS[6]),
    hop_algorithm(HOP_POLYNOMIALS[7]),
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

    #[test]
    fn design_key_write_vectors() {
        // DESIGN.md section 3: checksum and slots for S = 256, n = 0..3.
        let cases: [(u32, u32, [u64; 4]); 3] = [
            (0, 0x2144_df1c, [29, 139, 49, 167]),
            (1, 0x99f8_b879, [173, 59, 129, 23]),
            (123, 0x9d7a_f881, [195, 85, 239, 121]),
        ];
        for (key, checksum, slots) in cases {
            assert_eq!(key_checksum(key), checksum, "key {key}");
            for (n, slot) in slots.iter().enumerate() {
                assert_eq!(placement(key, n as u8, 256), *slot, "key {key} n {n}");
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
