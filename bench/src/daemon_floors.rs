//! Issue 25's floors: the daemon's own data path (`dta-translator run`'s `DataPlane::poll`) against
//! testpmd and itself on two workers, from one run's outputs. Each row says what it divides
//! and what is not measured yet.

use std::path::Path;

use serde_json::{json, Value};

use crate::raw::{callgrind_per_report, read_json, testpmd_pps};

/// `key` of `v` as a number (NaN when absent).
fn num(v: &Option<Value>, key: &str) -> f64 {
    v.as_ref().and_then(|v| v[key].as_f64()).unwrap_or(f64::NAN)
}

fn met(ratio: f64, floor: f64) -> &'static str {
    if ratio.is_nan() {
        "not measured"
    } else if ratio >= floor {
        "yes"
    } else {
        "**no**"
    }
}

/// The section (markdown) and its numbers (JSON).
pub fn section(dir: &Path) -> (String, Value) {
    let d = |m: &str, w: u32| read_json(&dir.join(format!("daemon-{m}-w{w}.json")));
    let kw1 = d("keywrite-n1", 1);
    let kw2 = d("keywrite-n1", 2);
    let int1 = d("int-v05", 1);
    let int2 = d("int-v05", 2);
    let fwd = read_json(&dir.join("forward.json"));
    let testpmd_fwd = std::fs::read_to_string(dir.join("testpmd-forward.txt"))
        .ok()
        .and_then(|t| testpmd_pps(&t, "Rx-pps:"))
        .unwrap_or(f64::NAN);

    let daemon_ns = num(&kw1, "data_path_ns_per_report");
    let fwd_ratio = num(&fwd, "forwarded_per_s") / testpmd_fwd;
    let kw_scale = num(&kw2, "reports_per_s") / num(&kw1, "reports_per_s");
    let int_scale = num(&int2, "reports_per_s") / num(&int1, "reports_per_s");
    let instructions = callgrind_per_report(dir);
    let correct = |v: &Option<Value>| {
        format!(
            "drops {}, QP errors {}, handed off {}",
            num(v, "report_drops"),
            num(v, "qp_errors"),
            num(v, "handed_off")
        )
    };

    let mut md = String::from(
        "## Issue 25: the daemon's own data path\n\n\
         `dta-bench daemon` runs `dta-translator run`'s `DataPlane::poll` (the worker loop's body) over a \
         `net_null` whose pool holds the reports and a `net_ring` on which the bench answers as a collector \
         would; `data path ns/report` leaves out the bench's part (the answers, and writing the next reports \
         into the sent mbufs, a NIC's DMA). The engine's separate harness loop it was once compared with is \
         gone: every translator row of this report is the daemon's loop.\n\n\
         | measure | this run | floor | met | correctness |\n|---|---|---|---|---|\n",
    );
    md.push_str(&format!(
        "| daemon data path, Key-Write N=1, one core: ns a report net of the collector side | {:.1} ns | | | {} |\n",
        daemon_ns,
        correct(&kw1)
    ));
    md.push_str(&format!(
        "| daemon bump in the wire ÷ testpmd io-fwd, net_pcap → net_null ({:.1} vs {:.1} M frames/s) | {:.2} | 0.8 | {} | tx dropped {} |\n",
        num(&fwd, "forwarded_per_s") / 1e6,
        testpmd_fwd / 1e6,
        fwd_ratio,
        met(fwd_ratio, 0.8),
        num(&fwd, "tx_dropped")
    ));
    md.push_str(&format!(
        "| daemon 2 workers ÷ 1, Key-Write N=1 ({:.1} vs {:.1} M/s; this machine has 2 cores, shared with the bench's collector side) | {:.2} | 1.8 | {} | {} |\n",
        num(&kw2, "reports_per_s") / 1e6,
        num(&kw1, "reports_per_s") / 1e6,
        kw_scale,
        met(kw_scale, 1.8),
        correct(&kw2)
    ));
    md.push_str(&format!(
        "| daemon 2 workers ÷ 1, INT v0.5 ({:.2} vs {:.2} M/s; every worker takes INT, reports handed to the flow's owner) | {:.2} | 1.8 | {} | {} |\n",
        num(&int2, "reports_per_s") / 1e6,
        num(&int1, "reports_per_s") / 1e6,
        int_scale,
        met(int_scale, 1.8),
        correct(&int2)
    ));
    let sys = read_json(&dir.join("system.json"));
    let sys_rate = num(&sys, "lossless_written_per_s");
    match &sys {
        Some(v) => md.push_str(&system_row(v)),
        None => md.push_str(
            "| whole system (translator + soft collector over net_memif) | not measured | 5 M/s | not measured | |\n",
        ),
    }
    let resp_daemon = read_json(&dir.join("responder-daemon-write.json"));
    let resp_ratio = num(&resp_daemon, "ratio_to_baseline");
    let resp_raw = num(&resp_daemon, "frames_per_s") / num(&resp_daemon, "baseline_frames_per_s");
    md.push_str(&format!(
        "| software responder daemon ÷ the responder alone, WRITE, alternated in one process (its loop, net of the bench writing requests into mbufs: {:.1} vs {:.1} M/s; raw {:.2}) | {:.2} | 0.8 | {} | |\n",
        num(&resp_daemon, "data_path_frames_per_s") / 1e6,
        num(&resp_daemon, "baseline_frames_per_s") / 1e6,
        resp_raw,
        resp_ratio,
        met(resp_ratio, 0.8)
    ));
    if let Some(i) = instructions {
        md.push_str(&format!(
            "\nInstructions per report in `DataPlane::poll`, Key-Write N=1 (callgrind): {i:.0}.\n"
        ));
    }
    md.push_str("\n| daemon mode | workers | reports/s | written/s | data path ns/report | drops | QP errors | handed off |\n|---|---|---|---|---|---|---|---|\n");
    let mut rows = Vec::new();
    for m in [
        "keywrite-n1",
        "keywrite-n2",
        "keyincrement",
        "append-b1",
        "append-b4",
        "append-b16",
        "postcard5",
        "int-v05",
    ] {
        for w in [1, 2] {
            let v = d(m, w);
            if v.is_none() {
                continue;
            }
            md.push_str(&format!(
                "| {m} | {w} | {:.2} M | {:.2} M | {:.1} | {} | {} | {} |\n",
                num(&v, "reports_per_s") / 1e6,
                num(&v, "written_per_s") / 1e6,
                num(&v, "data_path_ns_per_report"),
                num(&v, "report_drops"),
                num(&v, "qp_errors"),
                num(&v, "handed_off")
            ));
            rows.push(v);
        }
    }
    md.push_str(
        "\nThe source is unbounded (a `net_null` receives as fast as it is polled): where a primitive's RDMA \
         rate is bounded, the rest is dropped and counted (`queue_full`), and `written/s` is what went out. \
         Key-Increment: the responder's 16 outstanding atomics a round trip, one poll here. INT on two \
         workers: each worker counts what it receives and hands the reports of the other's flows over, so \
         half of the reports cross the handoff rings. Append on two workers: one list has one owner, so \
         the other worker only hands off.\n",
    );
    let profile = std::fs::read_to_string(dir.join("profile-daemon.txt")).unwrap_or_default();
    if !profile.is_empty() {
        md.push_str("\n```\n");
        md.push_str(profile.trim());
        md.push_str("\n```\n");
    }
    md.push('\n');
    let v = json!({
        "daemon_data_path_ns_per_report": daemon_ns,
        "forward_ratio_to_testpmd": fwd_ratio,
        "forward_pps": num(&fwd, "forwarded_per_s"),
        "testpmd_forward_pps": testpmd_fwd,
        "keywrite_n1_2_over_1": kw_scale,
        "int_v05_2_over_1": int_scale,
        "whole_system_lossless_written_per_s": sys_rate,
        "whole_system": sys,
        "responder_daemon_ratio": resp_ratio,
        "responder_daemon_raw_ratio": resp_raw,
        "poll_instructions_per_report": instructions,
        "daemon": rows,
    });
    (md, v)
}

/// The whole-system row (`dta-bench system`'s `system.json`): the lossless rate found by search, the stage
/// that lost first above it, the saturated figures and testpmd io-fwd over the same memif vdevs.
fn system_row(v: &Value) -> String {
    let f = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    let m = |x: f64| x / 1e6;
    let rate = f("lossless_written_per_s");
    let sat = &v["saturation"];
    let sf = |k: &str| sat[k].as_f64().unwrap_or(f64::NAN);
    let secs = sf("sender_secs");
    let tp = &v["testpmd"];
    let testpmd = if tp.is_object() {
        format!(
            "testpmd io-fwd in the translator's place, same vdevs and sender: lossless {:.2} M/s (lossy at {:.2}: {}), {:.2} M/s delivered unpaced",
            m(tp["lossless_pps"].as_f64().unwrap_or(f64::NAN)),
            m(tp["lossy_pps"].as_f64().unwrap_or(f64::NAN)),
            tp["lossy_stage"].as_str().unwrap_or("?"),
            m(tp["saturation_delivered_per_s"].as_f64().unwrap_or(f64::NAN)),
        )
    } else {
        "testpmd not run".to_string()
    };
    let probes = v["probes"].as_array().map_or(0, Vec::len);
    let lb = &v["load_before"];
    // When the unpaced sender's run is lossless there is nothing to search: the system took all the
    // sender could offer, and the rate is the sender's.
    let search = if sat["lossless"].as_bool() == Some(true) {
        "the sender unpaced was written whole, every report: the rate is the sender's, no search \
         (**the sender saturates first**)"
            .to_string()
    } else {
        format!(
            "highest lossless rate by search ({probes} probes of {:.1} s; lossy at {:.2} M/s: **{}**)",
            f("secs_per_probe"),
            m(f("lossy_pps")),
            v["saturating_stage"].as_str().unwrap_or("?"),
        )
    };
    format!(
        "| whole system, Key-Write N=1 reports written/s: release `dta-pktgen` → net_memif (rsize 2^{}, {}-byte buffers) → `dta-translator run` (1 worker) → net_memif → `dta-collector serve --backend soft`; {}; {search}; sender unpaced: {:.2} M/s written, translator took {:.2} M/s and dropped {:.2} M/s queue_full; {testpmd}; load {:.1} | {:.2} M/s | 5 M/s | {} | drops 0, QP errors 0 at the lossless rate (every report sent written) |\n",
        v["memif_rsize"].as_u64().unwrap_or(10),
        v["memif_bsize"].as_u64().unwrap_or(2048),
        v["layout"].as_str().unwrap_or("?"),
        m(sf("written") / secs),
        m(sf("taken") / secs),
        m(sf("report_drops") / secs),
        lb[0].as_f64().unwrap_or(f64::NAN),
        m(rate),
        met(rate / 5e6, 1.0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_row_reads_the_system_json() {
        let v = json!({
            "layout": "dta-pktgen on CPU 0, dta-translator on CPU 1, dta-collector on CPU 0",
            "memif_rsize": 14,
            "secs_per_probe": 1.0,
            "lossless_written_per_s": 747000.0,
            "lossy_pps": 772000.0,
            "saturating_stage": "dta-translator's QP window",
            "probes": [{}, {}],
            "saturation": {"sender_secs": 1.0, "written": 1594000, "taken": 12000000, "report_drops": 10400000},
            "testpmd": {"lossless_pps": 785000.0, "lossy_pps": 883000.0, "lossy_stage": "testpmd: ring", "saturation_delivered_per_s": 3.1e6},
            "load_before": [3.6, 4.4, 4.5],
        });
        let row = system_row(&v);
        assert!(row.contains("| 0.75 M/s | 5 M/s | **no** |"), "{row}");
        assert!(
            row.contains("lossy at 0.77 M/s: **dta-translator's QP window**"),
            "{row}"
        );
        assert!(
            row.contains("lossless 0.79 M/s (lossy at 0.88: testpmd: ring)"),
            "{row}"
        );
        assert!(row.contains("dropped 10.40 M/s queue_full"), "{row}");
        assert!(
            row.contains("2 probes") && row.contains("rsize 2^14") && row.contains("load 3.6"),
            "{row}"
        );
        assert!(row.contains("2048-byte buffers"), "{row}");
    }

    #[test]
    fn system_row_names_the_sender_when_its_unpaced_run_is_lossless() {
        let v = json!({
            "layout": "dta-pktgen on CPU 1, dta-translator on CPU 1, dta-collector on CPU 0",
            "memif_rsize": 14,
            "memif_bsize": 256,
            "secs_per_probe": 1.0,
            "lossless_written_per_s": 8_590_000.0,
            "lossy_pps": 10_740_000.0,
            "saturating_stage": "none",
            "probes": [],
            "saturation": {"sender_secs": 1.0, "written": 8590000, "taken": 8590000, "report_drops": 0, "lossless": true},
            "load_before": [1.7, 2.0, 2.0],
        });
        let row = system_row(&v);
        assert!(row.contains("| 8.59 M/s | 5 M/s | yes |"), "{row}");
        assert!(row.contains("256-byte buffers"), "{row}");
        assert!(
            row.contains("the rate is the sender's, no search (**the sender saturates first**)"),
            "{row}"
        );
        assert!(!row.contains("lossy at"), "{row}");
        assert!(row.contains("testpmd not run"), "{row}");
    }
}
