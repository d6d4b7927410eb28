//! SIGHUP and SIGUSR1 for `run` (issue 26, item 11). By default both kill a process, which for a daemon
//! is the wrong answer: an operator's `kill -HUP` (a reload by convention) or a stray SIGUSR1 took the
//! translator down without its summary. They are blocked before any thread starts (threads inherit the
//! mask) and taken synchronously by one thread with `sigtimedwait`: SIGHUP is logged and ignored (there
//! is nothing to reload: the configuration is read at start), SIGUSR1 prints the counter summary so far
//! to stdout and logs it, and the translator keeps running. SIGINT and SIGTERM stay the stop signals.

use std::io;
use std::time::Duration;

/// A signal taken by [`Signals::wait`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// SIGHUP: logged and ignored.
    Hangup,
    /// SIGUSR1: print the counters.
    User1,
}

/// The blocked signals.
pub struct Signals {
    set: libc::sigset_t,
}

impl Signals {
    /// Blocks SIGHUP and SIGUSR1 in the calling thread and every thread it starts afterwards.
    pub fn block() -> io::Result<Self> {
        // SAFETY: sigset_t is plain data; sigemptyset initialises it before use.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: set is a valid sigset_t; the signal numbers are valid.
        let rc = unsafe {
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGHUP);
            libc::sigaddset(&mut set, libc::SIGUSR1);
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc));
        }
        Ok(Signals { set })
    }

    /// Waits up to `timeout` for one of them.
    pub fn wait(&self, timeout: Duration) -> Option<Signal> {
        let ts = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: set holds blocked signals; a null siginfo pointer is allowed.
        match unsafe { libc::sigtimedwait(&self.set, std::ptr::null_mut(), &ts) } {
            libc::SIGHUP => Some(Signal::Hangup),
            libc::SIGUSR1 => Some(Signal::User1),
            // EAGAIN (timeout) or EINTR.
            _ => None,
        }
    }
}

// SAFETY: a sigset_t is plain data, read only by sigtimedwait.
unsafe impl Send for Signals {}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocked, the signals do not kill the test process; they are taken by `wait`, in any thread of it.
    #[test]
    fn blocked_signals_are_taken_not_fatal() {
        let s = Signals::block().unwrap();
        assert_eq!(s.wait(Duration::from_millis(1)), None);
        // SAFETY: raise(3) on our own thread; both signals are blocked here, so they stay pending.
        assert_eq!(unsafe { libc::raise(libc::SIGHUP) }, 0);
        assert_eq!(s.wait(Duration::from_secs(1)), Some(Signal::Hangup));
        assert_eq!(unsafe { libc::raise(libc::SIGUSR1) }, 0);
        assert_eq!(s.wait(Duration::from_secs(1)), Some(Signal::User1));
        assert_eq!(s.wait(Duration::from_millis(1)), None);
    }
}
