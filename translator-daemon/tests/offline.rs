//! `dta-translator offline` on a small generated capture: every output frame has a valid iCRC and the
//! addresses the example regions give.

// The engine's test helpers (reports, reporters), shared rather than copied.
#[path = "../../translator/tests/support/mod.rs"]
mod support;

use std::fs::File;
use std::time::Duration;

use dta_protocol::dta::{AppendRepr, Body, KeyWriteRepr};
use dta_protocol::roce::{Extension, FrameRepr};
use pcap_file::pcap::{PcapPacket, PcapReader, PcapWriter};
use support::{report, reporter};

const KW_VA: u64 = 0x7f00_0000_0000;
const APPEND_VA: u64 = 0x7f00_0020_0000;

#[test]
fn offline_translates_a_capture() {
    let dir = std::env::temp_dir().join(format!("dta-offline-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("reports.pcap");
    let output = dir.join("roce.pcap");
    {
        let mut w = PcapWriter::new(File::create(&input).unwrap()).unwrap();
        let from = reporter(1);
        for i in 0..20u32 {
            let f = if i % 2 == 0 {
                report(
                    &from,
                    Body::KeyWrite(KeyWriteRepr {
                        redundancy: 2,
                        key: i,
                        data: &i.to_be_bytes(),
                    }),
                    i as u8,
                    false,
                )
            } else {
                report(
                    &from,
                    Body::Append(AppendRepr {
                        list_id: 3,
                        data: &i.to_be_bytes(),
                    }),
                    i as u8,
                    false,
                )
            };
            let ts = Duration::from_micros(u64::from(i));
            w.write_packet(&PcapPacket::new(ts, f.len() as u32, &f))
                .unwrap();
        }
        // A report for a list no collector holds is dropped, and said so by reason.
        let unknown = report(
            &from,
            Body::Append(AppendRepr {
                list_id: 99,
                data: &[0, 0, 0, 1],
            }),
            20,
            false,
        );
        w.write_packet(&PcapPacket::new(
            Duration::from_micros(25),
            unknown.len() as u32,
            &unknown,
        ))
        .unwrap();
        // A frame that is not DTA is left out of the RoCE capture.
        let mut arp = vec![0u8; 60];
        arp[12] = 0x08;
        arp[13] = 0x06;
        w.write_packet(&PcapPacket::new(Duration::from_micros(30), 60, &arp))
            .unwrap();
    }
    let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/examples");
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_dta-translator"))
        .args(["offline", "--config"])
        .arg(format!("{examples}/translator.toml"))
        .arg("--regions")
        .arg(format!("{examples}/regions.toml"))
        .arg("--in")
        .arg(&input)
        .arg("--out")
        .arg(&output)
        .env("RUST_LOG", "info")
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&status.stderr);
    assert!(status.status.success(), "{log}");
    assert!(log.contains("1 reports dropped"), "{log}");
    assert!(log.contains("dropped (no_region): 1"), "{log}");

    let mut r = PcapReader::new(File::open(&output).unwrap()).unwrap();
    let kw_geom = dta_protocol::layout::KeyWriteGeometry::new(65536, 8, 4).unwrap();
    let mut kw = Vec::new();
    let mut append = Vec::new();
    let mut psn = 0;
    while let Some(p) = r.next_packet() {
        let p = p.unwrap();
        let f = FrameRepr::parse(&p.data).expect("valid frame and iCRC");
        assert_eq!(f.bth.psn, psn);
        psn += 1;
        assert_eq!(f.bth.dest_qp, 17);
        assert_eq!(f.endpoints.dst_ip, [198, 18, 0, 2]);
        assert_eq!(f.endpoints.src_ip, [198, 18, 0, 1]);
        let Extension::Reth(h) = f.ext else {
            panic!("only writes expected")
        };
        assert_eq!(h.rkey, 0x1234);
        if h.va >= APPEND_VA {
            append.push((h.va, f.payload.to_vec()));
        } else {
            kw.push((h.va, f.payload.to_vec()));
        }
    }
    // Ten Key-Writes of two copies each at the geometry's slots.
    assert_eq!(kw.len(), 20);
    for (j, (va, payload)) in kw.iter().enumerate() {
        let key = 2 * (j as u32 / 2);
        assert_eq!(*va, KW_VA + kw_geom.offset(key, (j % 2) as u8));
        assert_eq!(&payload[4..], &key.to_be_bytes());
    }
    // Ten Append entries: a partial batch at slot 0 flushed at the end, then the head word (10).
    assert_eq!(append.len(), 2);
    assert_eq!(append[0].0, APPEND_VA + 64);
    assert_eq!(append[0].1.len(), 40);
    assert_eq!(append[1], (APPEND_VA, 10u64.to_le_bytes().to_vec()));
    scapy_accepts(&output, 22);
    std::fs::remove_dir_all(&dir).ok();
}

/// The independent check: scapy recomputes every frame's iCRC and checks IPv4 checksum, RETH lengths and
/// AtomicETH alignment (tests/oracle/scapy_check_roce.py). Skipped without the project venv unless
/// DTA_REQUIRE_ORACLES is set, as `make test` does.
fn scapy_accepts(capture: &std::path::Path, frames: usize) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let python = std::env::var_os("DTA_ORACLE_PYTHON")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root.join(".venv/bin/python"));
    if !python.exists() {
        assert!(
            std::env::var_os("DTA_REQUIRE_ORACLES").is_none(),
            "no oracle Python at {} (run `make setup`)",
            python.display()
        );
        eprintln!("skipping the scapy check: no {}", python.display());
        return;
    }
    let out = std::process::Command::new(&python)
        .arg(root.join("tests/oracle/scapy_check_roce.py"))
        .arg(capture)
        .output()
        .expect("run the scapy check");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "scapy refused the capture: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!("scapy_check_roce: {frames} frames ok")),
        "{stdout}"
    );
}
