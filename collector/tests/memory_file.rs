//! `[collector] memory_file`: the regions live in a shared file mapping, so a collector killed (SIGKILL,
//! as a crash) and started again answers the same queries and tells a translator where each Append list
//! stands; a restart with another layout is refused with the difference, and `--fresh-memory` starts
//! over. Writes arrive as RoCE WRITEs on the loopback interface through the software responder.
#![cfg(feature = "server")]

mod process;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use dta_collector::client;
use dta_netio::{AfPacket, AfPacketConfig, FrameBatch, TxBurst};
use dta_protocol::control::{AppendHead, Welcome};
use dta_protocol::layout::{AppendGeometry, Geometry, Region};
use dta_protocol::roce::FrameRepr;
use dta_protocol::udp::UdpEndpoints;
use process::{example, hello, serve};

/// A scratch directory for the config and the memory file, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Self {
        let d = std::env::temp_dir().join(format!("dta-memfile-serve-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }

    /// The example config on 127.0.0.1 with the memory file, `append_entries` entries in list 3.
    fn config(&self, name: &str, append_entries: u32) -> String {
        let memory = self.0.join("regions");
        let text = std::fs::read_to_string(example())
            .unwrap()
            .replace("ip = \"198.18.0.2\"", "ip = \"127.0.0.1\"")
            .replace(
                "path_mtu = 1024\n",
                &format!("path_mtu = 1024\nmemory_file = \"{}\"\n", memory.display()),
            )
            .replace(
                "id = 3\nentries = 4096\n",
                &format!("id = 3\nentries = {append_entries}\n"),
            );
        assert!(
            text.contains("memory_file") && text.contains(&format!("entries = {append_entries}"))
        );
        let path = self.0.join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_string()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn region(w: &Welcome, kind: fn(&Geometry) -> bool) -> Region {
    *w.regions.iter().find(|r| kind(&r.geometry)).unwrap()
}

/// Sends WRITEs `(va, rkey, payload)` on `qp` from PSN 0x20 on, each once, to the welcome's MAC.
fn write_all(sender: &mut AfPacket, w: &Welcome, writes: &[(u64, u32, Vec<u8>)]) {
    let ep = UdpEndpoints::new([0; 6], w.mac, [127, 0, 0, 1], [127, 0, 0, 1], 49152, 4791);
    let mut batch = FrameBatch::new(writes.len(), 2048);
    for (i, (va, rkey, payload)) in writes.iter().enumerate() {
        let f = FrameRepr::write_only(ep, w.qps[0].qpn, 0x20 + i as u32, true, *va, *rkey, payload);
        let mut frame = vec![0u8; f.buffer_len()];
        f.emit(&mut frame).unwrap();
        batch.push(&frame).unwrap();
    }
    assert_eq!(sender.send_burst(&batch).unwrap(), writes.len());
}

fn get(http: &str, path: &str) -> String {
    let (status, body) = client::get(http, path).unwrap();
    assert_eq!(status, 200, "{path}: {body}");
    body
}

/// Polls `path` until its answer contains `want`, for at most 10 s.
fn wait_for(http: &str, path: &str, want: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let body = get(http, path);
        if body.contains(want) {
            return body;
        }
        assert!(Instant::now() < deadline, "{path} never had {want}: {body}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

const KW: &str = "/query/keywrite?key=42&n=1";
const FOUND: &str = r#"{"outcome":"found","data":"cafef00d","votes":1,"slots_read":1}"#;

#[test]
fn a_killed_collector_comes_back_with_its_regions() {
    // Sending needs CAP_NET_RAW; without it this test says so and checks nothing.
    let mut sender = match AfPacket::open("lo", &AfPacketConfig::default()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("skipping: cannot open an AF_PACKET socket on lo ({e})");
            return;
        }
    };
    let dir = Scratch::new();
    let config = dir.config("collector.toml", 4096);
    let (append_before, first_rkeys) = {
        let mut s = serve(&config, &["--interface", "lo"]);
        let w = hello(&s.control);
        assert_eq!(w.append_heads, vec![AppendHead { list: 3, head: 0 }]);
        let kw = region(&w, |g| matches!(g, Geometry::KeyWrite(_)));
        let Geometry::KeyWrite(g) = kw.geometry else {
            unreachable!()
        };
        let ap = region(&w, |g| matches!(g, Geometry::Append(_)));
        let Geometry::Append(ag) = ap.geometry else {
            unreachable!()
        };
        let mut entry = [0u8; 8];
        g.encode_entry(42, &[0xca, 0xfe, 0xf0, 0x0d], &mut entry)
            .unwrap();
        // A Key-Write entry, two Append entries and the list's head word after them, as a translator
        // writes a batch and then its head.
        write_all(
            &mut sender,
            &w,
            &[
                (kw.va + g.offset(42, 0), kw.rkey, entry.to_vec()),
                (ap.va + ag.entry_offset(0), ap.rkey, vec![1, 2, 3, 4]),
                (ap.va + ag.entry_offset(1), ap.rkey, vec![5, 6, 7, 8]),
                (ap.va, ap.rkey, AppendGeometry::encode_head(2).to_vec()),
            ],
        );
        assert_eq!(wait_for(&s.http, KW, "found"), FOUND);
        let list = wait_for(&s.http, "/query/append?list=3", "\"head\":2");
        // A crash: no stop, no clean-up.
        s.child.kill().unwrap();
        s.child.wait().unwrap();
        (list, [kw.rkey, ap.rkey])
    };
    assert_eq!(
        append_before,
        r#"{"head":2,"first":0,"entries":["01020304","05060708"],"overrun":0,"next_tail":2}"#
    );

    let s = serve(&config, &["--interface", "lo"]);
    // Nothing was written since the restart: the answers are the memory file's.
    assert_eq!(get(&s.http, KW), FOUND);
    assert_eq!(get(&s.http, "/query/append?list=3"), append_before);
    let w = hello(&s.control);
    // The translator continues list 3 at entry 2 rather than overwriting entry 0.
    assert_eq!(w.append_heads, vec![AppendHead { list: 3, head: 2 }]);
    let rkeys = [
        region(&w, |g| matches!(g, Geometry::KeyWrite(_))).rkey,
        region(&w, |g| matches!(g, Geometry::Append(_))).rkey,
    ];
    assert_ne!(rkeys, first_rkeys, "a restart hands out new R_Keys");
    drop(s);

    // Another layout is refused, naming the difference, and the file keeps its contents.
    let other = dir.config("other.toml", 8192);
    let out = Command::new(env!("CARGO_BIN_EXE_dta-collector"))
        .args(["serve", "--backend", "soft", "--config", &other])
        .args(["--http", "127.0.0.1:0", "--control", "127.0.0.1:0"])
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains(
            "it holds regions laid out for another configuration: region 4 of the layout: the file \
             holds append 3 {\"kind\":\"append\",\"entries\":4096,\"entry_size\":4,\"batch_size\":16}, \
             the configuration has append 3 {\"kind\":\"append\",\"entries\":8192,\"entry_size\":4,\
             \"batch_size\":16}; start with --fresh-memory"
        ),
        "{err}"
    );
    let s = serve(&config, &[]);
    assert_eq!(get(&s.http, KW), FOUND);
    drop(s);

    // Told to, the other layout starts from zeroed regions.
    let s = serve(&other, &["--fresh-memory"]);
    assert_eq!(get(&s.http, KW), r#"{"outcome":"empty","matching":0}"#);
    assert_eq!(
        hello(&s.control).append_heads,
        vec![AppendHead { list: 3, head: 0 }]
    );
}
