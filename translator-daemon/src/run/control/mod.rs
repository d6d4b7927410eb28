//! The control client, one thread per collector (DESIGN.md section 6). It says hello with every worker's
//! QP towards that collector and hands the welcome on: the first one to the daemon's start-up, later ones
//! to the workers. A worker whose QP failed (retries exhausted because the collector went away, or a
//! remote error) asks for new QPs through `requests`; the client then says hello again on the connection
//! that holds them, or, when that connection is gone, on a new one, with backoff while the collector is
//! down. A welcome whose regions differ from the last one means the collector restarted with
//! new memory (workers start over on it and count what was lost); the same regions mean only the QPs were
//! re-created (workers resend their unacknowledged work).
//!
//! The connection of the last welcome stays open with a keep-alive line every
//! [`KEEPALIVE_EVERY`](dta_protocol::control::KEEPALIVE_EVERY): the collector keeps our QPs while it lives
//! and reclaims them a grace period after it ends. When the collector closes it, the client says hello
//! again. The answer to a hello is read within a size cap and one deadline for the whole line, as the
//! collector reads hellos: a collector that never ends its line, or trickles it, is a failed attempt,
//! retried with backoff like a refused connection.
//!
//! A welcome the engine cannot use (regions it cannot write: a Key-Write entry size that does not fit the
//! reports, overlapping regions, a bad path MTU) is refused here, before any worker sees it: the collector
//! came back with new memory, so the workers detach from it (what they held for it is lost and counted,
//! and reports for it are refused and counted), and the client asks again with backoff, saying why in the
//! log and in `control_welcomes_refused_total{reason}`, until a usable welcome comes and the workers start
//! over on it.
//!
//! A collector refuses a hello whose QPs another live control connection holds: a second translator with
//! our address and QPNs, or our own previous connection not yet seen closed. That refusal is retried with
//! backoff, at start-up too, saying why in the log (WARN, with the holder's address) and in
//! `control_welcomes_refused_total{reason="qps_in_use"}`: the holder may go (or it was us), and then we
//! are let in; until then our workers hold nothing for that collector.
//!
//! One job a file: `link` (what a client is given), `handshake` (the hello and its welcome), `answer`
//! (reading the answer within its limits), `lease` (the kept connection and its keep-alives), `deliver`
//! (welcomes handed to the workers, or the workers detached), `establish` (a usable welcome again, with
//! backoff or on the open connection), `run` (the client's life) and `counters` (what it counts).

mod answer;
mod counters;
mod deliver;
mod establish;
mod handshake;
mod lease;
mod link;
mod run;

pub use counters::{ControlCounters, Refused};
pub use link::ControlLink;

#[cfg(test)]
mod tests;

/// Issue 26, item 2: welcomes the engine cannot use, against a stand-in collector.
#[cfg(test)]
mod unusable_welcome_tests;

/// Issue 26 item 4: a collector that refuses our hello because another live translator holds our QPs.
#[cfg(test)]
mod in_use_tests;

/// A failed QP is re-established on the connection that holds it (issue 26 item 4: a translator with our
/// identity, refused while we live, cannot take our QPs between our old connection and a new one).
#[cfg(test)]
mod rehello_tests;
