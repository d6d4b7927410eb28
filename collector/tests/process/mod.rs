//! `dta-collector serve` as a child process for the tests that need the whole daemon: started with
//! ephemeral HTTP and control ports, its printed addresses read back, killed on drop.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use dta_protocol::control::{
    CollectorMessage, Hello, RequesterQp, TranslatorMessage, Welcome, CONTROL_VERSION,
};

/// The example configuration.
pub fn example() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/examples/collector.toml").to_string()
}

pub struct Serve {
    /// The process.
    pub child: Child,
    /// HTTP API address.
    pub http: String,
    /// Control address.
    pub control: String,
    /// Its further stdout lines.
    pub lines: mpsc::Receiver<String>,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `serve --backend soft --config <config>` with `extra` arguments.
pub fn serve(config: &str, extra: &[&str]) -> Serve {
    let mut child = Command::new(env!("CARGO_BIN_EXE_dta-collector"))
        .args(["serve", "--backend", "soft", "--config", config])
        .args(["--http", "127.0.0.1:0", "--control", "127.0.0.1:0"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let (mut http, mut control) = (None, None);
    let deadline = Instant::now() + Duration::from_secs(20);
    while http.is_none() || control.is_none() {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = match rx.recv_timeout(left) {
            Ok(l) => l,
            Err(_) => {
                let _ = child.kill();
                panic!("serve did not print its addresses in time");
            }
        };
        let addr = line.rsplit(' ').next().unwrap().to_string();
        if line.starts_with("http ") {
            http = Some(addr);
        } else if line.starts_with("control ") {
            control = Some(addr);
        }
    }
    Serve {
        child,
        http: http.unwrap(),
        control: control.unwrap(),
        lines: rx,
    }
}

impl Serve {
    /// Its resident memory, from /proc.
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .expect("VmRSS in /proc/PID/status")
    }
}

/// A translator's hello (QP 0x11 from PSN 0x20, the example's token) to the control port at `control`:
/// the welcome it gets.
pub fn hello(control: &str) -> Welcome {
    let mut s = TcpStream::connect(control).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let h = TranslatorMessage::Hello(Hello {
        version: CONTROL_VERSION,
        token: "change-me".into(),
        mac: [0; 6],
        ip: [127, 0, 0, 1],
        gid: [0; 16],
        qps: vec![RequesterQp {
            qpn: 0x11,
            start_psn: 0x20,
        }],
    });
    let mut line = serde_json::to_string(&h).unwrap();
    line.push('\n');
    s.write_all(line.as_bytes()).unwrap();
    let mut answer = String::new();
    BufReader::new(s).read_line(&mut answer).unwrap();
    match serde_json::from_str(&answer).unwrap() {
        CollectorMessage::Welcome(w) => w,
        other => panic!("{other:?}"),
    }
}
