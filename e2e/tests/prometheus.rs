//! A real Prometheus scrapes both daemons (issue 28, items 2 and 3): the harness's namespaces, a
//! translator with two workers taking DTA and INT reports, the collector, and Debian's `prometheus`
//! started in the collector's namespace (which reaches both daemons' metrics on the management link)
//! with its own configuration, a scratch TSDB, 1-s scrapes and the shipped `deploy/prometheus/rules.yml`.
//! Known workloads: INT reports with drops (1,000 at 5 switches) and reports left out of their switches'
//! sequences (lost upstream), then Append reports at a fixed open-loop rate, then a stream that outruns
//! the collector's exporter on a small ring. Checked through Prometheus's HTTP API: every rule loaded
//! and healthy, every rule's and every dashboard panel's expression returns data, the loss alert is
//! pending, the ring-overrun alert fires for the list that overran (and no other), the per switch drops
//! add up to what was sent, and `rate()` of the translator's reports matches the sending rate within
//! 5 %.
//! Prints SKIP without root or without `prometheus`, unless DTA_REQUIRE_NETNS=1 or
//! DTA_REQUIRE_PROMETHEUS=1. Run it under `flock /tmp/dta-heavy.lock` on shared machines.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{ensure, Context, Result};
use dta_e2e::int_workload;
use dta_e2e::prometheus::{dashboard_exprs, dashboard_file, signal, tool_or_skip, Prometheus};
use dta_e2e::system::{Export, Io, Options, Responder, System};
use dta_e2e::workload::{self, APPEND_WRAP_LIST};

/// The exporter's sleep once it has read everything: the small ring [`APPEND_WRAP_LIST`] (1,024
/// entries) takes [`WRAP_RATE`] entries/s, so each sleep lets it overwrite entries the exporter never
/// read (the ring of the rate stream, 2^17 entries, holds far more than `RATE` × this).
const EXPORT_POLL_MS: u64 = 2_000;
/// The overrunning stream: `WRAP_RATE` entries/s for `WRAP_FOR` into [`APPEND_WRAP_LIST`].
const WRAP_RATE: u64 = 5_000;
const WRAP_FOR: Duration = Duration::from_secs(2);

/// The open-loop DTA stream whose rate Prometheus must measure.
const RATE: u64 = 3_000;
const STREAM: Duration = Duration::from_secs(12);
/// `rate()`'s window, evaluated inside the stream (1 s after its start to 1 s before its end).
const WINDOW_S: f64 = 10.0;

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Waits until `check` holds, for at most `limit`; the last error otherwise.
fn wait_for(limit: Duration, mut check: impl FnMut() -> Result<()>) -> Result<()> {
    let deadline = Instant::now() + limit;
    loop {
        match check() {
            Ok(()) => return Ok(()),
            Err(e) if Instant::now() > deadline => return Err(e),
            Err(_) => std::thread::sleep(Duration::from_millis(500)),
        }
    }
}

#[test]
fn prometheus_scrapes_both_daemons_and_answers_every_rule_and_panel() -> Result<()> {
    let Some(bin) = tool_or_skip("prometheus")? else {
        return Ok(());
    };
    let opts = Options {
        io: Io::AfPacket,
        faults: None,
        limit: Duration::from_secs(300),
        workers: 2,
        collector_io: Io::AfPacket,
        responder: Responder::Soft,
        translators: 1,
        int: true,
        // The exporter: its overrun counter has series for the dashboard's panel, and a list that
        // overruns for the alert.
        export: Some(Export {
            poll_ms: EXPORT_POLL_MS,
            epoch_secs: 10,
            clickhouse: false,
        }),
    };
    let Some(mut sys) = System::start("p", opts)? else {
        return Ok(());
    };
    let dir = std::env::temp_dir().join(format!("dta-e2e-prometheus-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let prom = Prometheus::start(
        &bin,
        sys.topo.collector.name(),
        &dir,
        sys.metrics.addr,
        sys.http,
    )?;
    sys.watch(prom.pid());
    let result = run(&mut sys, &prom);
    if result.is_err() {
        eprintln!(
            "---- prometheus.log ----\n{}",
            std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default()
        );
    }
    drop(prom);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn run(sys: &mut System, prom: &Prometheus) -> Result<()> {
    wait_for(Duration::from_secs(20), || {
        let t = prom.targets()?;
        ensure!(
            t.len() == 2 && t.iter().all(|(_, h, _)| h == "up"),
            "targets not both up: {t:?}"
        );
        Ok(())
    })?;

    // INT: 2,000 flows of 5 per-hop reports, 200 sink reports, 1,000 drops (switches 1 to 5, 200 each).
    // Every 40th per-hop report is left out: its switch's next one shows the gap (lost upstream).
    let (mut w, _) = int_workload::int_with_expected(2_000, 200, 1_000, 11)?;
    let per_hop = 2_000 * 5;
    let mut k = 0;
    w.reports.retain(|_| {
        k += 1;
        k > per_hop || k % 40 != 0
    });
    sys.send_int(&w)?;

    // DTA: Append reports at RATE for STREAM, open loop (no flow control: a switch's pace).
    let stream = workload::append((RATE * STREAM.as_secs() + RATE) as u32)?;
    let start = unix_now();
    let (sent, refused) = sys.send_at_rate(&stream.reports, RATE, STREAM)?;
    ensure!(
        refused == 0,
        "the reporter's kernel refused {refused} sends"
    );
    let offered = sent as f64 / STREAM.as_secs_f64();

    // The overrun: the small ring takes WRAP_RATE entries/s while the exporter sleeps EXPORT_POLL_MS
    // between the reads that find nothing new.
    let wrap = workload::append_wrapping((WRAP_RATE * WRAP_FOR.as_secs()) as u32)?;
    let (wrap_sent, refused) = sys.send_at_rate(&wrap.reports, WRAP_RATE, WRAP_FOR)?;
    ensure!(
        refused == 0,
        "the reporter's kernel refused {refused} sends"
    );
    // Two more scrapes after the streams, and a rule evaluation (1 s interval here).
    std::thread::sleep(Duration::from_secs(3));

    let rate_expr = format!(
        "sum(rate(dta_translator_reports_total{{primitive=\"append\"}}[{}s]))",
        WINDOW_S
    );
    let at = start + 1.0 + WINDOW_S;
    let measured = prom.value(&rate_expr, Some(at))?;
    eprintln!(
        "workload: {sent} Append reports in {:.0} s = {offered:.1}/s; Prometheus {rate_expr} at +{:.0} s: {measured:.1}/s ({:+.2} %)",
        STREAM.as_secs_f64(),
        at - start,
        100.0 * (measured - offered) / offered
    );
    ensure!(
        (measured - offered).abs() <= 0.05 * offered,
        "Prometheus's rate {measured:.1}/s is not within 5 % of the workload's {offered:.1}/s"
    );

    // The per switch drops add up to the drop reports sent, 200 per switch; loss per reporter adds up
    // to the translator's total.
    for node in 1..=5 {
        let e = format!("sum(dta_translator_int_node_drops_total{{node=\"{node}\"}})");
        ensure!(prom.value(&e, None)? == 200.0, "{e} is not 200");
    }
    let lost = prom.value("sum(dta_translator_int_reports_lost)", None)?;
    let per_reporter = prom.value("sum(dta_translator_int_reporter_reports_lost)", None)?;
    eprintln!(
        "INT reports lost upstream: {lost} (left out: {})",
        per_hop / 40
    );
    ensure!(
        lost > 0.0 && lost == per_reporter && lost <= (per_hop / 40) as f64,
        "reports lost upstream: total {lost}, per reporter {per_reporter}"
    );

    rules_answer(prom)?;
    panels_answer(prom)?;
    overrun_alert_fires(prom, wrap_sent)?;
    Ok(())
}

/// `DtaAppendRingOverruns` fires for the small ring, from the exporter's own counter, and for no other
/// list; the entries Prometheus saw overwritten are some of those sent there, at most all but a ring.
fn overrun_alert_fires(prom: &Prometheus, sent: u64) -> Result<()> {
    let firing = "ALERTS{alertname=\"DtaAppendRingOverruns\",alertstate=\"firing\"}";
    let mut alerts = Vec::new();
    // A scrape after the overrun, then an evaluation: a few seconds, given 10 for a loaded machine.
    wait_for(Duration::from_secs(10), || {
        alerts = prom.query(firing, None)?;
        ensure!(!alerts.is_empty(), "{firing} returned nothing");
        Ok(())
    })?;
    let lists: Vec<&str> = alerts
        .iter()
        .filter_map(|a| a["metric"]["list"].as_str())
        .collect();
    eprintln!("firing: {lists:?}");
    ensure!(
        lists == [APPEND_WRAP_LIST.to_string()],
        "DtaAppendRingOverruns fires for lists {lists:?}, not just {APPEND_WRAP_LIST}: {alerts:?}"
    );
    let lost = prom.value(
        &format!("sum(dta_collector_export_overruns_total{{list=\"{APPEND_WRAP_LIST}\"}})"),
        None,
    )?;
    eprintln!("overrun entries seen by Prometheus: {lost} of {sent} sent into a ring of 1024");
    ensure!(
        lost > 0.0 && lost <= (sent - 1024) as f64,
        "overruns {lost} for {sent} entries into a ring of 1024"
    );
    Ok(())
}

/// Every shipped rule is loaded and evaluated without error, and its expression (an alert's signal,
/// the left side of its threshold) returns data; the drop and loss alerts are pending.
fn rules_answer(prom: &Prometheus) -> Result<()> {
    let mut rules = Vec::new();
    wait_for(Duration::from_secs(30), || {
        rules = prom.rules()?;
        let pending: Vec<_> = rules.iter().filter(|r| r.health != "ok").collect();
        ensure!(
            !rules.is_empty() && pending.is_empty(),
            "rules not evaluated or unhealthy: {pending:?}"
        );
        Ok(())
    })?;
    for r in &rules {
        let expr = if r.group == "dta-alerts" {
            signal(&r.query)
        } else {
            r.query.as_str()
        };
        let samples = prom.query(expr, None)?;
        eprintln!("rule {:<36} {:>4} series  {expr}", r.name, samples.len());
        ensure!(
            !samples.is_empty(),
            "rule {}: {expr} returned no data",
            r.name
        );
    }
    // Reports were left out of the switches' sequences: the loss alert is pending (its `for` is 2m).
    // (DtaSwitchDrops' threshold, 1 drop/s over 5 minutes, is above this short run's 200 per switch.)
    let e = "ALERTS{alertname=\"DtaIntReportLoss\"}";
    ensure!(
        !prom.query(e, None)?.is_empty(),
        "DtaIntReportLoss is not pending"
    );
    for alert in ["DtaTranslatorDown", "DtaCollectorDown", "DtaQpErrors"] {
        let e = format!("ALERTS{{alertname=\"{alert}\"}}");
        ensure!(prom.query(&e, None)?.is_empty(), "{alert} fired");
    }
    Ok(())
}

/// Every expression of the dashboard returns data (Grafana's `$__rate_interval` as 1m).
fn panels_answer(prom: &Prometheus) -> Result<()> {
    let text = std::fs::read_to_string(dashboard_file())?;
    let dashboard: serde_json::Value = serde_json::from_str(&text).context("dashboard JSON")?;
    for (title, expr) in dashboard_exprs(&dashboard, "1m") {
        let samples = prom.query(&expr, None)?;
        eprintln!("panel {title:<56} {:>4} series", samples.len());
        ensure!(
            !samples.is_empty(),
            "panel {title}: {expr} returned no data"
        );
    }
    Ok(())
}
