//! TX/RX loop on a DPDK port through the burst traits, for benchmarks: sends bursts of equal frames and
//! receives them back (net_ring loops TX to RX), and prints frames per second.
//!
//! ```text
//! cargo run --release -p dta-netio --example dpdk_loop -- [--secs S] [--size BYTES] [--burst N] [--port NAME] [--in-place] [-- EAL args]
//! ```
//! `--in-place` builds frames straight into mbufs and reads them where they lie (no batch copies).
//! Without EAL arguments it runs on `net_ring0` without hugepages.

use std::time::{Duration, Instant};

use dta_netio::dpdk::{eal_init, Port, PortConfig};
use dta_netio::{FrameBatch, NetioError, RxBurst, TxBurst};

struct Args {
    secs: f64,
    size: usize,
    burst: usize,
    port: String,
    in_place: bool,
    eal: Vec<String>,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        secs: 2.0,
        size: 64,
        burst: 32,
        port: "net_ring0".into(),
        in_place: false,
        eal: vec![],
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--secs" => {
                a.secs = value("--secs")?
                    .parse()
                    .map_err(|e| format!("--secs: {e}"))?
            }
            "--size" => {
                a.size = value("--size")?
                    .parse()
                    .map_err(|e| format!("--size: {e}"))?
            }
            "--burst" => {
                a.burst = value("--burst")?
                    .parse()
                    .map_err(|e| format!("--burst: {e}"))?
            }
            "--port" => a.port = value("--port")?,
            "--in-place" => a.in_place = true,
            "--" => a.eal = it.by_ref().collect(),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if !(14..=2048).contains(&a.size) || a.burst == 0 || a.burst > 512 {
        return Err("--size must be within 14..=2048 and --burst within 1..=512".into());
    }
    if a.eal.is_empty() {
        a.eal = "-l 0 --no-huge --no-shconf -m 256 --no-pci --vdev=net_ring0 --log-level=warning --no-telemetry"
            .split(' ')
            .map(String::from)
            .collect();
    }
    Ok(a)
}

fn run(a: &Args) -> Result<(), NetioError> {
    let eal = eal_init(a.eal.clone())?;
    let cfg = PortConfig {
        max_burst: a.burst as u16,
        ..PortConfig::default()
    };
    let (port, mut queues) = Port::open(eal, &a.port, &cfg)?;
    let q = &mut queues[0];
    let mut out = FrameBatch::new(a.burst, 2048);
    let frame: Vec<u8> = (0..a.size).map(|i| i as u8).collect();
    while out.free() > 0 {
        out.push(&frame)?;
    }
    let mut inb = FrameBatch::new(a.burst, 2048);
    let (mut sent, mut received) = (0u64, 0u64);
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(a.secs);
    // Check the clock once per 1024 bursts: a clock read per burst would show up in the numbers.
    'outer: loop {
        for _ in 0..1024 {
            if a.in_place {
                sent += q.send_in_place(a.burst, |_, room| {
                    room[..frame.len()].copy_from_slice(&frame);
                    frame.len()
                }) as u64;
                received += q.recv_in_place(|f| {
                    std::hint::black_box(f[0]);
                }) as u64;
            } else {
                sent += q.send_burst(&out)? as u64;
                inb.clear();
                received += q.recv_burst(&mut inb)? as u64;
            }
        }
        if Instant::now() >= end {
            break 'outer;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let s = port.stats()?;
    println!(
        "{}{}: {} B frames, bursts of {}: sent {sent}, received {received} in {secs:.2} s = {:.2} Mpps ({:.2} Gbit/s of frames); tx dropped {}, device rx {} tx {}",
        a.port,
        if a.in_place { " (in place)" } else { "" },
        a.size,
        a.burst,
        received as f64 / secs / 1e6,
        received as f64 * a.size as f64 * 8.0 / secs / 1e9,
        q.tx_stats().dropped,
        s.rx_packets,
        s.tx_packets
    );
    Ok(())
}

fn main() {
    let args = parse().unwrap_or_else(|e| {
        eprintln!("dpdk_loop: {e}");
        std::process::exit(2);
    });
    if let Err(e) = run(&args) {
        eprintln!("dpdk_loop: {e}");
        std::process::exit(1);
    }
}
