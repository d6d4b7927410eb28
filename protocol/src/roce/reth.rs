//! RDMA Extended Transport Header (IBA 9.3.3), 16 bytes: `VA:64, R_Key:32, DMA length:32`.

use crate::error::{check_len, check_room};
use crate::field::{f, FieldSpec};
use crate::field::{get_u32, get_u64, set_u32, set_u64, Field, Rest};
use crate::Result;

/// Byte offsets of the fields, relative to the start of this header: the one statement of where each
/// lies, which the view reads and the fast paths shift to frame or report offsets.
pub mod field {
    use super::{Field, Rest};
    /// Virtual address.
    pub const VA: Field = 0..8;
    /// Remote key.
    pub const RKEY: Field = 8..12;
    /// DMA length.
    pub const DMA_LEN: Field = 12..16;
    /// What follows the RETH (the WRITE payload).
    pub const PAYLOAD: Rest = 16..;
}

/// Length of the RETH.
pub const HEADER_LEN: usize = field::PAYLOAD.start;

/// Field table of the RETH, in wire order.
pub const LAYOUT: &[FieldSpec] = &[f("va", 64), f("rkey", 32), f("dma_len", 32)];

/// A read/write view of a RETH.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking its length.
    pub const fn new_unchecked(buffer: T) -> Self {
        Packet { buffer }
    }
    /// Wraps a buffer that must hold a whole RETH.
    pub fn new_checked(buffer: T) -> Result<Self> {
        check_len("RETH", buffer.as_ref(), HEADER_LEN)?;
        Ok(Packet { buffer })
    }
    /// Remote virtual address.
    pub fn va(&self) -> u64 {
        get_u64(&self.buffer.as_ref()[field::VA])
    }
    /// Remote key.
    pub fn rkey(&self) -> u32 {
        get_u32(&self.buffer.as_ref()[field::RKEY])
    }
    /// DMA length in bytes.
    pub fn dma_len(&self) -> u32 {
        get_u32(&self.buffer.as_ref()[field::DMA_LEN])
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Packet<&'a T> {
    /// The bytes after the RETH.
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
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
    /// Sets the DMA length.
    pub fn set_dma_len(&mut self, v: u32) {
        set_u32(&mut self.buffer.as_mut()[field::DMA_LEN], v);
    }
}

/// A parsed RETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RethRepr {
    /// Remote virtual address.
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
    /// DMA length in bytes.
    pub dma_len: u32,
}

impl RethRepr {
    /// Reads a RETH.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Self> {
        Ok(RethRepr {
            va: packet.va(),
            rkey: packet.rkey(),
            dma_len: packet.dma_len(),
        })
    }
    /// Bytes [`emit`](Self::emit) writes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }
    /// Writes the RETH into the first [`HEADER_LEN`] bytes of `buf`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        check_room(buf, HEADER_LEN)?;
        let mut p = Packet::new_unchecked(&mut buf[..HEADER_LEN]);
        p.set_va(self.va);
        p.set_rkey(self.rkey);
        p.set_dma_len(self.dma_len);
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
                    "dma_len",
                    |b| Packet::new_unchecked(b).set_dma_len(u32::MAX),
                    |b| Packet::new_unchecked(b).dma_len() == u32::MAX,
                ),
            ],
        );
    }

    #[test]
    fn vector_round_trip() {
        // RETH of the TOOLCHAIN.md WRITE vector.
        let bytes = hex_bytes("00007f000000100000001234" /* VA, R_Key */)
            .into_iter()
            .chain([0, 0, 0, 0x20])
            .collect::<Vec<u8>>();
        let r = RethRepr::parse(&Packet::new_checked(&bytes[..]).unwrap()).unwrap();
        assert_eq!(
            r,
            RethRepr {
                va: 0x7f00_0000_1000,
                rkey: 0x1234,
                dma_len: 32
            }
        );
        let mut out = [0u8; 16];
        r.emit(&mut out).unwrap();
        assert_eq!(&out[..], &bytes[..]);
        assert_eq!(layout_bytes(LAYOUT), HEADER_LEN);
        assert!(Packet::new_checked(&bytes[..15]).is_err());
    }

    fn hex_bytes(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }
}
