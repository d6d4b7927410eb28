//! Every TRex profile in `pktgen/trex/` builds (with scapy, under a stub of trex_stl_lib) a base packet that
//! is byte for byte the first frame of `dta-pktgen --pcap` with the same parameters.
//!
//! Needs `/work/main/.venv/bin/python` (or `$DTA_PYTHON`) with scapy; skipped with a message when it is
//! missing, unless `DTA_REQUIRE_ORACLES=1`.

use std::fs::File;
use std::path::PathBuf;
use std::process::Command;

use pcap_file::pcap::PcapReader;

fn python() -> Option<PathBuf> {
    let p = std::env::var_os("DTA_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.venv/bin/python"))
        });
    let ok = Command::new(&p)
        .args(["-c", "import scapy"])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return Some(p);
    }
    assert!(
        std::env::var("DTA_REQUIRE_ORACLES").as_deref() != Ok("1"),
        "DTA_REQUIRE_ORACLES=1 but {} with scapy is missing",
        p.display()
    );
    eprintln!("skipping: no Python with scapy at {}", p.display());
    None
}

/// (workload, parameters) with parameters as dta-pktgen options without the leading dashes.
const CASES: &[(&str, &[(&str, &str)])] = &[
    ("keywrite", &[]),
    (
        "keywrite",
        &[
            ("keywrite-data-len", "28"),
            ("k", "4"),
            ("seed", "99"),
            ("redundancy", "4"),
        ],
    ),
    (
        "keywrite",
        &[
            ("dist", "zipf"),
            ("keys", "5000"),
            ("zipf-s", "0.9"),
            ("key-base", "1000"),
        ],
    ),
    (
        "keywrite",
        &[("header", "compact"), ("keywrite-data-len", "12")],
    ),
    ("keyincrement", &[("counter", "1500"), ("seed", "7")]),
    ("append", &[("keys", "255"), ("key-base", "1")]),
    (
        "append",
        &[("append-entry-len", "8"), ("dist", "zipf"), ("keys", "100")],
    ),
    ("postcard", &[("k", "28"), ("seed", "3")]),
    (
        "sketch",
        &[
            ("sketch-rows", "3"),
            ("sketch-op", "max"),
            ("sketch-id", "2"),
        ],
    ),
    ("mix", &[("seed", "5")]),
    ("int-v05", &[("seed", "7"), ("keys", "100000")]),
    (
        "int-v05",
        &[("seed", "11"), ("drop-per-mille", "1000"), ("k", "4")],
    ),
    (
        "int-v2",
        &[("seed", "7"), ("dist", "zipf"), ("keys", "5000")],
    ),
    ("mix", &[("seed", "6"), ("header", "compact")]),
    (
        "keywrite",
        &[
            ("src-mac", "0a:0b:0c:0d:0e:0f"),
            ("dst-ip", "10.1.2.3"),
            ("src-port", "5000"),
            ("dst-port", "40050"),
        ],
    ),
];

fn first_frame(
    dir: &std::path::Path,
    i: usize,
    workload: &str,
    params: &[(&str, &str)],
) -> Vec<u8> {
    let pcap = dir.join(format!("case{i}.pcap"));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dta-pktgen"));
    cmd.args(["--workload", workload, "--count", "1", "--pcap"])
        .arg(&pcap);
    for (k, v) in params {
        cmd.arg(format!("--{k}")).arg(v);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut r = PcapReader::new(File::open(&pcap).unwrap()).unwrap();
    r.next_packet().unwrap().unwrap().data.to_vec()
}

fn json_value(v: &str) -> serde_json::Value {
    match v.parse::<u64>() {
        Ok(n) => n.into(),
        Err(_) => match v.parse::<f64>() {
            Ok(f) => f.into(),
            Err(_) => v.into(),
        },
    }
}

#[test]
fn trex_base_packets_match_pktgen_first_frames() {
    let Some(py) = python() else { return };
    let dir = std::env::temp_dir().join(format!("dta-trex-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases: Vec<serde_json::Value> = CASES
        .iter()
        .map(|(w, ps)| {
            let params: serde_json::Map<String, serde_json::Value> = ps
                .iter()
                .map(|(k, v)| (k.replace('-', "_"), json_value(v)))
                .collect();
            serde_json::json!({"workload": w, "params": params})
        })
        .collect();
    let out = Command::new(&py)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/trex/base_frames.py"))
        .arg(serde_json::Value::Array(cases).to_string())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(got.len(), CASES.len());
    for (i, ((w, ps), g)) in CASES.iter().zip(&got).enumerate() {
        let want = first_frame(&dir, i, w, ps);
        let hex: String = want.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            g["hex"].as_str(),
            Some(hex.as_str()),
            "case {i}: {w} {ps:?}"
        );
        assert_eq!(g["streams"], if *w == "mix" { 3 } else { 1 }, "case {i}");
    }
    // The field engine varies the key and the path of Key-Write path tracing (D = 28: five hops).
    assert_eq!(
        got[1]["vars"],
        serde_json::json!(["hop1", "hop2", "hop3", "hop4", "hop5", "key", "seqnum"])
    );
    // The compact form has no seqnum to vary.
    assert_eq!(
        got[3]["vars"],
        serde_json::json!(["hop1", "hop2", "hop3", "key"])
    );
    std::fs::remove_dir_all(&dir).ok();
}
