//! The CRC polynomials of the placement and per-hop hashes: data that both [`hash`](crate::hash), which
//! defines the functions and re-exports these, and [`roce::crc_table`](crate::roce::crc_table), which
//! builds their lookup tables, use (here so that `hash` can use the tables without a circle).

/// The CRC-32 polynomial (normal form) that places copy `n`, for `n` in `0..8`.
///
/// Every copy needs its own polynomial. CRC is linear, so with one polynomial for all copies (the
/// reference's `crc32(key_le ‖ n)`) copy `n` sits at a fixed XOR offset from copy 0 for every key: a key
/// that overwrites one copy of another overwrites all of them, and N copies are lost together with the
/// probability 1 − e^(−αN) instead of (1 − e^(−αN))^N. dta-sim measured 18 % empty returns at N = 2,
/// α = 0.1 with the shared polynomial, against the paper's 3.3 %.
///
/// Copy 0 keeps zlib's CRC-32, so N = 1 places exactly as the reference does. Copies 1 to 3 use published
/// CRC-32 polynomials (CRC-32D and two of Koopman's), copies 4 to 7 come from a seeded search. All eight
/// were checked for two properties (unit tests in `hash.rs` re-check them from `placement_hash` alone):
/// the low `s` bits of any first `N` copies are jointly full-rank over GF(2) whenever `N·s ≤ 32`, so
/// copies of a key land independently; and runs of consecutive or strided keys spread over the slots.
pub const PLACEMENT_POLYNOMIALS: [u32; 8] = [
    0x04c1_1db7,
    0xa833_982b,
    0xd419_cc15,
    0xba0d_c66b,
    0xb39e_201d,
    0x7252_43ab,
    0xd804_6b21,
    0x63a4_cd11,
];

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
