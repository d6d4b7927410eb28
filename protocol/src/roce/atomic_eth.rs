//! Atomic Extended Transport Header (IBA 9.3.4), 28 bytes:
//! `VA:64, R_Key:32, swap or add data:64, compare data:64`.

use crate::error::{check_len, check_room};
use crate::field::{f, FieldSpec};
use crate::field::{get_u32, get_u64, set_u32, set_u64, Field};
use crate::Result;

/// Byte offsets of the fields, relative to the start of this header: the one statement of where each
/// lies, which the view reads and the fast paths shift to frame or report offsets.
pub mod field {
    use super::Field;
    /// Virtual address (8-byte aligned).
    pub const VA: Field = 0..8;
    /// Remote key.
    pub const RKEY: Field = 8..12;
    /// Swap or add data.
    pub const SWAP_ADD: Field = 12..20;
    /// Compare data.
    pub const COMPARE: Field = 20..28;
}

/// Length of the AtomicETH.
pub const HEADER_LEN: usize = field::COMPARE.end;

/// Field table of the AtomicETH, in wire order.
pub const LAYOUT: &[FieldSpec] = &[
    f("va", 64),
    f("rkey", 32),
    f("swap_add", 64),
    f("compare", 64),
];

/// A read/write view of an AtomicETH.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking its length.
    pub const fn new_unchecked(buffer: T) -> Self {
        Packet { buffer }
    }
    /// Wraps a buffer that must hold a whole AtomicETH.
    pub fn new_checked(buffer: T) -> Result<Self> {
        check_len("AtomicETH", buffer.as_ref(), HEADER_LEN)?;
        Ok(Packet { buffer })
    }
    /// Remote virtual address (8-byte aligned in a valid request).
    pub fn va(&self) -> u64 {
        get_u64(&self.buffer.as_ref()[field::VA])
    }
    /// Remote key.
    pub fn rkey(&self) -> u32 {
        get_u32(&self.buffer.as_ref()[field::RKEY])
    }
    /// Swap value (COMPARE & SWAP) or addend (FETCH & ADD).
    pub fn swap_add(&self) -> u64 {
        get_u64(&self.buffer.as_ref()[field::SWAP_ADD])
    }
    /// Compare value (COMPARE & SWAP only).
    pub fn compare(&self) -> u64 {
        get_u64(&self.buffer.as_ref()[field::COMPARE])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the remote virtual address.
    pub fn set_va(&mut self, v: u64) {
        set_u64(&mut self.buffer.as_mut()[field::VA], v);
    }
    /// Sets the remote key.
    pub fn set_rkey(&mut self, v: u32) {
        set_u32(&mut self.buffer.as_mut()[field::RKEY], v);
    }
    /// Sets the swap value or addend.
    pub fn set_swap_add(&mut self, v: u64) {
        set_u64(&mut self.buffer.as_mut()[field::SWAP_ADD], v);
    }
    /// Sets the compare value.
    pub fn set_compare(&mut self, v: u64) {
        set_u64(&mut self.buffer.as_mut()[field::COMPARE], v);
    }
}

/// A parsed AtomicETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AtomicEthRepr {
    /// Remote virtual address.
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
    /// Swap value or addend.
    pub swap_add: u64,
    /// Compare value (0 for FETCH & ADD).
    pub compare: u64,
}

impl AtomicEthRepr {
    /// Reads an AtomicETH. Alignment is the responder's check (it answers with a NAK), not a parse error.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Self> {
        Ok(AtomicEthRepr {
            va: packet.va(),
            rkey: packet.rkey(),
            swap_add: packet.swap_add(),
            compare: packet.compare(),
        })
    }
    /// Bytes [`emit`](Self::emit) writes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }
    /// Writes the AtomicETH into the first [`HEADER_LEN`] bytes of `buf`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        check_room(buf, HEADER_LEN)?;
        let mut p = Packet::new_unchecked(&mut buf[..HEADER_LEN]);
        p.set_va(self.va);
        p.set_rkey(self.rkey);
        p.set_swap_add(self.swap_add);
        p.set_compare(self.compare);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::layout_bytes;
    use crate::field::layout_check::{case, check};

    #[test]
    fn layout_matches_accessors() {
        check(
            LAYOUT,
            HEADER_LEN,
            &[
                case(
                    "va",
                    |b| Packet::new_unchecked(b).set_va(u64::MAX),
                    |b| Packet::new_unchecked(b).va() == u64::MAX,
                ),
                case(
                    "rkey",
                    |b| Packet::new_unchecked(b).set_rkey(u32::MAX),
                    |b| Packet::new_unchecked(b).rkey() == u32::MAX,
                ),
                case(
                    "swap_add",
                    |b| Packet::new_unchecked(b).set_swap_add(u64::MAX),
                    |b| Packet::new_unchecked(b).swap_add() == u64::MAX,
                ),
                case(
                    "compare",
                    |b| Packet::new_unchecked(b).set_compare(u64::MAX),
                    |b| Packet::new_unchecked(b).compare() == u64::MAX,
                ),
            ],
        );
    }

    #[test]
    fn round_trip_exact_bytes() {
        let r = AtomicEthRepr {
            va: 0x7f00_0000_2000,
            rkey: 0x1234,
            swap_add: 1,
            compare: 0,
        };
        let mut out = [0u8; HEADER_LEN];
        r.emit(&mut out).unwrap();
        let expected: [u8; 28] = [
            0, 0, 0x7f, 0, 0, 0, 0x20, 0, 0, 0, 0x12, 0x34, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0,
            0, 0, 0,
        ];
        assert_eq!(out, expected);
        assert_eq!(
            AtomicEthRepr::parse(&Packet::new_checked(&out[..]).unwrap()).unwrap(),
            r
        );
        assert!(Packet::new_checked(&out[..27]).is_err());
        assert_eq!(layout_bytes(LAYOUT), HEADER_LEN);
    }
}
