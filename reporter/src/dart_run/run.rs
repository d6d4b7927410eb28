//! The I/O loop: the writer driven with a real clock over an AF_PACKET port until every write is
//! acknowledged, the QP fails or the time limit passes.

use std::net::{Ipv4Addr, UdpSocket};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use dta_netio::{AfPacket, AfPacketConfig, FrameBatch, RxBurst, TxBurst, DEFAULT_SLOT_SIZE};
use dta_rc::{Instant, QpError, RcStats, RequesterConfig};
use dta_reporter::dart::{Dart, DartLocal};

use super::args::DartArgs;
use super::control::{check_welcome, handshake, hello, keep_alive};
use super::writes::read_writes;

/// Longest sleep on the socket: bounds how late the time limit is noticed.
const MAX_WAIT: Duration = Duration::from_millis(10);

/// Monotonic nanoseconds since the command started.
struct Clock(std::time::Instant);

impl Clock {
    fn now(&self) -> Instant {
        Instant(u64::try_from(self.0.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }
}

fn counters_text(queued: usize, total: usize, c: &RcStats, tx_drops: u64) -> String {
    format!(
        "queued={queued}/{total} frames_sent={} retransmitted={} acks={} timeouts={} naks_seq={} tx_drops={tx_drops}",
        c.frames_out,
        c.retransmitted,
        c.acks,
        c.retransmit_timeouts,
        c.nak_psn_sequence,
    )
}

fn describe(e: QpError) -> String {
    match e {
        QpError::RetriesExhausted => {
            "retries exhausted (the collector stopped answering, or its answers do not reach us)"
                .into()
        }
        QpError::Nak(code) => format!("the collector answered with a NAK ({code:?})"),
    }
}

/// Why the QP failed on a response, read from the counters (the writer keeps the error itself).
fn nak_error(c: &RcStats) -> String {
    let what = if c.nak_remote_access > 0 {
        "remote access error"
    } else if c.nak_invalid_request > 0 {
        "invalid request"
    } else if c.nak_remote_operational > 0 {
        "remote operational error"
    } else if c.nak_rnr > 0 {
        "retries exhausted on RNR NAKs"
    } else {
        "error"
    };
    format!("the collector's QP answered with a fatal NAK ({what})")
}

/// Whether [`Dart::key_write`] refused for want of queue room (the one refusal that passes), rather
/// than for the write itself.
pub(super) fn queue_full(e: &dta_reporter::Error) -> bool {
    matches!(e, dta_reporter::Error::Dart(m) if m == "send queue full")
}

/// Runs `dta-report dart`.
pub fn run(a: &DartArgs) -> Result<()> {
    let writes = read_writes(&a.writes)?;
    let clock = Clock(std::time::Instant::now());
    let start_psn = a.psn.unwrap_or_else(|| {
        (std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos() ^ (d.as_secs() as u32).wrapping_mul(0x9E37_79B9))
            .unwrap_or(0))
            & 0xFF_FFFF
    });
    if UdpSocket::bind((a.ip, 0)).is_err() {
        log::warn!(
            "{} is not an address of this network namespace: configure it on {} so that the kernel answers \
             ARP for it, or the collector's responses may never arrive",
            a.ip,
            a.interface
        );
    }
    let mut port = AfPacket::open(
        &a.interface,
        &AfPacketConfig {
            promiscuous: false,
            ..AfPacketConfig::default()
        },
    )
    .with_context(|| format!("opening an AF_PACKET port on {}", a.interface))?;
    let mac = port.mac();

    let h = hello(&a.token, mac, a.ip, a.qpn, start_psn);
    let (welcome, mut control) = handshake(a.control, &h)?;
    let mut keep_alive_sent = std::time::Instant::now();
    let g = check_welcome(&welcome, a.qpn)?;
    if a.redundancy == 0 || a.redundancy > g.n_max() {
        bail!(
            "--redundancy {} is outside the collector's Key-Write region (1..={})",
            a.redundancy,
            g.n_max()
        );
    }
    let d = g.data_len();
    if let Some(w) = writes.iter().find(|w| w.data.len() != d) {
        bail!(
            "line {}: {} bytes of data, but the collector's Key-Write entries hold {d} ({} hex digits)",
            w.line,
            w.data.len(),
            2 * d
        );
    }
    let collector_ip = Ipv4Addr::from(welcome.ip);
    log::info!(
        "welcome from {}: collector {collector_ip}, QP {:#x} <- ours {:#x} from PSN {start_psn:#x}; \
         {} writes of {d} bytes, redundancy {}",
        a.control,
        welcome.qps[0].qpn,
        a.qpn,
        writes.len(),
        a.redundancy
    );
    let local = DartLocal {
        mac,
        ip: a.ip.octets(),
        udp_src_port: a.udp_src_port.unwrap_or(0xC000 | (a.qpn & 0x3FFF) as u16),
        qpn: a.qpn,
        start_psn,
    };
    let requester = RequesterConfig {
        retry_limit: a.retry_limit,
        ..RequesterConfig::default()
    };
    let mut dart =
        Dart::new(local, &welcome, requester, clock.now()).context("setting up the DART QP")?;

    let limit = Duration::from_secs(a.timeout_s);
    let mut rx = FrameBatch::new(64, DEFAULT_SLOT_SIZE);
    let mut tx = FrameBatch::new(64, DEFAULT_SLOT_SIZE);
    let mut frame = Vec::with_capacity(DEFAULT_SLOT_SIZE);
    let mut queued = 0usize;
    let mut tx_drops = 0u64;
    loop {
        keep_alive(&mut control, &mut keep_alive_sent);
        while let Some(w) = writes.get(queued) {
            match dart.key_write(w.key, &w.data, a.redundancy) {
                Ok(()) => queued += 1,
                // The queue is full: the rest waits for the window to move.
                Err(e) if queue_full(&e) => break,
                Err(e) => {
                    return Err(anyhow::Error::new(e).context(format!("line {}", w.line)));
                }
            }
        }

        // Read after queueing: the first round queues thousands of writes, which takes a while, and a
        // stale send time would make the first ACKs look late.
        let now = clock.now();
        tx.clear();
        while tx.free() > 0 && dart.poll_transmit(now, &mut frame) {
            tx.push(&frame).context("frame larger than a batch slot")?;
        }
        if !tx.is_empty() {
            let sent = port
                .send_burst(&tx)
                .with_context(|| format!("sending on {}", a.interface))?;
            // Dropped frames (socket buffer full) are repaired by the requester's go-back-N.
            tx_drops += (tx.len() - sent) as u64;
        }

        rx.clear();
        let got = port
            .recv_burst(&mut rx)
            .with_context(|| format!("receiving on {}", a.interface))?;
        if got > 0 {
            let now = clock.now();
            for f in rx.iter() {
                dart.handle_response(now, f);
            }
        }
        let c = dart.counters();
        if c.qp_errors > 0 {
            bail!(
                "{}; {}",
                nak_error(c),
                counters_text(queued, writes.len(), c, tx_drops)
            );
        }

        let now = clock.now();
        if dart.poll_timeout().is_some_and(|t| t <= now) {
            if let Some(e) = dart.handle_timeout(now) {
                bail!(
                    "QP error: {}; {}",
                    describe(e),
                    counters_text(queued, writes.len(), dart.counters(), tx_drops)
                );
            }
        }

        if queued == writes.len() && dart.is_idle() {
            break;
        }
        let elapsed = Duration::from_nanos(now.as_nanos());
        if elapsed >= limit {
            bail!(
                "timed out after {} s with writes unacknowledged; {}",
                a.timeout_s,
                counters_text(queued, writes.len(), dart.counters(), tx_drops)
            );
        }
        // Sleep on the socket unless there is more to do at once: a full burst went out (the window may
        // have room for more) or a burst came in (more may be waiting).
        if tx.len() < tx.capacity() && got == 0 {
            let mut wait = MAX_WAIT;
            if let Some(t) = dart.poll_timeout() {
                // poll(2) counts whole milliseconds: round up so that a sub-millisecond wait sleeps
                // instead of spinning.
                wait = wait.min((t - now).max(Duration::from_millis(1)));
            }
            port.wait_readable(wait)
                .with_context(|| format!("waiting on {}", a.interface))?;
        }
    }
    let c = dart.counters();
    println!(
        "dart done: writes={} redundancy={} collector={collector_ip} frames_sent={} retransmitted={} acks={} timeouts={} tx_drops={tx_drops} seconds={:.3}",
        writes.len(),
        a.redundancy,
        c.frames_out,
        c.retransmitted,
        c.acks,
        c.retransmit_timeouts,
        clock.0.elapsed().as_secs_f64()
    );
    Ok(())
}
