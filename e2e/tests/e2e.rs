//! The whole system in network namespaces: reporter -> translator (bump in the wire) -> collector with the
//! software responder, then exact checks through the collector's HTTP API. Each test builds its own
//! namespaces (removed on drop, and by a watchdog if the test overruns) and prints SKIP without root,
//! unless DTA_REQUIRE_NETNS=1. Tests run one at a time: they share two CPU cores. Each takes about a
//! minute on an idle 2-core machine (debug build); the watchdog limits are generous because a loaded
//! machine (parallel builds) can make them several times slower without anything being wrong.

use std::sync::Mutex;
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use dta_e2e::http::metric;
use dta_e2e::system::{Io, Options, Outcome, Responder, System};
use dta_e2e::workload;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn print(outcomes: &[Outcome]) {
    for o in outcomes {
        eprintln!(
            "{:<14} {:>7} reports in {:>6.2}s ({:>7.0} reports/s), {} answers exact, {} frames resent, {} timeouts",
            o.name,
            o.reports,
            o.seconds,
            o.reports as f64 / o.seconds,
            o.checked,
            o.retransmitted,
            o.timeouts
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

/// AF_PACKET on two workers: each interface's two sockets form one PACKET_FANOUT group, and the workers hand
/// each other the reports whose state the other owns (copied, as AF_PACKET copies anyway).
#[test]
fn every_primitive_is_exact_through_af_packet() -> Result<()> {
    let _g = serial();
    let opts = Options {
        ..Options::default()
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

/// The deployment's data path: DPDK `net_af_packet` ports on the veths, two worker engines, and the
/// collector's software responder on DPDK too.
#[test]
fn every_primitive_is_exact_through_dpdk_with_two_workers() -> Result<()> {
    let _g = serial();
    let opts = Options {
        io: Io::Dpdk,
        collector_io: Io::Dpdk,
        ..Options::default()
    };
    let Some(mut sys) = System::start("d", opts)? else {
        return Ok(());
    };
    let out = every_primitive(&mut sys, 3)?;
    print(&out);
    let m = sys.metrics.scrape()?;
    for k in 0..2 {
        let label = format!("worker=\"{k}\"");
        ensure!(
            metric(&m, "dta_translator_worker_reports_total", &label) > 0,
            "worker {k} took no reports: the I/O thread must spread them\n{m}"
        );
    }
    let summary = sys.stop_translator()?;
    ensure!(
        summary.contains("reports in            502400"),
        "the final summary on SIGTERM counts every report: {summary}"
    );
    Ok(())
}

#[test]
fn every_primitive_is_exact_with_one_percent_drop_and_reorder() -> Result<()> {
    let _g = serial();
    let opts = Options {
        io: Io::Dpdk,
        faults: Some((0.01, 0.01)),
        limit: Duration::from_secs(600),
        ..Options::default()
    };
    let Some(mut sys) = System::start("f", opts)? else {
        return Ok(());
    };
    let out = every_primitive(&mut sys, 2)?;
    print(&out);
    let m = sys.metrics.scrape()?;
    ensure!(
        metric(&m, "dta_translator_retransmitted_frames_total", "") > 0,
        "1% loss must have been repaired by retransmissions"
    );
    let c = sys.collector_metrics()?;
    eprintln!(
        "collector fault injection: {}",
        c.lines()
            .filter(|l| l.contains("fault") && !l.starts_with('#'))
            .collect::<Vec<_>>()
            .join("; ")
    );
    Ok(())
}

#[test]
fn translator_survives_a_collector_restart_and_counts_the_loss() -> Result<()> {
    let _g = serial();
    let opts = Options {
        io: Io::Dpdk,
        ..Options::default()
    };
    let Some(mut sys) = System::start("k", opts)? else {
        return Ok(());
    };
    let pid = sys.translator.pid();
    let before = workload::key_write(5_000, 2, 3)?;
    sys.run(&before)?;
    sys.kill_collector();
    // Reports while the collector is down: the QP fails, the control client keeps retrying.
    let during = workload::key_write(2_000, 1, 4)?;
    sys.send(&during.reports, Duration::from_secs(60))?;
    std::thread::sleep(Duration::from_millis(500));
    sys.restart_collector()?;
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while sys
        .metrics
        .value("dta_translator_collector_restarts_total", "")?
        == 0
    {
        ensure!(
            std::time::Instant::now() < deadline,
            "the translator did not notice the restart"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let after = workload::key_write(20_000, 5, 5)?;
    let o = sys.run(&after)?;
    print(&[o]);
    ensure!(
        sys.translator.running() && sys.translator.pid() == pid,
        "same translator process"
    );
    let m = sys.metrics.scrape()?;
    let lost = metric(&m, "dta_translator_reports_lost_on_restart_total", "")
        + metric(
            &m,
            "dta_translator_report_drops_total",
            "reason=\"queue_full\"",
        );
    eprintln!("reports lost or refused while the collector was down: {lost}");
    ensure!(lost > 0, "the loss during the outage is counted:\n{m}");
    // Stopped while its collector is down: what it still held is lost, and said so.
    sys.kill_collector();
    let last = workload::key_write(2_000, 1, 6)?;
    sys.send(&last.reports, Duration::from_secs(60))?;
    std::thread::sleep(Duration::from_millis(300));
    sys.quiet = true;
    let summary = sys.stop_translator()?;
    let abandoned: u64 = summary
        .lines()
        .find_map(|l| l.trim().strip_prefix("reports lost (stop)"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    eprintln!("reports lost when the translator stopped with its collector down: {abandoned}");
    ensure!(
        abandoned > 0,
        "the reports held at stop are counted:\n{summary}"
    );
    Ok(())
}

/// Issue 26 item 3: a translator restart continues every Append list where the collector's head word says
/// it is. 3,000 entries, a clean restart (SIGTERM, a new process), 1,000 more: the head is 4,000, a reader
/// at tail 3,000 gets the 1,000 new entries in order, and the first 3,000 are still there behind them.
#[test]
fn append_lists_continue_across_a_translator_restart() -> Result<()> {
    let _g = serial();
    let opts = Options {
        workers: 1,
        ..Options::default()
    };
    let Some(mut sys) = System::start("a", opts)? else {
        return Ok(());
    };
    let before = sys.run(&workload::append(3_000)?)?;
    let pid = sys.translator.pid();
    let summary = sys.restart_translator()?;
    ensure!(sys.translator.pid() != pid, "a new translator process");
    eprintln!("first translator's summary:\n{summary}");
    let after = sys.run(&workload::append_from(3_000, 1_000)?)?;
    print(&[before, after]);
    // Everything from 0, across the restart: head 4,000, entries 0..4,000 in order, no overrun.
    let all = sys.verify(&workload::append_from(0, 4_000)?)?;
    ensure!(all == 4_000, "{all} entries read back from tail 0");
    let m = sys.metrics.scrape()?;
    ensure!(
        metric(&m, "dta_translator_report_drops_total", "") == 0,
        "reports dropped:\n{m}"
    );
    Ok(())
}

/// Issue 26 item 4 for Postcarding and Sketch-Merge, through the collector's queries. The switches of
/// one path report to different translators: 1,000 five-hop flows with hops 1, 3, 5 through the first
/// translator and hops 2, 4 through the second. Neither ever holds a whole path; each writes its own
/// cells at its idle timeout, and the postcard query finds every flow's whole path. A sketch has one
/// merging translator: 4 epochs through the first are exact; 4 epochs of other counters through the
/// second are all dropped there as no_region (the sketch is not in its welcome) instead of being written
/// over the first's columns, and the first's answers stay exact.
#[test]
fn postcards_and_sketches_stay_exact_with_two_translators() -> Result<()> {
    let _g = serial();
    let opts = Options {
        workers: 1,
        translators: 2,
        ..Options::default()
    };
    let Some(mut sys) = System::start("q", opts)? else {
        return Ok(());
    };
    const FLOWS: u64 = 1_000;
    let w = workload::postcard(FLOWS as u32, 1, 51)?;
    let hops = usize::from(workload::PC_HOPS);
    // The reports go flow by flow, hop 1 first: report i is hop i % 5 + 1.
    let (odd, even): (Vec<_>, Vec<_>) = w
        .reports
        .iter()
        .cloned()
        .enumerate()
        .partition(|(i, _)| (i % hops) % 2 == 0);
    let part = |name, reports: Vec<(usize, Vec<u8>)>| workload::Workload {
        name,
        reports: reports.into_iter().map(|(_, r)| r).collect(),
        verify: Box::new(|_| Ok(0)),
    };
    let mut outcomes = vec![
        sys.run(&part("hops 1, 3, 5", odd))?,
        sys.run_second(&part("hops 2, 4", even))?,
    ];
    // Each translator writes its part of every flow at the flow's idle timeout (2 s), or when a newer
    // flow takes its cache slot: wait for all 1,000 entries of each, then for their writes to retire.
    let written = |m: &str| {
        metric(m, "dta_translator_postcard_timeouts_total", "")
            + metric(m, "dta_translator_postcard_evictions_total", "")
    };
    for who in ["first", "second"] {
        let metrics = match who {
            "first" => &sys.metrics,
            _ => &sys.second.as_ref().context("a second translator")?.metrics,
        };
        let (mut seen, mut since) = (0, std::time::Instant::now());
        loop {
            let m = metrics.scrape()?;
            let now = written(&m);
            let busy = metric(&m, "dta_translator_qp_window", "")
                + metric(&m, "dta_translator_qp_queue", "");
            if now == FLOWS && busy == 0 {
                break;
            }
            ensure!(
                now <= FLOWS,
                "{who} translator wrote {now} postcard entries"
            );
            if now > seen {
                (seen, since) = (now, std::time::Instant::now());
            }
            ensure!(
                since.elapsed() < Duration::from_secs(30),
                "{who} translator: {now} of {FLOWS} postcard entries written, {busy} writes busy, \
                 nothing more for 30 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    let found = sys.verify(&w)?;
    ensure!(found == FLOWS, "{found} of {FLOWS} paths found whole");
    let sketch = workload::sketch(4, 2_000, 52)?;
    outcomes.push(sys.run(&sketch)?);
    // Other counters for the same sketch through the second translator: had it merged and written them,
    // the first's answers would be wrong.
    let other = workload::sketch(4, 2_000, 53)?;
    outcomes.push(sys.send_second(&other)?);
    print(&outcomes);
    let exact = sys.verify(&sketch)?;
    ensure!(
        exact == outcomes[2].checked,
        "{exact} sketch answers exact after the second translator's reports, {} before",
        outcomes[2].checked
    );
    let m2 = sys
        .second
        .as_ref()
        .context("a second translator")?
        .metrics
        .scrape()?;
    let no_region = metric(
        &m2,
        "dta_translator_report_drops_total",
        "reason=\"no_region\"",
    );
    ensure!(
        no_region == other.reports.len() as u64,
        "the second translator dropped {no_region} of its {} sketch reports as no_region:\n{m2}",
        other.reports.len()
    );
    let m1 = sys.metrics.scrape()?;
    for (who, m) in [("first", &m1), ("second", &m2)] {
        ensure!(
            metric(m, "dta_translator_qp_errors_total", "") == 0,
            "{who} translator: QP errors:\n{m}"
        );
    }
    ensure!(
        metric(&m1, "dta_translator_report_drops_total", "") == 0,
        "the first translator dropped reports:\n{m1}"
    );
    let c = sys.collector_metrics()?;
    ensure!(
        metric(&c, "dta_collector_control_sketches_withheld_total", "") == 1,
        "the sketch withheld from the second translator's welcome once:\n{c}"
    );
    Ok(())
}

/// Issue 26 item 4 (Sketch-Merge across a translator restart): the sketch's translator restarts in the
/// middle of a sketch (4 reporters, 1,024 columns), after column 511 from every reporter and column 512
/// from two. The stop writes the 512 complete columns and counts the 2 contributions to column 512 as
/// lost at the stop; the new process refuses the rest of that sketch as out of order (2,046 reports,
/// NACKed: a merge taken up mid-sketch would mix two epochs), and the next sketch, from column 0, is
/// exact through the collector's count-min queries. Every report is written or counted.
#[test]
fn a_sketch_across_a_translator_restart_is_exact_after_an_exactly_counted_loss() -> Result<()> {
    let _g = serial();
    let opts = Options {
        workers: 1,
        ..Options::default()
    };
    let Some(mut sys) = System::start("z", opts)? else {
        return Ok(());
    };
    let workload::Workload {
        reports, verify, ..
    } = workload::sketch(2, 2_000, 61)?;
    let per_sketch = workload::SKETCH_COLUMNS as usize * usize::from(workload::SKETCH_REPORTERS);
    // Reports go column by column, each column from reporters 0-3.
    let cut = per_sketch / 2 + 2;
    let before = sys.run(&workload::Workload {
        name: "sketch, to the cut",
        reports: reports[..cut].to_vec(),
        verify: Box::new(|_| Ok(0)),
    })?;
    let summary = sys.restart_translator()?;
    let lost_at_stop: u64 = summary
        .lines()
        .find_map(|l| l.trim().strip_prefix("reports lost (stop)"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    ensure!(
        lost_at_stop == 2,
        "column 512's two contributions are lost at the stop, counted; the summary says:\n{summary}"
    );
    let after = sys.run(&workload::Workload {
        name: "sketch, the rest",
        reports: reports[cut..].to_vec(),
        verify,
    })?;
    print(&[before, after]);
    let m = sys.metrics.scrape()?;
    let refused = (per_sketch - cut) as u64;
    ensure!(
        metric(&m, "dta_translator_report_drops_total", "reason=\"out_of_order\"") == refused
            && metric(&m, "dta_translator_report_drops_total", "") == refused,
        "the rest of the first sketch ({refused} reports) refused as out of order, nothing else:\n{m}"
    );
    ensure!(
        metric(&m, "dta_translator_qp_errors_total", "") == 0,
        "QP errors:\n{m}"
    );
    Ok(())
}

/// Waits until the translator has seen `n` collector restarts (it notices one within a second or two: its
/// control connection closes, or a QP fails).
fn wait_restarts(sys: &System, n: u64) -> Result<()> {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while sys
        .metrics
        .value("dta_translator_collector_restarts_total", "")?
        < n
    {
        ensure!(
            std::time::Instant::now() < deadline,
            "the translator did not see collector restart {n}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

/// Issue 26 (regions that outlive the collector): a collector with `memory_file` crashes (SIGKILL) and
/// comes back on the same file under a running translator. The translator resumes on the new welcome
/// (the same process): the Append list goes on from the file's head word (3,000 entries before, 1,000
/// after; all 4,000 read back from tail 0), the 5,000 Key-Write keys written before the crash still read
/// back exactly, and nothing is lost or dropped (everything was acknowledged when the collector went).
#[test]
fn a_collector_with_a_memory_file_restarts_under_a_running_translator() -> Result<()> {
    let _g = serial();
    let opts = Options {
        workers: 1,
        ..Options::default()
    };
    let Some(mut sys) = System::start("m", opts)? else {
        return Ok(());
    };
    let file = sys.dir().join("regions");
    sys.keep_collector_memory_in(&file)?;
    wait_restarts(&sys, 1)?;
    let kw = workload::key_write(5_000, 2, 41)?;
    let mut outcomes = vec![sys.run(&kw)?, sys.run(&workload::append(3_000)?)?];
    let pid = sys.translator.pid();
    sys.restart_collector()?;
    wait_restarts(&sys, 2)?;
    outcomes.push(sys.run(&workload::append_from(3_000, 1_000)?)?);
    print(&outcomes);
    ensure!(
        sys.translator.running() && sys.translator.pid() == pid,
        "the same translator process"
    );
    let all = sys.verify(&workload::append_from(0, 4_000)?)?;
    ensure!(all == 4_000, "{all} entries read back from tail 0");
    let keys = sys.verify(&kw)?;
    ensure!(
        keys == outcomes[0].checked,
        "{keys} Key-Write answers exact after the crash, {} before",
        outcomes[0].checked
    );
    let m = sys.metrics.scrape()?;
    for (name, what) in [
        (
            "dta_translator_reports_lost_on_restart_total",
            "reports lost",
        ),
        ("dta_translator_report_drops_total", "reports dropped"),
    ] {
        ensure!(metric(&m, name, "") == 0, "{what}:\n{m}");
    }
    let log = std::fs::read_to_string(sys.dir().join("collector.log"))?;
    ensure!(
        log.contains("same layout: regions keep their contents"),
        "the collector did not take up the file's regions:\n{log}"
    );
    Ok(())
}

/// DTA scales by adding translators: two translator processes with the same QPNs (every translator's
/// default `qpn_base`), each behind its own reporter, on one collector. Neither evicts the other's QPs
/// (the collector keys a peer by address and QPN), and both write exactly.
#[test]
fn two_translators_share_one_collector() -> Result<()> {
    let _g = serial();
    let opts = Options {
        workers: 1,
        translators: 2,
        ..Options::default()
    };
    let Some(mut sys) = System::start("p", opts)? else {
        return Ok(());
    };
    // Interleaved, so both translators' QPs carry traffic while the other's exist.
    let mut outcomes = vec![
        sys.run(&workload::key_write(5_000, 4, 21)?)?,
        sys.run_second(&workload::key_increment(1_000, 20_000, 22)?)?,
        sys.run(&workload::append(20_000)?)?,
        sys.run_second(&workload::postcard(1_000, 4, 23)?)?,
    ];
    // And the first translator again after the second one's traffic: its QPs are still its own.
    outcomes.push(sys.run(&workload::key_write(5_000, 2, 24)?)?);
    print(&outcomes);
    let second = sys.second.as_ref().expect("a second translator");
    for (who, m) in [
        ("first", sys.metrics.scrape()?),
        ("second", second.metrics.scrape()?),
    ] {
        for (name, what) in [
            ("dta_translator_qp_errors_total", "QP errors"),
            ("dta_translator_report_drops_total", "reports dropped"),
            ("dta_translator_collector_restarts_total", "restarts seen"),
        ] {
            ensure!(metric(&m, name, "") == 0, "{who} translator: {what}:\n{m}");
        }
        // One welcome each: nobody's QPs were re-established because the other said hello.
        ensure!(
            metric(&m, "dta_translator_control_welcomes_total", "") == 1,
            "{who} translator was welcomed {} times",
            metric(&m, "dta_translator_control_welcomes_total", "")
        );
    }
    Ok(())
}

/// Issue 26 item 4: two translators with one configuration (the same address and QPNs) on one collector.
/// Before, each hello replaced the other's QPs (11 QP errors each in 12 s, and the collector logged
/// nothing). Now the twin is refused while the first translator's control connection lives: the collector
/// logs and counts each refusal, the twin says why in its log and metrics and keeps asking with backoff,
/// and the first writes two workloads exactly with 0 QP errors and its one welcome.
#[test]
fn a_twin_of_a_running_translator_is_refused_and_evicts_nothing() -> Result<()> {
    let _g = serial();
    let opts = Options {
        workers: 1,
        translators: 2,
        ..Options::default()
    };
    let Some(mut sys) = System::start("i", opts)? else {
        return Ok(());
    };
    sys.start_twin()?;
    let refused = "reason=\"qps_in_use\"";
    let twin_refusals = |sys: &System| -> Result<u64> {
        let m = sys.second.as_ref().context("the twin")?.metrics.scrape()?;
        Ok(metric(
            &m,
            "dta_translator_control_welcomes_refused_total",
            refused,
        ))
    };
    let mut outcomes = vec![sys.run(&workload::key_write(5_000, 4, 31)?)?];
    // At least three refusals of the twin (it asks again every 2 s at most): the limit follows them,
    // failing only when none comes for 30 s.
    let (mut seen, mut since) = (twin_refusals(&sys)?, std::time::Instant::now());
    while seen < 3 {
        ensure!(
            since.elapsed() < Duration::from_secs(30),
            "the twin was refused {seen} times and then not again for 30 s"
        );
        std::thread::sleep(Duration::from_millis(200));
        let now = twin_refusals(&sys)?;
        if now > seen {
            (seen, since) = (now, std::time::Instant::now());
        }
    }
    outcomes.push(sys.run(&workload::key_increment(1_000, 20_000, 32)?)?);
    print(&outcomes);
    let m1 = sys.metrics.scrape()?;
    for (name, what) in [
        ("dta_translator_qp_errors_total", "QP errors"),
        ("dta_translator_report_drops_total", "reports dropped"),
        ("dta_translator_collector_restarts_total", "restarts seen"),
        (
            "dta_translator_control_reestablished_total",
            "QP re-establishments",
        ),
    ] {
        ensure!(
            metric(&m1, name, "") == 0,
            "first translator: {what}:\n{m1}"
        );
    }
    ensure!(
        metric(&m1, "dta_translator_control_welcomes_total", "") == 1,
        "the first translator was welcomed more than once:\n{m1}"
    );
    let twin = twin_refusals(&sys)?;
    let m2 = sys.second.as_ref().context("the twin")?.metrics.scrape()?;
    ensure!(
        metric(&m2, "dta_translator_control_welcomes_total", "") == 0
            && metric(&m2, "dta_translator_collector_usable", "") == 0,
        "the twin was let in:\n{m2}"
    );
    // Scraped after the twin's: the collector's count includes every refusal the twin counted, and at
    // most one it has not read yet.
    let c = sys.collector_metrics()?;
    let at_collector = metric(&c, "dta_collector_control_hellos_refused_in_use_total", "");
    ensure!(
        (twin..=twin + 1).contains(&at_collector),
        "the collector counted {at_collector} refusals, the twin {twin}:\n{c}"
    );
    let holder = format!(
        "is held by a live control connection from {}:",
        dta_e2e::topo::TRANSLATOR_MGMT
    );
    let twin_log = std::fs::read_to_string(sys.dir().join("twin.log"))?;
    ensure!(
        twin_log.contains(&holder),
        "the twin's log does not say who holds its QPs ({holder:?}):\n{twin_log}"
    );
    let collector_log = std::fs::read_to_string(sys.dir().join("collector.log"))?;
    ensure!(
        collector_log.contains("refusing translator at") && collector_log.contains(&holder),
        "the collector's log does not name the refusal:\n{collector_log}"
    );
    Ok(())
}

/// Issue 26 item 4: two translators on one Append list. The collector gives the list to the first (its
/// hello came first) and leaves it out of the second's welcome, logged and counted; the second's 1,000
/// reports for it are dropped as no_region (counted, none written), and the first's 3,000 + 1,000 entries
/// are exact: head 4,000, nothing overwritten.
#[test]
fn an_append_list_has_one_translator() -> Result<()> {
    let _g = serial();
    let opts = Options {
        workers: 1,
        translators: 2,
        ..Options::default()
    };
    let Some(mut sys) = System::start("l", opts)? else {
        return Ok(());
    };
    let first = sys.run(&workload::append(3_000)?)?;
    let second = sys.send_second(&workload::append_from(3_000, 1_000)?)?;
    let after = sys.run(&workload::append_from(3_000, 1_000)?)?;
    print(&[first, second, after]);
    let all = sys.verify(&workload::append_from(0, 4_000)?)?;
    ensure!(all == 4_000, "{all} entries read back from tail 0");
    let m2 = sys
        .second
        .as_ref()
        .context("a second translator")?
        .metrics
        .scrape()?;
    let no_region = metric(
        &m2,
        "dta_translator_report_drops_total",
        "reason=\"no_region\"",
    );
    ensure!(
        no_region == 1_000,
        "the second translator's reports for the list: {no_region} dropped as no_region:\n{m2}"
    );
    let m1 = sys.metrics.scrape()?;
    ensure!(
        metric(&m1, "dta_translator_report_drops_total", "") == 0,
        "the holder dropped reports:\n{m1}"
    );
    let c = sys.collector_metrics()?;
    // Both Append lists of the configuration (the list and the wrapping list), from one welcome.
    ensure!(
        metric(&c, "dta_collector_control_append_lists_withheld_total", "") == 2,
        "lists {} and {} withheld from the second translator's welcome:\n{c}",
        workload::APPEND_LIST,
        workload::APPEND_WRAP_LIST
    );
    Ok(())
}

/// Standard INT reports (issue 17): fabric-tna v0.5 per-hop and drop reports and v2.0 sink reports, from
/// an encoder written from the specifications, through the translator's INT front end to the software
/// responder; every path, hop record, drop counter and event read back exactly. With issue 27's shapes:
/// reordered and repeated per-hop reports, sink reports grouped around an IOAM report (counted, skipped),
/// Q flags on sink reports, and Report Length 0xFF with a tenant's forged report (no path).
#[test]
fn int_reports_are_exact_through_af_packet() -> Result<()> {
    let _g = serial();
    let opts = Options {
        limit: Duration::from_secs(300),
        int: true,
        ..Options::default()
    };
    let Some(mut sys) = System::start("i", opts)? else {
        return Ok(());
    };
    let (w, x) = dta_e2e::int_workload::int_with_expected(4_000, 1_000, 3_000, 5)?;
    let o = sys.run_int(&w)?;
    print(&[o]);
    let m = sys.metrics.scrape()?;
    eprintln!("{x:?}");
    ensure!(
        metric(&m, "dta_translator_int_reports_total", "") == x.translated,
        "INT reports translated (expected {}):\n{m}",
        x.translated
    );
    // The IOAM reports between sink reports, and nothing else, are not translated.
    ensure!(
        metric(&m, "dta_translator_int_drops_total", "") == x.unknown_type
            && metric(
                &m,
                "dta_translator_int_drops_total",
                "reason=\"unknown_type\""
            ) == x.unknown_type,
        "INT drops (expected {} unknown_type):\n{m}",
        x.unknown_type
    );
    // Reordered reports are late, never lost.
    ensure!(
        metric(&m, "dta_translator_int_reports_late_total", "") == x.late,
        "late INT reports (expected {}):\n{m}",
        x.late
    );
    for series in [
        "dta_translator_report_drops_total",
        "dta_translator_int_reports_lost",
        "dta_translator_qp_errors_total",
    ] {
        ensure!(metric(&m, series, "") == 0, "{series} is not 0:\n{m}");
    }
    ensure!(
        metric(&m, "dta_translator_int_whole_paths_total", "") == x.whole_paths,
        "sink reports:\n{m}"
    );
    Ok(())
}

/// A leaf-spine fabric's per-hop reports (issue 27, item 7): fabric-tna v0.5 switch-local reports of 4
/// leaves and 2 spines, with the inner TTLs fabric-tna mirrors (64, 64, 63 between leaves, untouched when
/// bridging, hosts with initial TTL 32, 128 and from behind routers), through a translator with
/// `hop_mode = "topology"`: every path and hop record exact through `int-path` and `int-flow`, reports
/// out of order (late, never lost), and flows whose last hop, spine or first hop never reported read as
/// no path, never a shorter one.
#[test]
fn int_leaf_spine_fabric_is_exact_through_af_packet() -> Result<()> {
    let _g = serial();
    let opts = Options {
        limit: Duration::from_secs(300),
        int: true,
        ..Options::default()
    };
    let fabric = dta_e2e::int_fabric::translator_sections();
    let Some(mut sys) = System::start_with("f", opts, &fabric)? else {
        return Ok(());
    };
    let (w, x) = dta_e2e::int_fabric::fabric_with_expected(2)?;
    eprintln!("{x:?}");
    let mut o = sys.send_int(&w)?;
    // The flows a switch never reported for sit in the translator's postcard cache until their idle
    // timeout (2 s here): their chunks must be in the collector's memory when they are read.
    dta_e2e::int_fabric::wait_partial_written(&sys.metrics, x.partial, Duration::from_secs(30))?;
    o.checked = sys.verify(&w)?;
    print(&[o]);
    let m = sys.metrics.scrape()?;
    eprintln!(
        "postcard entries written on idle {}, on eviction {}",
        metric(&m, "dta_translator_postcard_timeouts_total", ""),
        metric(&m, "dta_translator_postcard_evictions_total", "")
    );
    for (series, label, want) in [
        ("dta_translator_int_packets_total", "", x.packets),
        ("dta_translator_int_reports_total", "", x.translated),
        // The unplaceable reports, and nothing else, are not translated.
        ("dta_translator_int_drops_total", "", x.no_hop),
        (
            "dta_translator_int_drops_total",
            "reason=\"no_hop\"",
            x.no_hop,
        ),
        ("dta_translator_int_reports_late_total", "", x.late),
        ("dta_translator_int_reports_lost", "", 0),
        ("dta_translator_int_whole_paths_total", "", 0),
        ("dta_translator_report_drops_total", "", 0),
        ("dta_translator_qp_errors_total", "", 0),
    ] {
        ensure!(
            metric(&m, series, label) == want,
            "{series}{{{label}}} is not {want}:\n{m}"
        );
    }
    Ok(())
}

/// A data link down for 2 s on both sides of the bump (the collector's `c0`, the translator's `ta` and
/// its peer `tb` with it) kills neither daemon (issue 26, item 1): the collector's memory is kept (the
/// answers written before read back exact after), and reports after the link is back are all written.
#[test]
fn a_data_link_down_for_two_seconds_kills_neither_daemon() -> Result<()> {
    link_down_for_two_seconds("f", Io::AfPacket)
}

/// The same with both daemons on DPDK (`net_af_packet` vdevs on the veths): the PMDs' receive finds
/// nothing and their transmit fails while the link is down; neither daemon stops.
#[test]
fn a_data_link_down_for_two_seconds_kills_no_dpdk_daemon() -> Result<()> {
    link_down_for_two_seconds("g", Io::Dpdk)
}

fn link_down_for_two_seconds(prefix: &str, io: Io) -> Result<()> {
    let _g = serial();
    let opts = Options {
        io,
        faults: None,
        limit: Duration::from_secs(480),
        workers: 2,
        collector_io: io,
        responder: Responder::Soft,
        translators: 1,
        int: false,
        export: None,
    };
    let Some(mut sys) = System::start(prefix, opts)? else {
        return Ok(());
    };
    let translator = sys.translator.pid();
    let collector = sys.collector.as_ref().context("collector")?.pid();
    let before = workload::key_write(5_000, 2, 11)?;
    sys.run(&before)?;
    sys.topo.collector.ip(&["link", "set", "c0", "down"])?;
    sys.topo.translator.ip(&["link", "set", "ta", "down"])?;
    std::thread::sleep(Duration::from_secs(2));
    sys.topo.collector.ip(&["link", "set", "c0", "up"])?;
    sys.topo.translator.ip(&["link", "set", "ta", "up"])?;
    ensure!(
        sys.translator.running() && sys.translator.pid() == translator,
        "the translator survived the link going down"
    );
    let c = sys.collector.as_mut().context("collector")?;
    ensure!(
        c.running() && c.pid() == collector,
        "the collector survived the link going down"
    );
    // The memory written before is still there (read through the collector's API, not the translator).
    let checked = sys.verify(&before)?;
    ensure!(checked > 0, "nothing checked");
    // The time to recover: the first reports after the link is back, from the first one sent to a
    // settled translator (every write acknowledged), their answers then read back exact.
    let first = workload::key_write(200, 1, 13)?;
    let recovered = sys.run(&first)?;
    eprintln!(
        "link flap ({io:?}): the first 200 reports after the link came back written and acknowledged in {:.3} s",
        recovered.seconds
    );
    let after = workload::key_write(20_000, 5, 12)?;
    let o = sys.run(&after)?;
    print(&[recovered, o]);
    Ok(())
}

/// SIGTERM while an Append stream is still coming in (issue 26, item 5): every report the translator took
/// in is readable at the collector (the list's head word says so) or counted (dropped, or lost at stop);
/// none is lost silently.
#[test]
fn sigterm_under_an_append_stream_loses_nothing_silently() -> Result<()> {
    let _g = serial();
    let opts = Options {
        workers: 1,
        ..Options::default()
    };
    let Some(mut sys) = System::start("s", opts)? else {
        return Ok(());
    };
    let pid = sys.translator.pid() as i32;
    let w = workload::append(60_000)?;
    // The stop comes in the middle of the stream; the sender goes on after it.
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(700));
        // SAFETY: kill(2) on the translator this test started.
        unsafe { libc::kill(pid, libc::SIGTERM) };
    });
    let (sent, _) = sys.send_at_rate(&w.reports, 20_000, Duration::from_secs(2))?;
    stopper
        .join()
        .map_err(|_| anyhow::anyhow!("stopper panicked"))?;
    // Its own graceful stop (a second signal would cut it short): wait for it to end.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while sys.translator.running() {
        ensure!(
            std::time::Instant::now() < deadline,
            "the translator did not stop"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let summary = sys.stop_translator()?;
    let line = |what: &str| -> u64 {
        summary
            .lines()
            .find_map(|l| l.trim().strip_prefix(what))
            .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
            .unwrap_or(u64::MAX)
    };
    let taken = line("append");
    let dropped = line("reports dropped");
    let lost_at_stop = line("reports lost (stop)");
    // The API is on the management network, from the collector's namespace.
    let http = sys.http;
    let a = dta_e2e::netns::enter_and_run(sys.topo.collector.name(), move || {
        dta_e2e::http::get_json(
            http,
            &format!("/query/append?list={}&tail=0&max=1", workload::APPEND_LIST),
        )
    })??;
    let head = a["head"].as_u64().unwrap_or(u64::MAX);
    println!(
        "sent {sent}, taken {taken}, dropped {dropped}, reports lost at stop {lost_at_stop}, head {head}"
    );
    ensure!(
        taken > 0 && taken < sent,
        "the stop came mid-stream: {summary}"
    );
    ensure!(
        lost_at_stop == 0 && head + dropped == taken,
        "taken {taken} = readable {head} + dropped {dropped}, none lost at stop:\n{summary}"
    );
    Ok(())
}

/// The highest lossless rate through the namespaces (issue 14), and the stage that loses first above it.
/// Asserted: a modest rate is lossless (the probe can fail: it counts every stage); the rate found is
/// printed, not asserted (it measures the machine).
#[test]
fn highest_lossless_rate_is_measured() -> Result<()> {
    let _g = serial();
    let opts = Options {
        limit: Duration::from_secs(300),
        workers: 1,
        ..Options::default()
    };
    let Some(mut sys) = System::start("r", opts)? else {
        return Ok(());
    };
    let w = workload::key_write(4_096, 1, 3)?;
    let (best, probes) =
        dta_e2e::rate::highest_lossless(&mut sys, &w.reports, 2_000, 400_000, 3, 1.0)?;
    for p in &probes {
        eprintln!(
            "offered {:>7}/s: sent {:>7}, taken {:>7}, lossless {}, first loss at {}",
            p.rate,
            p.sent,
            p.taken,
            p.lossless(),
            p.bottleneck()
        );
    }
    let best = best.ok_or_else(|| anyhow::anyhow!("2,000 reports/s already lose: {probes:?}"))?;
    eprintln!("highest lossless rate: {} reports/s", best.rate);
    ensure!(best.sent > 0 && best.taken == best.sent);
    Ok(())
}
