//! The like-for-like baseline: testpmd's io forwarding (a burst received from `net_null`, sent back
//! untouched) through dta-netio, so through the same mbuf pool and burst calls as the translator's runs.
//!
//! testpmd's rate stays the floors' reference. This one says how much of a ratio to it comes from the pool:
//! without hugepages dta-netio packs its mbufs, while DPDK's default pool (testpmd's) puts one at the start
//! of every 4 KiB page, where all of a burst's mbufs share a few L1 sets.

use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use dta_netio::dpdk::{eal_init, register_thread, Port, PortConfig};
use dta_netio::TxBurst;
use serde::Serialize;

/// testpmd's default burst.
const BURST: u16 = 32;

#[derive(Debug, Serialize)]
pub struct IoFwdResult {
    pub secs: f64,
    pub frames: u64,
    pub frames_per_s: f64,
    pub ns_per_frame: f64,
    pub dropped: u64,
}

/// Forwards on one core for `secs`, on the EAL options `eal` (testpmd's).
pub fn run(secs: f64, eal: Vec<String>) -> Result<IoFwdResult> {
    let eal = eal_init(eal).context("rte_eal_init")?;
    let cfg = PortConfig {
        queues: 1,
        max_burst: BURST,
        ..PortConfig::default()
    };
    let (port, mut queues) = Port::open(eal, "net_null0", &cfg).context("open net_null0")?;
    let mut q = queues
        .pop()
        .ok_or_else(|| anyhow!("net_null0 has no queue"))?;
    let worker = std::thread::spawn(move || -> Result<(u64, u64, Duration)> {
        register_thread(eal).context("rte_thread_register")?;
        // The translator's single worker runs on CPU 0 too.
        crate::sys::pin_to_cpu(0);
        let start = Instant::now();
        let end = start + Duration::from_secs_f64(secs);
        let mut frames = 0u64;
        loop {
            // The clock every 256 bursts: testpmd's loop reads none.
            for _ in 0..256 {
                frames += q.reflect_burst() as u64;
            }
            if Instant::now() >= end {
                break;
            }
        }
        Ok((frames, q.tx_stats().dropped, start.elapsed()))
    });
    let (frames, dropped, took) = worker
        .join()
        .map_err(|_| anyhow!("forwarding thread panicked"))??;
    drop(port);
    let s = took.as_secs_f64();
    Ok(IoFwdResult {
        secs: s,
        frames,
        frames_per_s: frames as f64 / s,
        ns_per_frame: s * 1e9 / frames.max(1) as f64,
        dropped,
    })
}

/// Writes a pcap (Ethernet link type) of `count` 64-byte frames that are not DTA: IPv4/UDP to port 53
/// from `count` source ports, what a bump in the wire forwards untouched.
pub fn write_forward_pcap(path: &std::path::Path, count: u32) -> Result<()> {
    use dta_protocol::udp::UdpEndpoints;
    // The classic pcap header: magic, version 2.4, no zone, no accuracy, snaplen 65535, Ethernet.
    let mut out = Vec::new();
    out.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    for word in [0u32, 0, 65535, 1] {
        out.extend_from_slice(&word.to_le_bytes());
    }
    for i in 0..count {
        let ep = UdpEndpoints::new(
            [2, 0, 0, 0, 0, 0x10],
            [2, 0, 0, 0, 0, 0x20],
            [10, 0, 0, 1],
            [10, 0, 1, 1],
            1024 + (i % 60000) as u16,
            53,
        );
        // 64 bytes on the wire less the FCS: 42 bytes of headers and 18 of payload.
        let mut frame = vec![0u8; 60];
        let n = ep
            .emit_frame(&mut frame, &[0u8; 18])
            .map_err(|e| anyhow!("frame {i}: {e}"))?;
        frame.truncate(n);
        for word in [0u32, i, n as u32, n as u32] {
            out.extend_from_slice(&word.to_le_bytes());
        }
        out.extend_from_slice(&frame);
    }
    std::fs::write(path, out).with_context(|| format!("writing {}", path.display()))
}
