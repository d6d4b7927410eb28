//! Packet-buffer pools (`rte_pktmbuf_pool_create`).

use std::ffi::CString;
use std::ptr::NonNull;

use super::error::{dpdk_error, rte_errno};
use super::ffi;
use super::Eal;
use crate::NetioError;

/// A pool of mbufs, freed on drop. Every queue's mbufs come from one; DPDK's pools are multi-producer,
/// multi-consumer, so a pool is shared by the queues of a port.
pub struct Mempool {
    ptr: NonNull<ffi::rte_mempool>,
    name: String,
}

// SAFETY: DPDK mempools (default "ring_mp_mc" ops) are safe to use from several threads at once.
unsafe impl Send for Mempool {}
unsafe impl Sync for Mempool {}

impl Mempool {
    /// Creates a pool of `n` mbufs with `data_room` bytes each (headroom included, as in DPDK:
    /// `RTE_MBUF_DEFAULT_BUF_SIZE` gives 2048 bytes after the 128-byte headroom), a per-lcore cache of
    /// `cache` mbufs, on NUMA socket `socket` (-1: any). `name` must be unique in the process.
    pub fn new(
        _eal: &Eal,
        name: &str,
        n: u32,
        cache: u32,
        data_room: u16,
        socket: i32,
    ) -> Result<Self, NetioError> {
        let cname = CString::new(name).map_err(|_| {
            NetioError::Config(format!("mempool name {name:?} contains a NUL byte"))
        })?;
        // Without hugepages DPDK keeps each mbuf inside one 4 KiB page (IOVA-contiguous, for DMA), which
        // puts one mbuf at the same offset of every page: all of a burst's mbuf headers then fall into
        // the same few L1 sets and evict each other (one miss per mbuf access). Nothing DMAs from such
        // memory (`--no-huge` works with virtual devices only), so the pool may let mbufs cross pages and
        // packs them. With hugepages the pool is made as `rte_pktmbuf_pool_create` makes it.
        // SAFETY: the EAL is initialised (witnessed by `_eal`).
        let flags = if unsafe { ffi::rte_eal_has_hugepages() } == 0 {
            // SAFETY: a constant.
            unsafe { ffi::dta_mempool_f_no_iova_contig() }
        } else {
            0
        };
        // SAFETY: valid C string; the EAL is initialised.
        let ptr = unsafe {
            ffi::dta_pktmbuf_pool_create_flags(cname.as_ptr(), n, cache, data_room, socket, flags)
        };
        let ptr = NonNull::new(ptr).ok_or_else(|| {
            dpdk_error(
                format!("rte_pktmbuf_pool_create({name}, {n} mbufs of {data_room} bytes)"),
                rte_errno(),
            )
        })?;
        Ok(Mempool {
            ptr,
            name: name.to_owned(),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Mbufs free in the pool (including per-lcore caches).
    pub fn available(&self) -> u32 {
        // SAFETY: live pool.
        unsafe { ffi::rte_mempool_avail_count(self.ptr.as_ptr()) }
    }

    /// Mbufs taken from the pool and not yet returned.
    pub fn in_use(&self) -> u32 {
        // SAFETY: live pool.
        unsafe { ffi::rte_mempool_in_use_count(self.ptr.as_ptr()) }
    }

    /// Writes `frames[i % frames.len()]` at the data offset of every mbuf now free in the pool, then gives
    /// them back. A device that receives into mbufs without writing them (`net_null` with `copy=0`, which
    /// only sets the length) then delivers these frames: a benchmark's report source at no cost a frame,
    /// as if a NIC had written them. Returns how many mbufs were written.
    pub fn prefill(&self, frames: &[Vec<u8>]) -> Result<usize, NetioError> {
        if frames.is_empty() {
            return Ok(0);
        }
        let mut all = Vec::new();
        loop {
            // SAFETY: live pool.
            let m = unsafe { ffi::rte_pktmbuf_alloc(self.ptr.as_ptr()) };
            if m.is_null() {
                break;
            }
            all.push(m);
        }
        let mut written = 0;
        for (i, &m) in all.iter().enumerate() {
            let f = &frames[i % frames.len()];
            // SAFETY: a fresh mbuf of ours; its room starts at the data offset a receive also uses.
            let room = unsafe { super::mbuf::room_mut(m) };
            if let Some(dst) = room.get_mut(..f.len()) {
                dst.copy_from_slice(f);
                written += 1;
            }
        }
        // SAFETY: every pointer was allocated above and is referenced nowhere else.
        unsafe { ffi::rte_pktmbuf_free_bulk(all.as_mut_ptr(), all.len() as u32) };
        if written < all.len() {
            return Err(NetioError::Config(format!(
                "pool {}: a frame of {} bytes does not fit its data room",
                self.name,
                frames.iter().map(Vec::len).max().unwrap_or(0)
            )));
        }
        Ok(written)
    }

    pub(crate) fn as_ptr(&self) -> *mut ffi::rte_mempool {
        self.ptr.as_ptr()
    }
}

impl Drop for Mempool {
    fn drop(&mut self) {
        // SAFETY: the pool is live and, by the owners' drop order, no port queue refers to it any more.
        unsafe { ffi::rte_mempool_free(self.ptr.as_ptr()) }
    }
}
