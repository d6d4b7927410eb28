//! A [`Reporter`]: builds reports, numbers them per collector and opcode, sends them over a UDP socket, and
//! replays retransmittable ones when a DTA NACK arrives.
//!
//! The UDP socket is the kernel's, so the Ethernet and IP headers are too; the destination IP is the
//! collector's (DESIGN.md section 2: "the IPv4 destination names the collector") and the translator on the
//! path intercepts the report. NACKs come back from the collector's IP to UDP port 40044, on a socket the
//! caller binds there and hands over with [`Reporter::with_nack_socket`].

use std::io::ErrorKind;
use std::net::{IpAddr, SocketAddr, SocketAddrV4, UdpSocket};
use std::time::{Duration, Instant};

use dta_protocol::dta::{NackRepr, ReportFormat, DTA_UDP_PORT};

use crate::report::Report;
use crate::retransmit::{RetransmitBuffer, Sent};
use crate::seq::SeqNumbers;
use crate::Result;

/// How a [`Reporter`] sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReporterConfig {
    /// The report format the translator is configured with.
    pub format: ReportFormat,
    /// Reports kept per (collector, opcode) for retransmission.
    pub retransmit_capacity: usize,
}

impl Default for ReporterConfig {
    fn default() -> Self {
        ReporterConfig {
            format: ReportFormat::default(),
            retransmit_capacity: 64,
        }
    }
}

/// What a reporter did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stats {
    /// Reports sent for the first time.
    pub sent: u64,
    /// Reports sent again because of a NACK.
    pub resent: u64,
    /// NACKs handled.
    pub nacks: u64,
    /// Datagrams on the NACK socket that were not a valid NACK.
    pub bad_nacks: u64,
    /// NACKs whose first missing report was no longer buffered.
    pub unrecoverable: u64,
}

/// Sends DTA reports over UDP.
#[derive(Debug)]
pub struct Reporter {
    socket: UdpSocket,
    nack_socket: Option<UdpSocket>,
    cfg: ReporterConfig,
    seqs: SeqNumbers,
    buffer: RetransmitBuffer,
    scratch: Vec<u8>,
    stats: Stats,
}

impl Reporter {
    /// A reporter sending from `socket` (bound by the caller, to the source address reports should have).
    pub fn new(socket: UdpSocket, cfg: ReporterConfig) -> Self {
        Reporter {
            socket,
            nack_socket: None,
            buffer: RetransmitBuffer::new(cfg.retransmit_capacity),
            cfg,
            seqs: SeqNumbers::new(),
            scratch: Vec::new(),
            stats: Stats::default(),
        }
    }

    /// Receives NACKs on `socket` (normally bound to UDP port 40044).
    pub fn with_nack_socket(mut self, socket: UdpSocket) -> Self {
        self.nack_socket = Some(socket);
        self
    }

    /// Counters so far.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// The sequence numbers (for inspection).
    pub fn seqnums(&self) -> &SeqNumbers {
        &self.seqs
    }

    /// The retransmission buffer (for inspection).
    pub fn retransmit_buffer(&self) -> &RetransmitBuffer {
        &self.buffer
    }

    /// Sends `report` to the collector `collector` on the default DTA port 40040.
    pub fn send(
        &mut self,
        collector: std::net::Ipv4Addr,
        report: &Report,
        retransmittable: bool,
    ) -> Result<u8> {
        self.send_to(
            SocketAddrV4::new(collector, DTA_UDP_PORT),
            report,
            retransmittable,
        )
    }

    /// Sends `report` to `to` (collector IP, translator port) with the next seqnum of its stream and returns
    /// that seqnum. A retransmittable report is kept for replay; it needs the seq header form.
    pub fn send_to(
        &mut self,
        to: SocketAddrV4,
        report: &Report,
        retransmittable: bool,
    ) -> Result<u8> {
        let op = report.opcode();
        let seqnum = self.seqs.peek(*to.ip(), op);
        // Emit before taking the seqnum: a report that fails to build must not leave a gap in its stream.
        report.emit_into(&self.cfg.format, seqnum, retransmittable, &mut self.scratch)?;
        self.seqs.take(*to.ip(), op);
        self.socket.send_to(&self.scratch, to)?;
        self.stats.sent += 1;
        if retransmittable {
            self.buffer.push(
                op,
                Sent {
                    to,
                    seqnum,
                    payload: self.scratch.clone(),
                },
            );
        }
        Ok(seqnum)
    }

    /// Handles one datagram received on the NACK port from `from`; returns how many reports it resent.
    /// A datagram that is not a valid NACK is counted and ignored.
    pub fn handle_nack(&mut self, from: SocketAddr, payload: &[u8]) -> Result<usize> {
        let (IpAddr::V4(ip), Ok(nack)) =
            (from.ip(), NackRepr::parse(payload, self.cfg.format.form))
        else {
            self.stats.bad_nacks += 1;
            return Ok(0);
        };
        if !nack.nack {
            // A clear flag would be a positive acknowledgement; the translator never sends one.
            self.stats.bad_nacks += 1;
            return Ok(0);
        }
        self.stats.nacks += 1;
        let replay = self.buffer.on_nack(ip, nack.opcode, nack.seqnum);
        if replay.unrecoverable {
            self.stats.unrecoverable += 1;
            log::warn!(
                "NACK from {ip} for {:?} after seqnum {}: the first missing report is no longer buffered",
                nack.opcode,
                nack.seqnum
            );
        }
        for s in &replay.resend {
            self.socket.send_to(&s.payload, s.to)?;
            self.stats.resent += 1;
        }
        Ok(replay.resend.len())
    }

    /// Handles every NACK that arrives on the NACK socket until `timeout` passes (zero: only those already
    /// waiting). Returns the reports resent. Without a NACK socket it returns 0 at once.
    pub fn poll_nacks(&mut self, timeout: Duration) -> Result<usize> {
        let Some(sock) = self.nack_socket.take() else {
            return Ok(0);
        };
        let r = self.poll_nacks_on(&sock, timeout);
        self.nack_socket = Some(sock);
        r
    }

    fn poll_nacks_on(&mut self, sock: &UdpSocket, timeout: Duration) -> Result<usize> {
        let deadline = Instant::now() + timeout;
        let mut buf = [0u8; 2048];
        let mut resent = 0;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                sock.set_nonblocking(true)?;
            } else {
                sock.set_nonblocking(false)?;
                sock.set_read_timeout(Some(left))?;
            }
            match sock.recv_from(&mut buf) {
                Ok((n, from)) => resent += self.handle_nack(from, &buf[..n])?,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return Ok(resent)
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
}
