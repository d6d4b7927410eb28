//! The control client, one thread per collector (DESIGN.md section 6). It says hello with every worker's
//! QP towards that collector and hands the welcome on: the first one to the daemon's start-up, later ones
//! to the workers. A worker whose QP failed (retries exhausted because the collector went away, or a
//! remote error) asks for new QPs through `requests`; the client then reconnects, with backoff while the
//! collector is down. A welcome whose regions differ from the last one means the collector restarted with
//! new memory (workers start over on it and count what was lost); the same regions mean only the QPs were
//! re-created (workers resend their unacknowledged work).
//!
//! A welcome the engine cannot use (regions it cannot write: a Key-Write entry size that does not fit the
//! reports, overlapping regions, a bad path MTU) is refused here, before any worker sees it: the collector
//! came back with new memory, so the workers detach from it (what they held for it is lost and counted,
//! and reports for it are refused and counted), and the client asks again with backoff, saying why in the
//! log and in `control_welcomes_refused_total{reason}`, until a usable welcome comes and the workers start
//! over on it.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use dta_protocol::control::{
    CollectorMessage, Hello, RequesterQp, TranslatorMessage, Welcome, CONTROL_VERSION,
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
}

impl Refused {
    /// Every reason, in counter order.
    pub const ALL: [Refused; 3] = [Refused::ByCollector, Refused::QpMismatch, Refused::Unusable];

    /// The metric label.
    pub const fn label(self) -> &'static str {
        match self {
            Refused::ByCollector => "refused_by_collector",
            Refused::QpMismatch => "qp_mismatch",
            Refused::Unusable => "unusable_welcome",
        }
    }

    /// The reason of a failed handshake, if the collector answered (from `handshake`'s errors).
    fn of(e: &anyhow::Error) -> Option<Refused> {
        let text = format!("{e:#}");
        if text.contains("refused us") {
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
const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);
/// How often the client checks for worker requests and for shutdown.
const POLL: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(2);
/// Distance between the start PSNs of consecutive connections.
const PSN_STEP: u32 = 0x1000;

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
        reader: &mut BufReader<TcpStream>,
        start_psn: u32,
    ) -> Result<Welcome> {
        let mut line = serde_json::to_string(&TranslatorMessage::Hello(self.hello(start_psn)))?;
        line.push('\n');
        stream.write_all(line.as_bytes()).context("sending hello")?;
        stream.set_read_timeout(Some(ANSWER_TIMEOUT))?;
        let mut answer = String::new();
        if reader
            .read_line(&mut answer)
            .context("reading the answer")?
            == 0
        {
            bail!("the collector closed the connection without answering");
        }
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

    fn connect(&self, start_psn: u32) -> Result<Welcome> {
        let mut stream = TcpStream::connect_timeout(&self.addr, CONNECT_TIMEOUT)
            .with_context(|| format!("connecting to {}", self.addr))?;
        stream.set_nodelay(true)?;
        let mut reader = BufReader::new(stream.try_clone()?);
        self.handshake(&mut stream, &mut reader, start_psn)
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
    fn establish(&self, start_psn: u32, detached: &mut bool) -> Option<Welcome> {
        let mut backoff = Duration::from_millis(50);
        while !self.stop.load(Ordering::Relaxed) {
            let e = match self.connect(start_psn) {
                // The connection closes here: the collector's server times idle connections out, and a
                // new connection per handshake keeps that from looking like a failure.
                Ok(w) => {
                    self.counters.welcomes.fetch_add(1, Ordering::Relaxed);
                    let Some(why) = self.unusable(&w) else {
                        self.counters.usable.store(1, Ordering::Relaxed);
                        return Some(w);
                    };
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

    /// Runs until `stop`. The first welcome goes to `initial`; a refusal there, or a welcome the engine
    /// cannot use, is fatal (a wrong token, version or memory layout at start-up is a configuration to
    /// fix; the daemon says which and exits). Later ones are retried because the collector may be
    /// restarting.
    pub fn run(self, initial: Sender<(usize, Result<Welcome, String>)>) {
        let mut detached = false;
        let first = match self.connect(self.psn(0)) {
            Ok(w) => match self.unusable(&w) {
                None => {
                    self.counters.welcomes.fetch_add(1, Ordering::Relaxed);
                    Ok(w)
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
                log::warn!(
                    "collector {} ({}): {e:#}; waiting for it",
                    self.index,
                    self.addr
                );
                self.establish(self.psn(0), &mut detached)
                    .ok_or_else(|| "stopped".to_string())
            }
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
            match self.requests.recv_timeout(POLL) {
                Ok(()) => {}
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => return,
            }
            // Several workers may report one failure: one new set of QPs serves them all.
            while self.requests.try_recv().is_ok() {}
            generation = generation.wrapping_add(1);
            let psn = self.psn(generation);
            let Some(w) = self.establish(psn, &mut detached) else {
                return;
            };
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
    use dta_protocol::control::ResponderQp;
    use dta_protocol::layout::{Geometry, KeyWriteGeometry};
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
        }
    }

    /// A collector's control port answering each hello with the next of `answers`, then the last again.
    fn collector(answers: Vec<Welcome>) -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            let mut k = 0;
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
            }
        });
        addr
    }

    fn link(addr: SocketAddr) -> (ControlLink, Receiver<ToWorker>, Sender<()>, Arc<AtomicBool>) {
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
