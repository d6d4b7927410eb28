//! Table-driven reflected CRC-32 (init and xorout all ones) for inputs of a few bytes.
//!
//! `crc32fast` and the `crc` crate are the reference implementations here, and fast on long inputs, but
//! on the 4- and 5-byte inputs of the per-report hashes (a key's checksum and its placements) their
//! set-up costs more than the CRC: callgrind put `crc32fast::hash` of 4 bytes at ~90 instructions
//! (CPU feature detection, the SIMD path's dispatch, the tail loop). A slice-by-4 table does a 32-bit word
//! in 4 lookups. The tables are built at compile time; tests check every entry point against the
//! reference crates and [`crate::hash`], which stays the reference (but for `hash::key_checksum`, which
//! is this table's CRC-32 itself, checked against `crc32fast`). The layout functions and the
//! translator's per-report paths use these.

use crate::polynomials::{HOP_POLYNOMIALS, PLACEMENT_POLYNOMIALS};

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

/// Slice-by-5 tables of one reflected CRC-32 polynomial, for inputs of exactly a word and a byte: the
/// byte goes into the same lookups as the word's (`t[k][b]` is byte `b` followed by `k` zero bytes), so
/// the five bytes take five independent lookups, not the word's four and then the byte's, which waited
/// on them.
pub struct Crc32Table5 {
    t: [[u32; 256]; 5],
}

impl Crc32Table5 {
    /// Tables for the polynomial `poly` in normal (MSB-first) form, as [`Crc32Table::new`].
    pub const fn new(poly: u32) -> Self {
        let four = Crc32Table::new(poly).t;
        let mut t = [[0u32; 256]; 5];
        let mut s = 0;
        while s < 4 {
            t[s] = four[s];
            s += 1;
        }
        let mut i = 0;
        while i < 256 {
            let prev = t[3][i];
            t[4][i] = (prev >> 8) ^ t[0][(prev & 0xFF) as usize];
            i += 1;
        }
        Crc32Table5 { t }
    }

    /// The register after the bytes `word.to_le_bytes()` then `b`: `update_byte(update_u32_le(state,
    /// word), b)` of [`Crc32Table`] (a test checks they agree).
    #[inline]
    pub fn update_u32_le_byte(&self, state: u32, word: u32, b: u8) -> u32 {
        let x = state ^ word;
        self.t[4][(x & 0xFF) as usize]
            ^ self.t[3][((x >> 8) & 0xFF) as usize]
            ^ self.t[2][((x >> 16) & 0xFF) as usize]
            ^ self.t[1][(x >> 24) as usize]
            ^ self.t[0][usize::from(b)]
    }
}

/// Slice-by-5 tables of the eight placement polynomials ([`PLACEMENT_POLYNOMIALS`]), copy `n` at index
/// `n`, for [`placement_hash5`].
pub static PLACEMENT_TABLES5: [Crc32Table5; 8] = [
    Crc32Table5::new(PLACEMENT_POLYNOMIALS[0]),
    Crc32Table5::new(PLACEMENT_POLYNOMIALS[1]),
    Crc32Table5::new(PLACEMENT_POLYNOMIALS[2]),
    Crc32Table5::new(PLACEMENT_POLYNOMIALS[3]),
    Crc32Table5::new(PLACEMENT_POLYNOMIALS[4]),
    Crc32Table5::new(PLACEMENT_POLYNOMIALS[5]),
    Crc32Table5::new(PLACEMENT_POLYNOMIALS[6]),
    Crc32Table5::new(PLACEMENT_POLYNOMIALS[7]),
];

/// [`hash::placement_hash`](crate::hash::placement_hash) through the slice-by-5 tables: copy `n`'s CRC
/// over `key_le ‖ n` (`n` taken modulo 8, as there), its five bytes in five independent lookups (the
/// same result, which a test checks).
#[inline]
pub fn placement_hash5(key: u32, n: u8) -> u32 {
    !PLACEMENT_TABLES5[usize::from(n % 8)].update_u32_le_byte(!0, key, n)
}

/// Copy 0's placement hash from the key's checksum ([`hash::key_checksum`](crate::hash::key_checksum)):
/// both are zlib's CRC-32 and copy 0 hashes one byte (0) more than the checksum, so the checksum's
/// register continues into it for one table lookup instead of a second pass over the key.
#[inline]
pub fn placement_hash0_from_checksum(checksum: u32) -> u32 {
    !CRC32_ISO_HDLC.update_byte(!checksum, 0)
}

/// `placement_hash5(key, n) & (slots - 1)`, as [`hash::placement`](crate::hash::placement).
#[inline]
pub fn placement(key: u32, n: u8, slots: u64) -> u64 {
    u64::from(placement_hash5(key, n)) & (slots - 1)
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
pub static CRC32C: Crc32Table = Crc32Table::new(CRC32C_POLY);

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

/// Postcarding's cells through tables laid out for a whole chunk. A chunk needs B cells (B up to 8) of one
/// key: cell `h` is `hop_checksum(h, key) ^ postcard_g(v_h)`, which one cell at a time costs B passes of
/// four lookups for the key and B of four for the values, each with its inversions and byte swaps
/// (~200 instructions for a 5-hop chunk). Here:
///
/// * each row of `hop` holds one key byte's contribution to all eight hops side by side, so the eight
///   hop checksums are four row lookups and four eight-lane XORs (vector XORs);
/// * a CRC register update is linear in the register XOR the input word, so a checksum is a constant
///   (the all-ones initial register's and the final inversion's part) XOR the input's lookups; the
///   constants of both CRCs are folded into `base`, once per chunk;
/// * CRC-32C of a value's big-endian bytes reads the value's byte `q` (low first) through table `q`, so
///   `g` is indexed by the value's own bytes, no swap;
/// * every entry is stored byte-swapped: cells are big-endian in memory, so a lane's little-endian
///   bytes are the cell's bytes and the chunk is stored without a swap per cell (XOR commutes with the
///   swap).
pub struct PostcardTables {
    /// `hop[p][b][h]`: byte `b` at byte position `p` of the key (0 the low byte) in hop `h + 1`'s CRC,
    /// swapped.
    hop: [[[u32; 8]; 256]; 4],
    /// `g[q][b]`: byte `b` at byte position `q` of the value in its CRC-32C, swapped.
    g: [[u32; 256]; 4],
    /// Lane `h`: `hop_checksum(h + 1, 0) ^ postcard_g(0)`, swapped.
    base: [u32; 8],
    /// `keep[n]`: all ones in lanes below `n`, zero from `n` on (cells beyond B are zero).
    keep: [[u32; 8]; 9],
}

impl PostcardTables {
    const fn new() -> Self {
        let mut hop = [[[0u32; 8]; 256]; 4];
        let mut base = [0u32; 8];
        let c = Crc32Table::new(CRC32C_POLY);
        // `!update_u32_le(!0, 0)`: the register all ones, the input zero.
        let g0 = !(c.t[3][0xFF] ^ c.t[2][0xFF] ^ c.t[1][0xFF] ^ c.t[0][0xFF]);
        let mut h = 0;
        while h < 8 {
            let t = Crc32Table::new(HOP_POLYNOMIALS[h]);
            // `update_u32_le` reads the word's low byte through `t[3]` and its high byte through `t[0]`.
            let mut p = 0;
            while p < 4 {
                let mut b = 0;
                while b < 256 {
                    hop[p][b][h] = t.t[3 - p][b].swap_bytes();
                    b += 1;
                }
                p += 1;
            }
            let hop0 = !(t.t[3][0xFF] ^ t.t[2][0xFF] ^ t.t[1][0xFF] ^ t.t[0][0xFF]);
            base[h] = (hop0 ^ g0).swap_bytes();
            h += 1;
        }
        // `postcard_g` feeds the value's bytes high first: its byte `q` is the word's byte `3 - q`, read
        // through `t[q]`.
        let mut g = [[0u32; 256]; 4];
        let mut q = 0;
        while q < 4 {
            let mut b = 0;
            while b < 256 {
                g[q][b] = c.t[q][b].swap_bytes();
                b += 1;
            }
            q += 1;
        }
        let mut keep = [[0u32; 8]; 9];
        let mut n = 0;
        while n <= 8 {
            let mut h = 0;
            while h < n {
                keep[n][h] = u32::MAX;
                h += 1;
            }
            n += 1;
        }
        PostcardTables { hop, g, base, keep }
    }

    /// `[hop_checksum(1, key), ..., hop_checksum(8, key)]` XOR `postcard_g(0)`, each swapped.
    #[inline]
    fn hop_lanes(&self, key: u32) -> [u32; 8] {
        let mut acc = self.base;
        for (rows, b) in self.hop.iter().zip(key.to_le_bytes()) {
            let row = &rows[usize::from(b)];
            for (a, r) in acc.iter_mut().zip(row) {
                *a ^= r;
            }
        }
        acc
    }

    /// `postcard_g(value) ^ postcard_g(0)`, swapped.
    #[inline]
    fn g_part(&self, value: u32) -> u32 {
        let [b0, b1, b2, b3] = value.to_le_bytes();
        self.g[0][usize::from(b0)]
            ^ self.g[1][usize::from(b1)]
            ^ self.g[2][usize::from(b2)]
            ^ self.g[3][usize::from(b3)]
    }

    /// The cells of a chunk of `used` hops (at most 8) for `key`, hop `h + 1` having seen `values[h]`:
    /// lane `h` below `used` is `postcard_cell(key, h + 1, values[h])` byte-swapped (its little-endian
    /// bytes are the cell's big-endian ones), lanes from `used` on are zero.
    #[inline]
    pub fn cells_swapped(&self, key: u32, values: &[u32; 8], used: usize) -> [u32; 8] {
        let used = used.min(8);
        // The values' terms apart (scalar lookups), then merged lane-wise with the hop lanes: XORing each
        // into its vector lane as it comes costs the compiler a lane shuffle per value.
        let mut g = [0u32; 8];
        for (t, &v) in g.iter_mut().zip(values).take(used) {
            *t = self.g_part(v);
        }
        let mut acc = self.hop_lanes(key);
        for ((a, t), k) in acc.iter_mut().zip(g).zip(&self.keep[used]) {
            *a = (*a ^ t) & k;
        }
        acc
    }
}

/// The CRC-32C (Castagnoli) polynomial, normal form.
const CRC32C_POLY: u32 = 0x1EDC_6F41;

/// [`PostcardTables`] (40 KiB): a chunk reads four cache lines of hop rows and four table lines per value,
/// where the per-hop tables read four lines in each of B tables.
pub static POSTCARD_TABLES: PostcardTables = PostcardTables::new();

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

    /// Every polynomial's slice-by-5 step equals the slice-by-4 word then the byte, for any state, word
    /// and byte.
    #[test]
    fn slice_by_5_equals_word_then_byte() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let (state, word, b) = (x as u32, (x >> 32) as u32, (x >> 24) as u8);
            for (&poly, t5) in PLACEMENT_POLYNOMIALS.iter().zip(&PLACEMENT_TABLES5) {
                let t4 = Crc32Table::new(poly);
                assert_eq!(
                    t5.update_u32_le_byte(state, word, b),
                    t4.update_byte(t4.update_u32_le(state, word), b)
                );
            }
        }
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
            let checksum = hash::key_checksum(key);
            prop_assert_eq!(placement_hash5(key, n), hash::placement_hash(key, n));
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

    /// The cells of [`PostcardTables`], swapped back, as [`postcard_cell`] gives them one at a time.
    fn check_cells(key: u32, values: &[u32; 8]) {
        for used in 0..=9usize {
            let cells = POSTCARD_TABLES.cells_swapped(key, values, used);
            for (h, &cell) in cells.iter().enumerate() {
                let want = if h < used {
                    hash::postcard_cell(key, h as u8 + 1, values[h]).unwrap()
                } else {
                    0
                };
                assert_eq!(
                    cell.to_le_bytes(),
                    want.to_be_bytes(),
                    "key {key:#x}, used {used}, hop {}",
                    h + 1
                );
            }
        }
    }

    proptest! {
        /// Any key and values: the chunk's cells equal the hash module's.
        #[test]
        fn postcard_tables_equal_the_hash_module(key in any::<u32>(), values in any::<[u32; 8]>()) {
            check_cells(key, &values);
        }
    }

    #[test]
    fn postcard_tables_edge_inputs() {
        for key in [0u32, 1, 0xFF, 0x100, 0xdead_beef, u32::MAX, 0x8000_0000] {
            for v in [
                0u32,
                1,
                0x80,
                0x100,
                0x1234_5678,
                hash::POSTCARD_BLANK,
                0x8000_0000,
            ] {
                check_cells(key, &[v; 8]);
            }
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
