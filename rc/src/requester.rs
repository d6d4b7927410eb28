//! The RoCEv2 requester of one QP: PSNs, AckReq cadence, the retransmission window, go-back-N,
//! retransmit timeout with backoff, RNR waits, atomic responses and the QP error state.
//!
//! Work requests enter a bounded queue; [`Requester::poll_transmit`] (or
//! [`poll_transmit_into`](Requester::poll_transmit_into), straight into a NIC buffer) takes them into the
//! window as the window, the responder's atomic limit and the rate limiter allow. Queue and window are one
//! ring (`ring::Ring`), the window at its head, so taking a work request in moves a boundary, not the
//! request, and retiring acknowledged ones moves the head. The window keeps the work request, not
//! the frame: a retransmission rebuilds the identical frame from the same PSN, which costs less than
//! keeping a copy of every frame in flight.
//!
//! One state machine, one struct: `state` declares it, its fields and their invariants (`win`, `sent`,
//! `atomics`, `probe`), and each file below is one job done on them, importing `state` and the files
//! beneath it (none imports this module or one above it): `work` (a work request and its ring slot),
//! `ring` (the storage behind window and queue), `timer_table` (every timer, named), `queue` (taking
//! work in), `new_frame` (the rules every new frame follows, and its state updates), `transmit` (the
//! next frame: new, or a go-back-N retransmission), `burst` (bursts of new frames) with `build` (how a
//! burst of one frame shape is built), `pacing` (rate and congestion), `window` (its size and
//! retiring), `ack` (responses), `timers` (the retransmit timeout) and `lifecycle` (creation, error,
//! close, re-establishment).

mod ack;
mod build;
mod burst;
mod lifecycle;
mod new_frame;
mod pacing;
mod queue;
mod ring;
mod state;
mod timer_table;
mod timers;
mod transmit;
mod window;
mod work;

pub use state::{QpError, Requester, RequesterParams, Response};
pub use work::WorkRequest;

#[cfg(test)]
mod tests;
