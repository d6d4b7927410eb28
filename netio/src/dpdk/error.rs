//! Turning DPDK return codes and `rte_errno` into [`NetioError`]s with the failing call named.

use std::ffi::CStr;

use super::ffi;
use crate::NetioError;

/// DPDK's text for an error code (covers both libc errno values and DPDK's own).
pub(crate) fn strerror(errno: i32) -> String {
    // SAFETY: rte_strerror returns a pointer to a static or thread-local NUL-terminated string.
    unsafe { CStr::from_ptr(ffi::rte_strerror(errno)) }
        .to_string_lossy()
        .into_owned()
}

/// The calling thread's `rte_errno`.
pub(crate) fn rte_errno() -> i32 {
    // SAFETY: reads a thread-local int through the C shim.
    unsafe { ffi::dta_rte_errno() }
}

/// An error for `call` with error code `errno` (sign ignored: DPDK returns `-errno` from most calls).
pub(crate) fn dpdk_error(call: impl Into<String>, errno: i32) -> NetioError {
    let errno = errno.abs();
    NetioError::Dpdk {
        call: call.into(),
        errno,
        message: strerror(errno),
    }
}

/// Maps a DPDK return value (`< 0` is `-errno`) to a `Result`.
pub(crate) fn check(call: impl FnOnce() -> String, ret: i32) -> Result<i32, NetioError> {
    if ret < 0 {
        Err(dpdk_error(call(), ret))
    } else {
        Ok(ret)
    }
}
