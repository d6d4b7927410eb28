//! The whole system in network namespaces: reporter -> translator (bump in the wire) -> collector with the
//! software responder, then exact checks through the collector's HTTP API. Each test builds its own
//! namespaces (removed on drop, and by a watchdog if the test overruns) and prints SKIP without root,
//! unless DTA_REQUIRE_NETNS=1. Tests run one at a time: they share two CPU cores.

use std::sync::Mutex;
use std::time::Duration;

use anyhow::{ensure, Result};
use dta_e2e::http::metric;
use dta_e2e::system::{Io, Options, Outcome, System};
use dta_e2e::workload;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn print(outcomes: &[Outcome]) {
    for o in outcomes {
        eprintln!(
            "{:<14} {:>7} reports in {:>6.2}s ({:>7.0} reports/s), {} answers exact",
            o.name,
            o.reports,
            o.seconds,
            o.reports as f64 / o.seconds,
            o.checked
        );
    }
}

/// 10^5 reports of each primitive, every answer exact, nothing dropped anywhere.
fn every_primitive(sys: &mut System, salt: u64) -> Result<Vec<Outcome>> {
    let workloads = [
        workload::key_write(20_000, 5, salt)?,
        workload::key_increment(1_000, 100_000, salt)?,
        workload::append(100_000)?,
        workload::postcard(4_000, 5, salt)?,
        workload::sketch(25, 2_000, salt)?,
    ];
    let mut out = Vec::new();
    for w in &workloads {
        ensure!(
            w.reports.len() >= 100_000,
            "{} has {} reports",
            w.name,
            w.reports.len()
        );
        out.push(sys.run(w)?);
    }
    let m = sys.metrics.scrape()?;
    ensure!(
        metric(&m, "dta_translator_report_drops_total", "") == 0,
        "reports dropped:\n{m}"
    );
    ensure!(
        metric(&m, "dta_translator_worker_backlog_drops_total", "") == 0,
        "backlog drops"
    );
    ensure!(
        metric(&m, "dta_translator_qp_errors_total", "") == 0,
        "QP errors"
    );
    Ok(out)
}

#[test]
fn every_primitive_is_exact_through_af_packet() -> Result<()> {
    let _g = serial();
    let opts = Options {
        io: Io::AfPacket,
        faults: None,
        limit: Duration::from_secs(240),
    };
    let Some(mut sys) = System::start("a", opts)? else {
        return Ok(());
    };
    let out = every_primitive(&mut sys, 1)?;
    print(&out);
    let summary = sys.stop_translator()?;
    ensure!(
        summary.contains("reports in            502400"),
        "the final summary on SIGTERM counts every report: {summary}"
    );
    Ok(())
}
