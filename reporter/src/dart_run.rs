//! `dta-report dart`: the I/O around the sans-IO [`Dart`] writer. It reads the writes, says hello on the
//! collector's control channel, opens an AF_PACKET port and drives the writer with a real clock until
//! every write is acknowledged, the QP fails, or the time limit passes.
//!
//! (Over 500 lines: the CLI's I/O loop and its control-channel client, which only `dta-report dart` uses.)

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream, UdpSocket};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;
use dta_netio::{AfPacket, AfPacketConfig, FrameBatch, RxBurst, TxBurst, DEFAULT_SLOT_SIZE};
use dta_protocol::control::{
    CollectorMessage, Hello, KeepAlive, RequesterQp, TranslatorMessage, Welcome, CONTROL_VERSION,
    KEEPALIVE_EVERY,
};
use dta_protocol::layout::{Geometry, KeyWriteGeometry};
use dta_rc::{Instant, QpError, RcStats, RequesterConfig};
use dta_reporter::dart::{Dart, DartLocal};

/// Options of `dta-report dart`.
#[derive(Args, Debug)]
pub struct DartArgs {
    /// The collector's control server, `ip:port` (its `[control] bind`).
    #[arg(long)]
    control: SocketAddr,
    /// The collector's control token.
    #[arg(long)]
    token: String,
    /// Interface to send the RDMA WRITEs on and receive the ACKs from (AF_PACKET, in the current
    /// network namespace; needs CAP_NET_RAW). Its MAC is the source of our frames.
    #[arg(long)]
    interface: String,
    /// Our IPv4 address: the source of the RoCE frames and where the collector sends its ACKs. It must
    /// be an address the interface's kernel owns (configured on --interface), so that the kernel answers
    /// ARP for it and the responses come back to the interface.
    #[arg(long)]
    ip: Ipv4Addr,
    /// Copies N of every Key-Write (1 ..= the region's n_max).
    #[arg(long, default_value_t = 1)]
    redundancy: u8,
    /// The writes, one per line: `<key> <data-hex>`, key a decimal (or 0x-hex) u32, data exactly the
    /// collector's Key-Write data size in hex (entry size - 4 bytes of checksum: 8 hex digits for 8-byte
    /// entries). Blank lines and `#` comments are ignored. `-` reads standard input.
    #[arg(long)]
    writes: PathBuf,
    /// Our QP number (24 bits), the one the collector's QP is connected to.
    #[arg(long, value_parser = parse_qpn, default_value = "0x77")]
    qpn: u32,
    /// First PSN (24 bits); default: taken from the clock, so that a rerun does not collide with the
    /// responses of an earlier one.
    #[arg(long, value_parser = parse_qpn)]
    psn: Option<u32>,
    /// UDP source port of the RoCE frames (ECMP entropy), in the RoCE v2 range 0xC000..=0xFFFF (a
    /// responder drops requests from other ports); default 0xC000 | (QPN & 0x3FFF).
    #[arg(long, value_parser = clap::value_parser!(u16).range(0xC000..=0xFFFF))]
    udp_src_port: Option<u16>,
    /// Give up (non-zero exit) if not every write is acknowledged within this many seconds.
    #[arg(long, default_value_t = 60)]
    timeout_s: u64,
    /// Retransmit timeouts in a row without progress before the QP is declared failed (the
    /// translator's `[requester] retry_limit`); raise it for a responder that can stall, such as
    /// Soft-RoCE in a busy VM.
    #[arg(long, default_value_t = RequesterConfig::default().retry_limit)]
    retry_limit: u32,
}

/// A 24-bit QPN or PSN, decimal or 0x-prefixed hexadecimal.
fn parse_qpn(s: &str) -> Result<u32, String> {
    let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16),
        None => s.parse(),
    }
    .map_err(|e| format!("{s}: {e}"))?;
    if v > 0xFF_FFFF {
        return Err(format!("{s} does not fit in 24 bits"));
    }
    Ok(v)
}

/// One line of the writes file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteLine {
    /// 1-based line number, for errors.
    pub line: usize,
    /// Key.
    pub key: u32,
    /// Data bytes.
    pub data: Vec<u8>,
}

fn parse_key(s: &str) -> Result<u32> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16),
        None => s.parse(),
    }
    .with_context(|| format!("key {s:?} is not a 32-bit unsigned integer"))
}

fn parse_hex(s: &str) -> Result<Vec<u8>> {
    let h = s.strip_prefix("0x").unwrap_or(s);
    if h.is_empty() || h.len() % 2 != 0 || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
        bail!("data {s:?} is not an even number of hex digits");
    }
    (0..h.len() / 2)
        .map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).context("hex digit"))
        .collect()
}

/// Parses the writes: `<key> <data-hex>` per line, blank lines and `#` comments ignored.
pub fn parse_writes(input: impl Read) -> Result<Vec<WriteLine>> {
    let mut out = Vec::new();
    for (i, line) in BufReader::new(input).lines().enumerate() {
        let n = i + 1;
        let line = line.with_context(|| format!("reading line {n}"))?;
        let text = line.split('#').next().unwrap_or("").trim();
        if text.is_empty() {
            continue;
        }
        let mut fields = text.split_whitespace();
        let (Some(key), Some(data), None) = (fields.next(), fields.next(), fields.next()) else {
            bail!("line {n}: expected `<key> <data-hex>`, found {text:?}");
        };
        let key = parse_key(key).with_context(|| format!("line {n}"))?;
        let data = parse_hex(data).with_context(|| format!("line {n}"))?;
        out.push(WriteLine { line: n, key, data });
    }
    Ok(out)
}

fn read_writes(path: &PathBuf) -> Result<Vec<WriteLine>> {
    if path.as_os_str() == "-" {
        parse_writes(std::io::stdin().lock()).context("writes from standard input")
    } else {
        let f = std::fs::File::open(path)
            .with_context(|| format!("opening the writes file {}", path.display()))?;
        parse_writes(f).with_context(|| format!("writes file {}", path.display()))
    }
}

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest sleep on the socket: bounds how late the time limit is noticed.
const MAX_WAIT: Duration = Duration::from_millis(10);

/// The hello of one requester QP, with our GID the IPv4-mapped `::ffff:a.b.c.d`.
pub fn hello(token: &str, mac: [u8; 6], ip: Ipv4Addr, qpn: u32, start_psn: u32) -> Hello {
    Hello {
        version: CONTROL_VERSION,
        token: token.to_string(),
        mac,
        ip: ip.octets(),
        gid: ip.to_ipv6_mapped().octets(),
        qps: vec![RequesterQp { qpn, start_psn }],
    }
}

/// Says hello on the control channel and returns the welcome (a refusal is an error with its reason) with
/// its connection: the collector keeps our QP while the connection lives (keep-alives hold it, see
/// [`keep_alive`]) and reclaims it a grace period after it closes.
fn handshake(addr: SocketAddr, hello: &Hello) -> Result<(Welcome, TcpStream)> {
    let mut stream = TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT)
        .with_context(|| format!("connecting to the collector's control server {addr}"))?;
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(ANSWER_TIMEOUT))?;
    let mut line = serde_json::to_string(&TranslatorMessage::Hello(hello.clone()))?;
    line.push('\n');
    stream
        .write_all(line.as_bytes())
        .with_context(|| format!("sending hello to {addr}"))?;
    let mut answer = String::new();
    let n = BufReader::new(&stream)
        .read_line(&mut answer)
        .with_context(|| format!("reading the collector's answer from {addr}"))?;
    if n == 0 {
        bail!("the collector at {addr} closed the control connection without answering");
    }
    match serde_json::from_str::<CollectorMessage>(&answer)
        .with_context(|| format!("malformed answer from {addr}: {:?}", answer.trim_end()))?
    {
        CollectorMessage::Welcome(w) => Ok((w, stream)),
        CollectorMessage::Refusal(r) => bail!("the collector at {addr} refused us: {}", r.error),
    }
}

/// Sends a keep-alive on the control connection when one is due. Best effort: a collector that is gone
/// shows in the QP's own errors.
fn keep_alive(control: &mut TcpStream, last: &mut std::time::Instant) {
    if last.elapsed() < KEEPALIVE_EVERY {
        return;
    }
    *last = std::time::Instant::now();
    let ka = TranslatorMessage::KeepAlive(KeepAlive {
        version: CONTROL_VERSION,
    });
    if let Ok(mut line) = serde_json::to_string(&ka) {
        line.push('\n');
        let _ = control.write_all(line.as_bytes());
    }
}

/// The welcome's Key-Write geometry, after checking that its QP is connected to ours.
fn check_welcome(w: &Welcome, qpn: u32) -> Result<KeyWriteGeometry> {
    if w.version != CONTROL_VERSION {
        bail!(
            "the collector speaks control version {}, we speak {CONTROL_VERSION}",
            w.version
        );
    }
    match w.qps.as_slice() {
        [q] if q.peer_qpn == qpn => {}
        qps => bail!("the collector answered QPs {qps:?}, not one QP connected to our {qpn:#x}"),
    }
    w.regions
        .iter()
        .find_map(|r| match r.geometry {
            Geometry::KeyWrite(g) => Some(g),
            _ => None,
        })
        .context("the collector has no Key-Write region")
}

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
fn queue_full(e: &dta_reporter::Error) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_parse_with_comments_and_blank_lines() {
        let text = "# header\n\n1 0a0b0c0d\n  0x10 0xdeadbeef  # trailing\n4294967295 00000000\n";
        let w = parse_writes(text.as_bytes()).unwrap();
        assert_eq!(
            w,
            vec![
                WriteLine {
                    line: 3,
                    key: 1,
                    data: vec![10, 11, 12, 13]
                },
                WriteLine {
                    line: 4,
                    key: 16,
                    data: vec![0xde, 0xad, 0xbe, 0xef]
                },
                WriteLine {
                    line: 5,
                    key: u32::MAX,
                    data: vec![0; 4]
                },
            ]
        );
    }

    #[test]
    fn bad_lines_are_named() {
        for (text, line) in [
            ("1 00000000\n2\n", "line 2"),
            ("1 00000000\n\n-3 00000000\n", "line 3"),
            ("4294967296 00000000\n", "line 1"),
            ("1 0000000\n", "line 1"),
            ("1 zz000000\n", "line 1"),
            ("1 00000000 extra\n", "line 1"),
        ] {
            let e = format!("{:#}", parse_writes(text.as_bytes()).unwrap_err());
            assert!(e.contains(line), "{text:?}: {e}");
        }
    }

    #[test]
    fn a_full_queue_is_recognised() {
        use dta_protocol::control::ResponderQp;
        use dta_protocol::layout::Region;
        let g = KeyWriteGeometry::new(1024, 8, 2).unwrap();
        let welcome = Welcome {
            version: CONTROL_VERSION,
            mac: [2, 0, 0, 0, 0, 2],
            ip: [10, 0, 0, 2],
            qps: vec![ResponderQp {
                qpn: 0x100,
                peer_qpn: 0x77,
            }],
            max_dest_rd_atomic: 16,
            path_mtu: 1024,
            regions: vec![Region {
                id: 0,
                geometry: Geometry::KeyWrite(g),
                va: 0x1000,
                rkey: 1,
            }],
            append_heads: Vec::new(),
        };
        let local = DartLocal {
            mac: [2, 0, 0, 0, 0, 9],
            ip: [10, 0, 0, 9],
            udp_src_port: 49200,
            qpn: 0x77,
            start_psn: 0,
        };
        let mut dart = Dart::new(local, &welcome, RequesterConfig::default(), Instant(0)).unwrap();
        let mut accepted = 0u32;
        let refusal = loop {
            match dart.key_write(accepted, &[0; 4], 2) {
                Ok(()) => accepted += 1,
                Err(e) => break e,
            }
        };
        assert!(queue_full(&refusal), "{refusal}");
        assert_eq!(accepted, RequesterConfig::default().queue_capacity / 2);
        // A refusal of the write itself is not taken for a full queue.
        let mut dart = Dart::new(local, &welcome, RequesterConfig::default(), Instant(0)).unwrap();
        assert!(!queue_full(&dart.key_write(1, &[0; 4], 3).unwrap_err()));
    }

    #[test]
    fn hello_carries_the_mapped_gid() {
        let h = hello(
            "t",
            [2, 0, 0, 0, 0, 10],
            Ipv4Addr::new(198, 18, 0, 10),
            0x77,
            5,
        );
        assert_eq!(
            h.gid,
            [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 0, 10]
        );
        assert_eq!(
            h.qps,
            vec![RequesterQp {
                qpn: 0x77,
                start_psn: 5
            }]
        );
        assert!(parse_qpn("0x1000000").is_err());
        assert_eq!(parse_qpn("0x77"), Ok(0x77));
    }
}
