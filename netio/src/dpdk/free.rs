//! Freeing a burst of mbufs. `rte_pktmbuf_free_bulk` treats every mbuf as possibly chained, shared or
//! attached to another's buffer, and costs ~38 instructions an mbuf (callgrind, the responder daemon: 60 of
//! every 64 requests' mbufs are freed, since WRITEs are answered one in 16). Almost every mbuf a worker frees
//! is plain: one segment, one reference, its own buffer, all of one pool. Those go back to their pool with
//! one `rte_mempool_put_bulk` per run of a pool, which is what `rte_pktmbuf_free_bulk` ends in for such
//! mbufs (the same fields checked, nothing to reset); any other mbuf is freed the general way.

use std::ffi::c_void;

use super::ffi::{self, rte_mbuf, rte_mempool};

/// `RTE_MBUF_F_EXTERNAL | RTE_MBUF_F_INDIRECT`: an mbuf whose buffer is not its own (attached to another
/// mbuf's or to an external one), which only `rte_pktmbuf_free` knows how to detach.
pub(crate) const NOT_OWN_BUFFER: u64 = (1 << 61) | (1 << 62);

/// Whether `m`, the first segment of a packet, can go straight back to its pool: the state
/// `rte_pktmbuf_prefree_seg` leaves a freed mbuf in (one segment, one reference, its own buffer). A first
/// segment with `nb_segs == 1` has no `next` (`rte_mbuf_check`'s invariant), so `next`, on the mbuf's
/// second cache line, which nothing else on this path touches, is not read.
#[inline(always)]
pub(crate) fn plain(m: &rte_mbuf) -> bool {
    m.nb_segs == 1 && m.refcnt == 1 && m.ol_flags & NOT_OWN_BUFFER == 0
}

/// Frees every non-null mbuf of `mbufs` and leaves the slice's contents unspecified (the plain mbufs are
/// gathered at its front for the pool's bulk put).
///
/// # Safety
/// Every non-null entry must be the first segment of a packet, a valid mbuf the caller owns and no one refers
/// to any more.
pub(crate) unsafe fn free_bulk(mbufs: &mut [*mut rte_mbuf]) {
    let mut pool: *mut rte_mempool = std::ptr::null_mut();
    // The plain mbufs of the current pool are gathered at `run..kept`.
    let (mut run, mut kept) = (0, 0);
    for i in 0..mbufs.len() {
        let m = mbufs[i];
        if m.is_null() {
            continue;
        }
        let mb = &*m;
        if !plain(mb) {
            ffi::rte_pktmbuf_free(m);
            continue;
        }
        if mb.pool != pool {
            // Another pool (a frame forwarded from another port): the run so far goes back to its own.
            put(pool, &mbufs[run..kept]);
            pool = mb.pool;
            run = kept;
        }
        // `kept <= i`: gathering never overwrites an entry not yet read.
        mbufs[kept] = m;
        kept += 1;
    }
    put(pool, &mbufs[run..kept]);
}

/// Returns the plain mbufs `run`, all of `pool`, to it.
///
/// # Safety
/// As [`free_bulk`]'s, and every entry of `run` plain and of `pool`.
#[inline(always)]
unsafe fn put(pool: *mut rte_mempool, run: &[*mut rte_mbuf]) {
    if !run.is_empty() {
        ffi::rte_mempool_put_bulk(pool, run.as_ptr().cast::<*mut c_void>(), run.len() as u32);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An mbuf header as a received single-segment frame leaves it (the fields `plain` reads).
    fn received() -> rte_mbuf {
        rte_mbuf {
            nb_segs: 1,
            refcnt: 1,
            // RTE_MBUF_F_RX_L4_CKSUM_GOOD | RTE_MBUF_F_RX_IP_CKSUM_GOOD: receive flags do not matter.
            ol_flags: (1 << 8) | (1 << 7),
            ..rte_mbuf::default()
        }
    }

    #[test]
    fn only_single_unshared_mbufs_with_their_own_buffer_are_plain() {
        assert!(plain(&received()));
        let mut shared = received();
        shared.refcnt = 2;
        assert!(!plain(&shared), "another reference still reads it");
        let mut chained = received();
        chained.nb_segs = 2;
        assert!(!plain(&chained), "its other segments must go back too");
        let mut indirect = received();
        indirect.ol_flags |= 1 << 62;
        assert!(
            !plain(&indirect),
            "RTE_MBUF_F_INDIRECT: detached by rte_pktmbuf_free"
        );
        let mut external = received();
        external.ol_flags |= 1 << 61;
        assert!(
            !plain(&external),
            "RTE_MBUF_F_EXTERNAL: its buffer's refcount"
        );
    }
}
