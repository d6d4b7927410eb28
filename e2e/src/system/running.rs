//! The running system: its processes, namespaces and senders in drop order, and what is printed and
//! removed when it goes.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::history::ClickHouse;
use crate::procs::Proc;
use crate::rxe::Rxe;
use crate::send::{Metrics, Sender};
use crate::topo::{SecondPath, Topology};

/// The second reporter and translator of a two-translator run.
pub struct Second {
    /// The translator.
    pub translator: Proc,
    /// Its metrics.
    pub metrics: Metrics,
    pub(super) sender: Sender,
    /// Its namespaces (dropped after the process).
    pub path: SecondPath,
}

/// The running system. Field order is drop order: processes stop before their namespaces go.
pub struct System {
    /// The translator.
    pub translator: Proc,
    /// The collector (None while stopped).
    pub collector: Option<Proc>,
    /// The ClickHouse server the collector exports to, with
    /// [`Export::clickhouse`](super::Export::clickhouse).
    pub clickhouse: Option<ClickHouse>,
    /// The second translator, with `translators: 2`.
    pub second: Option<Second>,
    /// The rxe device, with [`Responder::Rxe`](super::Responder::Rxe).
    pub rxe: Option<Rxe>,
    /// The namespaces.
    pub topo: Topology,
    /// Translator metrics.
    pub metrics: Metrics,
    /// Collector HTTP API (reachable from the collector namespace).
    pub http: SocketAddr,
    /// On drop the daemons' log tails are printed (cargo test shows them for failing tests only), unless
    /// this is set.
    pub quiet: bool,
    pub(super) sender: Sender,
    /// The INT reports' sender (to the collector's INT port), with `int`.
    pub(super) int_sender: Option<Sender>,
    pub(super) dir: PathBuf,
    pub(super) pids: Arc<Mutex<Vec<u32>>>,
    pub(super) disarm: Arc<AtomicBool>,
    pub(super) backend: &'static str,
}

impl System {
    /// Adds a process the test started beside the daemons (a Prometheus) to those the watchdog kills.
    pub fn watch(&self, pid: u32) {
        if let Ok(mut v) = self.pids.lock() {
            v.push(pid);
        }
    }

    /// Where the collector's exporter writes its Parquet files (runs with
    /// [`Options::export`](super::Options::export)); kept with the scratch directory only while the run
    /// lasts (DTA_E2E_KEEP=1 keeps it).
    pub fn history_dir(&self) -> PathBuf {
        self.dir.join("history")
    }

    /// The run's scratch directory (configurations, logs, the history).
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }
}

impl Drop for System {
    fn drop(&mut self) {
        self.disarm.store(true, Ordering::Relaxed);
        for name in [
            "translator.log",
            "translator2.log",
            "twin.log",
            "collector.log",
        ] {
            let path = self.dir.join(name);
            if self.quiet {
                break;
            }
            if let Ok(text) = std::fs::read_to_string(&path) {
                let lines: Vec<&str> = text.lines().collect();
                eprintln!("---- last lines of {name} ----");
                for l in &lines[lines.len().saturating_sub(20)..] {
                    eprintln!("{l}");
                }
            }
        }
        // The scratch directory goes with the run; DTA_E2E_KEEP=1 keeps configurations and logs.
        if std::env::var("DTA_E2E_KEEP").as_deref() != Ok("1") {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}
