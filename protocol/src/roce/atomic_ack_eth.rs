//! Atomic Acknowledge Extended Transport Header (IBA 9.5.3), 8 bytes: the original remote value.

use crate::error::{check_len, check_room};
use crate::field::{f, FieldSpec};
use crate::field::{get_u64, set_u64, Field};
use crate::Result;

/// Byte offsets of the fields, relative to the start of this header: the one statement of where each
/// lies, which the view reads and the fast paths shift to frame or report offsets.
pub mod field {
    use super::Field;
    /// The original remote data.
    pub const ORIG: Field = 0..8;
}

/// Length of the AtomicAckETH.
pub const HEADER_LEN: usize = field::ORIG.end;

/// Field table of the AtomicAckETH, in wire order.
pub const LAYOUT: &[FieldSpec] = &[f("orig_remote_data", 64)];

/// A read/write view of an AtomicAckETH.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking its length.
    pub const fn new_unchecked(buffer: T) -> Self {
        Packet { buffer }
    }
    /// Wraps a buffer that must hold a whole AtomicAckETH.
    pub fn new_checked(buffer: T) -> Result<Self> {
        check_len("AtomicAckETH", buffer.as_ref(), HEADER_LEN)?;
        Ok(Packet { buffer })
    }
    /// The value the target held before the atomic operation.
    pub fn orig_remote_data(&self) -> u64 {
        get_u64(&self.buffer.as_ref()[field::ORIG])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the original remote value.
    pub fn set_orig_remote_data(&mut self, v: u64) {
        set_u64(&mut self.buffer.as_mut()[field::ORIG], v);
    }
}

/// A parsed AtomicAckETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AtomicAckEthRepr {
    /// The value the target held before the atomic operation.
    pub orig_remote_data: u64,
}

impl AtomicAckEthRepr {
    /// Reads an AtomicAckETH.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Self> {
        Ok(AtomicAckEthRepr {
            orig_remote_data: packet.orig_remote_data(),
        })
    }
    /// Bytes [`emit`](Self::emit) writes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }
    /// Writes the AtomicAckETH into the first [`HEADER_LEN`] bytes of `buf`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        check_room(buf, HEADER_LEN)?;
        Packet::new_unchecked(&mut buf[..HEADER_LEN]).set_orig_remote_data(self.orig_remote_data);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::layout_check::{case, check};

    #[test]
    fn layout_matches_accessors() {
        check(
            LAYOUT,
            HEADER_LEN,
            &[case(
                "orig_remote_data",
                |b| Packet::new_unchecked(b).set_orig_remote_data(u64::MAX),
                |b| Packet::new_unchecked(b).orig_remote_data() == u64::MAX,
            )],
        );
    }

    #[test]
    fn golden_bytes_from_the_iba_layout() {
        // IBA 9.5.3: one 64-bit field, the original remote data, most significant byte first.
        let bytes = [0x80, 0, 0, 0, 0, 0, 0, 0x01];
        let r = AtomicAckEthRepr {
            orig_remote_data: 0x8000_0000_0000_0001,
        };
        let mut out = [0u8; HEADER_LEN];
        r.emit(&mut out).unwrap();
        assert_eq!(out, bytes);
        assert_eq!(
            AtomicAckEthRepr::parse(&Packet::new_checked(&bytes[..]).unwrap()),
            Ok(r)
        );
        assert_eq!(r.buffer_len(), 8);
    }

    #[test]
    fn round_trip_exact_bytes() {
        let r = AtomicAckEthRepr {
            orig_remote_data: 0x0102_0304_0506_0708,
        };
        let mut out = [0u8; 8];
        r.emit(&mut out).unwrap();
        assert_eq!(out, [1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(
            AtomicAckEthRepr::parse(&Packet::new_checked(&out[..]).unwrap()).unwrap(),
            r
        );
        assert!(Packet::new_checked(&out[..7]).is_err());
    }
}
