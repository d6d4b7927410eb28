//! The PCLMULQDQ kernels of the short CRC (x86_64): the folds, the tails and the Barrett reduction.

use super::*;
use std::arch::x86_64::*;

/// The zero-init register of `blocks` (a non-empty multiple of 16 bytes) with its first `skip`
/// bytes (below 16) taken as zero.
///
/// # Safety
/// The CPU must have PCLMULQDQ.
#[target_feature(enable = "pclmulqdq,sse2")]
pub(super) unsafe fn linear(blocks: &[u8], skip: usize) -> u32 {
    debug_assert!(blocks.len() % 16 == 0 && !blocks.is_empty() && skip < 16);
    // SAFETY: `KEEP_MASKS[16 - skip..]` has 16 + skip >= 16 bytes (`skip` is below 16, as the
    // caller's window is the tail rounded up to whole blocks); `blocks` has at least one block.
    let keep = _mm_loadu_si128(KEEP_MASKS.as_ptr().add(16 - (skip & 15)) as *const __m128i);
    let first = _mm_loadu_si128(blocks.as_ptr() as *const __m128i);
    fold_reduce(_mm_and_si128(first, keep), blocks)
}

/// A fold of whole blocks with leading bytes skipped, as [`linear`] (for one block count).
pub(crate) type Linear = unsafe fn(&[u8], usize) -> u32;

/// The fold for windows of `blocks` blocks: unrolled for up to 4 (every frame tail up to 64 bytes,
/// without a dispatch on the length per message), [`linear`] beyond.
pub(super) fn for_blocks(blocks: usize) -> Linear {
    match blocks {
        1 => linear_n::<1>,
        2 => linear_n::<2>,
        3 => linear_n::<3>,
        4 => linear_n::<4>,
        _ => linear,
    }
}

/// [`linear`] of exactly `N` blocks.
///
/// # Safety
/// The CPU must have PCLMULQDQ; `blocks` must have at least `N` (at least one) whole blocks and
/// `skip` be below 16.
#[target_feature(enable = "pclmulqdq,sse2")]
unsafe fn linear_n<const N: usize>(blocks: &[u8], skip: usize) -> u32 {
    debug_assert!(N >= 1 && blocks.len() >= 16 * N && skip < 16);
    // SAFETY: as in `linear`; the loads are of blocks below `N`.
    let keep = _mm_loadu_si128(KEEP_MASKS.as_ptr().add(16 - (skip & 15)) as *const __m128i);
    let p = blocks.as_ptr() as *const __m128i;
    let mut x = _mm_and_si128(_mm_loadu_si128(p), keep);
    for i in 1..N {
        x = fold(x, _mm_loadu_si128(p.add(i)));
    }
    reduce(x)
}

/// [`TailCrc::fill_many`]'s loop: rooms, the iCRC offset, the skipped bytes, the prefix's zeros.
pub(crate) type FillMany = unsafe fn(&mut [&mut [u8]], usize, usize, u32);

/// The loop for windows of `blocks` blocks, up to 4 (`None` beyond: per frame there).
pub(super) fn fill_many_for_blocks(blocks: usize) -> Option<FillMany> {
    match blocks {
        1 => Some(fill_many_n::<1>),
        2 => Some(fill_many_n::<2>),
        3 => Some(fill_many_n::<3>),
        4 => Some(fill_many_n::<4>),
        _ => None,
    }
}

/// For each room holding at least `icrc_at + 4` bytes: [`linear_n`] of the `N` blocks ending at
/// `icrc_at` (the first `skip` bytes taken as zero), and `!(zeros ^ that)` written little-endian at
/// `icrc_at`.
///
/// # Safety
/// The CPU must have PCLMULQDQ; `N` at least 1, `skip` below 16 and `icrc_at` at least `16 * N`.
#[target_feature(enable = "pclmulqdq,sse2")]
unsafe fn fill_many_n<const N: usize>(
    rooms: &mut [&mut [u8]],
    icrc_at: usize,
    skip: usize,
    zeros: u32,
) {
    debug_assert!(N >= 1 && skip < 16 && icrc_at >= 16 * N);
    // SAFETY: as in `linear`.
    let keep = _mm_loadu_si128(KEEP_MASKS.as_ptr().add(16 - (skip & 15)) as *const __m128i);
    let Some(start) = icrc_at.checked_sub(16 * N) else {
        return;
    };
    for room in rooms.iter_mut() {
        let Some(f) = room.get_mut(start..icrc_at + 4) else {
            continue;
        };
        let p = f.as_ptr() as *const __m128i;
        // SAFETY: `f` has 16 * N + 4 bytes, so the N blocks from its start are inside it.
        let mut x = _mm_and_si128(_mm_loadu_si128(p), keep);
        for i in 1..N {
            x = fold(x, _mm_loadu_si128(p.add(i)));
        }
        let crc = !(zeros ^ reduce(x));
        if let Some(slot) = f.get_mut(16 * N..16 * N + 4) {
            slot.copy_from_slice(&crc.to_le_bytes());
        }
    }
}

/// [`Write8`](super::Write8)'s frames: for each room (at least [`WRITE8_LEN`](super::WRITE8_LEN)
/// bytes; a shorter one ends the loop) and its fields, the template's head, the two blocks of the
/// iCRC's window built in registers from the fields (no copy and patch of the template's tail), and
/// the iCRC folded from those same registers. How many frames it built.
///
/// # Safety
/// The CPU must have PCLMULQDQ.
#[target_feature(enable = "pclmulqdq,sse2")]
pub(super) unsafe fn write8(
    rooms: &mut [&mut [u8]],
    fields: &[super::Write8Fields],
    k: &super::Write8,
) -> usize {
    use super::{W8_BLOCK2, W8_ICRC, W8_SKIP, W8_WINDOW, WRITE8_LEN};
    // The head, as three blocks held in registers through the loop (its bytes from `W8_WINDOW` on
    // are overwritten by the first window block).
    let head = k.head.as_ptr() as *const __m128i;
    // SAFETY: `head` is `W8_HEAD`, 48, bytes (asserted beside it).
    let (h0, h1, h2) = (
        _mm_loadu_si128(head),
        _mm_loadu_si128(head.add(1)),
        _mm_loadu_si128(head.add(2)),
    );
    // The window's first `W8_SKIP` (4) bytes are in the prefix state: masked out of the fold.
    // SAFETY: as in `linear` (skip 4).
    let keep = _mm_loadu_si128(KEEP_MASKS.as_ptr().add(16 - W8_SKIP) as *const __m128i);
    let mut n = 0;
    for (room, f) in rooms.iter_mut().zip(fields) {
        let Some(frame) = room.get_mut(..WRITE8_LEN) else {
            break;
        };
        // Little-endian words whose bytes are the frame's: the template's 4 bytes before the PSN
        // word, then the big-endian word and VA; the big-endian R_Key, the template's DMA length,
        // then the payload.
        let w1 = u64::from(k.before_psn) | u64::from(f.word.to_be()) << 32;
        let b1 = _mm_set_epi64x(f.va.to_be() as i64, w1 as i64);
        let w2 = u64::from(f.rkey.to_be()) | u64::from(k.dma_len) << 32;
        let b2 = _mm_set_epi64x(i64::from_le_bytes(f.payload), w2 as i64);
        let p = frame.as_mut_ptr() as *mut __m128i;
        // SAFETY: `frame` is WRITE8_LEN (82) bytes: blocks at 0, 16, 32, W8_WINDOW (46) and
        // W8_BLOCK2 (62) end by W8_ICRC (78).
        _mm_storeu_si128(p, h0);
        _mm_storeu_si128(p.add(1), h1);
        _mm_storeu_si128(p.add(2), h2);
        _mm_storeu_si128(frame.as_mut_ptr().add(W8_WINDOW) as *mut __m128i, b1);
        _mm_storeu_si128(frame.as_mut_ptr().add(W8_BLOCK2) as *mut __m128i, b2);
        let crc = !(k.zeros ^ reduce(fold(_mm_and_si128(b1, keep), b2)));
        if let Some(slot) = frame.get_mut(W8_ICRC..WRITE8_LEN) {
            slot.copy_from_slice(&crc.to_le_bytes());
        }
        n += 1;
    }
    n
}

/// The zero-init register of exactly one block ([`Crc32Short::linear_block`]).
///
/// # Safety
/// The CPU must have PCLMULQDQ.
#[target_feature(enable = "pclmulqdq,sse2")]
pub(super) unsafe fn linear_block(block: &[u8; 16]) -> u32 {
    // SAFETY: `block` is 16 bytes (an unaligned load).
    reduce(_mm_loadu_si128(block.as_ptr() as *const __m128i))
}

/// The register after `state` and `blocks` (a non-empty multiple of 16 bytes).
///
/// # Safety
/// The CPU must have PCLMULQDQ.
#[target_feature(enable = "pclmulqdq,sse2")]
pub(super) unsafe fn from_state(state: u32, blocks: &[u8]) -> u32 {
    debug_assert!(blocks.len() % 16 == 0 && !blocks.is_empty());
    // SAFETY: `blocks` has at least one block.
    let first = _mm_loadu_si128(blocks.as_ptr() as *const __m128i);
    let first = _mm_xor_si128(first, _mm_cvtsi32_si128(state as i32));
    fold_reduce(first, blocks)
}

/// Folds the blocks of `blocks` after its first into `x` (the first block's remainder) and reduces
/// the result to the register.
#[target_feature(enable = "pclmulqdq,sse2")]
#[inline]
unsafe fn fold_reduce(mut x: __m128i, blocks: &[u8]) -> u32 {
    let n = blocks.len() / 16;
    let p = blocks.as_ptr() as *const __m128i;
    for i in 1..n {
        // SAFETY: block `i` is below `n`, inside `blocks` (raw loads: no bounds checks per block).
        x = fold(x, _mm_loadu_si128(p.add(i)));
    }
    reduce(x)
}

/// The remainder `x` of the blocks so far, and then block `b`.
#[target_feature(enable = "pclmulqdq,sse2")]
#[inline]
unsafe fn fold(x: __m128i, b: __m128i) -> __m128i {
    let k = pair(0);
    let lo = _mm_clmulepi64_si128(x, k, 0x00);
    let hi = _mm_clmulepi64_si128(x, k, 0x11);
    _mm_xor_si128(_mm_xor_si128(lo, hi), b)
}

/// Constant pair `i` of [`PAIRS`].
#[target_feature(enable = "sse2")]
#[inline]
unsafe fn pair(i: usize) -> __m128i {
    // SAFETY: `PAIRS` is 16-byte aligned and every pair is 16 bytes; the callers' `i` are below 4.
    _mm_load_si128(PAIRS.0[i].as_ptr() as *const __m128i)
}

/// The register of a 128-bit remainder: `X·x^32 mod P`, reflected.
#[target_feature(enable = "pclmulqdq,sse2")]
#[inline]
unsafe fn reduce(x: __m128i) -> u32 {
    let k = pair(1);
    // H·x^96 folded with x^95 mod P, plus L·x^32 (the high half moved down 64 bits and up 32).
    let y = _mm_xor_si128(
        _mm_clmulepi64_si128(x, k, 0x00),
        _mm_slli_si128(_mm_srli_si128(x, 8), 4),
    );
    // The top 32 bits (y's low half) folded with x^63 mod P into the low 64 (y's high half).
    let z = _mm_srli_si128(_mm_xor_si128(_mm_clmulepi64_si128(y, k, 0x10), y), 8);
    // Barrett: q = (top 32 bits of z)·µ div x^32, the low 32 bits of their product (which only z's
    // low 32 bits reach, so z goes in unmasked); then z + q·P has the remainder in bits 32..63.
    let b = _mm_load_si128(PAIRS.0[2].as_ptr() as *const __m128i);
    let low32 = _mm_load_si128(PAIRS.0[3].as_ptr() as *const __m128i);
    let q = _mm_and_si128(_mm_clmulepi64_si128(z, b, 0x00), low32);
    let r = _mm_xor_si128(_mm_clmulepi64_si128(q, b, 0x10), z);
    (_mm_cvtsi128_si64(r) as u64 >> 32) as u32
}
