//! `dta-report dart` end to end: two network namespaces joined by veths, `dta-collector serve --backend
//! soft` on one side, the DART command on the other, and every key read back through the collector's HTTP
//! query.
//!
//! ```text
//!  dart<pid>r                                 dart<pid>c
//!  r0 198.18.3.10 ──────── veth ──────── c0 198.18.3.2 (02:00:00:00:00:02)  [dta-collector, soft]
//!  rm 198.19.3.10 ──────── veth ──────── cm 198.19.3.2 (control, HTTP)
//! ```
//!
//! Needs root (namespaces, AF_PACKET): without it the test prints SKIP, unless DTA_REQUIRE_NETNS=1, which
//! makes it fail instead. A watchdog kills everything, removes the namespaces and fails the process if the
//! test overruns; on any other exit the guards clean up.

use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dta_e2e::bins::bin;
use dta_e2e::http::get_json;
use dta_e2e::netns::{enter_and_run, Netns};
use dta_e2e::procs::Proc;
use dta_protocol::layout::KeyWriteGeometry;

/// `ip args`, with the error as text.
fn ip(args: &[&str]) -> Res<()> {
    dta_e2e::netns::ip(args).map_err(|e| format!("{e:#}"))
}

const REPORT: &str = env!("CARGO_BIN_EXE_dta-report");
const TOKEN: &str = "dart-token";
const SLOTS: u64 = 65536;
const REDUNDANCY: u8 = 2;
const KEYS: usize = 2000;
const REWRITES: usize = 400;
/// The whole namespace test, collector start to last query.
const LIMIT: Duration = Duration::from_secs(240);

type Res<T> = Result<T, String>;

/// The two namespaces (deleted with their veths when dropped): the e2e harness's namespaces, wired here.
struct Net {
    reporter: Netns,
    collector: Netns,
}

fn create_net(r: &str, c: &str) -> Res<Net> {
    for n in [r, c] {
        let _ = ip(&["netns", "del", n]); // a killed earlier run with the same PID
    }
    let wired = || -> anyhow::Result<Net> {
        let net = Net {
            reporter: Netns::create(r)?,
            collector: Netns::create(c)?,
        };
        let rep = &net.reporter;
        rep.ip(&[
            "link", "add", "r0", "type", "veth", "peer", "name", "c0", "netns", c,
        ])?;
        rep.ip(&[
            "link", "add", "rm", "type", "veth", "peer", "name", "cm", "netns", c,
        ])?;
        rep.ip(&["link", "set", "r0", "address", "02:00:00:00:00:0a"])?;
        net.collector
            .ip(&["link", "set", "c0", "address", "02:00:00:00:00:02"])?;
        for (ns, dev, addr) in [
            (rep, "r0", "198.18.3.10/24"),
            (rep, "rm", "198.19.3.10/24"),
            (&net.collector, "c0", "198.18.3.2/24"),
            (&net.collector, "cm", "198.19.3.2/24"),
        ] {
            ns.ip(&["addr", "add", addr, "dev", dev])?;
            ns.ip(&["link", "set", dev, "up"])?;
        }
        Ok(net)
    };
    wired().map_err(|e| format!("{e:#}"))
}

/// Removes the scratch directory on drop.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A child process killed on drop.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Disarms the watchdog when dropped.
struct Disarm(Arc<AtomicBool>);

impl Drop for Disarm {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// After `limit`, kills the children, deletes the namespaces and the scratch directory, and fails the
/// process: a hung test must neither hang the suite nor leave namespaces behind. Its stderr is written
/// directly (the harness would not show `eprintln!` of a process that exits).
fn watchdog(
    limit: Duration,
    pids: Arc<Mutex<Vec<u32>>>,
    netns: Vec<String>,
    dir: PathBuf,
) -> Disarm {
    let disarm = Arc::new(AtomicBool::new(false));
    let flag = disarm.clone();
    std::thread::spawn(move || {
        let end = Instant::now() + limit;
        while Instant::now() < end {
            if flag.load(Ordering::Relaxed) {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let mut err = std::io::stderr();
        let _ = writeln!(
            err,
            "WATCHDOG: dart_cli exceeded {limit:?}; cleaning up and failing"
        );
        if let Ok(text) = std::fs::read_to_string(dir.join("collector.log")) {
            let lines: Vec<&str> = text.lines().collect();
            for l in &lines[lines.len().saturating_sub(30)..] {
                let _ = writeln!(err, "collector: {l}");
            }
        }
        if let Ok(v) = pids.lock() {
            for &pid in v.iter() {
                // SAFETY: kill(2) on the PIDs of our own children.
                unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            }
        }
        for n in &netns {
            let _ = ip(&["netns", "del", n]);
        }
        let _ = std::fs::remove_dir_all(&dir);
        std::process::exit(1);
    });
    Disarm(disarm)
}

/// `KEYS` keys whose `REDUNDANCY` copies share no slot with any other key's, so that every key must be
/// found exactly (a collision would be the placement's doing, not DART's).
fn keys() -> Vec<u32> {
    let g = KeyWriteGeometry::new(SLOTS, 8, 4).expect("geometry");
    let mut used = HashSet::new();
    let mut out = Vec::new();
    let mut k = 1u32;
    while out.len() < KEYS {
        let slots: Vec<u64> = (0..REDUNDANCY).map(|n| g.slot(k, n)).collect();
        let distinct: HashSet<_> = slots.iter().collect();
        if distinct.len() == slots.len() && slots.iter().all(|s| !used.contains(s)) {
            used.extend(slots);
            out.push(k);
        }
        k = k.wrapping_add(7919);
    }
    out
}

/// The writes file and the value each key must end with.
fn writes_file(keys: &[u32]) -> (String, BTreeMap<u32, String>) {
    let mut text = String::from("# dart_cli: <key> <data-hex>\n\n");
    let mut want = BTreeMap::new();
    let half = keys.len() / 2;
    let mut line = |text: &mut String, key: u32, v: u32| {
        let hex = format!("{v:08x}");
        text.push_str(&format!("{key} {hex}\n"));
        want.insert(key, hex);
    };
    for (i, &k) in keys.iter().enumerate() {
        line(&mut text, k, k.wrapping_mul(3).wrapping_add(1));
        if i == half {
            // Rewrites of keys written long before (the window has moved on), each with a new value.
            text.push_str("   # rewrites\n");
            for &k in &keys[..REWRITES / 2] {
                line(&mut text, k, !k);
            }
        }
    }
    // Rewrites of keys written just before, some of them still in flight.
    for &k in &keys[keys.len() - REWRITES / 2..] {
        line(&mut text, k, k ^ 0x5a5a_5a5a);
    }
    (text, want)
}

fn collector_config() -> String {
    format!(
        r#"[collector]
mac = "02:00:00:00:00:02"
ip = "198.18.3.2"
interface = "c0"
max_dest_rd_atomic = 16
path_mtu = 1024

[control]
bind = "198.19.3.2:40050"
token = "{TOKEN}"

[http]
bind = "198.19.3.2:40060"

[[region]]
kind = "key_write"
slots = {SLOTS}
entry_size = 8
n_max = 4
"#
    )
}

/// Runs `dta-report dart` in namespace `ns`, sending on `interface`; returns (success, stdout, stderr).
fn run_dart(
    ns: &str,
    dir: &Path,
    token: &str,
    interface: &str,
    writes: &Path,
    pids: &Mutex<Vec<u32>>,
) -> Res<(bool, String, String)> {
    let (out_path, err_path) = (dir.join("dart.out"), dir.join("dart.err"));
    let out = std::fs::File::create(&out_path).map_err(|e| e.to_string())?;
    let err = std::fs::File::create(&err_path).map_err(|e| e.to_string())?;
    let child = Command::new("ip")
        .args(["netns", "exec", ns, REPORT, "dart"])
        .args(["--control", "198.19.3.2:40050", "--token", token])
        .args(["--interface", interface, "--ip", "198.18.3.10"])
        .args(["--redundancy", &REDUNDANCY.to_string(), "--timeout-s", "60"])
        .arg("--writes")
        .arg(writes)
        .env(
            "RUST_LOG",
            std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into()),
        )
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("starting dta-report: {e}"))?;
    if let Ok(mut v) = pids.lock() {
        v.push(child.id());
    }
    let mut p = Killed(child);
    let deadline = Instant::now() + Duration::from_secs(90);
    let status = loop {
        match p.0.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() > deadline => {
                return Err("dta-report dart did not end within 90 s".into())
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(format!("waiting for dta-report: {e}")),
        }
    };
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    Ok((status.success(), read(&out_path), read(&err_path)))
}

fn netns_test() -> Res<()> {
    let require = std::env::var("DTA_REQUIRE_NETNS").as_deref() == Ok("1");
    let pid = std::process::id();
    let (r, c) = (format!("dart{pid}r"), format!("dart{pid}c"));
    let net = match create_net(&r, &c) {
        Ok(n) => n,
        Err(e) if require => {
            return Err(format!(
                "DTA_REQUIRE_NETNS=1 but the test network cannot be created: {e}"
            ))
        }
        Err(e) => {
            eprintln!("SKIP: cannot create network namespaces (needs root and iproute2): {e}");
            return Ok(());
        }
    };
    let collector = bin("dta-collector").map_err(|e| format!("{e:#}"))?;
    let dir = std::env::temp_dir().join(format!("dta-dart-cli-{pid}"));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let scratch = Scratch(dir.clone());
    let pids = Arc::new(Mutex::new(Vec::new()));
    let _watchdog = watchdog(LIMIT, pids.clone(), vec![r.clone(), c.clone()], dir.clone());

    let cfg = dir.join("collector.toml");
    std::fs::write(&cfg, collector_config()).map_err(|e| e.to_string())?;
    let cfg = cfg.to_str().ok_or("scratch path")?;
    let mut collector_proc = Proc::spawn(
        "collector",
        net.collector.name(),
        &collector,
        &["serve", "--backend", "soft", "--config", cfg],
        &dir.join("collector.log"),
    )
    .map_err(|e| format!("{e:#}"))?;
    if let Ok(mut v) = pids.lock() {
        v.push(collector_proc.pid());
    }
    let collector_log = || std::fs::read_to_string(dir.join("collector.log")).unwrap_or_default();
    if let Err(e) = collector_proc.wait_line("control listening", Duration::from_secs(30)) {
        return Err(format!(
            "the collector did not start: {e:#}\n{}",
            collector_log()
        ));
    }

    let keys = keys();
    let (text, want) = writes_file(&keys);
    let n_writes = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.trim().starts_with('#'))
        .count();
    assert_eq!(n_writes, KEYS + REWRITES);
    let writes = dir.join("writes.txt");
    std::fs::write(&writes, text).map_err(|e| e.to_string())?;

    // A wrong token is refused, with the collector's reason.
    let (ok, _, err) = run_dart(&r, &dir, "wrong-token", "r0", &writes, &pids)?;
    if ok || !err.contains("refused us") || !err.contains("wrong token") {
        return Err(format!("a wrong token was not refused clearly:\n{err}"));
    }

    let started = Instant::now();
    let (ok, out, err) = run_dart(&r, &dir, TOKEN, "r0", &writes, &pids)?;
    let took = started.elapsed();
    if !ok {
        return Err(format!(
            "dta-report dart failed:\n{err}\n--- collector ---\n{}",
            collector_log()
        ));
    }
    let summary = out
        .lines()
        .find(|l| l.starts_with("dart done:"))
        .ok_or_else(|| format!("no summary in {out:?} (stderr {err})"))?;
    eprintln!("{summary} (command took {took:?})");
    if !summary.contains(&format!("writes={n_writes} ")) {
        return Err(format!(
            "summary does not count {n_writes} writes: {summary}"
        ));
    }
    let sent: u64 = summary
        .split_whitespace()
        .find_map(|f| f.strip_prefix("frames_sent="))
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("no frames_sent in {summary}"))?;
    if sent < (n_writes * usize::from(REDUNDANCY)) as u64 {
        return Err(format!("fewer frames than WRITEs: {summary}"));
    }

    // Every key, read back through the collector's query API from the collector's namespace.
    let http: SocketAddr = "198.19.3.2:40060".parse().map_err(|e| format!("{e}"))?;
    let wrong = enter_and_run(&c, || {
        let mut wrong = Vec::new();
        for (key, data) in &want {
            let path = format!("/query/keywrite?key={key}&n={REDUNDANCY}");
            let answer = get_json(http, &path);
            match answer {
                Ok(v) if v["outcome"] == "found" && v["data"] == data.as_str() => {}
                Ok(v) => wrong.push(format!("key {key}: want {data}, got {v}")),
                Err(e) => wrong.push(format!("key {key}: {e:#}")),
            }
        }
        wrong
    })
    .map_err(|e| format!("{e:#}"))?;
    if !wrong.is_empty() {
        return Err(format!(
            "{} of {} keys wrong, first: {:?}",
            wrong.len(),
            want.len(),
            &wrong[..wrong.len().min(5)]
        ));
    }
    eprintln!(
        "dart_cli: {} keys ({n_writes} writes) all found with their last value",
        want.len()
    );

    // Frames sent where no responder listens (the management link) are never acknowledged: the QP's
    // retries run out and the command fails saying so.
    let (ok, _, err) = run_dart(&r, &dir, TOKEN, "rm", &writes, &pids)?;
    if ok || !err.contains("retries exhausted") {
        return Err(format!("no clear failure without a responder:\n{err}"));
    }
    eprintln!(
        "dart_cli: without a responder: {}",
        err.lines()
            .find(|l| l.starts_with("Error:"))
            .unwrap_or_default()
    );
    drop(collector_proc);
    drop(scratch);
    drop(net);
    Ok(())
}

#[test]
fn dart_command_writes_every_key_into_a_soft_collector() {
    if let Err(e) = netns_test() {
        panic!("{e}");
    }
}

/// A bad line is named before anything touches the network.
#[test]
fn dart_command_names_a_bad_line() {
    let dir = std::env::temp_dir().join(format!("dta-dart-cli-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let _scratch = Scratch(dir.clone());
    let writes = dir.join("bad.txt");
    std::fs::write(&writes, "# ok\n1 00000001\n2 0000000g\n").expect("write file");
    let out = Command::new(REPORT)
        .args(["dart", "--control", "127.0.0.1:9", "--token", "t"])
        .args(["--interface", "lo", "--ip", "127.0.0.1", "--writes"])
        .arg(&writes)
        .output()
        .expect("running dta-report");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("line 3"), "{err}");
}
