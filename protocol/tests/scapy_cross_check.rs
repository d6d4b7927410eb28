//! Cross-check against an independent oracle: scapy (from the project venv) builds random RoCEv2 frames
//! and DTA reports (tests/oracle/scapy_vectors.py), and dta-protocol must build the very same bytes from
//! the same parameters, accept scapy's iCRC, and parse scapy's frames back to those parameters.
//!
//! `make test` sets DTA_REQUIRE_ORACLES=1, so a missing venv fails the run; a bare `cargo test` without
//! `make setup` skips this test with a message instead.

use std::path::PathBuf;
use std::process::Command;

use dta_protocol::dta::{Body, HeaderForm, NackRepr, Opcode, ReportFormat, ReportRepr};
use dta_protocol::hash::{hop_checksum, key_checksum, placement, postcard_g};
use dta_protocol::roce::{icrc, AckKind, AethRepr, Extension, FrameRepr};
use dta_protocol::udp::{UdpEndpoints, UdpFrame};
use serde_json::Value;

const CASES: usize = 1000;

fn oracle_vectors() -> Option<Value> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let python = std::env::var_os("DTA_ORACLE_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join(".venv/bin/python"));
    if !python.exists() {
        assert!(
            std::env::var_os("DTA_REQUIRE_ORACLES").is_none(),
            "no oracle Python at {} (run `make setup`)",
            python.display()
        );
        eprintln!(
            "skipping scapy cross-check: no {} (run `make setup`)",
            python.display()
        );
        return None;
    }
    let out = std::env::temp_dir().join(format!("dta-scapy-vectors-{}.json", std::process::id()));
    let status = Command::new(&python)
        .arg(root.join("tests/oracle/scapy_vectors.py"))
        .arg(&out)
        .arg(CASES.to_string())
        .status()
        .expect("run the scapy oracle");
    assert!(status.success(), "scapy oracle failed: {status}");
    let text = std::fs::read_to_string(&out).expect("oracle output");
    let _ = std::fs::remove_file(&out);
    Some(serde_json::from_str(&text).expect("oracle JSON"))
}

fn unhex(s: &str) -> Vec<u8> {
    hex::decode(s).expect("oracle hex")
}

fn u(v: &Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("field {k} in {v}"))
}

fn mac(s: &str) -> [u8; 6] {
    let b: Vec<u8> = s
        .split(':')
        .map(|x| u8::from_str_radix(x, 16).unwrap())
        .collect();
    b.try_into().unwrap()
}

fn ip(s: &str) -> [u8; 4] {
    let b: Vec<u8> = s.split('.').map(|x| x.parse().unwrap()).collect();
    b.try_into().unwrap()
}

fn endpoints(v: &Value) -> UdpEndpoints {
    UdpEndpoints {
        src_mac: mac(v["src_mac"].as_str().unwrap()),
        dst_mac: mac(v["dst_mac"].as_str().unwrap()),
        src_ip: ip(v["src_ip"].as_str().unwrap()),
        dst_ip: ip(v["dst_ip"].as_str().unwrap()),
        src_port: u(v, "src_port") as u16,
        dst_port: u(v, "dst_port") as u16,
        dscp: u(v, "dscp") as u8,
        ecn: u(v, "ecn") as u8,
        ip_id: u(v, "ip_id") as u16,
        ttl: u(v, "ttl") as u8,
    }
}

fn check_roce(case: &Value) {
    let frame = unhex(case["frame"].as_str().unwrap());
    icrc::verify(&frame).unwrap_or_else(|e| panic!("scapy's iCRC refused: {e} in {case}"));
    let ep = endpoints(&case["endpoints"]);
    let (qp, psn) = (u(case, "dest_qp") as u32, u(case, "psn") as u32);
    let ack_req = u(case, "ack_req") == 1;
    let payload = case
        .get("payload")
        .and_then(Value::as_str)
        .map(unhex)
        .unwrap_or_default();
    let rkey = || u(case, "rkey") as u32;
    let ours = match case["kind"].as_str().unwrap() {
        "write" => FrameRepr::write_only(ep, qp, psn, ack_req, u(case, "va"), rkey(), &payload),
        "fetch_add" => {
            FrameRepr::fetch_add(ep, qp, psn, ack_req, u(case, "va"), rkey(), u(case, "add"))
        }
        kind => {
            let aeth = AethRepr {
                kind: AckKind::from_syndrome(u(case, "syndrome") as u8).expect("valid syndrome"),
                msn: u(case, "msn") as u32,
            };
            if kind == "ack" {
                FrameRepr::acknowledge(ep, qp, psn, aeth)
            } else {
                FrameRepr::atomic_acknowledge(ep, qp, psn, aeth, u(case, "orig"))
            }
        }
    };
    let mut buf = vec![0u8; ours.buffer_len()];
    let n = ours.emit(&mut buf).unwrap();
    assert_eq!(
        hex::encode(&buf[..n]),
        hex::encode(&frame),
        "bytes differ for {case}"
    );
    assert_eq!(FrameRepr::parse(&frame).unwrap(), ours);
    if let Extension::Reth(r) = ours.ext {
        assert_eq!(r.dma_len as usize, payload.len());
    }
}

fn check_report_body(body: &Body, case: &Value) {
    let data = || unhex(case["data"].as_str().unwrap());
    match (body, case["kind"].as_str().unwrap()) {
        (Body::KeyWrite(b), "keywrite") => {
            assert_eq!(u64::from(b.redundancy), u(case, "redundancy"));
            assert_eq!(u64::from(b.key), u(case, "key"));
            assert_eq!(b.data, &data()[..]);
        }
        (Body::Append(b), "append") => {
            assert_eq!(u64::from(b.list_id), u(case, "list_id"));
            assert_eq!(b.data, &data()[..]);
        }
        (Body::KeyIncrement(b), "keyincrement") => {
            assert_eq!(u64::from(b.redundancy), u(case, "redundancy"));
            assert_eq!(u64::from(b.key), u(case, "key"));
            assert_eq!(b.counter, u(case, "counter"));
        }
        (Body::Postcard(b), "postcard") => {
            assert_eq!(u64::from(b.key), u(case, "key"));
            assert_eq!(u64::from(b.hop), u(case, "hop"));
            assert_eq!(u64::from(b.data), u(case, "data"));
        }
        (Body::PostcardPathLen(b), "postcard_path_len") => {
            assert_eq!(u64::from(b.key), u(case, "key"));
            assert_eq!(u64::from(b.hop), u(case, "hop"));
            assert_eq!(u64::from(b.path_len), u(case, "path_len"));
            assert_eq!(u64::from(b.data), u(case, "data"));
        }
        (Body::SketchMerge(b), "sketch") => {
            assert_eq!(u64::from(b.sketch_id), u(case, "sketch_id"));
            assert_eq!(b.op as u64, u(case, "op"));
            assert_eq!(u64::from(b.reporter_id), u(case, "reporter_id"));
            assert_eq!(u64::from(b.column), u(case, "column"));
            let want: Vec<u64> = case["counters"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_u64().unwrap())
                .collect();
            let got: Vec<u64> = b.iter_counters().map(u64::from).collect();
            assert_eq!(got, want);
        }
        (body, kind) => panic!("parsed {body:?} for a {kind} case"),
    }
}

fn check_report(case: &Value) {
    let frame = unhex(case["frame"].as_str().unwrap());
    let form = match case["form"].as_str().unwrap() {
        "seq" => HeaderForm::Seq,
        _ => HeaderForm::Compact,
    };
    let kw_len = u(case, "keywrite_data_len") as usize;
    let fmt = ReportFormat::new(form, kw_len, u(case, "append_entry_len") as usize).unwrap();
    let udp = UdpFrame::parse(&frame).unwrap();
    let ep = endpoints(&case["endpoints"]);
    assert_eq!(udp.endpoints, ep);
    let opcode = Opcode::from_code(u(case, "opcode") as u8).unwrap();
    let mut payload = vec![0u8; 512];
    let len = if case["kind"] == "nack" {
        let nack = NackRepr::parse(udp.payload, form).unwrap_or_else(|e| panic!("{e}: {case}"));
        assert_eq!(nack.opcode, opcode);
        assert_eq!(u64::from(nack.seqnum), u(case, "seqnum"));
        nack.emit(&mut payload, form).unwrap()
    } else {
        let r = ReportRepr::parse(udp.payload, &fmt).unwrap_or_else(|e| panic!("{e}: {case}"));
        let seqnum = (form == HeaderForm::Seq).then(|| u(case, "seqnum") as u8);
        assert_eq!(r.base.opcode, opcode);
        assert_eq!(r.base.seqnum, seqnum);
        assert_eq!(r.base.immediate, u(case, "immediate") == 1);
        assert_eq!(r.base.retransmit, u(case, "retransmit") == 1);
        check_report_body(&r.body, case);
        r.emit(&mut payload, &fmt).unwrap()
    };
    let mut ours = vec![0u8; 600];
    let n = ep.emit_frame(&mut ours, &payload[..len]).unwrap();
    assert_eq!(
        hex::encode(&ours[..n]),
        hex::encode(&frame),
        "bytes differ for {case}"
    );
}

fn check_hashes(case: &Value) {
    let key = u(case, "key") as u32;
    assert_eq!(u64::from(key_checksum(key)), u(case, "checksum"));
    let slots = u(case, "slots");
    for (n, want) in case["slot_indices"].as_array().unwrap().iter().enumerate() {
        assert_eq!(
            placement(key, n as u8, slots),
            want.as_u64().unwrap(),
            "key {key} n {n}"
        );
    }
    for (i, want) in case["hop_checksums"].as_array().unwrap().iter().enumerate() {
        let got = hop_checksum(i as u8 + 1, key).map(u64::from);
        assert_eq!(got, want.as_u64(), "key {key} hop {}", i + 1);
    }
    assert_eq!(u64::from(postcard_g(u(case, "value") as u32)), u(case, "g"));
}

#[test]
fn scapy_cross_check() {
    let Some(v) = oracle_vectors() else { return };
    let roce = v["roce"].as_array().unwrap();
    let reports = v["reports"].as_array().unwrap();
    let hashes = v["hashes"].as_array().unwrap();
    assert_eq!(
        (roce.len(), reports.len(), hashes.len()),
        (CASES, CASES, CASES)
    );
    roce.iter().for_each(check_roce);
    reports.iter().for_each(check_report);
    hashes.iter().for_each(check_hashes);
    // scapy's CNP capture: our iCRC must accept it too.
    icrc::verify(&unhex(v["cnp_frame"].as_str().unwrap())).unwrap();
    let count = |k: &str| roce.iter().filter(|c| c["kind"] == k).count();
    assert!(
        count("write") > 300 && count("fetch_add") > 150,
        "the oracle must exercise every kind"
    );
    let reports_of = |k: &str| reports.iter().filter(|c| c["kind"] == k).count();
    for k in [
        "keywrite",
        "append",
        "keyincrement",
        "postcard",
        "postcard_path_len",
        "sketch",
        "nack",
    ] {
        assert!(reports_of(k) > 50, "too few {k} reports");
    }
}
