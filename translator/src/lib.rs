//! The DTA translator engine: frames and a clock in, frames and timer deadlines out (no I/O).
#![forbid(unsafe_code)]
