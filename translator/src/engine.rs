//! The translator engine: a state machine with no sockets and no clock (quinn-proto style).
//!
//! * [`Engine::handle_frame`] takes any received Ethernet frame: DTA reports become work requests on the
//!   collector's QP, RoCE responses drive the requester, everything else comes back as
//!   [`Handled::NotForUs`] for the I/O layer to forward. [`Engine::handle_frames`] does the same for a
//!   whole receive burst in one call.
//! * [`Engine::poll_transmit`] hands out the next frame to send (DTA NACKs first, then RoCE frames).
//! * [`Engine::poll_timeout`] / [`Engine::handle_timeout`] drive retransmissions, idle flushes and the
//!   rate limiter; [`Engine::poll_event`] reports QP errors.
//!
//! One job a file, each module using only those below it (no module uses one that uses it):
//!
//! * `outputs`: [`Handled`], [`Event`], [`QpStats`], what the engine hands its caller.
//! * `link`: one collector as the engine sees it (QP, regions, primitives).
//! * `state`: the [`Engine`] itself and the gauges read from it.
//! * `routes`: which collector a report goes to; `tracking`: DTA sequence tracking and NACKs.
//! * `submit`: the one description of a report's work and its one way to a primitive.
//! * `key_write`: one Key-Write report's write; `key_write_run`: runs of them in one loop.
//! * `report`: a DTA report from payload to primitive; `int`: INT reports through the same `submit`.
//! * `response`: RoCE responses from a collector; `receive`: frames and bursts sorted into the above.
//! * `transmit`, `timers`, `lifecycle`: frames out, deadlines, and collectors set up and changed.

mod int;
mod key_write;
mod key_write_run;
mod lifecycle;
mod link;
mod outputs;
mod receive;
mod report;
mod response;
mod routes;
mod state;
mod submit;
mod timers;
mod tracking;
mod transmit;

pub use outputs::{Event, Handled, QpStats};
pub use state::Engine;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod ack_dispatch_tests;
