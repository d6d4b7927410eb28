//! SIGINT and SIGTERM for `serve`. They are blocked before any thread starts (threads inherit the mask)
//! and taken synchronously by the main thread with `sigtimedwait`, so a stop runs in ordinary code: the
//! servers and the I/O loop are stopped and joined, and the counters are printed, instead of the process
//! dying with status 143 and saying nothing.
//!
//! SIGHUP and SIGUSR1 are taken the same way (issue 26, item 11): by default either killed the collector
//! silently, and its regions with it. SIGHUP is logged and ignored (there is nothing to reload), SIGUSR1
//! prints the counters so far; the collector keeps running.

use std::io;
use std::time::Duration;

/// A signal taken by [`StopSignals::wait`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Taken {
    /// SIGINT or SIGTERM (its name): stop.
    Stop(&'static str),
    /// SIGHUP: logged and ignored.
    Hangup,
    /// SIGUSR1: print the counters.
    User1,
}

/// The blocked stop signals, SIGHUP and SIGUSR1.
pub struct StopSignals {
    set: libc::sigset_t,
}

impl StopSignals {
    /// Blocks SIGINT, SIGTERM, SIGHUP and SIGUSR1 in the calling thread and every thread it starts
    /// afterwards.
    pub fn block() -> io::Result<Self> {
        // SAFETY: sigset_t is plain data; sigemptyset initialises it before use.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: set is a valid sigset_t; the signal numbers are valid.
        let rc = unsafe {
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGINT);
            libc::sigaddset(&mut set, libc::SIGTERM);
            libc::sigaddset(&mut set, libc::SIGHUP);
            libc::sigaddset(&mut set, libc::SIGUSR1);
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc));
        }
        Ok(StopSignals { set })
    }

    /// Waits up to `timeout` for one of the signals.
    pub fn wait(&self, timeout: Duration) -> Option<Taken> {
        let ts = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: set holds blocked signals; a null siginfo pointer is allowed.
        match unsafe { libc::sigtimedwait(&self.set, std::ptr::null_mut(), &ts) } {
            libc::SIGINT => Some(Taken::Stop("SIGINT")),
            libc::SIGTERM => Some(Taken::Stop("SIGTERM")),
            libc::SIGHUP => Some(Taken::Hangup),
            libc::SIGUSR1 => Some(Taken::User1),
            // EAGAIN (timeout) or EINTR: nothing to stop for.
            _ => None,
        }
    }
}
