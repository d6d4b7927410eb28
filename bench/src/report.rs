//! Gathers one run of scripts/bench.sh into bench/results.json, bench/results.md and bench/results.png.
//! Every ratio divides by testpmd's rate measured in the same run, so a busy or slow machine moves both sides.

use std::path::Path;
use std::sync::Once;

use anyhow::{anyhow, Context, Result};
use plotters::prelude::*;
use plotters::style::FontStyle;
use serde_json::{json, Value};

use crate::raw::{callgrind_per_report, criterion_ns, read_json, testpmd_pps};
use crate::sys::Machine;

const MODES: [&str; 9] = [
    "keywrite-n1",
    "keywrite-n2",
    "keyincrement",
    "append-b1",
    "append-b4",
    "append-b16",
    "postcard5",
    "sketch",
    "int-v05",
];

fn f(v: &Value, k: &str) -> f64 {
    v[k].as_f64().unwrap_or(f64::NAN)
}

fn mpps(x: f64) -> String {
    if x.is_finite() {
        format!("{:.2} M/s", x / 1e6)
    } else {
        "n/a".into()
    }
}

fn ns(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.1} ns")
    } else {
        "n/a".into()
    }
}

pub fn run(dir: &Path, criterion: &Path, out: &Path, hugepages: bool) -> Result<()> {
    let machine: Machine = read_json(&dir.join("machine.json"))
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_else(|| Machine::probe(hugepages));
    let load_during = std::fs::read_to_string(dir.join("load.txt")).unwrap_or_default();
    let tp = |file: &str, key: &str| {
        std::fs::read_to_string(dir.join(file))
            .ok()
            .and_then(|t| testpmd_pps(&t, key))
            .unwrap_or(f64::NAN)
    };
    let io1 = tp("testpmd-io-1.txt", "Rx-pps:");
    let io2 = tp("testpmd-io-2.txt", "Rx-pps:");
    let tx1 = tp("testpmd-txonly-1.txt", "Tx-pps:");
    // The same forwarding through dta-netio (the translator's pool): the like-for-like limit.
    let netio_io1 =
        read_json(&dir.join("iofwd-netio-1.json")).map_or(f64::NAN, |v| f(&v, "frames_per_s"));
    let instructions = callgrind_per_report(dir);

    let mut rows = Vec::new();
    let mut md = String::new();
    md.push_str("# dta benchmarks\n\n");
    md.push_str(&format!("Machine: {}\n\n", machine.line()));
    md.push_str(&format!(
        "Load average during the run (1/5/15 min, sampled): {}\n\n",
        load_during.trim().replace('\n', "; ")
    ));
    md.push_str("Other engineers build and test on this machine concurrently: absolute numbers are noisy; the ratios compare runs of the same minute.\n\n");
    md.push_str("## The limit and the translator (DPDK net_null, same EAL options)\n\n");
    md.push_str("| Measurement | cores | rate | ns/report (per core) | CPU ns/report | ratio to testpmd io-fwd | notes |\n|---|---|---|---|---|---|---|\n");
    md.push_str(&format!(
        "| testpmd io forward | 1 | {} | {} | | 1.00 | |\n",
        mpps(io1),
        ns(1e9 / io1)
    ));
    md.push_str(&format!(
        "| testpmd io forward | 2 | {} | {} | | 1.00 | |\n",
        mpps(io2),
        ns(2e9 / io2)
    ));
    md.push_str(&format!(
        "| io forward through dta-netio (the translator's pool and bursts) | 1 | {} | {} | | {:.2} | like-for-like limit: without hugepages dta-netio packs its mbufs, testpmd's pool puts one per 4 KiB page (all of a burst in the same L1 sets) |\n",
        mpps(netio_io1),
        ns(1e9 / netio_io1),
        netio_io1 / io1
    ));
    md.push_str(&format!(
        "| testpmd txonly | 1 | {} | {} | | {:.2} | |\n",
        mpps(tx1),
        ns(1e9 / tx1),
        tx1 / io1
    ));
    for w in [1usize, 2] {
        for m in MODES {
            let Some(v) = read_json(&dir.join(format!("daemon-{m}-w{w}.json"))) else {
                continue;
            };
            let base = if w == 1 { io1 } else { io2 };
            let rps = f(&v, "reports_per_s");
            let ratio = rps / base;
            let like = if w == 1 {
                format!("{:.3} of io-fwd through dta-netio; ", rps / netio_io1)
            } else {
                String::new()
            };
            md.push_str(&format!(
                "| translator {m} (the daemon's worker loop) | {w} | {} | {} | {} | {ratio:.3} | {like}data path {} a report net of the collector side; {:.2} frames/report, {:.3} ACKs/report (build {:.1} ns incl.), drops {}, qp errors {} |\n",
                mpps(rps),
                ns(f(&v, "ns_per_report")),
                ns(f(&v, "cpu_ns_per_report")),
                ns(f(&v, "data_path_ns_per_report")),
                f(&v, "frames_out_per_report"),
                f(&v, "acks_per_report"),
                f(&v, "ack_build_ns_per_report"),
                v["report_drops"],
                v["qp_errors"],
            ));
            let mut v = v;
            v["ratio_to_testpmd_io"] = json!(ratio);
            if w == 1 {
                v["ratio_to_netio_io"] = json!(rps / netio_io1);
            }
            rows.push(v);
        }
    }

    // The software responder (the collector without an RDMA NIC): per-frame work on one core, no port.
    let mut responder_rows = Vec::new();
    for m in ["write", "fetch-add"] {
        let Some(mut v) = read_json(&dir.join(format!("responder-{m}.json"))) else {
            continue;
        };
        let fps = f(&v, "frames_per_s");
        let ratio = fps / io1;
        md.push_str(&format!(
            "| software responder {m} (no port I/O) | 1 | {} | {} | {} | {ratio:.3} | {:.3} responses/frame built, memory checked, drops {} |\n",
            mpps(fps),
            ns(1e9 / fps),
            ns(f(&v, "cpu_ns_per_frame")),
            f(&v, "responses_per_frame"),
            v["drops"],
        ));
        v["ratio_to_testpmd_io"] = json!(ratio);
        v["ratio_to_netio_io"] = json!(fps / netio_io1);
        responder_rows.push(v);
    }

    let icrc_naive = criterion_ns(criterion, "icrc_80B", "naive");
    let icrc_prefix = criterion_ns(criterion, "icrc_80B", "per_qp_prefix");
    let icrc_fill = criterion_ns(criterion, "icrc_80B", "per_qp_prefix_fill");
    let parse = criterion_ns(criterion, "wire", "dta_parse_keywrite");
    let parse_frame = criterion_ns(criterion, "wire", "dta_frame_parse_keywrite");
    let build_report = criterion_ns(criterion, "wire", "report_frame_build_keywrite");
    let build_roce = criterion_ns(criterion, "wire", "roce_write_frame_build");
    let micro = json!({
        "icrc_naive_ns": icrc_naive,
        "icrc_per_qp_prefix_ns": icrc_prefix,
        "icrc_per_qp_prefix_fill_ns": icrc_fill,
        "dta_parse_ns": parse,
        "dta_frame_parse_ns": parse_frame,
        "report_frame_build_ns": build_report,
        "roce_write_frame_build_ns": build_roce,
    });
    md.push_str("\n## Per-packet costs (criterion, mean)\n\n| Operation | ns |\n|---|---|\n");
    for (k, v) in [
        ("iCRC naive (80 B covered)", icrc_naive),
        ("iCRC with the per-QP prefix", icrc_prefix),
        ("iCRC per-QP prefix, PSN patched + fill", icrc_fill),
        ("DTA parse (Key-Write report, UDP payload)", parse),
        ("DTA parse (Ethernet/IPv4/UDP + report)", parse_frame),
        (
            "Report frame build (Key-Write, Ethernet..report)",
            build_report,
        ),
        ("RoCE WRITE frame build (iCRC included)", build_roce),
    ] {
        md.push_str(&format!("| {k} | {} |\n", v.map_or("n/a".into(), ns)));
    }

    let kw_cpu = rows
        .iter()
        .find(|r| r["mode"] == "keywrite-n1" && r["workers"] == 1)
        .map_or(f64::NAN, |r| f(r, "cpu_ns_per_report"));
    let ap_cpu = rows
        .iter()
        .find(|r| r["mode"] == "append-b1" && r["workers"] == 1)
        .map_or(f64::NAN, |r| f(r, "cpu_ns_per_report"));
    let int_cpu = rows
        .iter()
        .find(|r| r["mode"] == "int-v05" && r["workers"] == 1)
        .map_or(f64::NAN, |r| f(r, "cpu_ns_per_report"));
    let mut baseline = Vec::new();
    md.push_str("\n## The CPU collector users run today (UDP loopback, recvmmsg x64, parse, store) beside the translator\n\n");
    md.push_str("| Store | reports/s received | reports/s per receiver core | receiver CPU ns/report | process CPU ns/report (sender incl.) | translator CPU ns/report (same reports) | loss |\n|---|---|---|---|---|---|---|\n");
    for (m, tr) in [
        ("keywrite-n1", kw_cpu),
        ("append-b1", ap_cpu),
        ("int-v05", int_cpu),
    ] {
        let Some(v) = read_json(&dir.join(format!("baseline-{m}.json"))) else {
            continue;
        };
        let loss = 1.0 - f(&v, "received") / f(&v, "sent");
        md.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {:.1}% |\n",
            v["store"].as_str().unwrap_or(m),
            mpps(f(&v, "reports_per_s")),
            mpps(f(&v, "reports_per_s_per_core")),
            ns(f(&v, "receiver_cpu_ns_per_report")),
            ns(f(&v, "process_cpu_ns_per_report")),
            ns(tr),
            loss * 100.0
        ));
        let mut v = v;
        v["translator_cpu_ns_per_report"] = json!(tr);
        baseline.push(v);
    }

    let queries = read_json(&dir.join("queries.json")).unwrap_or(Value::Null);
    md.push_str("\n## Collector queries, one core\n\n| Query | region | per s (wall) | per s of CPU | hits/ops |\n|---|---|---|---|---|\n");
    if let Some(list) = queries["results"].as_array() {
        for q in list {
            md.push_str(&format!(
                "| {} | {} | {} | {} | {:.3} |\n",
                q["name"].as_str().unwrap_or("?"),
                q["region"].as_str().unwrap_or("?"),
                mpps(f(q, "per_s")),
                mpps(f(q, "per_cpu_s")),
                f(q, "hits") / f(q, "ops")
            ));
        }
    }
    md.push_str("\nThe paper reports 1.78M Key-Write queries/s per core (N = 2, 2^26 slots).\n");

    // The history exporter (issue 28): its rows/s on one core and the Append rate it keeps up with,
    // beside the rate at which the translator fills Append lists.
    let export = read_json(&dir.join("export.json")).unwrap_or(Value::Null);
    if !export.is_null() {
        let append_rate = |m: &str| {
            rows.iter()
                .find(|r| r["mode"] == m && r["workers"] == 1)
                .map_or(f64::NAN, |r| f(r, "reports_per_s"))
        };
        md.push_str("\n## History exporter (Parquet sink), one core\n\n| What | entries (rows)/s | note |\n|---|---|---|\n");
        md.push_str(&format!(
            "| rows exported, closed loop | {} | per second of the export thread's CPU: {}; {:.1} Parquet bytes per row (INT drop events, Snappy) |\n",
            mpps(f(&export, "rows_per_s")),
            mpps(f(&export, "rows_per_cpu_s")),
            f(&export, "bytes_per_row"),
        ));
        let fast = read_json(&dir.join("export-poll10.json")).unwrap_or(Value::Null);
        for e in [&export, &fast] {
            if e.is_null() {
                continue;
            }
            md.push_str(&format!(
                "| highest Append rate without a ring overrun, poll_ms {} | {} | ring of {} entries (polling bound {}); lowest rate probed that overran: {} |\n",
                e["poll_ms"],
                mpps(f(e, "max_rate_no_overrun")),
                e["ring_entries"],
                mpps(f(e, "poll_bound_per_s")),
                e["min_rate_overrun"].as_f64().map_or("none".into(), mpps),
            ));
        }
        for m in ["append-b1", "append-b16"] {
            md.push_str(&format!(
                "| translator {m}, 1 worker (entries it appends) | {} | one entry per report; a collector's lists fill at most this fast per translator core |\n",
                mpps(append_rate(m)),
            ));
        }
    }

    let mut pktgen = Vec::new();
    md.push_str("\n## pktgen against testpmd txonly\n\n| Workload | output | pps | ratio to testpmd txonly |\n|---|---|---|---|\n");
    for wl in ["keywrite", "append"] {
        let Some(v) = read_json(&dir.join(format!("pktgen-{wl}.json"))) else {
            continue;
        };
        let pps = f(&v, "pps");
        md.push_str(&format!(
            "| {wl} | {} | {} | {:.3} |\n",
            v["output"].as_str().unwrap_or("?"),
            mpps(pps),
            pps / tx1
        ));
        pktgen.push(json!({"workload": wl, "summary": v, "ratio_to_testpmd_txonly": pps / tx1}));
    }

    let kib = |v: Option<&Value>| v.and_then(|x| x["vm_hwm_kib"].as_u64()).unwrap_or(0);
    let tr_mem = rows
        .iter()
        .filter(|r| r["workers"] == 1)
        .map(|r| (r["mode"].as_str().unwrap_or("?").to_owned(), kib(Some(r))))
        .collect::<Vec<_>>();
    let coll_mem = kib(Some(&queries));
    md.push_str("\n## Memory (peak RSS, VmHWM)\n\n| Process | peak RSS |\n|---|---|\n");
    for (m, k) in &tr_mem {
        md.push_str(&format!(
            "| translator {m}, 1 worker (DPDK, EAL -m 1024 reserved, touched pages only) | {:.1} MiB |\n",
            *k as f64 / 1024.0
        ));
    }
    md.push_str(&format!(
        "| collector regions (Key-Write 2^26 x 8 B, Key-Increment 2^24 x 8 B, Postcarding 2^22 x 32 B, Append 2^24 x 4 B) | {:.1} MiB |\n",
        coll_mem as f64 / 1024.0
    ));

    // Issue 14's floors, against the numbers it started from, at the top of the page.
    let before = read_json(&out.join("baseline.json")).unwrap_or(Value::Null);
    let instructions_json = json!({ "keywrite-n1": instructions });
    let run = crate::floors::Run {
        translator: &rows,
        responder: &responder_rows,
        pktgen: &pktgen,
        instructions: &instructions_json,
    };
    let (floors_md, floors) = crate::floors::section(&before, &run);
    let (daemon_md, daemon) = crate::daemon_floors::section(dir);
    if let Some(at) = md.find("## The limit and the translator") {
        md.insert_str(at, &floors_md);
        // The daemon's floors first: they are what a user runs.
        md.insert_str(at, &daemon_md);
    }

    md.push_str("\nPlot: results.png. Raw numbers: results.json.\n");

    let results = json!({
        "machine": machine,
        "machine_line": machine.line(),
        "load_during": load_during.trim(),
        "limit": {
            "testpmd_io_forward_pps_1core": io1,
            "testpmd_io_forward_pps_2core": io2,
            "testpmd_txonly_pps_1core": tx1,
            "netio_io_forward_pps_1core": netio_io1,
            "vdev": "net_null0 (one port, 64 B frames, no copy)",
        },
        "translator": rows,
        "responder": responder_rows,
        "acks": "an ACK for every AckReq frame (every 16th) and an ATOMIC ACK for every FETCH_ADD, built from per-QP templates as an RNIC would and sent back through the collector port's net_ring; window 256 (default)",
        "micro": micro,
        "baseline": baseline,
        "queries": queries,
        "export": export,
        "export_poll10": read_json(&dir.join("export-poll10.json")).unwrap_or(Value::Null),
        "pktgen": pktgen,
        "memory": {
            "translator_vm_hwm_kib": tr_mem.iter().map(|(m, k)| json!({"mode": m, "kib": k})).collect::<Vec<_>>(),
            "collector_regions_vm_hwm_kib": coll_mem,
        },
        "instructions_per_report": instructions_json,
        "floors": floors,
        "daemon": daemon,
    });
    std::fs::create_dir_all(out)?;
    std::fs::write(
        out.join("results.json"),
        serde_json::to_string_pretty(&results)?,
    )?;
    std::fs::write(out.join("results.md"), md)?;
    plot(&out.join("results.png"), &results, &machine.line()).context("plot")?;
    Ok(())
}

fn register_font() -> Result<()> {
    static ONCE: Once = Once::new();
    let mut res = Ok(());
    ONCE.call_once(|| {
        res = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            dejavu::sans::regular(),
        )
        .map_err(|_| anyhow!("the bundled DejaVu Sans font did not load"));
    });
    res
}

/// Horizontal bars in M/s: the limit, the translator per mode (one and two cores), the CPU baseline and
/// pktgen, each labelled with its ratio to the reference it is compared with.
fn plot(path: &Path, r: &Value, machine: &str) -> Result<()> {
    register_font()?;
    let io1 = f(&r["limit"], "testpmd_io_forward_pps_1core");
    let io2 = f(&r["limit"], "testpmd_io_forward_pps_2core");
    let tx1 = f(&r["limit"], "testpmd_txonly_pps_1core");
    let mut bars: Vec<(String, f64, usize)> = vec![
        ("testpmd txonly, 1 core".into(), tx1, 0),
        ("testpmd io-fwd, 2 cores".into(), io2, 0),
        ("testpmd io-fwd, 1 core".into(), io1, 0),
    ];
    for t in r["translator"].as_array().into_iter().flatten() {
        let w = t["workers"].as_u64().unwrap_or(1);
        bars.push((
            format!(
                "translator {}, {w} core{} ({:.2}x io-fwd)",
                t["mode"].as_str().unwrap_or("?"),
                if w > 1 { "s" } else { "" },
                f(t, "ratio_to_testpmd_io")
            ),
            f(t, "reports_per_s"),
            w as usize,
        ));
    }
    for b in r["baseline"].as_array().into_iter().flatten() {
        bars.push((
            format!(
                "CPU collector: {} (UDP, 1 rx core)",
                b["store"].as_str().unwrap_or("?")
            ),
            f(b, "reports_per_s"),
            3,
        ));
    }
    for p in r["pktgen"].as_array().into_iter().flatten() {
        bars.push((
            format!(
                "dta-pktgen {} to {} ({:.2}x txonly)",
                p["workload"].as_str().unwrap_or("?"),
                p["summary"]["output"].as_str().unwrap_or("?"),
                f(p, "ratio_to_testpmd_txonly")
            ),
            f(&p["summary"], "pps"),
            4,
        ));
    }
    bars.retain(|b| b.1.is_finite());
    let max = bars.iter().map(|b| b.1).fold(1.0, f64::max) / 1e6 * 1.05;
    let n = bars.len();
    let root = BitMapBackend::new(path, (1200, 110 + 26 * n as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
    let (top, body) = root.split_vertically(50);
    top.draw(&Text::new(
        "dta: reports/s (or packets/s) on DPDK net_null; higher is better",
        (10, 5),
        ("sans-serif", 20),
    ))
    .map_err(|e| anyhow!("{e}"))?;
    top.draw(&Text::new(machine.to_owned(), (10, 28), ("sans-serif", 13)))
        .map_err(|e| anyhow!("{e}"))?;
    let mut chart = ChartBuilder::on(&body)
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(5)
        .build_cartesian_2d(0.0..max, 0.0..n as f64)
        .map_err(|e| anyhow!("{e}"))?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .disable_y_axis()
        .x_desc("million per second")
        .draw()
        .map_err(|e| anyhow!("{e}"))?;
    let colours = [
        RGBColor(120, 120, 120),
        RGBColor(31, 119, 180),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
    ];
    for (i, (label, v, c)) in bars.iter().enumerate() {
        let y = (n - 1 - i) as f64;
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(0.0, y + 0.12), (v / 1e6, y + 0.88)],
                colours[*c % colours.len()].mix(0.55).filled(),
            )))
            .map_err(|e| anyhow!("{e}"))?;
        chart
            .draw_series(std::iter::once(Text::new(
                format!("{label}: {:.2} M/s", v / 1e6),
                (max * 0.005, y + 0.75),
                ("sans-serif", 13),
            )))
            .map_err(|e| anyhow!("{e}"))?;
    }
    root.present().map_err(|e| anyhow!("{e}"))?;
    Ok(())
}
