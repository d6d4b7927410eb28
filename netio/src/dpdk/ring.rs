//! Handoff rings: a lock-free single-producer, single-consumer `rte_ring` of mbuf pointers from one worker to
//! another (VPP's handoff, DPDK's own ring). A frame whose state another worker owns travels as its mbuf
//! pointer, never as a copy; a full ring takes what it has room for, and the sender holds the rest back
//! (backpressure) or frees and counts it.

use std::ffi::CString;
use std::ptr::NonNull;
use std::sync::Arc;

use super::burst::MbufBurst;
use super::error::{dpdk_error, rte_errno};
use super::ffi;
use super::Eal;
use crate::NetioError;

/// The ring itself, freed (with the mbufs still in it) when both ends are gone, if this process made it.
struct Shared {
    ring: NonNull<ffi::rte_ring>,
    owned: bool,
}

// SAFETY: an SP/SC rte_ring is used by one producer thread and one consumer thread at once, which the
// ends' `&mut self` methods and their being one of each guarantee; creation and freeing are thread-safe.
unsafe impl Send for Shared {}
unsafe impl Sync for Shared {}

impl Drop for Shared {
    fn drop(&mut self) {
        if !self.owned {
            return;
        }
        // Both ends are gone: nobody enqueues or dequeues any more. Free what is still in flight.
        let mut buf = [std::ptr::null_mut::<ffi::rte_mbuf>(); 64];
        loop {
            // SAFETY: live ring of mbuf pointers, room for 64 in `buf`.
            let n = unsafe {
                ffi::rte_ring_sc_dequeue_burst(
                    self.ring.as_ptr(),
                    buf.as_mut_ptr().cast(),
                    64,
                    std::ptr::null_mut(),
                )
            };
            if n == 0 {
                break;
            }
            // SAFETY: the dequeued mbufs are ours.
            unsafe { ffi::rte_pktmbuf_free_bulk(buf.as_mut_ptr(), n) };
        }
        // SAFETY: created by rte_ring_create, freed once.
        unsafe { ffi::rte_ring_free(self.ring.as_ptr()) };
    }
}

/// The producing end.
pub struct HandoffTx {
    shared: Arc<Shared>,
    /// Mbufs refused because the ring was full (freed).
    refused: u64,
}

/// The consuming end.
pub struct HandoffRx {
    shared: Arc<Shared>,
}

/// A ring of at least `capacity` mbufs named `name` (unique in the process; DPDK keeps a registry),
/// as its producing and consuming ends.
pub fn handoff(
    _eal: &Eal,
    name: &str,
    capacity: u32,
) -> Result<(HandoffTx, HandoffRx), NetioError> {
    let cname = CString::new(name)
        .map_err(|_| NetioError::Config(format!("ring name {name:?} contains a NUL byte")))?;
    // A ring holds size - 1 entries; the next power of two above `capacity` leaves room for all of them.
    let size = (capacity.max(1) + 1).next_power_of_two();
    let flags = ffi::RING_F_SP_ENQ | ffi::RING_F_SC_DEQ;
    // SAFETY: valid C string; the EAL is initialised (witnessed by `_eal`). SOCKET_ID_ANY is -1.
    let ring = unsafe { ffi::rte_ring_create(cname.as_ptr(), size, -1, flags) };
    let ring = NonNull::new(ring).ok_or_else(|| {
        dpdk_error(
            format!("rte_ring_create({name}, {size} entries)"),
            rte_errno(),
        )
    })?;
    Ok(ends(Shared { ring, owned: true }))
}

/// Both ends of an existing ring of mbuf pointers named `name` that another part of the process made and
/// keeps (a `net_ring` device's queue ring, which a benchmark reads and writes as the device's far side).
/// Use each end from one thread, and only while the ring's owner keeps it.
pub fn attach_ring(_eal: &Eal, name: &str) -> Result<(HandoffTx, HandoffRx), NetioError> {
    let cname = CString::new(name)
        .map_err(|_| NetioError::Config(format!("ring name {name:?} contains a NUL byte")))?;
    // SAFETY: valid C string; the EAL is initialised.
    let ring = unsafe { ffi::rte_ring_lookup(cname.as_ptr()) };
    let ring = NonNull::new(ring)
        .ok_or_else(|| dpdk_error(format!("rte_ring_lookup({name})"), rte_errno()))?;
    Ok(ends(Shared { ring, owned: false }))
}

fn ends(shared: Shared) -> (HandoffTx, HandoffRx) {
    let shared = Arc::new(shared);
    (
        HandoffTx {
            shared: shared.clone(),
            refused: 0,
        },
        HandoffRx { shared },
    )
}

// SAFETY: each end is moved to its one thread; see `Shared`.
unsafe impl Send for HandoffTx {}
unsafe impl Send for HandoffRx {}

impl HandoffTx {
    /// Enqueues as many mbufs of `burst` (its holes closed first) as the
    /// ring has room for, from the front, and leaves the rest in `burst`, in order, for the caller to offer
    /// again (backpressure) or to free with [`refuse`](Self::refuse). Returns how many were enqueued.
    pub fn send(&mut self, burst: &mut MbufBurst) -> usize {
        // A null entry must never reach the ring: holes are closed first.
        burst.compact();
        let held = burst.held();
        let n = held.len();
        if n == 0 {
            return 0;
        }
        // SAFETY: live ring; `held` holds n owned mbuf pointers, which the ring takes a prefix of.
        let done = unsafe {
            ffi::rte_ring_sp_enqueue_burst(
                self.shared.ring.as_ptr(),
                held.as_ptr().cast(),
                n as u32,
                std::ptr::null_mut(),
            )
        } as usize;
        burst.consume_front(done);
        done
    }

    /// Frees what is left in `burst` as refused by this ring, counted in [`refused`](Self::refused).
    pub fn refuse(&mut self, burst: &mut MbufBurst) {
        self.refused += burst.len() as u64;
        burst.clear();
    }

    /// Mbufs refused so far because the ring was full.
    pub fn refused(&self) -> u64 {
        self.refused
    }
}

impl HandoffRx {
    /// Dequeues up to `burst`'s free room onto its end; returns how many.
    pub fn recv(&mut self, burst: &mut MbufBurst) -> usize {
        let free = burst.free();
        if free == 0 {
            return 0;
        }
        // SAFETY: live ring; the burst's tail has room for `free` pointers, which become ours.
        let n = unsafe {
            ffi::rte_ring_sc_dequeue_burst(
                self.shared.ring.as_ptr(),
                burst.tail_ptr().cast(),
                free as u32,
                std::ptr::null_mut(),
            )
        } as usize;
        burst.grow(n);
        n
    }

    /// Mbufs waiting.
    pub fn waiting(&self) -> usize {
        // SAFETY: live ring; the count is a snapshot.
        unsafe { ffi::rte_ring_count(self.shared.ring.as_ptr()) as usize }
    }
}
