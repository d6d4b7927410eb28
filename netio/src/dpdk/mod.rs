//! DPDK backend through dta's own bindings to Debian's DPDK 22.11.
pub(crate) mod ffi;
