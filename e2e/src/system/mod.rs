//! A whole system for one test: the namespaces, the collector (software responder on `c0`) and the
//! translator (bump in the wire on `ta`/`tb`), with configuration files in a scratch directory and a
//! watchdog that tears everything down and fails the process if the test overruns its time.
//!
//! One job a file: `options` (what a run asks for), `config` (the daemons' configuration files),
//! `start` (building a run), `running` (the system and its teardown), `daemons` (the processes started,
//! stopped and restarted), `drive` (workloads sent and checked), `settle` (one workload and what it
//! took) and `watchdog`.

mod config;
mod daemons;
mod drive;
mod options;
mod running;
mod settle;
mod start;
mod watchdog;

pub use config::{
    CLICKHOUSE_DATABASE, CLICKHOUSE_SERVER, CONTROL_PORT, RXE_DEVICE, RXE_RETRY_LIMIT, TOKEN,
};
pub use options::{Export, Io, Options, Responder};
pub use running::{Second, System};
pub use settle::Outcome;
