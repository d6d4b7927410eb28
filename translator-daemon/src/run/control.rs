//! The control client, one thread per collector (DESIGN.md section 6). It says hello with every worker's
//! QP towards that collector and hands the welcome on: the first one to the daemon's start-up, later ones
//! to the workers. A worker whose QP failed (retries exhausted because the collector went away, or a
//! remote error) asks for new QPs through `requests`; the client then reconnects, with backoff while the
//! collector is down. A welcome whose regions differ from the last one means the collector restarted with
//! new memory (workers start over on it and count what was lost); the same regions mean only the QPs were
//! re-created (workers resend their unacknowledged work).

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

    /// Connects and says hello until it works (or the daemon stops), with backoff.
    fn establish(&self, start_psn: u32) -> Option<Welcome> {
        let mut backoff = Duration::from_millis(50);
        while !self.stop.load(Ordering::Relaxed) {
            match self.connect(start_psn) {
                // The connection closes here: the collector's server times idle connections out, and a
                // new connection per handshake keeps that from looking like a failure.
                Ok(w) => {
                    self.counters.welcomes.fetch_add(1, Ordering::Relaxed);
                    return Some(w);
                }
                Err(e) => {
                    self.counters.failures.fetch_add(1, Ordering::Relaxed);
                    log::warn!(
                        "collector {} ({}): {e:#}; retrying in {backoff:?}",
                        self.index,
                        self.addr
                    );
                    self.sleep(backoff);
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        }
        None
    }

    /// Runs until `stop`. The first welcome goes to `initial`; a refusal there is fatal (a wrong token or
    /// version does not fix itself), later ones are retried because the collector may be restarting.
    pub fn run(self, initial: Sender<(usize, Result<Welcome, String>)>) {
        let first = match self.connect(self.psn(0)) {
            Ok(w) => Ok(w),
            Err(e) if format!("{e:#}").contains("refused us") => Err(format!("{e:#}")),
            Err(e) => {
                log::warn!(
                    "collector {} ({}): {e:#}; waiting for it",
                    self.index,
                    self.addr
                );
                self.establish(self.psn(0))
                    .ok_or_else(|| "stopped".to_string())
            }
        };
        let mut regions = match &first {
            Ok(w) => {
                self.counters.welcomes.fetch_add(1, Ordering::Relaxed);
                log::info!(
                    "collector {} ({}): welcome with {} regions",
                    self.index,
                    self.addr,
                    w.regions.len()
                );
                w.regions.clone()
            }
            Err(_) => Vec::new(),
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
            let Some(w) = self.establish(psn) else {
                return;
            };
            if w.regions == regions {
                self.counters.reestablished.fetch_add(1, Ordering::Relaxed);
                log::info!(
                    "collector {}: QPs re-established at PSN {psn:#x}",
                    self.index
                );
                self.deliver(&w, psn, Kind::Reestablish);
            } else {
                self.counters.restarts.fetch_add(1, Ordering::Relaxed);
                log::warn!(
                    "collector {} ({}): restarted with new memory; starting over on it",
                    self.index,
                    self.addr
                );
                self.deliver(&w, psn, Kind::Replace);
            }
            regions = w.regions;
            // Requests that arrived while reconnecting were about the old QPs.
            while self.requests.try_recv().is_ok() {}
        }
    }
}
