//! Short copies without a libc call: the template and payload copies of the frame builders.

/// Copies `src` into `dst` (of the same length, as `copy_from_slice`, which it falls back to).
#[inline]
pub(super) fn copy_bytes(dst: &mut [u8], src: &[u8]) {
    if !copy_short(dst, src) {
        dst.copy_from_slice(src);
    }
}

/// Copies `src` into `dst` if both have the same length, from 4 to 128 bytes (the lengths of dta's
/// frames and payloads) or none, with two overlapping fixed-size moves: the libc call `copy_from_slice`
/// makes of a length known only at run time cost ~48 instructions a frame. False (nothing copied) for
/// other lengths. Frames' lengths (65..=128) are tried first.
#[inline(always)]
pub(super) fn copy_short(dst: &mut [u8], src: &[u8]) -> bool {
    let n = src.len();
    if dst.len() != n {
        return false;
    }
    if n > 64 && n <= 128 {
        copy_overlapping::<64>(dst, src);
        return true;
    }
    copy_small(dst, src)
}

/// [`copy_short`] with payloads' lengths tried first: a Key-Write entry (4..=8 bytes for 4-byte
/// values, up to 32), a Postcarding chunk (32).
#[inline(always)]
pub(super) fn copy_payload(dst: &mut [u8], src: &[u8]) -> bool {
    if dst.len() != src.len() {
        return false;
    }
    copy_small(dst, src) || copy_short(dst, src)
}

/// The lengths up to 64 of [`copy_short`] (`dst` and `src` of one length), shortest first.
#[inline(always)]
fn copy_small(dst: &mut [u8], src: &[u8]) -> bool {
    let n = src.len();
    if (4..=8).contains(&n) {
        copy_overlapping::<4>(dst, src);
    } else if n > 8 && n <= 16 {
        copy_overlapping::<8>(dst, src);
    } else if n > 16 && n <= 32 {
        copy_overlapping::<16>(dst, src);
    } else if n > 32 && n <= 64 {
        copy_overlapping::<32>(dst, src);
    } else {
        return n == 0;
    }
    true
}

/// `dst` = `src` for lengths from `K` to `2K`: the first `K` bytes and the last `K` (which overlap).
#[inline]
fn copy_overlapping<const K: usize>(dst: &mut [u8], src: &[u8]) {
    if let (Some(d), Some(s)) = (dst.first_chunk_mut::<K>(), src.first_chunk::<K>()) {
        *d = *s;
    }
    if let (Some(d), Some(s)) = (dst.last_chunk_mut::<K>(), src.last_chunk::<K>()) {
        *d = *s;
    }
}
