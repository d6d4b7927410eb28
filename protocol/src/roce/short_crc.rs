//! zlib's CRC-32 (CRC-32/ISO-HDLC, reflected) of short messages, by carry-less multiplication.
//!
//! The per-frame iCRC hashes a few dozen bytes (a Key-Write frame's 36 after its PSN word, an ATOMIC
//! ACKNOWLEDGE's 16). crc32fast folds only inputs of 64 bytes or more with PCLMULQDQ and takes shorter
//! ones a byte at a time through its tables (~83 instructions for 36 bytes, under callgrind), and the
//! slice-by-4 table of [`crc_table`](super::crc_table) needs 4 lookups a word. This module folds 16 bytes
//! per step with PCLMULQDQ (Intel's "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ"
//! method, derived here from the polynomial arithmetic below) and ends with a Barrett reduction.
//!
//! Short inputs are made whole blocks without a copy: the CRC is linear, so a message's register is the
//! register its state alone would reach over as many zero bytes ([`Crc32Short::zeros`], constant per
//! frame shape) XORed with the zero-init register of its bytes ([`Crc32Short::linear_tail`]); and leading
//! zero bytes leave a zero-init register at zero. So the bytes are read as the last whole 16-byte blocks
//! ending where they end, with the bytes before them masked to zero.
//!
//! Registers here are raw (no init, no xorout): a CRC continued from crc32fast's value `c` starts from
//! `!c` and ends with `!`. Tests check every path against crc32fast over random states, lengths and bytes.
//!
//! # The arithmetic
//! Bits go on the wire low bit of byte 0 first, so a 16-byte block loaded as a little-endian `u128` has
//! bit `i` holding the coefficient of `x^(127 - i)` of the block's polynomial (the "reflected" form; a
//! 32-bit register likewise holds `x^(31 - j)` in bit `j`). A carry-less product of two reflected 64-bit
//! values is the reflected 128-bit form of the product times `x`, which the constants below absorb by
//! being one power of `x` lower. With `P` the CRC polynomial:
//! - fold: a 128-bit remainder `X = H·x^64 + L` before a block `B` becomes `H·(x^191 mod P)·x +
//!   L·(x^127 mod P)·x + B`, congruent to `X·x^128 + B` and again below 128 bits;
//! - reduce: the register is `X·x^32 mod P`; `X·x^32 = H·x^96 + L·x^32` folds to below 96 bits with
//!   `x^95 mod P`, its top 32 bits fold into the low 64 with `x^63 mod P`, and a Barrett step with
//!   `µ = x^64 div P` takes the 64 bits to 32.

use crate::roce::at;
use crate::roce::crc_table::CRC32_ISO_HDLC;
use crate::roce::ICRC_LEN;

/// zlib's polynomial, normal form without the `x^32` term.
const POLY: u32 = 0x04c1_1db7;

/// `x^n mod P`, normal form (bit `j` is the coefficient of `x^j`).
const fn x_pow_mod(n: u32) -> u32 {
    let mut r: u32 = 1;
    let mut i = 0;
    while i < n {
        let top = r & 0x8000_0000 != 0;
        r <<= 1;
        if top {
            r ^= POLY;
        }
        i += 1;
    }
    r
}

/// `x^64 div P` (33 bits), normal form.
const fn mu() -> u64 {
    // Long division of x^64 by P (with its x^32 term), one quotient bit per step from the top.
    let p: u128 = (1u128 << 32) | POLY as u128;
    let mut rem: u128 = 1u128 << 64;
    let mut q: u64 = 0;
    let mut bit = 64;
    while bit >= 32 {
        if rem & (1u128 << bit) != 0 {
            rem ^= p << (bit - 32);
            q |= 1u64 << (bit - 32);
        }
        bit -= 1;
    }
    q
}

/// A polynomial of degree below 32 in the reflected 64-bit form (`x^j` in bit `63 - j`).
const fn reflect64_of32(c: u32) -> u64 {
    (c.reverse_bits() as u64) << 32
}

/// A polynomial of degree at most 32 times `x^31`, reflected 64-bit (`x^j` of the polynomial in bit
/// `32 - j`): the Barrett constants' form.
const fn reflect33(c: u64) -> u64 {
    ((c as u32).reverse_bits() as u64) << 1 | ((c >> 32) & 1)
}

/// Fold constants: for the low (`x^127..x^64`) and the high (`x^63..x^0`) half of a 128-bit remainder.
const FOLD_LO: u64 = reflect64_of32(x_pow_mod(191));
const FOLD_HI: u64 = reflect64_of32(x_pow_mod(127));
/// Reduction constants: 128 to 96 bits, then 96 to 64.
const REDUCE_96: u64 = reflect64_of32(x_pow_mod(95));
const REDUCE_64: u64 = reflect64_of32(x_pow_mod(63));
/// Barrett: `µ` and `P`, each times `x^31`.
const BARRETT_MU: u64 = reflect33(mu());
const BARRETT_P: u64 = reflect33((1u64 << 32) | POLY as u64);

/// The constants as 128-bit pairs (low half first), 16-byte aligned so each is one aligned load: fold,
/// reduce, Barrett, and the mask of a 128-bit value's low 32 bits.
#[repr(C, align(16))]
struct Pairs([[u64; 2]; 4]);
static PAIRS: Pairs = Pairs([
    [FOLD_LO, FOLD_HI],
    [REDUCE_96, REDUCE_64],
    [BARRETT_MU, BARRETT_P],
    [0xFFFF_FFFF, 0],
]);

/// Sixteen zero bytes, then sixteen `0xFF`: the 16 bytes from offset `16 - k` keep all but the first `k`
/// bytes of a block.
static KEEP_MASKS: [u8; 32] = {
    let mut m = [0u8; 32];
    let mut i = 16;
    while i < 32 {
        m[i] = 0xFF;
        i += 1;
    }
    m
};

/// The short-message CRC, with the CPU's carry-less multiply detected once (store one per user: the
/// check then is a field, not a feature query per message).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Crc32Short {
    clmul: bool,
}

impl Default for Crc32Short {
    fn default() -> Self {
        Self::detect()
    }
}

impl Crc32Short {
    /// Uses PCLMULQDQ when this CPU has it, the table otherwise.
    pub fn detect() -> Self {
        Crc32Short {
            clmul: clmul_available(),
        }
    }

    /// Always the table (for tests of the fallback, and for comparison).
    pub const fn table_only() -> Self {
        Crc32Short { clmul: false }
    }

    /// Whether the carry-less multiply path is in use.
    pub const fn uses_clmul(self) -> bool {
        self.clmul
    }

    /// The zero-init, zero-xorout register over the last `n` bytes of `buf` (all of `buf` if `n` is
    /// larger). Reads up to 15 bytes before them, which do not count, when `buf` has them.
    #[inline]
    #[allow(unsafe_code)]
    pub fn linear_tail(self, buf: &[u8], n: usize) -> u32 {
        let n = n.min(buf.len());
        let window = n.next_multiple_of(16);
        if self.clmul && n > 0 && window <= buf.len() {
            let start = buf.len() - window;
            // SAFETY: `clmul` is true only when `clmul_available` found PCLMULQDQ (and SSE2, which
            // x86_64 always has) on this CPU; the slice is whole blocks by construction.
            return unsafe { clmul::linear(&buf[start..], window - n) };
        }
        CRC32_ISO_HDLC.update(0, &buf[buf.len() - n..])
    }

    /// The raw register after `state` and `bytes` (start from `!0` or `!c` for crc32fast's value `c`;
    /// the CRC is `!` the result).
    #[inline]
    #[allow(unsafe_code)]
    pub fn update(self, state: u32, bytes: &[u8]) -> u32 {
        if self.clmul && bytes.len() >= 16 {
            // The state's contribution: the state XORed into the first 4 message bytes, as a register
            // is (a reflected register eats its low byte first); the rest is linear in the bytes. The
            // first `head` bytes (to a multiple of 16) go through the table, from the state.
            let head = bytes.len() % 16;
            let state = CRC32_ISO_HDLC.update(state, &bytes[..head]);
            // SAFETY: as in `linear_tail`; `bytes[head..]` is whole blocks, at least one.
            return unsafe { clmul::from_state(state, &bytes[head..]) };
        }
        CRC32_ISO_HDLC.update(state, bytes)
    }

    /// The raw register `state` reaches over `n` zero bytes: what a message's state contributes to its
    /// register, for [`linear_tail`](Self::linear_tail) to add the bytes' own part to.
    pub fn zeros(state: u32, n: usize) -> u32 {
        // Rare (once per frame shape): whole 64-byte zero chunks through crc32fast.
        const Z: [u8; 64] = [0; 64];
        let mut h = crc32fast::Hasher::new_with_initial(!state);
        let mut left = n;
        while left > 0 {
            let k = left.min(Z.len());
            h.update(&Z[..k]);
            left -= k;
        }
        !h.finalize()
    }
}

/// [`Crc32Short::linear_tail`] for one tail length, its block window worked out once (a frame shape's
/// tail, from its PSN word to its iCRC, has one length).
#[derive(Clone, Copy, Debug)]
pub struct TailCrc {
    len: usize,
    /// `len` rounded up to whole 16-byte blocks.
    window: usize,
    /// The bytes of the window before the tail: `window - len`.
    skip: usize,
    /// The carry-less fold for a window of this many blocks (unrolled up to 4), or `None` for the table
    /// (no carry-less multiply on this CPU, or an empty tail).
    clmul: Option<clmul::Linear>,
    /// [`fill_many`](Self::fill_many)'s loop for this window (up to 4 blocks), or `None` (the table, or
    /// a longer tail: those frames take the per-frame path).
    many: Option<clmul::FillMany>,
}

impl TailCrc {
    /// For tails of `len` bytes.
    pub fn new(short: Crc32Short, len: usize) -> Self {
        let window = len.next_multiple_of(16);
        TailCrc {
            len,
            window,
            skip: window - len,
            clmul: (short.clmul && len > 0).then(|| clmul::for_blocks(window / 16)),
            many: if short.clmul && len > 0 {
                clmul::fill_many_for_blocks(window / 16)
            } else {
                None
            },
        }
    }

    /// The tail length.
    pub const fn len(&self) -> usize {
        self.len
    }

    /// Whether the tail is empty.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// [`Crc32Short::linear_tail`] of `covered`'s last `len` bytes.
    #[inline]
    pub fn linear(&self, covered: &[u8]) -> u32 {
        match self.clmul_linear(covered) {
            Some(r) => r,
            None => self.table_linear(covered),
        }
    }

    /// [`linear`](Self::linear) through the carry-less multiply: `None` without it, or when `covered`
    /// has fewer bytes than the tail's whole blocks.
    #[inline]
    #[allow(unsafe_code)]
    pub fn clmul_linear(&self, covered: &[u8]) -> Option<u32> {
        let f = self.clmul?;
        let start = covered.len().checked_sub(self.window)?;
        // SAFETY: `clmul` is set only when `clmul_available` found PCLMULQDQ (and SSE2, which x86_64
        // always has) on this CPU, to the fold for `window / 16` blocks: the slice is exactly those
        // blocks (at least one: `clmul` needs `len > 0`), and `skip` is below 16.
        Some(unsafe { f(&covered[start..], self.skip) })
    }

    /// Writes the iCRC of the frame at the start of every room: each frame's tail ends at `icrc_at`, its
    /// register is `!(zeros ^ linear)` (see [`IcrcPrefix`](super::IcrcPrefix)), written little-endian at
    /// `icrc_at`. One call for a burst of frames of one shape, so that the fold runs inlined in its own
    /// loop instead of a call per frame that made the frame builder's loop spill its registers. Returns
    /// false (nothing written) without the carry-less multiply or for tails over 64 bytes; rooms shorter
    /// than `icrc_at + 4` are skipped (a caller builds frames only into rooms that hold them).
    #[inline]
    #[allow(unsafe_code)]
    pub fn fill_many(&self, rooms: &mut [&mut [u8]], icrc_at: usize, zeros: u32) -> bool {
        let Some(f) = self.many else {
            return false;
        };
        if icrc_at < self.window {
            return false;
        }
        // SAFETY: `many` is set only when `clmul_available` found PCLMULQDQ on this CPU, to the loop for
        // `window / 16` blocks (1 to 4); `skip` is below 16, and `icrc_at` is at least the window, so
        // each room's tail window starts inside it (the loop checks each room's length).
        unsafe { f(rooms, icrc_at, self.skip, zeros) };
        true
    }

    /// [`linear`](Self::linear) through the table (out of line: the carry-less path is the common one).
    #[inline(never)]
    fn table_linear(&self, covered: &[u8]) -> u32 {
        let n = self.len.min(covered.len());
        CRC32_ISO_HDLC.update(0, &covered[covered.len() - n..])
    }
}

/// The length of a [`Write8`] frame: Ethernet, IPv4 without options, UDP, BTH, RETH, 8 payload bytes,
/// iCRC.
pub const WRITE8_LEN: usize = at::write_only_len(W8_PAYLOAD_LEN);

/// Where a [`Write8`] frame's parts lie, from [`at`]. The iCRC's window is the two 16-byte blocks ending
/// at the iCRC; `clmul::write8` builds each block in a register from its fields, so the asserts below
/// pin the fields to the blocks: block 1 is the 4 bytes before the PSN word (the BTH's FECN/BECN byte and
/// destination QP, covered by the prefix state and masked out of the fold), the AckReq/PSN word and the
/// RETH's VA; block 2 the R_Key, the DMA length and the payload.
const W8_PAYLOAD_LEN: usize = 8;
const W8_BLOCK: usize = 16;
/// The iCRC.
const W8_ICRC: usize = WRITE8_LEN - ICRC_LEN;
/// The window's first block.
const W8_WINDOW: usize = W8_ICRC - 2 * W8_BLOCK;
/// The window's second block.
const W8_BLOCK2: usize = W8_WINDOW + W8_BLOCK;
/// Bytes at the window's start that the prefix state covers.
const W8_SKIP: usize = at::BTH_ACK_REQ - W8_WINDOW;
/// The template's head: whole blocks up to past the window's start (their last bytes are overwritten
/// by block 1), held in three registers.
const W8_HEAD: usize = W8_WINDOW.div_ceil(W8_BLOCK) * W8_BLOCK;
const _: () = {
    assert!(W8_HEAD == 3 * W8_BLOCK);
    assert!(W8_WINDOW == at::BTH_BECN_FECN && at::BTH_DEST_QP.end == at::BTH_ACK_REQ);
    assert!(W8_SKIP == 4 && at::BTH_PSN.end == at::RETH_VA.start);
    assert!(at::RETH_VA.end == W8_BLOCK2 && at::RETH_RKEY.start == W8_BLOCK2);
    assert!(at::RETH_DMA_LEN.start == at::RETH_RKEY.end);
    assert!(at::WRITE_PAYLOAD == at::RETH_DMA_LEN.end);
    assert!(at::WRITE_PAYLOAD + W8_PAYLOAD_LEN == W8_ICRC);
};

/// The per-frame fields of a [`Write8`] frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Write8Fields {
    /// The BTH's AckReq/PSN word (AckReq in the top bit, the PSN in the low 24).
    pub word: u32,
    /// The RETH's virtual address.
    pub va: u64,
    /// The RETH's R_Key.
    pub rkey: u32,
    /// The payload (a Key-Write entry: the key's checksum and 4 data bytes).
    pub payload: [u8; W8_PAYLOAD_LEN],
}

/// RDMA WRITE ONLY frames with an 8-byte payload (Key-Write's entry for 4-byte values, the common frame)
/// of one QP, built a burst at a time: the iCRC window (the PSN word to the payload's end, 28 bytes
/// after 4 the prefix state covers) is exactly two 16-byte blocks, which are put together in registers
/// from the fields, stored, and folded for the iCRC without a copy of the template's tail, a patch of
/// each field, or a reload. Only with the carry-less multiply ([`new`](Self::new) says `None` without
/// it, and the caller builds such frames another way).
#[derive(Clone, Debug)]
pub struct Write8 {
    /// The template's first `W8_HEAD` bytes (to just past the BTH's P_Key; those from `W8_WINDOW` on
    /// are rewritten).
    head: [u8; W8_HEAD],
    /// The template's 4 bytes before the PSN word (the BTH's reserved byte and destination QP), as a
    /// little-endian word.
    before_psn: u32,
    /// The template's RETH DMA length (8), as a little-endian word of its big-endian bytes.
    dma_len: u32,
    /// The raw register the prefix state reaches over the 28-byte tail in zero bytes.
    zeros: u32,
}

impl Write8 {
    /// For frames of `template`, whose iCRC prefix state over everything before the PSN word reaches
    /// the raw register `zeros` over 28 zero bytes. `None` without the carry-less multiply on this CPU,
    /// or for a template of another length (the caller checks it is an RDMA WRITE ONLY of 8 bytes).
    pub fn new(template: &[u8], zeros: u32) -> Option<Self> {
        if !Crc32Short::detect().uses_clmul() || template.len() != WRITE8_LEN {
            return None;
        }
        let word = |at: usize| -> Option<u32> {
            Some(u32::from_le_bytes(
                template.get(at..at + 4)?.try_into().ok()?,
            ))
        };
        Some(Write8 {
            head: template.get(..W8_HEAD)?.try_into().ok()?,
            before_psn: word(W8_WINDOW)?,
            dma_len: word(at::RETH_DMA_LEN.start)?,
            zeros,
        })
    }

    /// Writes frame `k` with `fields[k]` at the start of `rooms[k]`, iCRC included, for as many as both
    /// have (stopping at a room shorter than [`WRITE8_LEN`]); how many it wrote.
    #[inline]
    #[allow(unsafe_code)]
    pub fn write_all(&self, rooms: &mut [&mut [u8]], fields: &[Write8Fields]) -> usize {
        // SAFETY: `new` built `self` only where `clmul_available` found PCLMULQDQ on this CPU.
        unsafe { clmul::write8(rooms, fields, self) }
    }
}

#[cfg(target_arch = "x86_64")]
fn clmul_available() -> bool {
    std::arch::is_x86_feature_detected!("pclmulqdq")
}

#[cfg(not(target_arch = "x86_64"))]
fn clmul_available() -> bool {
    false
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod clmul;

#[cfg(not(target_arch = "x86_64"))]
#[allow(unsafe_code)]
mod clmul {
    /// As on x86_64.
    pub(crate) type Linear = unsafe fn(&[u8], usize) -> u32;

    /// Never called: `clmul` is false off x86_64.
    pub(super) fn for_blocks(_: usize) -> Linear {
        linear
    }

    /// As on x86_64.
    pub(crate) type FillMany = unsafe fn(&mut [&mut [u8]], usize, usize, u32);

    /// Never called: `clmul` is false off x86_64.
    pub(super) fn fill_many_for_blocks(_: usize) -> Option<FillMany> {
        None
    }

    /// Never called: `Write8::new` needs the carry-less multiply.
    pub(super) unsafe fn write8(
        _: &mut [&mut [u8]],
        _: &[super::Write8Fields],
        _: &super::Write8,
    ) -> usize {
        0
    }

    /// Never called: `clmul` is false off x86_64.
    pub(super) unsafe fn linear(blocks: &[u8], skip: usize) -> u32 {
        super::CRC32_ISO_HDLC.update(0, &blocks[skip..])
    }

    /// Never called: `clmul` is false off x86_64.
    pub(super) unsafe fn linear_block(block: &[u8; 16]) -> u32 {
        super::CRC32_ISO_HDLC.update(0, block)
    }

    /// Never called: `clmul` is false off x86_64.
    pub(super) unsafe fn from_state(state: u32, blocks: &[u8]) -> u32 {
        super::CRC32_ISO_HDLC.update(state, blocks)
    }
}

#[cfg(test)]
mod tests;

impl Crc32Short {
    /// [`linear_tail`](Self::linear_tail) of exactly one 16-byte block (an ATOMIC ACKNOWLEDGE's tail,
    /// from its PSN word to its iCRC): no bytes before it to mask and no length to dispatch on, and a
    /// direct call, so the per-response iCRC check pays the fold and its reduction alone (callgrind: the
    /// generic fold through [`TailCrc`] was ~27 instructions an ATOMIC ACKNOWLEDGE).
    #[inline]
    #[allow(unsafe_code)]
    pub fn linear_block(self, block: &[u8; 16]) -> u32 {
        if self.clmul {
            // SAFETY: `clmul` is true only when `clmul_available` found PCLMULQDQ (and SSE2, which
            // x86_64 always has) on this CPU; `block` is one whole block.
            return unsafe { clmul::linear_block(block) };
        }
        CRC32_ISO_HDLC.update(0, block)
    }
}

#[cfg(test)]
mod one_block_tests;
