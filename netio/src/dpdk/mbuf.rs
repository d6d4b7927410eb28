//! Reading and writing the data of single-segment mbufs.

use super::ffi::rte_mbuf;

/// The frame held by `m`, or `None` when it spans several segments (dta never enables scatter, so a chained
/// mbuf is a frame larger than the data room, which is dropped like any oversize frame).
///
/// # Safety
/// `m` must point to a valid mbuf that stays alive and unmodified for `'a`.
pub(crate) unsafe fn data<'a>(m: *const rte_mbuf) -> Option<&'a [u8]> {
    let m = &*m;
    if m.nb_segs != 1 {
        return None;
    }
    // rte_pktmbuf_mtod(): the data starts data_off bytes into the buffer.
    let start = m.buf_addr.cast::<u8>().add(m.data_off as usize);
    Some(std::slice::from_raw_parts(start, m.data_len as usize))
}

/// The whole data room of a freshly allocated mbuf (from its data offset to the end of its buffer), where a
/// frame is built in place.
///
/// # Safety
/// `m` must point to a valid single-segment mbuf owned by the caller for `'a`, with nothing else reading it.
pub(crate) unsafe fn room_mut<'a>(m: *mut rte_mbuf) -> &'a mut [u8] {
    let mb = &mut *m;
    let start = mb.buf_addr.cast::<u8>().add(mb.data_off as usize);
    // Widened before subtracting: the same value (data_off <= buf_len in a valid mbuf), one instruction
    // fewer a room than a 16-bit difference zero-extended after.
    let len = usize::from(mb.buf_len) - usize::from(mb.data_off);
    std::slice::from_raw_parts_mut(start, len)
}

/// Sets the lengths of a single-segment mbuf whose first `len` bytes of room hold a frame.
///
/// # Safety
/// `m` must point to a valid single-segment mbuf owned by the caller, with `len` within its room.
pub(crate) unsafe fn set_len(m: *mut rte_mbuf, len: usize) {
    let mb = &mut *m;
    mb.data_len = len as u16;
    mb.pkt_len = len as u32;
}

/// The length of the frame in a single-segment mbuf (its `data_len`).
///
/// # Safety
/// `m` must point to a valid mbuf owned by the caller.
pub(crate) unsafe fn len(m: *const rte_mbuf) -> usize {
    usize::from((*m).data_len)
}
