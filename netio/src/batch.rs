//! A fixed set of reusable frame buffers: the unit every burst call fills or drains.

use crate::NetioError;

/// Slot size that holds any standard Ethernet frame (1514 bytes without FCS, 1518 with a VLAN tag) with room
/// to spare; jumbo-frame users pass a larger one to [`FrameBatch::new`].
pub const DEFAULT_SLOT_SIZE: usize = 2048;

/// Slot size that holds a jumbo frame: an IP MTU of 9216 bytes (the largest that switches commonly take;
/// hosts on RoCE fabrics usually run 9000) with its Ethernet header and two VLAN tags, rounded up to 64.
/// What a bump in the wire receives into, so that a link's MTU never decides what it can forward. The
/// memory is allocated zeroed, so pages of a slot that no frame reaches are never touched.
pub const JUMBO_SLOT_SIZE: usize = 9216 + 64;

/// Up to `capacity` frames of at most `slot_size` bytes each, in one allocation made once.
///
/// Receiving appends frames into free slots, sending reads the filled ones, and [`clear`](Self::clear) makes
/// every slot free again without touching memory, so a burst loop allocates nothing after start-up. Each frame
/// carries a timestamp in nanoseconds since the Unix epoch, 0 meaning "unknown" (backends fill what they know:
/// pcap files their record time, sockets the time of the burst).
pub struct FrameBatch {
    data: Box<[u8]>,
    lens: Box<[u32]>,
    stamps: Box<[u64]>,
    len: usize,
    slot_size: usize,
}

impl FrameBatch {
    /// Allocates `capacity` slots of `slot_size` bytes.
    ///
    /// # Panics
    /// If `capacity` or `slot_size` is 0, or `slot_size` exceeds `u32::MAX`: those are programming errors.
    pub fn new(capacity: usize, slot_size: usize) -> Self {
        assert!(capacity > 0, "a frame batch needs at least one slot");
        assert!(
            slot_size > 0 && u32::try_from(slot_size).is_ok(),
            "slot size {slot_size} out of range"
        );
        FrameBatch {
            data: vec![0; capacity * slot_size].into_boxed_slice(),
            lens: vec![0; capacity].into_boxed_slice(),
            stamps: vec![0; capacity].into_boxed_slice(),
            len: 0,
            slot_size,
        }
    }

    /// Number of slots.
    pub fn capacity(&self) -> usize {
        self.lens.len()
    }

    /// Largest frame a slot holds.
    pub fn slot_size(&self) -> usize {
        self.slot_size
    }

    /// Number of frames held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no frame is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of free slots: how many frames the next receive may append.
    pub fn free(&self) -> usize {
        self.capacity() - self.len
    }

    /// Forgets every frame; the memory is kept for the next burst.
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Frame `i`.
    ///
    /// # Panics
    /// If `i >= self.len()`.
    pub fn frame(&self, i: usize) -> &[u8] {
        assert!(i < self.len, "frame {i} of a batch of {}", self.len);
        let start = i * self.slot_size;
        &self.data[start..start + self.lens[i] as usize]
    }

    /// Timestamp of frame `i` in nanoseconds since the Unix epoch (0: unknown).
    ///
    /// # Panics
    /// If `i >= self.len()`.
    pub fn timestamp_ns(&self, i: usize) -> u64 {
        assert!(i < self.len, "frame {i} of a batch of {}", self.len);
        self.stamps[i]
    }

    /// The held frames in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &[u8]> + '_ {
        (0..self.len).map(move |i| self.frame(i))
    }

    /// Copies `frame` into the next free slot with an unknown timestamp.
    pub fn push(&mut self, frame: &[u8]) -> Result<(), NetioError> {
        self.push_stamped(frame, 0)
    }

    /// Copies `frame` into the next free slot with the given timestamp.
    pub fn push_stamped(&mut self, frame: &[u8], timestamp_ns: u64) -> Result<(), NetioError> {
        self.check_room(frame.len())?;
        let i = self.len;
        self.slot_mut(i)[..frame.len()].copy_from_slice(frame);
        self.set_frame(i, frame.len(), timestamp_ns);
        self.len += 1;
        Ok(())
    }

    /// Lets `write` build a frame in place in the next free slot (the whole slot, `slot_size` bytes) and keeps
    /// the first `n` bytes, `n` being what `write` returns. Returns `Ok(n)`; `n == 0` keeps no frame, so an
    /// engine that decides not to answer costs nothing. This is how a sans-IO engine writes its output frames
    /// straight into the transmit batch without an intermediate copy.
    pub fn push_with(
        &mut self,
        write: impl FnOnce(&mut [u8]) -> usize,
    ) -> Result<usize, NetioError> {
        if self.len == self.capacity() {
            return Err(NetioError::BatchFull {
                capacity: self.capacity(),
            });
        }
        let i = self.len;
        let n = write(self.slot_mut(i));
        if n > self.slot_size {
            return Err(NetioError::FrameTooLong {
                len: n,
                slot_size: self.slot_size,
            });
        }
        if n > 0 {
            self.set_frame(i, n, 0);
            self.len += 1;
        }
        Ok(n)
    }

    fn check_room(&self, len: usize) -> Result<(), NetioError> {
        if self.len == self.capacity() {
            return Err(NetioError::BatchFull {
                capacity: self.capacity(),
            });
        }
        if len > self.slot_size {
            return Err(NetioError::FrameTooLong {
                len,
                slot_size: self.slot_size,
            });
        }
        Ok(())
    }

    /// Held frame `i`, writable in place (an ARP request turned into its reply). Panics if `i` is not held.
    pub fn frame_mut(&mut self, i: usize) -> &mut [u8] {
        assert!(i < self.len, "frame {i} of {}", self.len);
        let len = self.lens[i] as usize;
        &mut self.slot_mut(i)[..len]
    }

    /// Replaces held frame `i` with `frame`, keeping its timestamp (a frame turned into what another
    /// worker needs of it). Panics if `i` is not held, as [`frame_mut`](Self::frame_mut).
    pub fn replace(&mut self, i: usize, frame: &[u8]) -> Result<(), NetioError> {
        assert!(i < self.len, "frame {i} of {}", self.len);
        if frame.len() > self.slot_size {
            return Err(NetioError::FrameTooLong {
                len: frame.len(),
                slot_size: self.slot_size,
            });
        }
        self.slot_mut(i)[..frame.len()].copy_from_slice(frame);
        self.lens[i] = frame.len() as u32;
        Ok(())
    }

    /// Keeps the held frames for which `keep(i)` is true, in order, packed at the front.
    pub fn retain(&mut self, mut keep: impl FnMut(usize) -> bool) {
        let mut kept = 0;
        for i in 0..self.len {
            if !keep(i) {
                continue;
            }
            if kept != i {
                let len = self.lens[i] as usize;
                self.move_slot(i, kept, len);
                self.lens[kept] = self.lens[i];
                self.stamps[kept] = self.stamps[i];
            }
            kept += 1;
        }
        self.len = kept;
    }

    /// Whole slot `i` (held or free), for backends that receive in place.
    pub(crate) fn slot_mut(&mut self, i: usize) -> &mut [u8] {
        let start = i * self.slot_size;
        &mut self.data[start..start + self.slot_size]
    }

    /// Raw pointer to slot `i`, for backends that hand several slots to one system call (recvmmsg).
    pub(crate) fn slot_ptr(&mut self, i: usize) -> *mut u8 {
        self.slot_mut(i).as_mut_ptr()
    }

    /// Copies the first `len` bytes of slot `from` into slot `to`, for backends that fill slots in place and
    /// then close the gap left by a dropped frame.
    pub(crate) fn move_slot(&mut self, from: usize, to: usize, len: usize) {
        let src = from * self.slot_size;
        self.data.copy_within(src..src + len, to * self.slot_size);
    }

    /// Records the length and timestamp of slot `i` without changing how many frames are held.
    pub(crate) fn set_frame(&mut self, i: usize, len: usize, timestamp_ns: u64) {
        debug_assert!(len <= self.slot_size);
        self.lens[i] = len as u32;
        self.stamps[i] = timestamp_ns;
    }

    /// Marks the first `len` slots as held, after a backend filled them with [`set_frame`](Self::set_frame).
    pub(crate) fn set_len(&mut self, len: usize) {
        debug_assert!(len <= self.capacity());
        self.len = len;
    }
}

impl std::fmt::Debug for FrameBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameBatch")
            .field("len", &self.len)
            .field("capacity", &self.capacity())
            .field("slot_size", &self.slot_size)
            .finish()
    }
}

/// Nanoseconds since the Unix epoch from the realtime clock, for backends that stamp a burst at receipt.
pub(crate) fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replace_changes_one_frame_and_its_length() {
        let mut b = FrameBatch::new(3, 64);
        b.push_stamped(&[1; 10], 7).unwrap();
        b.push(&[2; 20]).unwrap();
        b.replace(0, &[9; 40]).unwrap();
        assert_eq!(b.frame(0), &[9; 40][..]);
        assert_eq!(b.timestamp_ns(0), 7, "the timestamp is kept");
        assert_eq!(b.frame(1), &[2; 20][..]);
        assert!(matches!(
            b.replace(1, &[0; 65]),
            Err(NetioError::FrameTooLong {
                len: 65,
                slot_size: 64
            })
        ));
        assert_eq!(b.frame(1), &[2; 20][..], "unchanged when refused");
        b.replace(1, &[]).unwrap();
        assert!(b.frame(1).is_empty());
        assert_eq!(b.len(), 2);
    }

    #[test]
    fn push_and_read_back() {
        let mut b = FrameBatch::new(3, 64);
        b.push(&[1, 2, 3]).unwrap();
        b.push_stamped(&[9; 64], 42).unwrap();
        assert_eq!(b.len(), 2);
        assert_eq!(b.free(), 1);
        assert_eq!(b.frame(0), &[1, 2, 3]);
        assert_eq!(b.frame(1), &[9; 64][..]);
        assert_eq!(b.timestamp_ns(0), 0);
        assert_eq!(b.timestamp_ns(1), 42);
        let lens: Vec<usize> = b.iter().map(<[u8]>::len).collect();
        assert_eq!(lens, vec![3, 64]);
    }

    #[test]
    fn full_and_too_long_are_refused() {
        let mut b = FrameBatch::new(1, 8);
        assert!(matches!(
            b.push(&[0; 9]),
            Err(NetioError::FrameTooLong {
                len: 9,
                slot_size: 8
            })
        ));
        b.push(&[0; 8]).unwrap();
        assert!(matches!(
            b.push(&[0]),
            Err(NetioError::BatchFull { capacity: 1 })
        ));
        assert!(matches!(
            b.push_with(|_| 1),
            Err(NetioError::BatchFull { capacity: 1 })
        ));
    }

    #[test]
    fn push_with_writes_in_place_and_zero_keeps_nothing() {
        let mut b = FrameBatch::new(2, 16);
        assert_eq!(b.push_with(|_| 0).unwrap(), 0);
        assert!(b.is_empty());
        let n = b
            .push_with(|buf| {
                assert_eq!(buf.len(), 16);
                buf[..4].copy_from_slice(b"dta!");
                4
            })
            .unwrap();
        assert_eq!(n, 4);
        assert_eq!(b.frame(0), b"dta!");
        assert!(matches!(
            b.push_with(|_| 17),
            Err(NetioError::FrameTooLong {
                len: 17,
                slot_size: 16
            })
        ));
        assert_eq!(b.len(), 1);
    }

    #[test]
    fn clear_reuses_slots() {
        let mut b = FrameBatch::new(2, 16);
        b.push(b"first").unwrap();
        let p = b.frame(0).as_ptr();
        b.clear();
        assert!(b.is_empty());
        b.push(b"again").unwrap();
        assert_eq!(b.frame(0), b"again");
        assert_eq!(b.frame(0).as_ptr(), p, "the same memory is reused");
    }
}
