//! `dta-report dart`: the I/O around the sans-IO [`Dart`](dta_reporter::dart::Dart) writer. It reads the
//! writes, says hello on the collector's control channel, opens an AF_PACKET port and drives the writer
//! with a real clock until every write is acknowledged, the QP fails, or the time limit passes.
//!
//! One job a file: `args` (the command line), `writes` (the writes file), `control` (hello, welcome,
//! keep-alives) and `run` (the I/O loop).

mod args;
mod control;
mod run;
mod writes;

pub use args::DartArgs;
pub use run::run;

#[cfg(test)]
mod tests;
