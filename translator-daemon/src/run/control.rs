//! The control client, one thread per collector (DESIGN.md section 6). It says hello with every worker's
//! QP towards that collector and hands the welcome on: the first one to the daemon's start-up, later ones
//! to the workers. A worker whose QP failed (retries exhausted because the collector went away, or a
//! remote error) asks for new QPs through `requests`; the client then says hello again on the connection
//! that holds them, or, when that connection is gone, on a new one, with backoff while the collector is
//! down. A welcome whose regions differ from the last one means the collector restarted with
//! new memory (workers start over on it and count what was lost); the same regions mean only the QPs were
//! re-created (workers resend their unacknowledged work).
//!
//! The connection of the last welcome stays open with a keep-alive line every
//! [`KEEPALIVE_EVERY`](dta_protocol::control::KEEPALIVE_EVERY): the collector keeps our QPs while it lives
//! and reclaims them a grace period after it ends. When the collector closes it, the client says hello
//! again. The answer to a hello is read within a size cap and one deadline for the whole line, as the
//! collector reads hellos: a collector that never ends its line, or trickles it, is a failed attempt,
//! retried with backoff like a refused connection.
//!
//! A welcome the engine cannot use (regions it cannot write: a Key-Write entry size that does not fit the
//! reports, overlapping regions, a bad path MTU) is refused here, before any worker sees it: the collector
//! came back with new memory, so the workers detach from it (what they held for it is lost and counted,
//! and reports for it are refused and counted), and the client asks again with backoff, saying why in the
//! log and in `control_welcomes_refused_total{reason}`, until a usable welcome comes and the workers start
//! over on it.
//!
//! A collector refuses a hello whose QPs another live control connection holds: a second translator with
//! our address and QPNs, or our own previous connection not yet seen closed. That refusal is retried with
//! backoff, at start-up too, saying why in the log (WARN, with the holder's address) and in
//! `control_welcomes_refused_total{reason="qps_in_use"}`: the holder may go (or it was us), and then we
//! are let in; until then our workers hold nothing for that collector.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use dta_protocol::control::{
    CollectorMessage, Hello, KeepAlive, RequesterQp, TranslatorMessage, Welcome, CONTROL_VERSION,
    KEEPALIVE_EVERY, REFUSED_IN_USE,
};
use dta_protocol::layout::Region;
use dta_translator::{Config, Engine};

use super::worker::ToWorker;

/// Counters of one control client.
#[derive(Debug, Default)]
pub struct ControlCounters {
    /// Welcomes received (the first one, and one per re-establishment).
    pub welcomes: AtomicU64,
    /// Connection or handshake attempts that failed (collector down, refusal, malformed answer).
    pub failures: AtomicU64,
    /// Welcomes with new regions: the collector restarted.
    pub restarts: AtomicU64,
    /// Welcomes with the same regions after a QP error: only the QPs were re-created.
    pub reestablished: AtomicU64,
    /// Handshakes whose answer was refused, by [`Refused`] reason (index: its position in
    /// [`Refused::ALL`]).
    pub refused: [AtomicU64; Refused::ALL.len()],
    /// 1 while the collector's last welcome is one the workers use; 0 while it is unusable (or none came).
    pub usable: AtomicU64,
}

/// Why a handshake's answer was not taken (each also counts as a failure).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The collector refused us (token, version).
    ByCollector,
    /// The collector's QPs do not match ours.
    QpMismatch,
    /// A welcome whose regions the engine cannot use.
    Unusable,
    /// The collector refused us because another live control connection holds our QPs (a translator
    /// with our address and QPNs); retried with backoff.
    InUse,
}

impl Refused {
    /// Every reason, in counter order.
    pub const ALL: [Refused; 4] = [
        Refused::ByCollector,
        Refused::QpMismatch,
        Refused::Unusable,
        Refused::InUse,
    ];

    /// The metric label.
    pub const fn label(self) -> &'static str {
        match self {
            Refused::ByCollector => "refused_by_collector",
            Refused::QpMismatch => "qp_mismatch",
            Refused::Unusable => "unusable_welcome",
            Refused::InUse => "qps_in_use",
        }
    }

    /// The reason of a failed handshake, if the collector answered (from `handshake`'s errors).
    fn of(e: &anyhow::Error) -> Option<Refused> {
        let text = format!("{e:#}");
        if text.contains("refused us") && text.contains(REFUSED_IN_USE) {
            Some(Refused::InUse)
        } else if text.contains("refused us") {
            Some(Refused::ByCollector)
        } else if text.contains("do not match our") {
            Some(Refused::QpMismatch)
        } else {
            None
        }
    }
}

impl ControlCounters {
    fn refuse(&self, why: Refused) {
        if let Some(c) = Refused::ALL
            .iter()
            .position(|&r| r == why)
            .and_then(|k| self.refused.get(k))
        {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// One collector's control client.
pub struct ControlLink {
    /// Collector index (routing order).
    pub index: usize,
    /// Control server address.
    pub addr: SocketAddr,
    /// Shared token.
    pub token: String,
    /// Our MAC (the collector-facing port's).
    pub mac: [u8; 6],
    /// Our IPv4 address.
    pub ip: [u8; 4],
    /// Worker k's QPN towards this collector, for each k.
    pub qpns: Vec<u32>,
    /// PSN of the first connection; each later one starts elsewhere so that stale responses from a
    /// previous QP cannot be taken for new ones.
    pub base_psn: u32,
    /// Every worker's input.
    pub workers: Vec<Sender<ToWorker>>,
    /// QP failures reported by workers.
    pub requests: Receiver<()>,
    /// Counters.
    pub counters: Arc<ControlCounters>,
    /// Set when the daemon stops.
    pub stop: Arc<AtomicBool>,
    /// Worker 0's engine configuration: what a welcome is checked against before it is handed on (the
    /// workers' configurations differ only in their own QPNs and UDP ports).
    pub engine: Config,
}

const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How often the client checks for worker requests and for shutdown.
const POLL: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(2);
/// Distance between the start PSNs of consecutive connections.
const PSN_STEP: u32 = 0x1000;
/// How long the answer to a hello on the open connection may take before a new connection is tried.
const REHELLO_DEADLINE: Duration = Duration::from_secs(2);

/// How the answer to a hello is read: the whole line within `deadline` and `max` bytes. A welcome without
/// a newline used to grow the translator to 2 GiB, and one byte every 4 s kept it from ever starting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnswerLimits {
    /// The whole answer line, from sending the hello to its newline.
    pub deadline: Duration,
    /// Longest answer line, newline included.
    pub max: usize,
}

impl Default for AnswerLimits {
    fn default() -> Self {
        AnswerLimits {
            // As long as the collector gives a hello (its `hello_deadline`).
            deadline: Duration::from_secs(10),
            // A welcome is a few hundred bytes per region and 30 per QP; the collector's hellos are capped
            // at 256 KiB. 1 MiB is thousands of regions.
            max: 1 << 20,
        }
    }
}

/// Reads one line that must arrive whole before `deadline` and within `max` bytes.
fn read_answer(stream: &mut TcpStream, limits: AnswerLimits) -> Result<String> {
    let deadline = Instant::now() + limits.deadline;
    let mut line = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let now = Instant::now();
        if now >= deadline {
            bail!(
                "no complete answer within {:?} ({} bytes received)",
                limits.deadline,
                line.len()
            );
        }
        stream.set_read_timeout(Some(deadline - now))?;
        // Never past the newline: what follows the answer is not ours to take (it stays in the socket).
        let want = chunk.len().min(limits.max - line.len());
        let n = match stream.peek(&mut chunk[..want]) {
            Ok(0) => bail!(
                "the collector closed the connection without answering ({} bytes of an answer)",
                line.len()
            ),
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) =>
            {
                continue
            }
            Err(e) => return Err(e).context("reading the answer"),
        };
        let take = chunk[..n]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(n, |i| i + 1);
        stream.read_exact(&mut chunk[..take])?;
        line.extend_from_slice(&chunk[..take]);
        if line.last() == Some(&b'\n') {
            return String::from_utf8(line).context("the answer is not UTF-8 text");
        }
        if line.len() >= limits.max {
            bail!(
                "the collector's answer is longer than {} bytes without a newline",
                limits.max
            );
        }
    }
}

/// The open control connection of the last welcome: while it lives the collector keeps our QPs.
struct Lease {
    stream: TcpStream,
    last_sent: Instant,
}

impl Lease {
    fn new(stream: TcpStream) -> Self {
        Lease {
            stream,
            last_sent: Instant::now(),
        }
    }

    /// Sends a keep-alive when one is due, and says whether the collector has ended the connection (it
    /// sends nothing after a welcome but a refusal before closing).
    fn check(&mut self) -> std::result::Result<(), String> {
        if self.last_sent.elapsed() >= KEEPALIVE_EVERY {
            let ka = TranslatorMessage::KeepAlive(KeepAlive {
                version: CONTROL_VERSION,
            });
            let mut line = serde_json::to_string(&ka).map_err(|e| e.to_string())?;
            line.push('\n');
            self.stream
                .write_all(line.as_bytes())
                .map_err(|e| format!("sending a keep-alive: {e}"))?;
            self.last_sent = Instant::now();
        }
        let mut b = [0u8; 512];
        self.stream
            .set_nonblocking(true)
            .map_err(|e| e.to_string())?;
        let r = self.stream.peek(&mut b);
        let _ = self.stream.set_nonblocking(false);
        match r {
            Ok(0) => Err("the collector closed the control connection".into()),
            Ok(n) => Err(format!(
                "the collector ended the control connection: {}",
                String::from_utf8_lossy(&b[..n]).trim_end()
            )),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(()),
            Err(e) => Err(format!("control connection: {e}")),
        }
    }
}

/// How a welcome is handed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Reestablish,
    Replace,
}

impl ControlLink {
    fn psn(&self, generation: u32) -> u32 {
        self.base_psn
            .wrapping_add(generation.wrapping_mul(PSN_STEP))
            & 0xFF_FFFF
    }

    fn hello(&self, start_psn: u32) -> Hello {
        let mut gid = [0u8; 16];
        gid[10] = 0xff;
        gid[11] = 0xff;
        gid[12..].copy_from_slice(&self.ip);
        Hello {
            version: CONTROL_VERSION,
            token: self.token.clone(),
            mac: self.mac,
            ip: self.ip,
            gid,
            qps: self
                .qpns
                .iter()
                .map(|&qpn| RequesterQp { qpn, start_psn })
                .collect(),
        }
    }

    /// Sends a hello on `stream` and reads the answer.
    fn handshake(
        &self,
        stream: &mut TcpStream,
        start_psn: u32,
        limits: AnswerLimits,
    ) -> Result<Welcome> {
        let mut line = serde_json::to_string(&TranslatorMessage::Hello(self.hello(start_psn)))?;
        line.push('\n');
        stream.write_all(line.as_bytes()).context("sending hello")?;
        let answer = read_answer(stream, limits)?;
        let w = match serde_json::from_str::<CollectorMessage>(&answer)
            .with_context(|| format!("malformed answer {:?}", answer.trim_end()))?
        {
            CollectorMessage::Welcome(w) => w,
            CollectorMessage::Refusal(r) => bail!("the collector refused us: {}", r.error),
        };
        if w.qps.len() != self.qpns.len()
            || w.qps
                .iter()
                .zip(&self.qpns)
                .any(|(q, &ours)| q.peer_qpn != ours)
        {
            bail!(
                "the collector answered {} QPs that do not match our {} QPs",
                w.qps.len(),
                self.qpns.len()
            );
        }
        Ok(w)
    }

    /// Connects and says hello; the welcome comes with its connection, the lease on its QPs.
    fn connect(&self, start_psn: u32) -> Result<(Welcome, Lease)> {
        self.connect_with(start_psn, AnswerLimits::default())
    }

    fn connect_with(&self, start_psn: u32, limits: AnswerLimits) -> Result<(Welcome, Lease)> {
        let mut stream = TcpStream::connect_timeout(&self.addr, CONNECT_TIMEOUT)
            .with_context(|| format!("connecting to {}", self.addr))?;
        stream.set_nodelay(true)?;
        let w = self.handshake(&mut stream, start_psn, limits)?;
        Ok((w, Lease::new(stream)))
    }

    /// The welcome as worker `k` sees it: its own QP only.
    fn for_worker(w: &Welcome, k: usize) -> Welcome {
        let mut mine = w.clone();
        mine.qps = vec![w.qps[k]];
        mine
    }

    fn deliver(&self, w: &Welcome, start_psn: u32, kind: Kind) {
        for (k, tx) in self.workers.iter().enumerate() {
            let (collector, welcome) = (self.index, Self::for_worker(w, k));
            let msg = match kind {
                Kind::Reestablish => ToWorker::Reestablish {
                    collector,
                    welcome,
                    start_psn,
                },
                Kind::Replace => ToWorker::Replace {
                    collector,
                    welcome,
                    start_psn,
                },
            };
            let _ = tx.send(msg);
        }
    }

    fn sleep(&self, d: Duration) {
        let end = std::time::Instant::now() + d;
        while !self.stop.load(Ordering::Relaxed) && std::time::Instant::now() < end {
            std::thread::sleep(POLL.min(d));
        }
    }

    /// Why the engine cannot use `w`, if it cannot.
    fn unusable(&self, w: &Welcome) -> Option<String> {
        Engine::check_welcome(&self.engine, self.index, &Self::for_worker(w, 0))
            .err()
            .map(|e| e.to_string())
    }

    /// Tells the workers that the collector came back with memory they cannot use (once, until a usable
    /// welcome comes): they drop what they held for it, counted, and refuse its reports, counted.
    fn detach(&self, detached: &mut bool) {
        self.counters.usable.store(0, Ordering::Relaxed);
        if !*detached {
            *detached = true;
            for tx in &self.workers {
                let _ = tx.send(ToWorker::Detach {
                    collector: self.index,
                });
            }
        }
    }

    /// Connects and says hello until a usable welcome comes (or the daemon stops), with backoff. A
    /// welcome the engine cannot use detaches the workers from this collector (`detached` says they are)
    /// and is asked for again.
    fn establish(&self, start_psn: u32, detached: &mut bool) -> Option<(Welcome, Lease)> {
        let mut backoff = Duration::from_millis(50);
        while !self.stop.load(Ordering::Relaxed) {
            let e = match self.connect(start_psn) {
                Ok((w, lease)) => {
                    self.counters.welcomes.fetch_add(1, Ordering::Relaxed);
                    let Some(why) = self.unusable(&w) else {
                        self.counters.usable.store(1, Ordering::Relaxed);
                        return Some((w, lease));
                    };
                    // Its connection goes with it: the collector reclaims the QPs it made for us.
                    drop(lease);
                    self.counters.refuse(Refused::Unusable);
                    self.detach(detached);
                    anyhow::anyhow!(
                        "its welcome cannot be used: {why}; its reports are refused and counted \
                         (report_drops_total{{reason=\"collector_unusable\"}}) until it offers memory \
                         the translator can write"
                    )
                }
                Err(e) => {
                    if let Some(why) = Refused::of(&e) {
                        self.counters.refuse(why);
                    }
                    e
                }
            };
            self.counters.failures.fetch_add(1, Ordering::Relaxed);
            let line = format!(
                "collector {} ({}): {e:#}; retrying in {backoff:?}",
                self.index, self.addr
            );
            if *detached {
                log::error!("{line}");
            } else {
                log::warn!("{line}");
            }
            self.sleep(backoff);
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
        None
    }

    /// Says hello again on the live connection `lease` (the collector replaces the QPs that connection
    /// holds): no other connection's hello can come between the old QPs and the new ones, as it could
    /// with a new connection, where a translator with our identity waiting to get in (refused while we
    /// live) would take our QPs in the gap. `None` (the connection closed, the answer refused, late, or
    /// a welcome the engine cannot use): [`establish`](Self::establish) takes over on a new connection.
    fn rehello(&self, mut lease: Lease, start_psn: u32) -> Option<(Welcome, Lease)> {
        let limits = AnswerLimits {
            // A collector that went away without closing must not hold the reconnection for long.
            deadline: REHELLO_DEADLINE,
            ..AnswerLimits::default()
        };
        match self.handshake(&mut lease.stream, start_psn, limits) {
            Ok(w) if self.unusable(&w).is_none() => {
                self.counters.welcomes.fetch_add(1, Ordering::Relaxed);
                lease.last_sent = Instant::now();
                Some((w, lease))
            }
            Ok(_) => None,
            Err(e) => {
                log::info!(
                    "collector {} ({}): hello on the open connection: {e:#}; connecting anew",
                    self.index,
                    self.addr
                );
                None
            }
        }
    }

    /// Runs until `stop`. The first welcome goes to `initial`; a refusal there, or a welcome the engine
    /// cannot use, is fatal (a wrong token, version or memory layout at start-up is a configuration to
    /// fix; the daemon says which and exits). Later ones are retried because the collector may be
    /// restarting.
    pub fn run(self, initial: Sender<(usize, Result<Welcome, String>)>) {
        let mut detached = false;
        let first = match self.connect(self.psn(0)) {
            Ok((w, lease)) => match self.unusable(&w) {
                None => {
                    self.counters.welcomes.fetch_add(1, Ordering::Relaxed);
                    Ok((w, lease))
                }
                Some(why) => {
                    self.counters.refuse(Refused::Unusable);
                    Err(format!("its welcome cannot be used: {why}"))
                }
            },
            Err(e) if Refused::of(&e) == Some(Refused::ByCollector) => {
                self.counters.refuse(Refused::ByCollector);
                Err(format!("{e:#}"))
            }
            Err(e) => {
                // A collector that is down, or one whose QPs for us another live translator holds
                // (refused, counted, and retried: the holder may go).
                if Refused::of(&e) == Some(Refused::InUse) {
                    self.counters.refuse(Refused::InUse);
                    self.counters.failures.fetch_add(1, Ordering::Relaxed);
                }
                log::warn!(
                    "collector {} ({}): {e:#}; waiting for it",
                    self.index,
                    self.addr
                );
                self.establish(self.psn(0), &mut detached)
                    .ok_or_else(|| "stopped".to_string())
            }
        };
        let (first, mut lease) = match first {
            Ok((w, lease)) => (Ok(w), Some(lease)),
            Err(e) => (Err(e), None),
        };
        // None: the workers hold no memory of this collector (detached), so the next welcome replaces.
        let mut regions: Option<Vec<Region>> = match &first {
            Ok(w) => {
                self.counters.usable.store(1, Ordering::Relaxed);
                log::info!(
                    "collector {} ({}): welcome with {} regions",
                    self.index,
                    self.addr,
                    w.regions.len()
                );
                Some(w.regions.clone())
            }
            Err(_) => None,
        };
        let failed = first.is_err();
        let _ = initial.send((self.index, first));
        if failed {
            return;
        }
        let mut generation = 0u32;
        while !self.stop.load(Ordering::Relaxed) {
            // A failed QP is re-established on the connection that holds it, while it lives.
            let mut alive = lease.take();
            match self.requests.recv_timeout(POLL) {
                Ok(()) => {}
                Err(RecvTimeoutError::Timeout) => match alive.as_mut().map(Lease::check) {
                    Some(Ok(())) => {
                        lease = alive;
                        continue;
                    }
                    // Without the connection the collector reclaims our QPs after its grace period:
                    // say hello again now, as for a failed QP.
                    Some(Err(why)) => {
                        alive = None;
                        log::warn!(
                            "collector {} ({}): {why}; saying hello again",
                            self.index,
                            self.addr
                        )
                    }
                    None => continue,
                },
                Err(RecvTimeoutError::Disconnected) => return,
            }
            // Several workers may report one failure: one new set of QPs serves them all.
            while self.requests.try_recv().is_ok() {}
            generation = generation.wrapping_add(1);
            let psn = self.psn(generation);
            let again = alive.and_then(|l| self.rehello(l, psn));
            let Some((w, new_lease)) = again.or_else(|| self.establish(psn, &mut detached)) else {
                return;
            };
            lease = Some(new_lease);
            if regions.as_ref() == Some(&w.regions) {
                self.counters.reestablished.fetch_add(1, Ordering::Relaxed);
                log::info!(
                    "collector {}: QPs re-established at PSN {psn:#x}",
                    self.index
                );
                self.deliver(&w, psn, Kind::Reestablish);
            } else {
                self.counters.restarts.fetch_add(1, Ordering::Relaxed);
                if detached {
                    log::warn!(
                        "collector {} ({}): back with memory the translator can use; resuming on it",
                        self.index,
                        self.addr
                    );
                } else {
                    log::warn!(
                        "collector {} ({}): restarted with new memory; starting over on it",
                        self.index,
                        self.addr
                    );
                }
                self.deliver(&w, psn, Kind::Replace);
            }
            detached = false;
            regions = Some(w.regions);
            // Requests that arrived while reconnecting were about the old QPs.
            while self.requests.try_recv().is_ok() {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::sync::mpsc;

    fn link(addr: SocketAddr) -> ControlLink {
        let (_tx, requests) = mpsc::channel();
        ControlLink {
            index: 0,
            addr,
            token: "t".into(),
            mac: [2, 0, 0, 0, 0, 1],
            ip: [198, 18, 0, 1],
            qpns: vec![0x100],
            base_psn: 0,
            workers: Vec::new(),
            requests,
            counters: Arc::new(ControlCounters::default()),
            stop: Arc::new(AtomicBool::new(false)),
            engine: Config::default(),
        }
    }

    /// A collector that reads the hello and then runs `answer` on the connection.
    fn collector(answer: impl FnOnce(TcpStream) + Send + 'static) -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            if let Ok((s, _)) = l.accept() {
                let mut hello = [0u8; 4096];
                let _ = (&s).read(&mut hello);
                answer(s);
            }
        });
        addr
    }

    /// Issue 26, item 8: a welcome without a newline grew the translator to 2 GiB. The answer is cut at
    /// the size cap with a clear error (which `establish` retries like any failed attempt).
    #[test]
    fn an_answer_without_a_newline_is_cut_at_the_size_cap() {
        let addr = collector(|mut s| {
            let junk = [b'x'; 64 << 10];
            // Until the translator hangs up: far more than the cap.
            for _ in 0..64 {
                if s.write_all(&junk).is_err() {
                    break;
                }
            }
        });
        let e = link(addr).connect(0).err().expect("refused");
        assert_eq!(
            format!("{e:#}"),
            "the collector's answer is longer than 1048576 bytes without a newline"
        );
    }

    /// Issue 26, item 8: one byte every 4 s kept the translator from ever starting (a timeout per read,
    /// none for the line). The whole answer has one deadline.
    #[test]
    fn a_trickled_answer_meets_one_deadline_for_the_whole_line() {
        let (done_tx, done) = mpsc::channel::<()>();
        let addr = collector(move |mut s| {
            // One byte every 50 ms, each within any per-read timeout, until the translator gives up.
            while done.try_recv().is_err() && s.write_all(b"{").is_ok() {
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        let limits = AnswerLimits {
            deadline: Duration::from_millis(500),
            ..AnswerLimits::default()
        };
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(link(addr).connect_with(0, limits).map(|_| ()));
        });
        // Bounded by the outcome, not by the trickle: before the deadline it never returned.
        let r = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the handshake returned");
        let _ = done_tx.send(());
        let e = format!("{:#}", r.expect_err("refused"));
        assert!(
            e.starts_with("no complete answer within 500ms (") && e.ends_with(" bytes received)"),
            "{e}"
        );
    }

    /// The welcome's connection is kept (the lease on our QPs); when the collector closes it the lease
    /// says so, so that the client says hello again before the QPs are reclaimed.
    #[test]
    fn the_welcome_connection_is_kept_and_its_end_is_noticed() {
        let (close_tx, close) = mpsc::channel::<()>();
        let addr = collector(move |mut s| {
            let w = CollectorMessage::Welcome(Welcome {
                version: CONTROL_VERSION,
                mac: [2, 0, 0, 0, 0, 2],
                ip: [198, 18, 0, 2],
                qps: vec![dta_protocol::control::ResponderQp {
                    qpn: 0x200,
                    peer_qpn: 0x100,
                }],
                max_dest_rd_atomic: 16,
                path_mtu: 1024,
                regions: vec![],
                append_heads: Vec::new(),
            });
            let mut line = serde_json::to_string(&w).unwrap();
            line.push('\n');
            s.write_all(line.as_bytes()).unwrap();
            let _ = close.recv();
            // Read the keep-alive first: closing with unread bytes would be a reset, not a close.
            let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
            let _ = s.read(&mut [0u8; 4096]);
        });
        let (w, mut lease) = link(addr).connect(0).unwrap();
        assert_eq!(w.qps[0].qpn, 0x200);
        assert_eq!(lease.check(), Ok(()));
        // A keep-alive when one is due.
        lease.last_sent = Instant::now() - KEEPALIVE_EVERY;
        assert_eq!(lease.check(), Ok(()));
        close_tx.send(()).unwrap();
        let end = Instant::now() + Duration::from_secs(10);
        let why = loop {
            match lease.check() {
                Ok(()) => assert!(Instant::now() < end, "the close was not noticed"),
                Err(why) => break why,
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        assert_eq!(why, "the collector closed the control connection");
    }
}

/// Issue 26, item 2: welcomes the engine cannot use, against a stand-in collector.
#[cfg(test)]
mod unusable_welcome_tests {
    use super::*;
    use dta_protocol::control::ResponderQp;
    use dta_protocol::layout::{Geometry, KeyWriteGeometry};
    use std::io::{BufRead, BufReader};
    use std::net::TcpListener;
    use std::sync::mpsc;

    /// A welcome for our one QP, its Key-Write entries `entry_size` bytes (8 fits the default reports'
    /// 4 data bytes; 16 does not).
    fn welcome(entry_size: u32, va: u64) -> Welcome {
        Welcome {
            version: CONTROL_VERSION,
            mac: [2, 0, 0, 0, 0, 2],
            ip: [198, 18, 0, 2],
            qps: vec![ResponderQp {
                qpn: 0x11,
                peer_qpn: 0x100,
            }],
            max_dest_rd_atomic: 16,
            path_mtu: 1024,
            regions: vec![Region {
                id: 0,
                va,
                rkey: 1,
                geometry: Geometry::KeyWrite(KeyWriteGeometry::new(256, entry_size, 4).unwrap()),
            }],
            append_heads: Vec::new(),
        }
    }

    /// A collector's control port answering each hello with the next of `answers`, then the last again.
    /// It keeps every connection open (the lease on the QPs), as a collector does.
    fn collector(answers: Vec<Welcome>) -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            let mut k = 0;
            let mut open = Vec::new();
            for s in l.incoming() {
                let Ok(mut s) = s else { return };
                let mut line = String::new();
                if BufReader::new(s.try_clone().unwrap())
                    .read_line(&mut line)
                    .is_err()
                {
                    continue;
                }
                let w = &answers[k.min(answers.len() - 1)];
                k += 1;
                let mut out = serde_json::to_string(&CollectorMessage::Welcome(w.clone())).unwrap();
                out.push('\n');
                let _ = s.write_all(out.as_bytes());
                open.push(s);
            }
        });
        addr
    }

    /// A control link to `addr` with one worker: the link, the worker's end, the re-establishment
    /// request sender and the stop flag (the in-use and re-hello tests use it too).
    pub(super) fn link(
        addr: SocketAddr,
    ) -> (ControlLink, Receiver<ToWorker>, Sender<()>, Arc<AtomicBool>) {
        let (to_worker, from_client) = mpsc::channel();
        let (request, requests) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let link = ControlLink {
            index: 0,
            addr,
            token: "t".into(),
            mac: [2, 0, 0, 0, 0, 1],
            ip: [198, 18, 0, 1],
            qpns: vec![0x100],
            base_psn: 0,
            workers: vec![to_worker],
            requests,
            counters: Arc::new(ControlCounters::default()),
            stop: stop.clone(),
            engine: Config::default(),
        };
        (link, from_client, request, stop)
    }

    /// Issue 26, item 2: a collector that comes back with regions the translator cannot use. The client
    /// refuses that welcome, detaches the workers once, keeps asking with backoff (counted by reason), and
    /// when the collector offers usable memory, the workers start over on it. Before, the unusable welcome
    /// went to the workers, whose engines refused it and kept a queue nothing drained, and the client
    /// waited for a QP error that never came again.
    #[test]
    fn an_unusable_welcome_is_refused_retried_and_resumed_from() {
        let good = welcome(8, 0x10_0000);
        let bad = welcome(16, 0x20_0000);
        let back = welcome(8, 0x30_0000);
        let addr = collector(vec![good.clone(), bad.clone(), bad, back.clone()]);
        let (link, from_client, request, stop) = link(addr);
        let counters = link.counters.clone();
        let (initial_tx, initial) = mpsc::channel();
        let client = std::thread::spawn(move || link.run(initial_tx));
        let (i, first) = initial.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!((i, first.unwrap()), (0, good));
        assert_eq!(counters.usable.load(Ordering::Relaxed), 1);
        // The collector restarted: a worker's QP failed.
        request.send(()).unwrap();
        let msg = from_client.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(matches!(msg, ToWorker::Detach { collector: 0 }));
        let msg = from_client.recv_timeout(Duration::from_secs(10)).unwrap();
        let ToWorker::Replace {
            collector: 0,
            welcome,
            ..
        } = msg
        else {
            panic!("a Replace after the usable welcome");
        };
        assert_eq!(welcome.regions, back.regions);
        let refused = |r: Refused| counters.refused[r as usize].load(Ordering::Relaxed);
        assert_eq!(refused(Refused::Unusable), 2);
        assert_eq!(refused(Refused::ByCollector), 0);
        assert_eq!(counters.failures.load(Ordering::Relaxed), 2);
        assert_eq!(counters.welcomes.load(Ordering::Relaxed), 4);
        assert_eq!(counters.restarts.load(Ordering::Relaxed), 1);
        assert_eq!(counters.usable.load(Ordering::Relaxed), 1);
        // One Detach for the two refusals, nothing else.
        assert!(from_client.try_recv().is_err());
        stop.store(true, Ordering::Relaxed);
        client.join().unwrap();
    }

    /// An unusable welcome at start-up is a configuration to fix: said, not retried.
    #[test]
    fn an_unusable_first_welcome_says_why() {
        let addr = collector(vec![welcome(16, 0x10_0000)]);
        let (link, _from_client, _request, _stop) = link(addr);
        let counters = link.counters.clone();
        let (initial_tx, initial) = mpsc::channel();
        std::thread::spawn(move || link.run(initial_tx));
        let (_, first) = initial.recv_timeout(Duration::from_secs(10)).unwrap();
        let why = first.unwrap_err();
        assert!(
            why.contains("Key-Write entries hold 12 data bytes, reports carry 4"),
            "{why}"
        );
        assert_eq!(
            counters.refused[Refused::Unusable as usize].load(Ordering::Relaxed),
            1
        );
        assert_eq!(counters.usable.load(Ordering::Relaxed), 0);
    }
}

/// Issue 26 item 4: a collector that refuses our hello because another live translator holds our QPs.
#[cfg(test)]
mod in_use_tests {
    use super::*;
    use dta_protocol::control::{Refusal, ResponderQp};
    use std::io::{BufRead, BufReader};
    use std::net::TcpListener;
    use std::sync::mpsc;

    /// A collector's control port answering the first `refusals` hellos with the in-use refusal (and
    /// closing), then welcoming (and keeping the connection).
    fn collector(refusals: usize) -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            let mut open = Vec::new();
            for (k, s) in l.incoming().enumerate() {
                let Ok(mut s) = s else { return };
                let mut line = String::new();
                if BufReader::new(s.try_clone().unwrap())
                    .read_line(&mut line)
                    .is_err()
                {
                    continue;
                }
                let answer = if k < refusals {
                    CollectorMessage::Refusal(Refusal {
                        version: CONTROL_VERSION,
                        error: format!(
                            "translator QP 0x100 of 198.18.0.1 {REFUSED_IN_USE} from 10.9.9.9:4000"
                        ),
                    })
                } else {
                    CollectorMessage::Welcome(Welcome {
                        version: CONTROL_VERSION,
                        mac: [2, 0, 0, 0, 0, 2],
                        ip: [198, 18, 0, 2],
                        qps: vec![ResponderQp {
                            qpn: 0x11,
                            peer_qpn: 0x100,
                        }],
                        max_dest_rd_atomic: 16,
                        path_mtu: 1024,
                        regions: vec![],
                        append_heads: Vec::new(),
                    })
                };
                let mut out = serde_json::to_string(&answer).unwrap();
                out.push('\n');
                let _ = s.write_all(out.as_bytes());
                open.push(s);
            }
        });
        addr
    }

    /// At start-up an in-use refusal is not fatal (unlike a wrong token): the client says why in its
    /// counters, retries with backoff and takes the welcome that comes once the holder is gone.
    #[test]
    fn an_in_use_refusal_is_counted_and_retried_until_welcomed() {
        let addr = collector(3);
        let (link, _from_client, _tx, stop) = super::unusable_welcome_tests::link(addr);
        let counters = link.counters.clone();
        let (initial_tx, initial) = mpsc::channel();
        let client = std::thread::spawn(move || link.run(initial_tx));
        let (i, first) = initial.recv_timeout(Duration::from_secs(20)).unwrap();
        assert_eq!(i, 0);
        assert_eq!(first.unwrap().qps[0].qpn, 0x11);
        let refused = |r: Refused| counters.refused[r as usize].load(Ordering::Relaxed);
        assert_eq!(refused(Refused::InUse), 3);
        assert_eq!(refused(Refused::ByCollector), 0);
        assert_eq!(counters.failures.load(Ordering::Relaxed), 3);
        assert_eq!(counters.welcomes.load(Ordering::Relaxed), 1);
        assert_eq!(counters.usable.load(Ordering::Relaxed), 1);
        stop.store(true, Ordering::Relaxed);
        client.join().unwrap();
    }

    #[test]
    fn the_in_use_refusal_is_told_apart_from_a_wrong_token() {
        let e = anyhow::anyhow!(
            "the collector refused us: translator QP 0x100 of 198.18.0.1 {REFUSED_IN_USE} from x"
        );
        assert_eq!(Refused::of(&e), Some(Refused::InUse));
        let e = anyhow::anyhow!("the collector refused us: wrong token");
        assert_eq!(Refused::of(&e), Some(Refused::ByCollector));
    }
}

/// A failed QP is re-established on the connection that holds it (issue 26 item 4: a translator with our
/// identity, refused while we live, cannot take our QPs between our old connection and a new one).
#[cfg(test)]
mod rehello_tests {
    use super::*;
    use dta_protocol::control::ResponderQp;
    use std::io::{BufRead, BufReader};
    use std::net::TcpListener;
    use std::sync::atomic::AtomicUsize;
    use std::sync::mpsc;

    /// A collector's control port answering every hello, on every connection, with a welcome of the
    /// same (empty) regions and a new responder QPN; it counts connections and hellos.
    fn collector(connections: Arc<AtomicUsize>, hellos: Arc<AtomicUsize>) -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            for s in l.incoming() {
                let Ok(mut s) = s else { return };
                connections.fetch_add(1, Ordering::Relaxed);
                let hellos = hellos.clone();
                std::thread::spawn(move || {
                    let mut lines = BufReader::new(s.try_clone().unwrap()).lines();
                    while let Some(Ok(line)) = lines.next() {
                        if !line.contains("\"hello\"") {
                            continue;
                        }
                        let n = hellos.fetch_add(1, Ordering::Relaxed) as u32;
                        let w = CollectorMessage::Welcome(Welcome {
                            version: CONTROL_VERSION,
                            mac: [2, 0, 0, 0, 0, 2],
                            ip: [198, 18, 0, 2],
                            qps: vec![ResponderQp {
                                qpn: 0x200 + n,
                                peer_qpn: 0x100,
                            }],
                            max_dest_rd_atomic: 16,
                            path_mtu: 1024,
                            regions: vec![],
                            append_heads: Vec::new(),
                        });
                        let mut out = serde_json::to_string(&w).unwrap();
                        out.push('\n');
                        if s.write_all(out.as_bytes()).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        addr
    }

    #[test]
    fn a_failed_qp_is_re_established_on_the_open_connection() {
        let (connections, hellos) = (Arc::default(), Arc::default());
        let addr = collector(Arc::clone(&connections), Arc::clone(&hellos));
        let (link, from_client, request, stop) = super::unusable_welcome_tests::link(addr);
        let counters = link.counters.clone();
        let (initial_tx, initial) = mpsc::channel();
        let client = std::thread::spawn(move || link.run(initial_tx));
        let (_, first) = initial.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(first.unwrap().qps[0].qpn, 0x200);
        for k in 1..=2u32 {
            request.send(()).unwrap();
            let msg = from_client.recv_timeout(Duration::from_secs(10)).unwrap();
            let ToWorker::Reestablish { welcome, .. } = msg else {
                panic!("a Reestablish");
            };
            assert_eq!(welcome.qps[0].qpn, 0x200 + k);
            // The client drops requests that arrived while it re-established (they were about the old
            // QPs): let it get past that before the next failure.
            std::thread::sleep(Duration::from_millis(300));
        }
        assert_eq!(connections.load(Ordering::Relaxed), 1, "one connection");
        assert_eq!(hellos.load(Ordering::Relaxed), 3);
        assert_eq!(counters.welcomes.load(Ordering::Relaxed), 3);
        assert_eq!(counters.reestablished.load(Ordering::Relaxed), 2);
        assert_eq!(counters.failures.load(Ordering::Relaxed), 0);
        stop.store(true, Ordering::Relaxed);
        client.join().unwrap();
    }
}
