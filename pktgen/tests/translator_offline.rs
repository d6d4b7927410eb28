//! `dta-pktgen --workload keywrite --count 100000 --pcap` and then `dta-translator offline` on that capture:
//! not one report may be dropped, and every report becomes N = 2 valid RoCE WRITEs.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;

use dta_protocol::roce::FrameRepr;
use pcap_file::pcap::PcapReader;

/// The translator's binary: built on demand, in the target directory this test runs from.
fn translator_bin() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    // target/<profile>/deps/<test> -> target/<profile>/dta-translator
    let dir = exe.parent().and_then(Path::parent).unwrap().to_path_buf();
    let status = Command::new(env!("CARGO"))
        .args([
            "build",
            "-q",
            "-p",
            "dta-translator-daemon",
            "--bin",
            "dta-translator",
        ])
        .args(if dir.ends_with("release") {
            &["--release"][..]
        } else {
            &[][..]
        })
        .env("CARGO_TARGET_DIR", dir.parent().unwrap())
        .status()
        .unwrap();
    assert!(status.success(), "building dta-translator");
    dir.join("dta-translator")
}

#[test]
fn keywrite_100k_translates_without_a_drop() {
    let dir = std::env::temp_dir().join(format!("dta-pktgen-offline-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let reports = dir.join("out.pcap");
    let roce = dir.join("roce.pcap");
    let gen = Command::new(env!("CARGO_BIN_EXE_dta-pktgen"))
        .args(["--workload", "keywrite", "--count", "100000", "--pcap"])
        .arg(&reports)
        .output()
        .unwrap();
    assert!(
        gen.status.success(),
        "{}",
        String::from_utf8_lossy(&gen.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&gen.stdout).unwrap();
    assert_eq!(summary["sent"], 100_000);
    assert_eq!(summary["dropped"], 0);
    assert_eq!(summary["per_opcode"]["keywrite"], 100_000);

    let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/../translator-daemon/examples");
    let tr = Command::new(translator_bin())
        .args(["offline", "--config"])
        .arg(format!("{examples}/translator.toml"))
        .arg("--regions")
        .arg(format!("{examples}/regions.toml"))
        .arg("--in")
        .arg(&reports)
        .arg("--out")
        .arg(&roce)
        .env("RUST_LOG", "info")
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&tr.stderr);
    assert!(tr.status.success(), "{log}");
    // The translator's summary line: frames in, RoCE out, not DTA, NACKs, drops.
    assert!(
        log.contains("100000 frames in, 200000 RoCE frames out, 0 not DTA (not written), 0 DTA NACKs (not written), 0 reports dropped"),
        "{log}"
    );

    let mut r = PcapReader::new(File::open(&roce).unwrap()).unwrap();
    let mut frames = 0u32;
    while let Some(p) = r.next_packet() {
        let p = p.unwrap();
        let f = FrameRepr::parse(&p.data).expect("valid RoCE frame and iCRC");
        assert_eq!(f.bth.psn, frames & 0xFF_FFFF);
        assert_eq!(f.payload.len(), 8, "checksum and 4 data bytes");
        frames += 1;
    }
    assert_eq!(frames, 200_000);
    std::fs::remove_dir_all(&dir).ok();
}
