//! The control server (DESIGN.md section 6): TCP, one JSON object per line. A translator says hello with
//! its addresses and QPs; the collector checks version and token, opens one responder QP per translator
//! QP through a [`QpOpener`] (the software responder or the ibverbs backend), and answers with a welcome
//! that lists every region. A bad hello gets a refusal with a reason and the connection is closed.
//!
//! The connection is the lease on the QPs its hellos opened ([`qps`]): a welcomed translator keeps it open
//! with keep-alive lines, and when it closes (or falls silent past the idle deadline) the QPs are closed
//! after a grace period unless the translator says hello again. Hellos naming too many QPs, or taking the
//! collector past its total, are refused with the reason and counted. A hello naming translator QPs
//! that another live connection holds (a second translator configured like the first) is refused too,
//! naming the holder's peer, logged and counted; a restarted translator (its old connection ended) takes
//! its QPs back ([`qps`]).
//!
//! Before the token is checked a connection is anyone's, so it is bounded ([`ControlLimits`]): a number
//! of connections in total and per address (more are refused at once, with a refusal line), one deadline
//! for the whole hello line rather than a timeout per read, and a size limit on it. Every refusal is
//! logged with its reason; refusals over the connection limits are logged as a count.
//!
//! (Over 500 lines: the server, its limits and the hello's validation are one state machine; splitting them would spread one protocol over files.)

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use dta_protocol::control::{
    CollectorMessage, Hello, Refusal, TranslatorMessage, Welcome, CONTROL_VERSION, REFUSED_IN_USE,
};
use dta_protocol::layout::{Geometry, Region};

use crate::error::{Error, Result};
use crate::memory::Arena;

pub mod qps;

pub use qps::{Holder, InUse, LeaseId, QpLimits, QpOpener, QpStats, QpTable, SingleWriter};

/// How often the accept loop checks for shutdown.
const POLL: Duration = Duration::from_millis(50);
/// How long writing an answer may take before the connection is given up (a peer that does not read).
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// After a refusal, how long and how much of the peer's further input is read and discarded.
const DRAIN: Duration = Duration::from_millis(400);
const DRAIN_BYTES: usize = 1 << 20;
/// Refusals of connections over the limits are logged at most this often, with a count.
const REFUSAL_LOG_EVERY: Duration = Duration::from_secs(10);
/// How long a hello whose QPs another connection holds waits for that connection to end before it is
/// refused: a translator that restarts at once says hello on its new connection while its old one's close
/// may still be on its way to the connection's thread.
const IN_USE_WAIT: Duration = Duration::from_millis(500);
const IN_USE_POLL: Duration = Duration::from_millis(20);

/// What one control connection may cost before it is authenticated. A connection is a thread and a
/// buffer: the limits bound both, and a deadline on the whole hello (not on each read) keeps a peer that
/// trickles a byte at a time from holding one forever.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ControlLimits {
    /// Connections served at once; more are refused with a refusal line and closed.
    pub max_connections: usize,
    /// Connections served at once from one IP address, so that one host cannot take every slot.
    pub max_per_address: usize,
    /// The whole first hello line, from accept to its newline, must arrive within this.
    pub hello_deadline: Duration,
    /// On a welcomed connection the next line (a keep-alive, or a hello to re-establish) must arrive whole
    /// within this; past it the connection ends, and with it the lease on its QPs.
    pub idle_deadline: Duration,
    /// Longest hello line, newline included.
    pub max_hello: usize,
    /// QPs per hello and in all, and how long a closed connection's QPs wait for their translator.
    pub qps: QpLimits,
}

impl Default for ControlLimits {
    fn default() -> Self {
        ControlLimits {
            max_connections: 64,
            max_per_address: 8,
            hello_deadline: Duration::from_secs(10),
            idle_deadline: Duration::from_secs(30),
            // About 7,000 QPs; a translator sends one per worker.
            max_hello: 256 << 10,
            qps: QpLimits::default(),
        }
    }
}

/// What the collector advertises in every welcome.
#[derive(Debug, Clone)]
pub struct Advertised {
    /// The shared token a hello must carry.
    pub token: String,
    /// The collector's MAC.
    pub mac: [u8; 6],
    /// The collector's IPv4 address.
    pub ip: [u8; 4],
    /// Atomics in flight per QP.
    pub max_dest_rd_atomic: u32,
    /// Largest payload per packet.
    pub path_mtu: u32,
    /// Every region.
    pub regions: Vec<Region>,
    /// The regions' memory, when the welcome should carry each Append list's head word from it (a
    /// translator then continues its lists across its restarts); `None` advertises none, and every list
    /// starts at entry 0.
    pub memory: Option<Arc<Arena>>,
}

/// A running control server; stops when dropped or on [`stop`](Self::stop).
pub struct ControlServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    slots: Arc<Slots>,
    shared: Arc<Shared>,
}

impl ControlServer {
    /// Binds `addr` (required: there is no default of every interface) and serves in a background thread
    /// with the default [`ControlLimits`].
    pub fn start(addr: SocketAddr, ad: Advertised, opener: Arc<dyn QpOpener>) -> Result<Self> {
        Self::start_with(addr, ad, opener, ControlLimits::default())
    }

    /// As [`start`](Self::start) with explicit limits.
    pub fn start_with(
        addr: SocketAddr,
        ad: Advertised,
        opener: Arc<dyn QpOpener>,
        limits: ControlLimits,
    ) -> Result<Self> {
        let listener = TcpListener::bind(addr)
            .map_err(|e| Error::io(format!("binding control port {addr}"), e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::io("control port address", e))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| Error::io("control port non-blocking", e))?;
        let stop = Arc::new(AtomicBool::new(false));
        let slots = Arc::new(Slots::default());
        let shared = Arc::new(Shared {
            ad,
            opener,
            limits,
            stop: stop.clone(),
            slots: slots.clone(),
            table: Mutex::new(QpTable::default()),
            qp_stats: Arc::new(QpStats::default()),
            next_lease: AtomicU64::new(1),
        });
        let server = shared.clone();
        let thread = std::thread::Builder::new()
            .name("dta-control".into())
            .spawn(move || accept_loop(listener, server))
            .map_err(|e| Error::io("spawning the control thread", e))?;
        log::info!(
            "control server on {addr} (at most {} connections, {} per address; hello within {:?}, \
             at most {} bytes; at most {} QPs per hello, {} in all, a closed connection's kept {:?})",
            limits.max_connections,
            limits.max_per_address,
            limits.hello_deadline,
            limits.max_hello,
            limits.qps.per_hello,
            limits.qps.total,
            limits.qps.grace
        );
        Ok(ControlServer {
            addr,
            stop,
            thread: Some(thread),
            slots,
            shared,
        })
    }

    /// The bound address (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Connections being served now.
    pub fn connections(&self) -> usize {
        self.slots.lock().total
    }

    /// The QP table's counters (open, reclaimed, refused), for metrics.
    pub fn qp_stats(&self) -> Arc<QpStats> {
        self.shared.qp_stats.clone()
    }

    /// Stops accepting and waits for the accept thread. Connection threads end at their deadline.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// What every connection thread shares.
struct Shared {
    ad: Advertised,
    opener: Arc<dyn QpOpener>,
    limits: ControlLimits,
    stop: Arc<AtomicBool>,
    slots: Arc<Slots>,
    /// Every open QP and the lease holding it; one lock, so that caps and replacement see one state.
    table: Mutex<QpTable>,
    qp_stats: Arc<QpStats>,
    next_lease: AtomicU64,
}

impl Shared {
    fn table(&self) -> std::sync::MutexGuard<'_, QpTable> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Closes the QPs of leases whose grace has passed.
    fn reap(&self) {
        let n = self
            .table()
            .reap(self.opener.as_ref(), Instant::now(), &self.qp_stats);
        if n > 0 {
            log::info!(
                "reclaimed {n} QPs of translators whose control connection closed {:?} ago and who did \
                 not say hello again",
                self.limits.qps.grace
            );
        }
    }
}

/// Ends a connection's lease however the connection ends: its QPs then have the grace period.
struct LeaseGuard<'a> {
    server: &'a Shared,
    lease: LeaseId,
    peer: SocketAddr,
    welcomed: bool,
}

impl Drop for LeaseGuard<'_> {
    fn drop(&mut self) {
        let grace = self.server.limits.qps.grace;
        self.server
            .table()
            .end_lease(self.lease, Instant::now(), grace);
        if self.welcomed {
            log::info!(
                "control connection from {peer} ended; its QPs are closed in {grace:?} unless it says \
                 hello again",
                peer = self.peer
            );
        }
    }
}

/// Connections in service, in total and per address.
#[derive(Default)]
struct Slots(Mutex<SlotCount>);

#[derive(Default)]
struct SlotCount {
    total: usize,
    by_ip: HashMap<IpAddr, usize>,
}

impl Slots {
    fn lock(&self) -> std::sync::MutexGuard<'_, SlotCount> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes a slot for a connection from `ip`, or says which limit it would exceed.
    fn take(
        self: &Arc<Self>,
        ip: IpAddr,
        limits: &ControlLimits,
    ) -> std::result::Result<Slot, String> {
        let mut g = self.lock();
        let mine = g.by_ip.get(&ip).copied().unwrap_or(0);
        if g.total >= limits.max_connections {
            return Err(format!(
                "too many control connections ({} at once); try again later",
                limits.max_connections
            ));
        }
        if mine >= limits.max_per_address {
            return Err(format!(
                "too many control connections from {ip} ({} at once); try again later",
                limits.max_per_address
            ));
        }
        g.total += 1;
        *g.by_ip.entry(ip).or_default() += 1;
        Ok(Slot {
            slots: self.clone(),
            ip,
        })
    }
}

/// A connection's place in [`Slots`], given back when the connection ends.
struct Slot {
    slots: Arc<Slots>,
    ip: IpAddr,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut g = self.slots.lock();
        g.total -= 1;
        if let Some(n) = g.by_ip.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                g.by_ip.remove(&self.ip);
            }
        }
    }
}

fn accept_loop(listener: TcpListener, server: Arc<Shared>) {
    let (mut refused, mut last_log) = (0u64, None::<Instant>);
    while !server.stop.load(Ordering::Relaxed) {
        server.reap();
        match listener.accept() {
            Ok((stream, peer)) => {
                let slot = match server.slots.take(peer.ip(), &server.limits) {
                    Ok(slot) => slot,
                    Err(why) => {
                        // Log the first refusal, then a count at most every REFUSAL_LOG_EVERY: a flood
                        // of connections must not become a flood of log lines.
                        refused += 1;
                        if last_log.map_or(true, |t| t.elapsed() >= REFUSAL_LOG_EVERY) {
                            log::warn!(
                                "refusing control connection from {peer}: {why} ({refused} refused since the last \
                                 such message)"
                            );
                            (refused, last_log) = (0, Some(Instant::now()));
                        }
                        refuse_quickly(stream, why);
                        continue;
                    }
                };
                let s = server.clone();
                let spawned = std::thread::Builder::new()
                    .name("dta-control-conn".into())
                    .spawn(move || {
                        let _slot = slot;
                        if let Err(e) = serve_connection(stream, peer, &s) {
                            log::warn!("control connection from {peer}: {e}");
                        }
                    });
                if let Err(e) = spawned {
                    log::error!("cannot serve control connection from {peer}: {e}");
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(POLL),
            Err(e) => {
                log::warn!("control accept: {e}");
                std::thread::sleep(POLL);
            }
        }
    }
}

/// Sends a refusal on a connection over the limits without waiting for it, and closes it.
fn refuse_quickly(mut stream: TcpStream, error: String) {
    let _ = stream.set_nonblocking(true);
    let _ = stream.write_all(refusal_line(error).as_bytes());
    let _ = stream.shutdown(std::net::Shutdown::Both);
}

fn refusal_line(error: String) -> String {
    let r = CollectorMessage::Refusal(Refusal {
        version: CONTROL_VERSION,
        error,
    });
    let mut text = serde_json::to_string(&r).unwrap_or_default();
    text.push('\n');
    text
}

/// How reading one line ended.
enum LineRead {
    /// A whole line, newline included.
    Line(Vec<u8>),
    /// The peer closed the connection; `partial` bytes of an unfinished line were dropped.
    Eof { partial: usize },
    /// No newline within the size limit.
    TooLong,
    /// The deadline passed; `partial` bytes had arrived.
    TimedOut { partial: usize },
}

/// Reads one line that must arrive whole before `deadline` and within `max` bytes. Bytes after the newline
/// stay in `pending` for the next line.
fn read_line_by(
    stream: &mut TcpStream,
    pending: &mut Vec<u8>,
    deadline: Instant,
    max: usize,
    stop: &AtomicBool,
) -> std::io::Result<LineRead> {
    let mut scanned = 0;
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(i) = pending[scanned..].iter().position(|&b| b == b'\n') {
            let rest = pending.split_off(scanned + i + 1);
            return Ok(LineRead::Line(std::mem::replace(pending, rest)));
        }
        scanned = pending.len();
        if pending.len() >= max {
            return Ok(LineRead::TooLong);
        }
        let now = Instant::now();
        if now >= deadline || stop.load(Ordering::Relaxed) {
            return Ok(LineRead::TimedOut {
                partial: pending.len(),
            });
        }
        // Wake at least every second to notice a server stop.
        stream.set_read_timeout(Some((deadline - now).min(Duration::from_secs(1))))?;
        let want = chunk.len().min(max - pending.len());
        match stream.read(&mut chunk[..want]) {
            Ok(0) => {
                return Ok(LineRead::Eof {
                    partial: pending.len(),
                })
            }
            Ok(n) => pending.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(e),
        }
    }
}

/// Answers hellos on one connection until EOF, a refusal or a deadline. A translator may say hello again
/// on the same connection to re-establish its QPs after an error.
fn serve_connection(
    mut stream: TcpStream,
    peer: SocketAddr,
    server: &Shared,
) -> std::io::Result<()> {
    let limits = &server.limits;
    stream.set_nonblocking(false)?;
    stream.set_write_timeout(Some(WRITE_TIMEOUT))?;
    let mut pending = Vec::new();
    let mut deadline = Instant::now() + limits.hello_deadline;
    let mut lease = LeaseGuard {
        server,
        lease: server.next_lease.fetch_add(1, Ordering::Relaxed),
        peer,
        welcomed: false,
    };
    server.table().connected(lease.lease, peer);
    loop {
        let welcomed = lease.welcomed;
        let line = match read_line_by(
            &mut stream,
            &mut pending,
            deadline,
            limits.max_hello,
            &server.stop,
        )? {
            LineRead::Line(l) => l,
            LineRead::Eof { .. } | LineRead::TimedOut { partial: 0 } if welcomed => return Ok(()),
            LineRead::Eof { partial } => {
                if partial > 0 || !welcomed {
                    log::info!(
                        "control connection from {peer} closed without a complete hello ({partial} bytes)"
                    );
                }
                return Ok(());
            }
            LineRead::TimedOut { partial } => {
                let why = format!(
                    "no complete hello within {:?} ({partial} bytes received)",
                    if welcomed {
                        limits.idle_deadline
                    } else {
                        limits.hello_deadline
                    }
                );
                return refuse(&mut stream, peer, why);
            }
            LineRead::TooLong => {
                let why = format!("hello longer than {} bytes", limits.max_hello);
                return refuse(&mut stream, peer, why);
            }
        };
        let reply = match String::from_utf8(line) {
            Err(e) => Err(format!(
                "hello is not UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            )),
            Ok(text) => answer(&text, server, lease.lease, welcomed),
        };
        match reply {
            Ok(Some(w)) => {
                let mut text = serde_json::to_string(&CollectorMessage::Welcome(w))
                    .map_err(std::io::Error::other)?;
                text.push('\n');
                stream.write_all(text.as_bytes())?;
                lease.welcomed = true;
                deadline = Instant::now() + limits.idle_deadline;
            }
            // A keep-alive: the translator is still there.
            Ok(None) => deadline = Instant::now() + limits.idle_deadline,
            Err(why) => return refuse(&mut stream, peer, why),
        }
    }
}

/// Logs why, sends the refusal line and ends the connection.
fn refuse(stream: &mut TcpStream, peer: SocketAddr, why: String) -> std::io::Result<()> {
    log::warn!("refusing translator at {peer}: {why}");
    stream.write_all(refusal_line(why).as_bytes())?;
    let _ = stream.shutdown(std::net::Shutdown::Write);
    // Read what the peer still sends for a moment, so that closing with unread bytes (which sends a reset)
    // does not destroy the refusal before the peer has read it.
    let end = Instant::now() + DRAIN;
    let mut sink = [0u8; 4096];
    let mut drained = 0;
    while drained < DRAIN_BYTES && Instant::now() < end {
        let _ = stream.set_read_timeout(Some(DRAIN / 4));
        match stream.read(&mut sink) {
            Ok(0) => break,
            Ok(n) => drained += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    Ok(())
}

/// Checks a line of a translator: a hello gets its QPs (held by `lease`) and the welcome, a keep-alive on a
/// welcomed connection nothing; anything else is refused with the reason.
fn answer(
    line: &str,
    server: &Shared,
    lease: LeaseId,
    welcomed: bool,
) -> std::result::Result<Option<Welcome>, String> {
    let ad = &server.ad;
    // The version is checked before the rest of the schema, so that a peer of another version learns that,
    // not that its fields look malformed to us.
    let value: serde_json::Value =
        serde_json::from_str(line).map_err(|e| format!("malformed JSON: {e}"))?;
    match value.get("version").and_then(|v| v.as_u64()) {
        Some(v) if v == u64::from(CONTROL_VERSION) => {}
        Some(v) => {
            return Err(format!(
                "control protocol version {v} is not supported; this collector speaks version {CONTROL_VERSION}"
            ))
        }
        None => return Err("hello has no numeric \"version\" field".into()),
    }
    let hello = match serde_json::from_value(value).map_err(|e| format!("malformed hello: {e}"))? {
        TranslatorMessage::Hello(h) => h,
        TranslatorMessage::KeepAlive(_) if welcomed => return Ok(None),
        // Before a welcome nothing is held, and the token has not been checked.
        TranslatorMessage::KeepAlive(_) => return Err("keep-alive before a hello".into()),
    };
    if !token_eq(hello.token.as_bytes(), ad.token.as_bytes()) {
        return Err(
            "wrong token: the translator's control token does not match the collector's".into(),
        );
    }
    if let Some(q) = hello
        .qps
        .iter()
        .find(|q| q.qpn > 0xFF_FFFF || q.start_psn > 0xFF_FFFF)
    {
        return Err(format!(
            "QPN {:#x} or start PSN {:#x} does not fit in 24 bits",
            q.qpn, q.start_psn
        ));
    }
    // Regions one translator writes at a time (their state lives in it): Append lists and sketches.
    let single: Vec<SingleWriter> = ad
        .regions
        .iter()
        .filter_map(|r| match r.geometry {
            Geometry::Append(_) => Some(SingleWriter::Append(r.id)),
            Geometry::Sketch(_) => Some(SingleWriter::Sketch(r.id)),
            _ => None,
        })
        .collect();
    let (qps, withheld) = {
        let mut table = free_table(server, &hello, lease)?;
        let qps = table.open(
            server.opener.as_ref(),
            &hello,
            lease,
            &server.limits.qps,
            &server.qp_stats,
        )?;
        (qps, table.take_regions(&hello, &single))
    };
    let mut regions = ad.regions.clone();
    let mut append_heads = ad
        .memory
        .as_ref()
        .map(|m| m.append_heads())
        .unwrap_or_default();
    if !withheld.is_empty() {
        withhold(server, &hello, &withheld, &mut regions, &mut append_heads);
    }
    Ok(Some(Welcome {
        version: CONTROL_VERSION,
        mac: ad.mac,
        ip: ad.ip,
        qps,
        max_dest_rd_atomic: ad.max_dest_rd_atomic,
        path_mtu: ad.path_mtu,
        regions,
        // Read at each hello: the memory outlives the translators that write it.
        append_heads,
    }))
}

/// The QP table once no other live connection holds `hello`'s translator QPs, waiting up to
/// [`IN_USE_WAIT`] for the holder's connection to end; otherwise the refusal (logged and counted). The
/// collector cannot tell a second translator configured like the first from a restart whose old
/// connection has not ended yet, but only the first keeps its connection alive: it is refused until that
/// connection ends (a restart after a crash of the translator's host waits out the idle deadline).
fn free_table<'a>(
    server: &'a Shared,
    hello: &Hello,
    lease: LeaseId,
) -> std::result::Result<std::sync::MutexGuard<'a, QpTable>, String> {
    let end = Instant::now() + IN_USE_WAIT;
    loop {
        let table = server.table();
        let Some(held) = table.in_use(hello, lease) else {
            return Ok(table);
        };
        drop(table);
        if Instant::now() < end {
            std::thread::sleep(IN_USE_POLL);
            continue;
        }
        server
            .qp_stats
            .refused_in_use
            .fetch_add(1, Ordering::Relaxed);
        let holder = held
            .peer
            .map_or_else(|| "another connection".to_string(), |p| format!("{p}"));
        return Err(format!(
            "translator QP {:#x} of {} {REFUSED_IN_USE} from {holder}: a second \
             translator with the same address and QPNs? Give each translator its own address; a restarted \
             translator is let in once its old connection ends (closed, or silent for {:?})",
            held.qpn,
            std::net::Ipv4Addr::from(hello.ip),
            server.limits.idle_deadline
        ));
    }
}

/// Leaves the regions other translators hold out of `hello`'s welcome, saying so in the log and the
/// counters: that translator then drops its reports for them as no_region, counted, instead of writing
/// over the holder's.
fn withhold(
    server: &Shared,
    hello: &Hello,
    withheld: &[(SingleWriter, Holder)],
    regions: &mut Vec<dta_protocol::layout::Region>,
    append_heads: &mut Vec<dta_protocol::control::AppendHead>,
) {
    let me = std::net::Ipv4Addr::from(hello.ip);
    for &(r, (ip, _)) in withheld {
        let holder = std::net::Ipv4Addr::from(ip);
        let (counter, what) = match r {
            SingleWriter::Append(id) => (
                &server.qp_stats.append_lists_withheld,
                format!("Append list {id} is written by the translator at {holder} (an Append list has one writer)"),
            ),
            SingleWriter::Sketch(id) => (
                &server.qp_stats.sketches_withheld,
                format!("sketch {id} is merged by the translator at {holder} (a sketch has one merging translator)"),
            ),
        };
        counter.fetch_add(1, Ordering::Relaxed);
        log::warn!(
            "{what}; left out of the welcome of the translator at {me} (its reports for it are dropped \
             there as no_region until the holder's QPs are reclaimed)"
        );
    }
    let out = |g: &Geometry, id: u32| {
        withheld.iter().any(|&(r, _)| match (r, g) {
            (SingleWriter::Append(w), Geometry::Append(_))
            | (SingleWriter::Sketch(w), Geometry::Sketch(_)) => w == id,
            _ => false,
        })
    };
    regions.retain(|r| !out(&r.geometry, r.id));
    append_heads.retain(|h| {
        !withheld
            .iter()
            .any(|&(r, _)| r == SingleWriter::Append(h.list))
    });
}

/// Compares tokens in time independent of where they differ.
fn token_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
