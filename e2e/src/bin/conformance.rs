//! `dta-e2e-conformance`: our software RoCEv2 responder judged against Linux Soft-RoCE (rxe), request by
//! request (see `dta_e2e::conformance`).
//!
//! Run as root in a guest whose kernel has `rdma_rxe` (TOOLCHAIN.md, RDMA). It builds, and removes at the
//! end:
//!
//! ```text
//!  init namespace                                     namespace dtaconf
//!  c1 198.18.1.2/24 + rxe1  <- dta-collector ibverbs  t1  (raw port, sends as 198.18.1.1)
//!  c2 (no address)          <- dta-collector soft     t2  (raw port, sends as 198.18.2.1)
//! ```
//!
//! rxe's UDP socket lives in the init namespace, so c1 stays there. 198.18.1.1 is on no kernel interface:
//! the harness answers ARP for it on t1, and a permanent neighbour entry on c1 lets rxe resolve it while
//! the collector's hello handling moves the QP to RTR (when the harness is busy waiting for the welcome).
//! The soft collector's address is on no interface, so the kernel ignores its frames. Control and HTTP
//! ports 40150/40160 (rxe) and 40151/40161 (soft) on 127.0.0.1, apart from the e2e suite's.

use std::fs;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Parser;
use dta_e2e::conformance::{self, cases, wire, Side};
use dta_protocol::MacAddr;

#[derive(Parser)]
#[command(about = "Differential conformance of dta's software RoCEv2 responder against Linux rxe")]
struct Args {
    /// The dta-collector binary (default: next to this one).
    #[arg(long)]
    collector: Option<PathBuf>,
    /// Run only the software responder (no rxe; nothing is judged). For machines without rdma_rxe.
    #[arg(long)]
    soft_only: bool,
    /// Give up (cleaning up) after this many seconds.
    #[arg(long, default_value_t = 300)]
    timeout: u64,
    /// Only the cases whose name contains this.
    #[arg(long)]
    only: Option<String>,
}

const NETNS: &str = "dtaconf";
const RXE: &str = "rxe1";
const TOKEN: &str = "dta-conformance";
const RXE_COLLECTOR_MAC: &str = "02:dc:00:01:00:02";
const RXE_PEER_MAC: [u8; 6] = [0x02, 0xdc, 0, 1, 0, 1];
const SOFT_COLLECTOR_MAC: &str = "02:dc:00:02:00:02";
const SOFT_PEER_MAC: [u8; 6] = [0x02, 0xdc, 0, 2, 0, 1];

fn sh(args: &[&str]) -> Result<()> {
    let (cmd, rest) = args.split_first().context("empty command")?;
    dta_e2e::netns::run(cmd, rest).map(drop)
}

/// Removes what a run creates; every step may fail when the thing is already gone.
fn teardown() {
    for a in [
        &["rdma", "link", "delete", RXE][..],
        &["ip", "link", "del", "c1"],
        &["ip", "link", "del", "c2"],
        &["ip", "netns", "del", NETNS],
    ] {
        let _ = Command::new(a[0])
            .args(&a[1..])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

fn build_network(soft_only: bool) -> Result<()> {
    teardown();
    if !soft_only {
        sh(&["modprobe", "rdma_rxe"])?;
    }
    sh(&["ip", "netns", "add", NETNS])?;
    sh(&["ip", "-n", NETNS, "link", "set", "lo", "up"])?;
    let rxe_peer = MacAddr(RXE_PEER_MAC).to_string();
    let soft_peer = MacAddr(SOFT_PEER_MAC).to_string();
    for (c, cmac, t, tmac) in [
        ("c1", RXE_COLLECTOR_MAC, "t1", rxe_peer.as_str()),
        ("c2", SOFT_COLLECTOR_MAC, "t2", soft_peer.as_str()),
    ] {
        sh(&[
            "ip", "link", "add", c, "address", cmac, "type", "veth", "peer", "name", t, "address",
            tmac,
        ])?;
        // No IPv6 on these links: router solicitations and DAD would be noise on the raw ports.
        for (ns, dev) in [(None, c), (Some(NETNS), t)] {
            let key = format!("net.ipv6.conf.{dev}.disable_ipv6=1");
            if let Some(ns) = ns {
                sh(&["ip", "link", "set", dev, "netns", ns])?;
                sh(&["ip", "netns", "exec", ns, "sysctl", "-qw", &key])?;
                sh(&["ip", "-n", ns, "link", "set", dev, "up"])?;
            } else {
                sh(&["sysctl", "-qw", &key])?;
                sh(&["ip", "link", "set", dev, "up"])?;
            }
        }
    }
    sh(&["ip", "addr", "add", "198.18.1.2/24", "dev", "c1"])?;
    sh(&[
        "ip",
        "neigh",
        "replace",
        "198.18.1.1",
        "lladdr",
        &rxe_peer,
        "dev",
        "c1",
        "nud",
        "permanent",
    ])?;
    if !soft_only {
        sh(&["rdma", "link", "add", RXE, "type", "rxe", "netdev", "c1"])?;
    }
    Ok(())
}

fn collector_config(
    mac: &str,
    ip: &str,
    interface: Option<&str>,
    control: u16,
    http: u16,
) -> String {
    let interface = interface.map_or(String::new(), |i| format!("interface = \"{i}\"\n"));
    format!(
        r#"[collector]
mac = "{mac}"
ip = "{ip}"
{interface}max_dest_rd_atomic = 16
path_mtu = 1024

[control]
bind = "127.0.0.1:{control}"
token = "{TOKEN}"

[http]
bind = "127.0.0.1:{http}"

[[region]]
kind = "append"
id = {list}
entries = {entries}
entry_size = {size}
batch_size = 16
"#,
        list = conformance::LIST_ID,
        entries = conformance::LIST_ENTRIES,
        size = conformance::LIST_ENTRY_SIZE,
    )
}

/// The collectors we started, killed on drop (and by the watchdog).
#[derive(Default)]
struct Children(Vec<Child>);

impl Children {
    fn kill_all(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
        self.0.clear();
    }
}

fn start_collector(
    children: &Mutex<Children>,
    bin: &Path,
    dir: &Path,
    name: &str,
    config: &str,
    backend_args: &[&str],
    control: SocketAddr,
) -> Result<()> {
    let cfg = dir.join(format!("{name}.toml"));
    fs::write(&cfg, config)?;
    let log = fs::File::create(dir.join(format!("{name}.log")))?;
    let child = Command::new(bin)
        .arg("serve")
        .args(backend_args)
        .arg("--config")
        .arg(&cfg)
        .env("RUST_LOG", "info")
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .with_context(|| format!("starting {}", bin.display()))?;
    children
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .0
        .push(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect_timeout(&control, Duration::from_millis(200)).is_err() {
        if Instant::now() > deadline {
            let text = fs::read_to_string(dir.join(format!("{name}.log"))).unwrap_or_default();
            bail!("the {name} collector did not open {control} within 30 s; its log:\n{text}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

fn run(args: &Args, children: &Mutex<Children>, dir: &Path) -> Result<bool> {
    let bin = match &args.collector {
        Some(p) => p.clone(),
        None => std::env::current_exe()?
            .parent()
            .context("executable without a directory")?
            .join("dta-collector"),
    };
    build_network(args.soft_only)?;
    let rxe_control: SocketAddr = "127.0.0.1:40150".parse()?;
    let soft_control: SocketAddr = "127.0.0.1:40151".parse()?;
    if !args.soft_only {
        start_collector(
            children,
            &bin,
            dir,
            "rxe",
            &collector_config(RXE_COLLECTOR_MAC, "198.18.1.2", None, 40150, 40160),
            &["--backend", "ibverbs", "--device", RXE],
            rxe_control,
        )?;
    }
    start_collector(
        children,
        &bin,
        dir,
        "soft",
        &collector_config(SOFT_COLLECTOR_MAC, "198.18.2.2", Some("c2"), 40151, 40161),
        &["--backend", "soft"],
        soft_control,
    )?;
    let (p1, p2) = wire::in_netns(NETNS, || {
        Ok((
            wire::RawPort::open("t1", RXE_PEER_MAC, [198, 18, 1, 1])?,
            wire::RawPort::open("t2", SOFT_PEER_MAC, [198, 18, 2, 1])?,
        ))
    })?;
    let rxe = (!args.soft_only).then_some(Side {
        name: "rxe",
        control: rxe_control,
        http: "127.0.0.1:40160".parse()?,
        token: TOKEN.into(),
        port: p1,
        mac: RXE_PEER_MAC,
        ip: [198, 18, 1, 1],
    });
    let soft = Side {
        name: "soft",
        control: soft_control,
        http: "127.0.0.1:40161".parse()?,
        token: TOKEN.into(),
        port: p2,
        mac: SOFT_PEER_MAC,
        ip: [198, 18, 2, 1],
    };
    if let Some(r) = &rxe {
        r.prepare()?;
    }
    soft.prepare()?;
    let all = cases::all();
    let count = all.len();
    let mut rows = Vec::new();
    for (i, case) in all.into_iter().enumerate() {
        if args
            .only
            .as_ref()
            .is_some_and(|o| !case.name.contains(o.as_str()))
        {
            continue;
        }
        let judge = match &rxe {
            Some(r) => Some(
                r.run(i, &case)
                    .with_context(|| format!("case {} on rxe", case.name))?,
            ),
            None => None,
        };
        let ours = soft
            .run(i, &case)
            .with_context(|| format!("case {} on soft", case.name))?;
        rows.push(conformance::judge(i, count, case, judge, ours));
    }
    print!("{}", conformance::render(&rows));
    if let Ok(c) = fs::read_dir(format!("/sys/class/infiniband/{RXE}/ports/1/hw_counters")) {
        let mut names: Vec<_> = c.flatten().map(|e| e.path()).collect();
        names.sort();
        let counters: Vec<String> = names
            .iter()
            .filter_map(|p| {
                let v = fs::read_to_string(p).ok()?;
                let v = v.trim();
                let name = p.file_name()?.to_string_lossy().into_owned();
                (v != "0").then(|| format!("{name}={v}"))
            })
            .collect();
        println!("\n{RXE} counters: {}", counters.join(" "));
    }
    let bad = rows
        .iter()
        .filter(|r| r.verdict == Some(conformance::Verdict::Different))
        .count();
    if bad > 0 {
        println!("{bad} case(s) differ from rxe without a documented reason");
    }
    Ok(bad == 0)
}

fn main() -> Result<()> {
    let args = Args::parse();
    let dir = std::env::temp_dir().join(format!("dta-conformance-{}", std::process::id()));
    fs::create_dir_all(&dir)?;
    let children = Arc::new(Mutex::new(Children::default()));
    let done = Arc::new(AtomicBool::new(false));
    {
        // The watchdog: a hung collector or a lost frame must not hold a VM run forever.
        let (children, done, limit) = (children.clone(), done.clone(), args.timeout);
        std::thread::spawn(move || {
            let end = Instant::now() + Duration::from_secs(limit);
            while Instant::now() < end {
                if done.load(Ordering::Relaxed) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            eprintln!("dta-e2e-conformance: no result after {limit} s; cleaning up");
            children
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .kill_all();
            teardown();
            std::process::exit(3);
        });
    }
    let result = run(&args, &children, &dir);
    done.store(true, Ordering::Relaxed);
    children
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .kill_all();
    teardown();
    match result {
        Ok(true) => {
            let _ = fs::remove_dir_all(&dir);
            Ok(())
        }
        Ok(false) => {
            let _ = fs::remove_dir_all(&dir);
            std::process::exit(1)
        }
        Err(e) => {
            for name in ["rxe", "soft"] {
                if let Ok(t) = fs::read_to_string(dir.join(format!("{name}.log"))) {
                    eprintln!("--- {name} collector log ---\n{t}");
                }
            }
            let _ = fs::remove_dir_all(&dir);
            Err(e)
        }
    }
}
