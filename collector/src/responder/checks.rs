//! Checks and memory operations both request paths make the same way (`core.rs`'s general path and
//! `fast.rs`'s fast path): ones'-complement sums, the WRITE length rule, the target range, the atomics.

use dta_protocol::roce::AtomicEthRepr;

use super::stats::NakKind;
use crate::memory::{resolve, RegionSlot, Resolve};

/// The ones'-complement sum of `bytes` as big-endian 16-bit words (an odd last byte padded with 0),
/// folded to 16 bits: 0xFFFF over a header or datagram whose checksum field is right.
pub(super) fn ones_sum(bytes: &[u8], init: u32) -> u16 {
    let mut sum = u64::from(init);
    let mut words = bytes.chunks_exact(2);
    for w in &mut words {
        sum += u64::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = words.remainder() {
        sum += u64::from(*last) << 8;
    }
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    sum as u16
}

/// Whether a 20-byte IPv4 header (no options) sums to all ones, i.e. its checksum is right: five 32-bit
/// words summed in 64 bits and folded, the same one's-complement sum as [`ones_sum`]'s 16-bit words (the
/// end-around carry makes the word width immaterial) in a dozen instructions on the fast path, where the
/// loop cost the software responder daemon a tenth of its rate.
#[inline(always)]
pub(super) fn ipv4_header_ok(h: &[u8; 20]) -> bool {
    let w = |i: usize| u64::from(u32::from_be_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]));
    // Below 5 * 2^32: the first fold leaves 33 bits, three 16-bit folds leave 16.
    let s = w(0) + w(4) + w(8) + w(12) + w(16);
    let s = (s & 0xFFFF_FFFF) + (s >> 32);
    let s = (s & 0xFFFF) + (s >> 16);
    let s = (s & 0xFFFF) + (s >> 16);
    let s = (s & 0xFFFF) + (s >> 16);
    s == 0xFFFF
}

/// Whether a WRITE ONLY packet carries what its RETH announces (rxe's check): up to the MTU, exactly the
/// DMA length with the pad that length needs; beyond it, exactly one MTU without pad.
pub(super) fn write_length_ok(dma_len: usize, payload: usize, pad: u8, mtu: usize) -> bool {
    if dma_len > mtu {
        payload == mtu && pad == 0
    } else {
        payload == dma_len && usize::from(pad) == (4 - dma_len % 4) % 4
    }
}

/// Resolves a request's target, mapping a refusal to the NAK it earns.
pub(super) fn checked_range(
    slots: &[RegionSlot],
    mem_len: usize,
    rkey: u32,
    va: u64,
    len: usize,
) -> Result<usize, NakKind> {
    match resolve(slots, rkey, va, len as u64) {
        // The table and the arena come from the same layout; the second check only guards against a
        // responder handed a different buffer than its table describes.
        Resolve::Ok(at) if at.checked_add(len).is_some_and(|end| end <= mem_len) => Ok(at),
        _ => Err(NakKind::RemoteAccess),
    }
}

/// Runs FETCH_ADD or COMPARE_SWAP on a native-order u64 (what an RDMA NIC does on the host's memory) and
/// returns the value it held before.
pub(super) fn apply_atomic(compare_swap: bool, a: &AtomicEthRepr, target: &mut [u8]) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(target);
    let orig = u64::from_ne_bytes(word);
    let new = match compare_swap {
        true if orig == a.compare => a.swap_add,
        true => orig,
        false => orig.wrapping_add(a.swap_add),
    };
    target.copy_from_slice(&new.to_ne_bytes());
    orig
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::{RngCore, SeedableRng};

    /// The fast IPv4 check agrees with the general one's-complement sum on random headers, on headers
    /// made right by their checksum, and on the edges (all zeros, all ones, a checksum of 0xFFFF).
    #[test]
    fn ipv4_header_check_agrees_with_the_ones_complement_sum() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut cases: Vec<[u8; 20]> = vec![[0; 20], [0xFF; 20]];
        for _ in 0..20_000 {
            let mut h = [0u8; 20];
            rng.fill_bytes(&mut h);
            cases.push(h);
            // The same header with its checksum field made right.
            h[10] = 0;
            h[11] = 0;
            let c = !ones_sum(&h, 0);
            h[10..12].copy_from_slice(&c.to_be_bytes());
            cases.push(h);
        }
        let mut right = 0;
        for h in &cases {
            let want = ones_sum(h, 0) == 0xFFFF;
            assert_eq!(ipv4_header_ok(h), want, "{h:02x?}");
            right += usize::from(want);
        }
        assert!(right >= 20_000, "{right} right headers");
    }
}
