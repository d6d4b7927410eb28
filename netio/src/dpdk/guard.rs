//! Bursts that survive their driver faulting: DPDK 22.11's `net_memif` unmaps the shared rings of a peer
//! that went away on the EAL interrupt thread while an lcore may be inside `rte_eth_rx_burst` or
//! `rte_eth_tx_burst` on them, and that lcore then dies of SIGSEGV inside the PMD (a translator whose
//! collector stopped, reproduced 3 times in 4 here). csrc/fault_guard.c runs such a port's bursts under a
//! SIGSEGV/SIGBUS guard; a fault inside one comes back here as "nothing moved", is counted and logged, and
//! the port's link is down by then, so the next bursts find it disconnected and return at once.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use super::ffi::{self, rte_mbuf};

/// Faults caught inside guarded bursts, in this process.
static FAULTS: AtomicU64 = AtomicU64::new(0);
static INSTALLED: OnceLock<bool> = OnceLock::new();

/// Bursts whose driver faulted (and that the guard turned into an empty burst) since the process started.
pub fn pmd_faults() -> u64 {
    FAULTS.load(Ordering::Relaxed)
}

/// Whether the ports of driver `driver` (`rte_eth_dev_info.driver_name`) need the guard: those whose rings
/// live in memory a peer process shares and the driver unmaps when the peer goes away.
pub(crate) fn needs_guard(driver: &str) -> bool {
    driver == "net_memif"
}

/// Installs the fault handler once per process (chained to the one before it, Rust's stack-overflow
/// handler, for every fault outside a guarded burst). False if it could not be installed.
pub(crate) fn install() -> bool {
    *INSTALLED.get_or_init(|| {
        // SAFETY: installs a signal handler; the previous ones are kept and called for other faults.
        let r = unsafe { ffi::dta_fault_guard_install() };
        if r != 0 {
            log::error!(
                "the fault guard of shared-memory ports could not be installed (errno {})",
                -r
            );
        }
        r == 0
    })
}

fn fault(port: &str, what: &str) {
    let n = FAULTS.fetch_add(1, Ordering::Relaxed) + 1;
    log::error!(
        "port {port}: the driver faulted inside a {what} burst (its peer went away and the driver \
         unmapped the shared rings under it); the burst counts as empty, the mbufs it held are leaked \
         ({n} such faults so far)"
    );
}

/// `rte_eth_rx_burst` of up to `n` mbufs into `pkts`, under the guard when `guarded`; 0 after a fault.
///
/// # Safety
/// As `rte_eth_rx_burst`: a started port, a queue this thread alone polls, room for `n` pointers.
#[inline(always)]
pub(crate) unsafe fn rx(
    guarded: bool,
    name: &str,
    port: u16,
    queue: u16,
    pkts: *mut *mut rte_mbuf,
    n: u16,
) -> usize {
    if !guarded {
        // SAFETY: the caller's promise.
        return unsafe { ffi::rte_eth_rx_burst(port, queue, pkts, n) } as usize;
    }
    let mut faulted = 0;
    // SAFETY: the caller's promise; the guard only adds a jump target.
    let got = unsafe { ffi::dta_rx_burst_guarded(port, queue, pkts, n, &mut faulted) };
    if faulted != 0 {
        fault(name, "receive");
    }
    got as usize
}

/// `rte_eth_tx_burst` of the `n` mbufs at `pkts`, under the guard when `guarded`: how many the device
/// took, or `None` after a fault, when every one of them must count as gone (the driver may have freed some
/// already: freeing them again would corrupt the pool, so the caller leaks them).
///
/// # Safety
/// As `rte_eth_tx_burst`.
#[inline(always)]
pub(crate) unsafe fn tx(
    guarded: bool,
    name: &str,
    port: u16,
    queue: u16,
    pkts: *mut *mut rte_mbuf,
    n: u16,
) -> Option<usize> {
    if !guarded {
        // SAFETY: the caller's promise.
        return Some(unsafe { ffi::rte_eth_tx_burst(port, queue, pkts, n) } as usize);
    }
    let mut faulted = 0;
    // SAFETY: the caller's promise; the guard only adds a jump target.
    let sent = unsafe { ffi::dta_tx_burst_guarded(port, queue, pkts, n, &mut faulted) };
    if faulted != 0 {
        fault(name, "transmit");
        return None;
    }
    Some(sent as usize)
}
