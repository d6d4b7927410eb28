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

/// Bytes available for a frame in a freshly allocated mbuf (from its data offset to the end of the buffer).
///
/// # Safety
/// `m` must point to a valid mbuf.
pub(crate) unsafe fn room(m: *const rte_mbuf) -> usize {
    let m = &*m;
    (m.buf_len - m.data_off) as usize
}

/// Copies `frame` into a freshly allocated (reset, single-segment) mbuf and sets its lengths.
///
/// # Safety
/// `m` must point to a valid mbuf owned by the caller, with `room(m) >= frame.len()`.
pub(crate) unsafe fn fill(m: *mut rte_mbuf, frame: &[u8]) {
    let mb = &mut *m;
    let start = mb.buf_addr.cast::<u8>().add(mb.data_off as usize);
    std::ptr::copy_nonoverlapping(frame.as_ptr(), start, frame.len());
    mb.data_len = frame.len() as u16;
    mb.pkt_len = frame.len() as u32;
}
