//! `dta-translator run` under SIGHUP and SIGUSR1 (issue 26, item 11): both used to kill it (the default
//! action), SIGUSR1 without its summary. Now SIGHUP is ignored (logged) and SIGUSR1 prints the counters
//! so far; the translator keeps running, and SIGTERM still stops it with its summary. One AF_PACKET
//! worker on `lo` (root only: skipped otherwise) and a stand-in collector's control port on loopback that
//! answers every hello with a welcome.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use dta_protocol::control::{
    CollectorMessage, ResponderQp, TranslatorMessage, Welcome, CONTROL_VERSION,
};
use dta_protocol::layout::{Geometry, KeyWriteGeometry, Region};

struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A control port answering each hello with a welcome for its QPs.
fn collector() -> std::net::SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { return };
            let mut line = String::new();
            if BufReader::new(s.try_clone().unwrap())
                .read_line(&mut line)
                .is_err()
            {
                continue;
            }
            let Ok(TranslatorMessage::Hello(h)) = serde_json::from_str(&line) else {
                continue;
            };
            let w = Welcome {
                version: CONTROL_VERSION,
                mac: [2, 0, 0, 0, 0, 2],
                ip: [127, 0, 0, 2],
                qps: h
                    .qps
                    .iter()
                    .map(|q| ResponderQp {
                        qpn: 0x11,
                        peer_qpn: q.qpn,
                    })
                    .collect(),
                max_dest_rd_atomic: 16,
                path_mtu: 1024,
                regions: vec![Region {
                    id: 0,
                    va: 0x10_0000,
                    rkey: 1,
                    geometry: Geometry::KeyWrite(KeyWriteGeometry::new(256, 8, 4).unwrap()),
                }],
                append_heads: Vec::new(),
            };
            let mut out = serde_json::to_string(&CollectorMessage::Welcome(w)).unwrap();
            out.push('\n');
            let _ = s.write_all(out.as_bytes());
        }
    });
    addr
}

fn kill(c: &Child, sig: i32) {
    // SAFETY: kill(2) on our own child.
    assert_eq!(unsafe { libc::kill(c.id() as i32, sig) }, 0);
}

/// Lines until one starts with `what`, within 10 s.
fn wait_for(lines: &mpsc::Receiver<String>, what: &str) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(l) if l.starts_with(what) => return seen,
            Ok(l) => seen.push(l),
            Err(_) => panic!("no line {what:?} within 10 s; saw {seen:?}"),
        }
    }
}

#[test]
fn sighup_is_ignored_and_sigusr1_prints_the_counters() {
    // SAFETY: geteuid(2) has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("not root: AF_PACKET on lo needs CAP_NET_RAW; skipped");
        return;
    }
    let control = collector();
    let dir = std::env::temp_dir().join(format!("dta-signals-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("translator.toml");
    std::fs::write(
        &config,
        format!(
            "[io]\nkind = \"af_packet\"\nports = [\"lo\"]\n\n[workers]\ncount = 1\n\n\
             [[collectors]]\ncontrol = \"{control}\"\ntoken = \"t\"\n\n\
             [local]\nip = [127, 0, 0, 3]\n"
        ),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_dta-translator"))
        .args(["run", "--config"])
        .arg(&config)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let child = Kill(child);
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    wait_for(&lines, "translator running");
    let mut child = child;
    kill(&child.0, libc::SIGHUP);
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        child.0.try_wait().unwrap().is_none(),
        "SIGHUP killed the translator"
    );
    kill(&child.0, libc::SIGUSR1);
    wait_for(&lines, "dta-translator summary");
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        child.0.try_wait().unwrap().is_none(),
        "SIGUSR1 killed the translator"
    );
    // SIGTERM still stops it, in order, with its summary.
    kill(&child.0, libc::SIGTERM);
    wait_for(&lines, "dta-translator summary");
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(st) = child.0.try_wait().unwrap() {
            break st;
        }
        assert!(Instant::now() < deadline, "no exit within 10 s of SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status}");
    let _ = std::fs::remove_dir_all(&dir);
}
