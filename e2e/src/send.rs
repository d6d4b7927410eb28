//! Sending reports from the reporter namespace over UDP, with flow control on the translator's own
//! metrics: the sender stays at most `window` reports ahead of what the engines have taken in and waits
//! while the QP queues are long. Without it a debug-build translator on a 2-core machine would see its
//! socket buffer overflow, and the exact checks would measure the machine, not the system.

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::http;
use crate::netns::enter_and_run;

/// The translator's metrics, read from inside its namespace.
#[derive(Debug, Clone)]
pub struct Metrics {
    /// Translator namespace.
    pub ns: String,
    /// Metrics address.
    pub addr: SocketAddr,
}

impl Metrics {
    /// The Prometheus text.
    pub fn scrape(&self) -> Result<String> {
        let addr = self.addr;
        enter_and_run(&self.ns, move || http::get(addr, "/metrics"))?
    }

    /// One metric summed over samples with `label`.
    pub fn value(&self, name: &str, label: &str) -> Result<u64> {
        Ok(http::metric(&self.scrape()?, name, label))
    }

    /// Waits until the engines took in `reports` reports and have nothing queued or in flight, twice in a
    /// row 100 ms apart (idle flushes of Append, Postcarding and sketches happen within a millisecond).
    pub fn wait_settled(&self, reports: u64, timeout: Duration) -> Result<String> {
        self.wait_settled_on(REPORTS, reports, timeout)
    }

    /// [`wait_settled`](Self::wait_settled) counting what the engines took in with counter `taken` (for
    /// INT: [`INT_PACKETS`]).
    pub fn wait_settled_on(&self, taken: &str, reports: u64, timeout: Duration) -> Result<String> {
        let deadline = Instant::now() + timeout;
        let mut calm = 0;
        loop {
            let text = self.scrape()?;
            let taken = http::metric(&text, taken, "");
            let busy = http::metric(&text, "dta_translator_qp_window", "")
                + http::metric(&text, "dta_translator_qp_queue", "");
            calm = if taken >= reports && busy == 0 {
                calm + 1
            } else {
                0
            };
            if calm >= 2 {
                return Ok(text);
            }
            if Instant::now() > deadline {
                let detail: Vec<&str> = text
                    .lines()
                    .filter(|l| {
                        !l.starts_with('#')
                            && ["drops", "port_", "qp_", "acks", "naks", "retransmit"]
                                .iter()
                                .any(|k| l.contains(k))
                    })
                    .collect();
                bail!(
                    "translator did not settle in {timeout:?}: {taken}/{reports} reports taken, {busy} writes queued or in flight; {}",
                    detail.join("; ")
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// The translator's counter of DTA reports taken in (well-formed ones).
pub const REPORTS: &str = "dta_translator_reports_total";
/// The translator's counter of UDP payloads taken on the INT port (every one, translated or counted as
/// dropped).
pub const INT_PACKETS: &str = "dta_translator_int_packets_total";

/// How long the sender waits without the translator taking a report before it gives up.
const STALL: Duration = Duration::from_secs(30);

/// A UDP socket in the reporter namespace aimed at the collector's report port.
pub struct Sender {
    socket: UdpSocket,
    /// The translator counter that paces it ([`REPORTS`] or [`INT_PACKETS`]).
    taken: &'static str,
    /// Reports sent so far.
    pub sent: u64,
}

impl Sender {
    /// Binds in namespace `ns` and connects to `to` (the DTA report port).
    pub fn open(ns: &str, from: SocketAddr, to: SocketAddr) -> Result<Self> {
        Self::open_paced(ns, from, to, REPORTS)
    }

    /// [`open`](Self::open), paced by the translator counter `taken`.
    pub fn open_paced(
        ns: &str,
        from: SocketAddr,
        to: SocketAddr,
        taken: &'static str,
    ) -> Result<Self> {
        let socket = enter_and_run(ns, move || -> Result<UdpSocket> {
            let s = UdpSocket::bind(from).with_context(|| format!("binding {from}"))?;
            s.connect(to)?;
            Ok(s)
        })??;
        Ok(Sender {
            socket,
            taken,
            sent: 0,
        })
    }

    /// The counter that paces this sender.
    pub fn paced_by(&self) -> &'static str {
        self.taken
    }

    /// Sends `reports` over and over at `rate` per second for `duration`, with no flow control (an
    /// open-loop source, as a switch is). Returns the reports sent and the sends the kernel refused
    /// (ENOBUFS: the reporter's own interface queue was full).
    pub fn send_at_rate(
        &mut self,
        reports: &[Vec<u8>],
        rate: u64,
        duration: Duration,
    ) -> Result<(u64, u64)> {
        anyhow::ensure!(!reports.is_empty() && rate > 0, "nothing to send");
        let start = Instant::now();
        let (mut sent, mut refused) = (0u64, 0u64);
        let mut i = 0usize;
        // Batches of 32 on a schedule: the n-th report leaves at start + n / rate.
        while start.elapsed() < duration {
            let due = (start.elapsed().as_secs_f64() * rate as f64) as u64;
            if sent + refused >= due {
                std::thread::sleep(Duration::from_micros(50));
                continue;
            }
            for _ in 0..(due - sent - refused).min(32) {
                match self.socket.send(&reports[i]) {
                    Ok(_) => sent += 1,
                    Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => refused += 1,
                    Err(e) => return Err(e).context("sending a report"),
                }
                i = (i + 1) % reports.len();
            }
        }
        self.sent += sent;
        Ok((sent, refused))
    }

    /// Sends every payload; `base` is the translator's report count before this batch.
    pub fn send_all(
        &mut self,
        reports: &[Vec<u8>],
        metrics: &Metrics,
        base: u64,
        window: u64,
        timeout: Duration,
    ) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let mut i = 0usize;
        let mut sent_here = 0u64;
        let (mut last_taken, mut last_progress) = (0u64, Instant::now());
        while i < reports.len() {
            let taken = metrics.value(self.taken, "")?.saturating_sub(base);
            let queued = metrics.value("dta_translator_qp_queue", "")?;
            if taken != last_taken {
                (last_taken, last_progress) = (taken, Instant::now());
            }
            if sent_here.saturating_sub(taken) >= window || queued > 16384 {
                // No report taken for this long while the window is full: reports were lost on the way
                // or the translator is stuck; say which counters show it rather than wait for the watchdog.
                if Instant::now() > deadline || last_progress.elapsed() > STALL {
                    let text = metrics.scrape().unwrap_or_default();
                    let detail: Vec<&str> = text
                        .lines()
                        .filter(|l| {
                            !l.starts_with('#')
                                && (l.contains("port_") || l.contains("qp_") || l.contains("drops"))
                        })
                        .collect();
                    bail!(
                        "sending stalled: {sent_here} sent, {taken} taken by the translator, {queued} queued, no progress for {:?}; {}",
                        last_progress.elapsed(),
                        detail.join("; ")
                    );
                }
                std::thread::sleep(Duration::from_millis(2));
                continue;
            }
            let room = (window - sent_here.saturating_sub(taken)).min(1024) as usize;
            for r in &reports[i..(i + room).min(reports.len())] {
                // ENOBUFS on a full socket buffer: give the interface a moment and retry the same report.
                loop {
                    match self.socket.send(r) {
                        Ok(_) => break,
                        Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                            std::thread::sleep(Duration::from_micros(100))
                        }
                        Err(e) => return Err(e).context("sending a report"),
                    }
                }
                i += 1;
                sent_here += 1;
                self.sent += 1;
            }
        }
        Ok(())
    }
}
