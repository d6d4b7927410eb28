//! The baseline users run today: a CPU collector in Rust done the fast way. A UDP socket read with
//! `recvmmsg` in batches of 64, each report parsed with dta-protocol, then either inserted into a hash table
//! keyed like Key-Write (key -> data, a fast multiplicative hash, capacity reserved up front) or appended to a
//! pre-allocated append-only log whose tail is published with a release store (Confluo's design). A sender
//! thread on the other core pushes the same reports over loopback with `sendmmsg`.
//!
//! For INT (`int-v05`), the receiver is what INTCollector-style collectors do per report: parse the v0.5
//! report and its inner packet (dta-protocol's parsers, the translator's own), then update the flow's entry
//! in a flow table keyed by the 5-tuple (its path and per-hop latency and queue).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use dta_protocol::dta::{Body, ReportRepr};
use dta_protocol::int::inner::{FlowKey, InnerRepr, IntDetect, Start};
use dta_protocol::int::v05;
use serde::Serialize;

use crate::sys::{pin_to_cpu, process_cpu_ns, thread_cpu_ns, vm_hwm_kib};
use crate::workloads::{self, Mode};

const BATCH: usize = 64;
const SLOT: usize = 2048;
/// Distinct reports the sender cycles through: 2^18 keys, so the table outgrows L2 as a real one does.
const DISTINCT: usize = 1 << 18;

/// One multiply per key: the fastest hash that still spreads sequential keys (FxHash's idea).
#[derive(Default)]
struct MulHasher(u64);

impl Hasher for MulHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
    fn write_u32(&mut self, v: u32) {
        self.0 = (u64::from(v)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Confluo-style append-only log: writers copy into pre-allocated memory, then publish the tail.
struct Log {
    buf: Vec<u8>,
    tail: AtomicU64,
}

impl Log {
    fn append(&mut self, entry: &[u8]) {
        let t = self.tail.load(Ordering::Relaxed) as usize;
        let at = t % (self.buf.len() - entry.len());
        self.buf[at..at + entry.len()].copy_from_slice(entry);
        self.tail.store((t + entry.len()) as u64, Ordering::Release);
    }
}

#[derive(Debug, Serialize)]
pub struct BaselineResult {
    pub store: String,
    pub secs: f64,
    pub sent: u64,
    pub received: u64,
    pub parse_errors: u64,
    pub reports_per_s: f64,
    /// Receiver thread CPU (user + system) per report.
    pub receiver_cpu_ns_per_report: f64,
    /// Whole process (sender included: on loopback the sender's syscall also runs the delivery) per report.
    pub process_cpu_ns_per_report: f64,
    /// Reports per second per core of receiver CPU: 1e9 / receiver_cpu_ns_per_report.
    pub reports_per_s_per_core: f64,
    pub table_entries: usize,
    pub vm_hwm_kib: u64,
}

/// One flow of the INT flow table: each hop's switch, latency and queue occupancy.
#[derive(Debug, Clone, Copy, Default)]
struct IntFlow {
    hops: [(u32, u32, u32); 8],
    seen: u8,
}

/// Parses an INT v0.5 report and updates its flow's entry; false when it does not parse.
fn int_insert(
    table: &mut HashMap<FlowKey, IntFlow, BuildHasherDefault<MulHasher>>,
    payload: &[u8],
) -> bool {
    let Ok(r) = v05::ReportRepr::parse(payload) else {
        return false;
    };
    let v05::Body::Local {
        common,
        queue_occupancy,
        eg_tstamp,
    } = r.body
    else {
        return false;
    };
    let Ok(inner) = InnerRepr::parse(Start::Ethernet, r.inner, IntDetect::default()) else {
        return false;
    };
    // The same hop rule as the translator's default: initial TTL 64, decremented by the reporting hop.
    let hop = 64u8.wrapping_sub(inner.ttl);
    if !(1..=8).contains(&hop) {
        return false;
    }
    let f = table.entry(inner.flow).or_default();
    f.hops[usize::from(hop - 1)] = (
        common.switch_id,
        eg_tstamp.wrapping_sub(r.ig_tstamp),
        queue_occupancy,
    );
    f.seen |= 1 << (hop - 1);
    true
}

fn recv_loop(sock: UdpSocket, stop: Arc<AtomicBool>, int: bool) -> Result<(u64, u64, u64, usize)> {
    pin_to_cpu(0);
    let fmt = workloads::format();
    let mut table: HashMap<u32, [u8; 4], BuildHasherDefault<MulHasher>> =
        HashMap::with_capacity_and_hasher(DISTINCT * 2, Default::default());
    let mut flows: HashMap<FlowKey, IntFlow, BuildHasherDefault<MulHasher>> =
        HashMap::with_capacity_and_hasher(DISTINCT, Default::default());
    let mut log = Log {
        buf: vec![0u8; 256 << 20],
        tail: AtomicU64::new(0),
    };
    let mut bufs = vec![[0u8; SLOT]; BATCH];
    let mut iovs: Vec<libc::iovec> = bufs
        .iter_mut()
        .map(|b| libc::iovec {
            iov_base: b.as_mut_ptr().cast(),
            iov_len: SLOT,
        })
        .collect();
    // SAFETY: mmsghdr is plain data; zeroed is a valid empty header.
    let mut msgs: Vec<libc::mmsghdr> = (0..BATCH).map(|_| unsafe { std::mem::zeroed() }).collect();
    for (m, iov) in msgs.iter_mut().zip(iovs.iter_mut()) {
        m.msg_hdr.msg_iov = iov;
        m.msg_hdr.msg_iovlen = 1;
    }
    let (mut received, mut errors) = (0u64, 0u64);
    let cpu0 = thread_cpu_ns();
    while !stop.load(Ordering::Relaxed) {
        // SAFETY: msgs point at live iovecs over live buffers, BATCH entries.
        let n = unsafe {
            libc::recvmmsg(
                sock.as_raw_fd(),
                msgs.as_mut_ptr(),
                BATCH as u32,
                libc::MSG_WAITFORONE,
                std::ptr::null_mut(),
            )
        };
        if n < 0 {
            // The receive timeout: check the stop flag and wait again.
            continue;
        }
        for (m, b) in msgs[..n as usize].iter().zip(bufs.iter()) {
            let payload = &b[..m.msg_len as usize];
            if int {
                if !int_insert(&mut flows, payload) {
                    errors += 1;
                }
                continue;
            }
            match ReportRepr::parse(payload, &fmt) {
                Ok(r) => match r.body {
                    Body::KeyWrite(kw) => {
                        let mut v = [0u8; 4];
                        v.copy_from_slice(&kw.data[..4]);
                        table.insert(kw.key, v);
                    }
                    Body::Append(a) => log.append(a.data),
                    _ => errors += 1,
                },
                Err(_) => errors += 1,
            }
        }
        received += n as u64;
    }
    let cpu = thread_cpu_ns() - cpu0;
    std::hint::black_box(&log.buf[..16]);
    Ok((received, errors, cpu, table.len() + flows.len()))
}

fn send_loop(sock: UdpSocket, payloads: Vec<Vec<u8>>, stop: Arc<AtomicBool>) -> u64 {
    pin_to_cpu(1);
    let mut iovs: Vec<libc::iovec> = payloads
        .iter()
        .map(|p| libc::iovec {
            iov_base: p.as_ptr().cast_mut().cast(),
            iov_len: p.len(),
        })
        .collect();
    // SAFETY: plain data, zeroed is valid.
    let mut msgs: Vec<libc::mmsghdr> = (0..payloads.len())
        .map(|_| unsafe { std::mem::zeroed() })
        .collect();
    for (m, iov) in msgs.iter_mut().zip(iovs.iter_mut()) {
        m.msg_hdr.msg_iov = iov;
        m.msg_hdr.msg_iovlen = 1;
    }
    let mut sent = 0u64;
    let mut pos = 0;
    while !stop.load(Ordering::Relaxed) {
        // SAFETY: BATCH headers from pos are within msgs (DISTINCT is a multiple of BATCH); connected socket.
        let n =
            unsafe { libc::sendmmsg(sock.as_raw_fd(), msgs[pos..].as_mut_ptr(), BATCH as u32, 0) };
        if n > 0 {
            sent += n as u64;
            pos = (pos + n as usize) % (payloads.len() - BATCH);
        }
    }
    sent
}

pub fn run(mode: Mode, secs: f64) -> Result<BaselineResult> {
    let store = match mode {
        Mode::KeyWrite { n: 1 } => "hash table (Key-Write keyed)",
        Mode::Append { .. } => "append-only log (Confluo-like)",
        Mode::Int => "INT flow table (INTCollector-like: report + inner parse, 5-tuple keyed)",
        _ => bail!("the baseline takes keywrite-n1, append-b1 or int-v05"),
    };
    let int = mode == Mode::Int;
    let payloads: Vec<Vec<u8>> = (0..DISTINCT)
        .map(|i| workloads::report_payload(mode, i))
        .collect::<Result<_>>()?;
    let rx = UdpSocket::bind("127.0.0.1:0").context("bind receiver")?;
    rx.set_read_timeout(Some(Duration::from_millis(50)))?;
    let big: libc::c_int = 64 << 20;
    // SAFETY: valid fd and option value. SO_RCVBUFFORCE (root) lifts rmem_max; a refusal keeps the default.
    unsafe {
        libc::setsockopt(
            rx.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            (&big as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as u32,
        );
    }
    let tx = UdpSocket::bind("127.0.0.1:0").context("bind sender")?;
    tx.connect(rx.local_addr()?)?;
    let stop = Arc::new(AtomicBool::new(false));
    let cpu0 = process_cpu_ns();
    let start = Instant::now();
    let r = {
        let stop = stop.clone();
        std::thread::spawn(move || recv_loop(rx, stop, int))
    };
    let s = {
        let stop = stop.clone();
        std::thread::spawn(move || send_loop(tx, payloads, stop))
    };
    std::thread::sleep(Duration::from_secs_f64(secs));
    stop.store(true, Ordering::Relaxed);
    let sent = s.join().map_err(|_| anyhow::anyhow!("sender panicked"))?;
    let (received, parse_errors, rx_cpu, entries) = r
        .join()
        .map_err(|_| anyhow::anyhow!("receiver panicked"))??;
    let wall = start.elapsed().as_secs_f64();
    let proc_cpu = process_cpu_ns() - cpu0;
    let rf = received.max(1) as f64;
    Ok(BaselineResult {
        store: store.into(),
        secs: wall,
        sent,
        received,
        parse_errors,
        reports_per_s: received as f64 / wall,
        receiver_cpu_ns_per_report: rx_cpu as f64 / rf,
        process_cpu_ns_per_report: proc_cpu as f64 / rf,
        reports_per_s_per_core: 1e9 / (rx_cpu as f64 / rf),
        table_entries: entries,
        vm_hwm_kib: vm_hwm_kib(),
    })
}
