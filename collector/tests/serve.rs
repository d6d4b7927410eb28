//! `dta-collector serve --backend soft` as a process: it starts, hands out QPs over the control channel,
//! answers queries over HTTP, and (where this process may open AF_PACKET sockets) applies a RoCE WRITE sent
//! on the loopback interface. Bounded in time; the child is killed on every path.
// The daemon's parts (control server, HTTP API, the binary) exist with the `server` feature only.
#![cfg(feature = "server")]

mod process;

use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use dta_collector::client;
use dta_netio::{AfPacket, AfPacketConfig, FrameBatch, TxBurst};
use dta_protocol::layout::{Geometry, KeyWriteGeometry};
use dta_protocol::roce::FrameRepr;
use dta_protocol::udp::UdpEndpoints;
use process::{example, hello, serve, Serve};

#[test]
fn serve_answers_queries_over_http() {
    let s = serve(&example(), &[]);
    let w = hello(&s.control);
    assert_eq!(w.qps.len(), 1);
    assert_eq!(w.qps[0].peer_qpn, 0x11);
    assert_eq!(w.regions.len(), 6);
    let (status, body) = client::get(&s.http, "/query/keywrite?key=42").unwrap();
    assert_eq!(
        (status, body.as_str()),
        (200, r#"{"outcome":"empty","matching":0}"#)
    );
    let (status, body) = client::get(&s.http, "/query/keyincrement?key=42&n=2").unwrap();
    assert_eq!(
        (status, body.as_str()),
        (200, r#"{"estimate":0,"counters":[0,0]}"#)
    );
    let (status, body) = client::get(&s.http, "/query/append?list=3").unwrap();
    assert_eq!(status, 200);
    assert!(body.contains(r#""entries":[]"#), "{body}");
    let (status, body) = client::get(&s.http, "/query/append?list=4").unwrap();
    assert_eq!(
        (status, body.as_str()),
        (404, r#"{"error":"no append region with id 4"}"#)
    );
    let (status, _) = client::get(&s.http, "/query/keywrite?key=forty").unwrap();
    assert_eq!(status, 400);
    let (_, metrics) = client::get(&s.http, "/metrics").unwrap();
    assert!(metrics.contains("dta_collector_queries_total{kind=\"keywrite\",result=\"ok\"} 1"));
    assert!(metrics.contains("dta_collector_queries_total{kind=\"append\",result=\"error\"} 1"));
    // The CLI talks to the same server.
    let out = Command::new(env!("CARGO_BIN_EXE_dta-collector"))
        .args(["query", "--server", &s.http, "keywrite", "--key", "42"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        r#"{"outcome":"empty","matching":0}"#
    );
}

#[test]
fn ibverbs_without_a_device_names_the_soft_backend() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_dta-collector"))
        .args(["serve", "--backend", "ibverbs", "--config", &example()])
        .args(["--http", "127.0.0.1:0", "--control", "127.0.0.1:0"])
        .env("RUST_BACKTRACE", "0")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // On a machine with an RDMA device serve keeps running: stop it and say so instead of hanging.
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            eprintln!("an RDMA device is present: serve --backend ibverbs started, no-device path not tested");
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(!status.success(), "{err}");
    assert!(err.contains("--backend soft"), "{err}");
}

#[test]
fn a_roce_write_on_loopback_lands_and_is_found() {
    // Sending needs CAP_NET_RAW; without it this test says so and checks nothing.
    let mut sender = match AfPacket::open("lo", &AfPacketConfig::default()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("skipping: cannot open an AF_PACKET socket on lo ({e})");
            return;
        }
    };
    let text = std::fs::read_to_string(example())
        .unwrap()
        .replace("ip = \"198.18.0.2\"", "ip = \"127.0.0.1\"");
    let path = std::env::temp_dir().join(format!("dta-collector-lo-{}.toml", std::process::id()));
    std::fs::write(&path, text).unwrap();
    let s = serve(path.to_str().unwrap(), &["--interface", "lo"]);
    let w = hello(&s.control);
    let region = w
        .regions
        .iter()
        .find(|r| matches!(r.geometry, Geometry::KeyWrite(_)))
        .unwrap();
    let Geometry::KeyWrite(g) = region.geometry else {
        unreachable!()
    };
    assert_eq!(g, KeyWriteGeometry::new(65536, 8, 4).unwrap());
    // To the MAC the welcome advertises, as a translator sends: the responder drops RoCE to any other.
    let ep = UdpEndpoints::new([0; 6], w.mac, [127, 0, 0, 1], [127, 0, 0, 1], 49152, 4791);
    let mut entry = [0u8; 8];
    g.encode_entry(42, &[0xca, 0xfe, 0xf0, 0x0d], &mut entry)
        .unwrap();
    // Key 42 with N = 1: one WRITE of the entry to copy 0's slot, at the PSN the hello announced.
    let f = FrameRepr::write_only(
        ep,
        w.qps[0].qpn,
        0x20,
        true,
        region.va + g.offset(42, 0),
        region.rkey,
        &entry,
    );
    let mut frame = vec![0u8; f.buffer_len()];
    f.emit(&mut frame).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut batch = FrameBatch::new(1, 2048);
    batch.push(&frame).unwrap();
    loop {
        assert_eq!(sender.send_burst(&batch).unwrap(), 1);
        let (_, body) = client::get(&s.http, "/query/keywrite?key=42&n=1").unwrap();
        if body.contains("found") {
            assert_eq!(
                body,
                r#"{"outcome":"found","data":"cafef00d","votes":1,"slots_read":1}"#
            );
            break;
        }
        assert!(Instant::now() < deadline, "write never landed: {body}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = std::fs::remove_file(&path);
}

/// SIGTERM stops the collector in order: exit status 0 (it was 143, nothing said), the servers closed,
/// and the counters printed.
#[test]
fn sigterm_stops_the_collector_and_prints_its_counters() {
    let mut s = serve(&example(), &[]);
    let w = hello(&s.control);
    assert!(!w.qps.is_empty());
    let (status, _) = client::get(&s.http, "/query/keywrite?key=42").unwrap();
    assert_eq!(status, 200);
    // SAFETY: kill(2) on our own child.
    assert_eq!(unsafe { libc::kill(s.child.id() as i32, libc::SIGTERM) }, 0);
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(st) = s.child.try_wait().unwrap() {
            break st;
        }
        assert!(Instant::now() < deadline, "no exit within 10 s of SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status}");
    // Everything it printed: the reader thread ends at the pipe's end.
    let mut out = Vec::new();
    while let Ok(l) = s.lines.recv_timeout(Duration::from_secs(5)) {
        out.push(l);
    }
    assert!(
        out.iter().any(|l| l == "dta-collector stopped on SIGTERM"),
        "{out:?}"
    );
    // The query above was counted, and the summary says so.
    assert!(
        out.iter()
            .any(|l| l.trim() == "dta_collector_queries_total{kind=\"keywrite\",result=\"ok\"} 1"),
        "{out:?}"
    );
    assert!(
        TcpStream::connect(&s.control).is_err(),
        "control port closed"
    );
}

/// `dta-collector query` over a translator's collectors: a key is asked of the collector the translator
/// routes it to (key_checksum(key) mod 2 here), nobody else; a list of the first collector that has it.
#[test]
fn a_query_over_many_collectors_goes_where_the_key_was_routed() {
    let (a, b) = (serve(&example(), &[]), serve(&example(), &[]));
    let servers = [a.http.clone(), b.http.clone()];
    let asked = |s: &Serve, kind: &str| -> u64 {
        let (_, text) = client::get(&s.http, "/metrics").unwrap();
        let series = format!("dta_collector_queries_total{{kind=\"{kind}\",result=\"ok\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(series.as_str()))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    for key in [42u32, 43, 7, 1000] {
        let before = [asked(&a, "keywrite"), asked(&b, "keywrite")];
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_dta-collector"))
            .args(["query", "--server", &servers.join(",")])
            .args(["keywrite", "--key", &key.to_string()])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let after = [asked(&a, "keywrite"), asked(&b, "keywrite")];
        let routed = dta_protocol::hash::key_checksum(key) as usize % 2;
        for (i, (x, y)) in before.iter().zip(&after).enumerate() {
            assert_eq!(y - x, u64::from(i == routed), "key {key}, collector {i}");
        }
    }
    // Append list 3 exists on both: the first collector answers.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dta-collector"))
        .args(["query", "--server", &servers[0], "--server", &servers[1]])
        .args(["append", "--list", "3"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!((asked(&a, "append"), asked(&b, "append")), (1, 0));
    // A list nobody has: every collector is asked, and the answer says so.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dta-collector"))
        .args(["query", "--server", &servers.join(",")])
        .args(["append", "--list", "77"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("404"),
        "{out:?}"
    );
}
