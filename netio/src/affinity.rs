//! Pinning the calling thread to a CPU core, so that an I/O or worker thread keeps its core (and its
//! caches) the way a DPDK lcore does, whichever backend it polls.

use crate::NetioError;

/// Pins the calling thread to `core`. Fails with the OS error when the core does not exist or is not in
/// the process's allowed set (a container's cpuset, `taskset`).
pub fn pin_current_thread(core: usize) -> Result<(), NetioError> {
    if core >= libc::CPU_SETSIZE as usize {
        return Err(NetioError::Config(format!(
            "core {core} is beyond CPU_SETSIZE ({})",
            libc::CPU_SETSIZE
        )));
    }
    // SAFETY: an all-zero cpu_set_t is the empty set; CPU_SET writes inside it for core < CPU_SETSIZE.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    unsafe { libc::CPU_SET(core, &mut set) };
    // SAFETY: pid 0 is the calling thread; `set` is a valid cpu_set_t of the size passed.
    let r = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if r != 0 {
        return Err(NetioError::last_os(format!(
            "pinning the thread to core {core}"
        )));
    }
    Ok(())
}

/// The cores the calling thread may run on.
pub fn current_thread_cores() -> Result<Vec<usize>, NetioError> {
    // SAFETY: an all-zero cpu_set_t is valid; sched_getaffinity fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 is the calling thread; `set` is a valid cpu_set_t of the size passed.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r != 0 {
        return Err(NetioError::last_os("sched_getaffinity"));
    }
    // SAFETY: CPU_ISSET reads inside `set` for every index below CPU_SETSIZE.
    Ok((0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_a_thread_to_one_allowed_core_and_refuses_a_missing_one() {
        let allowed = current_thread_cores().unwrap_or_default();
        let Some(&last) = allowed.last() else {
            panic!("no allowed core");
        };
        let got =
            std::thread::spawn(move || pin_current_thread(last).map(|_| current_thread_cores()))
                .join()
                .unwrap_or_else(|_| panic!("thread panicked"));
        assert_eq!(got.ok().and_then(|r| r.ok()), Some(vec![last]));
        let missing = std::thread::spawn(|| pin_current_thread(1023))
            .join()
            .unwrap_or_else(|_| panic!("thread panicked"));
        assert!(missing.is_err(), "core 1023 does not exist here");
    }
}
