//! The control server (DESIGN.md section 6): TCP, one JSON object per line. A translator says hello with
//! its addresses and QPs; the collector checks version and token, opens one responder QP per translator
//! QP through a [`QpOpener`] (the software responder or the ibverbs backend), and answers with a welcome
//! that lists every region. A bad hello gets a refusal with a reason and the connection is closed.
//!
//! The connection is the lease on the QPs its hellos opened ([`qps`]): a welcomed translator keeps it open
//! with keep-alive lines, and when it closes (or falls silent past the idle deadline) the QPs are closed
//! after a grace period unless the translator says hello again. Hellos naming too many QPs, or taking the
//! collector past its total, are refused with the reason and counted. A hello naming translator QPs
//! that another live connection holds (a second translator configured like the first) is refused too,
//! naming the holder's peer, logged and counted; a restarted translator (its old connection ended) takes
//! its QPs back ([`qps`]).
//!
//! Before the token is checked a connection is anyone's, so it is bounded ([`ControlLimits`]): a number
//! of connections in total and per address (more are refused at once, with a refusal line), one deadline
//! for the whole hello line rather than a timeout per read, and a size limit on it. Every refusal is
//! logged with its reason; refusals over the connection limits are logged as a count.
//!
//!
//! One job a file: `settings` (the limits and the advertisement), `server` (binding, the thread,
//! stopping), `accept` (the accept loop), `slots` (connections counted against the limits),
//! `connection` (one connection's lease and lines), `line` (one line within its deadline and size),
//! `hello` (a line checked and answered), `refusal` (the refusal line and the close), `shared` (what
//! every connection thread shares) and [`qps`] (the QP table and its leases).

mod accept;
mod connection;
mod hello;
mod line;
pub mod qps;
mod refusal;
mod server;
mod settings;
mod shared;
mod slots;

pub use qps::{Holder, InUse, LeaseId, QpLimits, QpOpener, QpStats, QpTable, SingleWriter};
pub use server::ControlServer;
pub use settings::{Advertised, ControlLimits};
