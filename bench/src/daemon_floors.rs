//! Issue 25's floors: the daemon's own data path (`dta-translator run`'s `DataPlane::poll`) against the
//! harness loop, testpmd and itself on two workers, from one run's outputs. Each row says what it divides
//! and what is not measured yet.

use std::path::Path;

use serde_json::{json, Value};

use crate::report::{instructions_per_report, read_json, testpmd_pps};

/// `key` of `v` as a number (NaN when absent).
fn num(v: &Option<Value>, key: &str) -> f64 {
    v.as_ref().and_then(|v| v[key].as_f64()).unwrap_or(f64::NAN)
}

/// Instructions per report of the daemon's poll under callgrind.
fn poll_instructions(dir: &Path) -> Option<f64> {
    instructions_per_report(
        dir,
        "callgrind-daemon.out",
        "callgrind-daemon-keywrite-n1.json",
    )
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
    let harness = read_json(&dir.join("translator-keywrite-n1-w1.json"));
    let kw1 = d("keywrite-n1", 1);
    let kw2 = d("keywrite-n1", 2);
    let int1 = d("int-v05", 1);
    let int2 = d("int-v05", 2);
    let fwd = read_json(&dir.join("forward.json"));
    let testpmd_fwd = std::fs::read_to_string(dir.join("testpmd-forward.txt"))
        .ok()
        .and_then(|t| testpmd_pps(&t, "Rx-pps:"))
        .unwrap_or(f64::NAN);

    // The harness's ns a report less its ACK building; the daemon's less the bench's collector and NIC part.
    let harness_ns_of =
        |v: &Option<Value>| num(v, "ns_per_report") - num(v, "ack_build_ns_per_report");
    let harness_ns = harness_ns_of(&harness);
    let daemon_ns = num(&kw1, "data_path_ns_per_report");
    // The floor's ratio: the median of the interleaved pairs (each pair ran in one minute), else the
    // ratio of the two sweeps' rows.
    let mut pairs: Vec<f64> = (1..=3)
        .filter_map(|i| {
            let h = read_json(&dir.join(format!("pair-{i}-harness.json")));
            let d = read_json(&dir.join(format!("pair-{i}-daemon.json")));
            let r = harness_ns_of(&h) / num(&d, "data_path_ns_per_report");
            r.is_finite().then_some(r)
        })
        .collect();
    pairs.sort_by(f64::total_cmp);
    let loop_ratio = pairs
        .get(pairs.len() / 2)
        .copied()
        .unwrap_or(harness_ns / daemon_ns);
    let loop_raw = num(&kw1, "reports_per_s") / num(&harness, "reports_per_s");
    let fwd_ratio = num(&fwd, "forwarded_per_s") / testpmd_fwd;
    let kw_scale = num(&kw2, "reports_per_s") / num(&kw1, "reports_per_s");
    let int_scale = num(&int2, "reports_per_s") / num(&int1, "reports_per_s");
    let instructions = poll_instructions(dir);
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
         into the sent mbufs, a NIC's DMA). The harness loop's ns/report leaves out its ACK building.\n\n\
         | measure | this run | floor | met | correctness |\n|---|---|---|---|---|\n",
    );
    let pair_text: Vec<String> = pairs.iter().map(|r| format!("{r:.2}")).collect();
    md.push_str(&format!(
        "| daemon data path ÷ harness loop, Key-Write N=1, one core: median of {} interleaved pairs ({}); in the sweeps ns/report {:.1} vs {:.1}, raw reports/s ratio {:.2} | {:.2} | 0.9 | {} | {} |\n",
        pairs.len(),
        pair_text.join(", "),
        daemon_ns,
        harness_ns,
        loop_raw,
        loop_ratio,
        met(loop_ratio, 0.9),
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
    md.push_str("| whole system (translator + soft collector over net_memif) | not measured yet | 5 M/s | not measured | |\n");
    let resp = read_json(&dir.join("responder-write.json"));
    let resp_daemon = read_json(&dir.join("responder-daemon-write.json"));
    let resp_ratio = num(&resp_daemon, "data_path_frames_per_s") / num(&resp, "frames_per_s");
    let resp_raw = num(&resp_daemon, "frames_per_s") / num(&resp, "frames_per_s");
    md.push_str(&format!(
        "| software responder daemon ÷ responder bench row, WRITE (its loop, net of the bench writing requests into mbufs: {:.1} vs {:.1} M/s; raw {:.2}) | {:.2} | 0.8 | {} | |\n",
        num(&resp_daemon, "data_path_frames_per_s") / 1e6,
        num(&resp, "frames_per_s") / 1e6,
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
        "loop_ratio_to_harness": loop_ratio,
        "loop_ratio_pairs": pairs,
        "loop_raw_ratio_to_harness": loop_raw,
        "harness_ns_per_report_less_acks": harness_ns,
        "daemon_data_path_ns_per_report": daemon_ns,
        "forward_ratio_to_testpmd": fwd_ratio,
        "forward_pps": num(&fwd, "forwarded_per_s"),
        "testpmd_forward_pps": testpmd_fwd,
        "keywrite_n1_2_over_1": kw_scale,
        "int_v05_2_over_1": int_scale,
        "responder_daemon_ratio": resp_ratio,
        "responder_daemon_raw_ratio": resp_raw,
        "poll_instructions_per_report": instructions,
        "daemon": rows,
    });
    (md, v)
}
