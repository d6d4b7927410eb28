//! Narrower Key-Write checksums without changing the wire format or the query.
//!
//! The wire format stores 32-bit checksums, but the paper's error terms (2)-(4) only show at small b. A
//! b-bit system differs from the 32-bit one in one place: a slot "matches" a key when the low b bits of the
//! two checksums agree. So before a query the lens rewrites, in the region itself, the checksum of each of
//! the key's slots whose low b bits agree with the key's to the key's full checksum; the real query then
//! sees exactly the matches a b-bit system would, votes on the unchanged data, and afterwards the lens
//! restores the bytes it changed. At b = 32 it touches nothing.

use dta_protocol::hash::key_checksum;
use dta_protocol::layout::KeyWriteGeometry;

/// A b-bit view of Key-Write checksums.
#[derive(Debug, Clone, Copy)]
pub struct ChecksumLens {
    mask: u32,
}

impl ChecksumLens {
    /// A lens for `b` bits (32 and above: no change).
    pub fn new(b: u32) -> Self {
        ChecksumLens {
            mask: if b >= 32 { u32::MAX } else { (1u32 << b) - 1 },
        }
    }

    /// Runs `query` on `mem` as a b-bit system would see it for `key` with `n` copies.
    pub fn query<T>(
        &self,
        mem: &mut [u8],
        g: &KeyWriteGeometry,
        key: u32,
        n: u8,
        query: impl FnOnce(&[u8]) -> T,
    ) -> T {
        if self.mask == u32::MAX {
            return query(mem);
        }
        let want = key_checksum(key);
        // At most 8 copies (N_max); each saved as (offset, original checksum bytes).
        let mut saved: [(usize, [u8; 4]); 8] = [(usize::MAX, [0; 4]); 8];
        for (i, s) in saved.iter_mut().enumerate().take(usize::from(n)) {
            let at = g.offset(key, i as u8) as usize;
            let mut cs = [0u8; 4];
            cs.copy_from_slice(&mem[at..at + 4]);
            let stored = u32::from_le_bytes(cs);
            // Copies sharing a slot: the first visit saved the original already.
            if stored != want && (stored ^ want) & self.mask == 0 {
                *s = (at, cs);
                mem[at..at + 4].copy_from_slice(&want.to_le_bytes());
            }
        }
        let out = query(mem);
        // Restore in reverse, so a slot saved twice ends with its first-saved (true) bytes.
        for &(at, cs) in saved.iter().rev() {
            if at != usize::MAX {
                mem[at..at + 4].copy_from_slice(&cs);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_low_bits_and_restores() {
        let g = KeyWriteGeometry::new(256, 8, 4).unwrap();
        let mut mem = vec![0u8; 2048];
        let key = 1;
        let at = g.offset(key, 0) as usize;
        // Same low 8 bits as key 1's checksum 0x99f8b879, different high bits.
        mem[at..at + 4].copy_from_slice(&0x1234_5679u32.to_le_bytes());
        let before = mem.clone();
        let seen = ChecksumLens::new(8).query(&mut mem, &g, key, 2, |m| {
            u32::from_le_bytes(m[at..at + 4].try_into().unwrap())
        });
        assert_eq!(seen, 0x99f8_b879);
        assert_eq!(mem, before);
        let seen = ChecksumLens::new(12).query(&mut mem, &g, key, 2, |m| {
            u32::from_le_bytes(m[at..at + 4].try_into().unwrap())
        });
        assert_eq!(seen, 0x1234_5679, "bit 8..11 differ");
    }
}
