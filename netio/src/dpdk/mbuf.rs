//! Reading and writing the data of single-segment mbufs.

use super::ffi::rte_mbuf;
use super::free::NOT_OWN_BUFFER;

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

/// [`data`], writable.
///
/// # Safety
/// `m` must point to a valid mbuf owned by the caller, with nothing else referring to its data for `'a`.
pub(crate) unsafe fn data_mut<'a>(m: *mut rte_mbuf) -> Option<&'a mut [u8]> {
    let mb = &mut *m;
    if mb.nb_segs != 1 {
        return None;
    }
    let start = mb.buf_addr.cast::<u8>().add(mb.data_off as usize);
    Some(std::slice::from_raw_parts_mut(start, mb.data_len as usize))
}

/// Resets a received mbuf for building a frame to send in its room, as `rte_pktmbuf_reset` does for the
/// fields a transmit reads (inline: that function is a call through a C wrapper here, and this runs once a
/// report), if it is plain: one segment, one reference, its own buffer. Returns whether it was.
///
/// # Safety
/// `m` must point to a valid mbuf owned by the caller.
pub(crate) unsafe fn reset_plain(m: *mut rte_mbuf) -> bool {
    let mb = &mut *m;
    if mb.nb_segs != 1 || mb.refcnt != 1 || mb.ol_flags & NOT_OWN_BUFFER != 0 {
        return false;
    }
    mb.next = std::ptr::null_mut();
    mb.ol_flags = 0;
    mb.__bindgen_anon_1.packet_type = 0;
    mb.__bindgen_anon_3.tx_offload = 0;
    mb.vlan_tci = 0;
    mb.vlan_tci_outer = 0;
    mb.port = u16::MAX;
    mb.data_off = mb.buf_len.min(super::ffi::RTE_PKTMBUF_HEADROOM as u16);
    mb.data_len = 0;
    mb.pkt_len = 0;
    true
}
