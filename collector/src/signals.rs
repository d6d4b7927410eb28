//! SIGINT and SIGTERM for `serve`. They are blocked before any thread starts (threads inherit the mask)
//! and taken synchronously by the main thread with `sigtimedwait`, so a stop runs in ordinary code: the
//! servers and the I/O loop are stopped and joined, and the counters are printed, instead of the process
//! dying with status 143 and saying nothing.

use std::io;
use std::time::Duration;

/// The blocked stop signals.
pub struct StopSignals {
    set: libc::sigset_t,
}

impl StopSignals {
    /// Blocks SIGINT and SIGTERM in the calling thread and every thread it starts afterwards.
    pub fn block() -> io::Result<Self> {
        // SAFETY: sigset_t is plain data; sigemptyset initialises it before use.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: set is a valid sigset_t; the signal numbers are valid.
        let rc = unsafe {
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGINT);
            libc::sigaddset(&mut set, libc::SIGTERM);
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc));
        }
        Ok(StopSignals { set })
    }

    /// Waits up to `timeout` for a stop signal; its name if one came.
    pub fn wait(&self, timeout: Duration) -> Option<&'static str> {
        let ts = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: set holds blocked signals; a null siginfo pointer is allowed.
        match unsafe { libc::sigtimedwait(&self.set, std::ptr::null_mut(), &ts) } {
            libc::SIGINT => Some("SIGINT"),
            libc::SIGTERM => Some("SIGTERM"),
            // EAGAIN (timeout) or EINTR: nothing to stop for.
            _ => None,
        }
    }
}
