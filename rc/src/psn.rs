//! 24-bit packet sequence numbers, which wrap at 2^24: the arithmetic lives once in
//! [`dta_protocol::roce::psn`]; these are its raw-`u32` helpers under the names the requester uses.

pub use dta_protocol::roce::psn::{add, before, distance};
