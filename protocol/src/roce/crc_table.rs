//! Table-driven reflected CRC-32 (init and xorout all ones) for inputs of a few bytes.
//!
//! `crc32fast` and the `crc` crate are the reference implementations here, and fast on long inputs, but
//! on the 4- and 5-byte inputs of the per-report hashes (a key's checksum and its placements) their
//! set-up costs more than the CRC: callgrind put `crc32fast::hash` of 4 bytes at ~90 instructions
//! (CPU feature detection, the SIMD path's dispatch, the tail loop). A slice-by-4 table does a 32-bit word
//! in 4 lookups. The tables are built at compile time; tests check every entry point against the
//! reference crates and [`crate::hash`], which stays the reference. The layout functions and the
//! translator's per-report paths use these.

use crate::hash::{HOP_POLYNOMIALS, PLACEMENT_POLYNOMIALS};

/// Slice-by-4 tables of one reflected CRC-32 polynomial.
pub struct Crc32Table {
    t: [[u32; 256]; 4],
}

impl Crc32Table {
    /// Tables for the polynomial `poly` in normal (MSB-first) form, e.g. `0x04c11db7` for zlib's CRC-32.
    pub const fn new(poly: u32) -> Self {
        let rev = poly.reverse_bits();
        let mut t = [[0u32; 256]; 4];
        let mut i = 0;
        while i < 256 {
            let mut c = i as u32;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 != 0 { (c >> 1) ^ rev } else { c >> 1 };
                k += 1;
            }
            t[0][i] = c;
            i += 1;
        }
        let mut s = 1;
        while s < 4 {
            let mut i = 0;
            while i < 256 {
                let prev = t[s - 1][i];
                t[s][i] = (prev >> 8) ^ t[0][(prev & 0xFF) as usize];
                i += 1;
            }
            s += 1;
        }
        Crc32Table { t }
    }

    /// The register after one more byte. `state` is the raw register (start from `!0`, finish with `!`).
    #[inline]
    pub fn update_byte(&self, state: u32, b: u8) -> u32 {
        self.t[0][((state ^ u32::from(b)) & 0xFF) as usize] ^ (state >> 8)
    }

    /// The register after the four bytes `word.to_le_bytes()` (a reflected CRC eats bytes low first).
    #[inline]
    pub fn update_u32_le(&self, state: u32, word: u32) -> u32 {
        let x = state ^ word;
        self.t[3][(x & 0xFF) as usize]
            ^ self.t[2][((x >> 8) & 0xFF) as usize]
            ^ self.t[1][((x >> 16) & 0xFF) as usize]
            ^ self.t[0][(x >> 24) as usize]
    }

    /// The register after `bytes`.
    #[inline]
    pub fn update(&self, mut state: u32, bytes: &[u8]) -> u32 {
        let mut words = bytes.chunks_exact(4);
        for w in &mut words {
            state = self.update_u32_le(state, u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
        }
        for &b in words.remainder() {
            state = self.update_byte(state, b);
        }
        state
    }

    /// The CRC of `bytes` (init and xorout all ones).
    #[inline]
    pub fn checksum(&self, bytes: &[u8]) -> u32 {
        !self.update(!0, bytes)
    }
}

/// zlib's CRC-32 (CRC-32/ISO-HDLC), the Key-Write checksum and copy 0's placement.
pub static CRC32_ISO_HDLC: Crc32Table = Crc32Table::new(0x04c1_1db7);

/// The tables of the eight placement polynomials ([`PLACEMENT_POLYNOMIALS`]), copy `n` at index `n`.
pub static PLACEMENT_TABLES: [Crc32Table; 8] = [
    Crc32Table::new(PLACEMENT_POLYNOMIALS[0]),
    Crc32Table::new(PLACEMENT_POLYNOMIALS[1]),
    Crc32Table::new(PLACEMENT_POLYNOMIALS[2]),
    Crc32Table::new(PLACEMENT_POLYNOMIALS[3]),
    Crc32Table::new(PLACEMENT_POLYNOMIALS[4]),
    Crc32Table::new(PLACEMENT_POLYNOMIALS[5]),
    Crc32Table::new(PLACEMENT_POLYNOMIALS[6]),
    Crc32Table::new(PLACEMENT_POLYNOMIALS[7]),
];

/// [`hash::key_checksum`](crate::hash::key_checksum) through the table: `crc32(key_le)`.
#[inline]
pub fn key_checksum(key: u32) -> u32 {
    !CRC32_ISO_HDLC.update_u32_le(!0, key)
}

/// [`hash::placement_hash`](crate::hash::placement_hash) through the tables: copy `n`'s CRC over
/// `key_le ‖ n` (`n` taken modulo 8, as there).
#[inline]
pub fn placement_hash(key: u32, n: u8) -> u32 {
    let t = &PLACEMENT_TABLES[usize::from(n % 8)];
    !t.update_byte(t.update_u32_le(!0, key), n)
}

/// Copy 0's placement hash from the key's checksum: both are zlib's CRC-32 and copy 0 hashes one byte
/// (0) more than the checksum, so the checksum's register continues into it for one table lookup instead
/// of a second pass over the key.
#[inline]
pub fn placement_hash0_from_checksum(checksum: u32) -> u32 {
    !CRC32_ISO_HDLC.update_byte(!checksum, 0)
}

/// `placement_hash(key, n) & (slots - 1)`, as [`hash::placement`](crate::hash::placement).
#[inline]
pub fn placement(key: u32, n: u8, slots: u64) -> u64 {
    u64::from(placement_hash(key, n)) & (slots - 1)
}

/// The tables of the eight per-hop polynomials ([`HOP_POLYNOMIALS`]), hop 1 at index 0.
pub static HOP_TABLES: [Crc32Table; 8] = [
    Crc32Table::new(HOP_POLYNOMIALS[0]),
    Crc32Table::new(HOP_POLYNOMIALS[1]),
    Crc32Table::new(HOP_POLYNOMIALS[2]),
    Crc32Table::new(HOP_POLYNOMIALS[3]),
    Crc32Table::new(HOP_POLYNOMIALS[4]),
    Crc32Table::new(HOP_POLYNOMIALS[5]),
    Crc32Table::new(HOP_POLYNOMIALS[6]),
    Crc32Table::new(HOP_POLYNOMIALS[7]),
];

/// CRC-32C (Castagnoli), the CRC of `g(v)`.
pub static CRC32C: Crc32Table = Crc32Table::new(0x1EDC_6F41);

/// [`hash::hop_checksum`](crate::hash::hop_checksum) through the tables (the `crc` crate's bytewise
/// tables cost ~30 instructions for the 4 key bytes, with its set-up): `None` outside hops 1..=8.
#[inline]
pub fn hop_checksum(hop: u8, key: u32) -> Option<u32> {
    let t = HOP_TABLES.get(usize::from(hop).checked_sub(1)?)?;
    Some(!t.update_u32_le(!0, key))
}

/// [`hash::postcard_g`](crate::hash::postcard_g) through the table: CRC-32C of the value's big-endian
/// bytes, i.e. of the little-endian bytes of the byte-swapped value.
#[inline]
pub fn postcard_g(value: u32) -> u32 {
    !CRC32C.update_u32_le(!0, value.swap_bytes())
}

/// [`hash::postcard_cell`](crate::hash::postcard_cell) through the tables.
#[inline]
pub fn postcard_cell(key: u32, hop: u8, value: u32) -> Option<u32> {
    Some(hop_checksum(hop, key)? ^ postcard_g(value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash;
    use proptest::prelude::*;

    #[test]
    fn check_values() {
        // The catalogue's check value of CRC-32/ISO-HDLC over "123456789".
        assert_eq!(CRC32_ISO_HDLC.checksum(b"123456789"), 0xcbf4_3926);
        assert_eq!(CRC32_ISO_HDLC.checksum(b""), 0);
        let c = Crc32Table::new(0x1EDC_6F41);
        assert_eq!(c.checksum(b"123456789"), 0xe306_9283); // CRC-32C
    }

    proptest! {
        #[test]
        fn equals_the_reference_crates(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            prop_assert_eq!(CRC32_ISO_HDLC.checksum(&bytes), crc32fast::hash(&bytes));
            let crc32c = crc::Crc::<u32>::new(&crc::CRC_32_ISCSI);
            prop_assert_eq!(Crc32Table::new(0x1EDC_6F41).checksum(&bytes), crc32c.checksum(&bytes));
        }

        #[test]
        fn key_hashes_equal_the_hash_module(key in any::<u32>(), n in any::<u8>()) {
            let checksum = key_checksum(key);
            prop_assert_eq!(checksum, hash::key_checksum(key));
            prop_assert_eq!(placement_hash(key, n), hash::placement_hash(key, n));
            prop_assert_eq!(placement_hash0_from_checksum(checksum), hash::placement_hash(key, 0));
            let slots = 1u64 << (n % 40);
            prop_assert_eq!(placement(key, n, slots), hash::placement(key, n, slots));
        }

        /// Every hop (in range or not), any key and value: the postcard hashes equal the `crc` crate's.
        #[test]
        fn postcard_hashes_equal_the_hash_module(key in any::<u32>(), hop in 0u8..12, value in any::<u32>()) {
            prop_assert_eq!(hop_checksum(hop, key), hash::hop_checksum(hop, key));
            prop_assert_eq!(postcard_g(value), hash::postcard_g(value));
            prop_assert_eq!(postcard_cell(key, hop, value), hash::postcard_cell(key, hop, value));
        }
    }

    #[test]
    fn word_and_byte_steps_agree() {
        let t = &CRC32_ISO_HDLC;
        for (k, w) in [0u32, 1, 0xdead_beef, u32::MAX, 0x8000_0001]
            .into_iter()
            .enumerate()
        {
            let s = 0x1234_5678u32.rotate_left(k as u32);
            let bytes = w.to_le_bytes();
            let by_bytes = bytes.iter().fold(s, |s, &b| t.update_byte(s, b));
            assert_eq!(t.update_u32_le(s, w), by_bytes);
        }
    }
}
