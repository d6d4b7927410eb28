//! One collector under test seen from our raw port: a QP per case by hello, each request sent and its
//! responses collected, and the scratch list read back.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use dta_protocol::control::{
    CollectorMessage, Hello, RequesterQp, TranslatorMessage, Welcome, CONTROL_VERSION,
};
use dta_protocol::layout::Geometry;
use dta_protocol::udp::UdpEndpoints;

use super::cases::{Case, WINDOW};
use super::frames::{self, Ctx};
use super::outcome::{CaseRun, StepOutcome};
use super::wire::RawPort;

/// The Append list whose entries are the scratch memory of the cases.
pub const LIST_ID: u32 = 9;
/// Its entries and their size: 8 KiB of scratch, read back in one query.
pub const LIST_ENTRIES: u64 = 1024;
/// Bytes per entry.
pub const LIST_ENTRY_SIZE: u32 = 8;
/// Offset of the entries in the list region (after its 64-byte header).
const LIST_HEADER: u64 = 64;

/// How long a request may take to be answered before it counts as unanswered. rxe in a TCG guest
/// answers within a few milliseconds; the margin keeps a loaded machine from turning an ACK into silence.
pub const RESPONSE_WAIT: Duration = Duration::from_millis(400);
/// After a response, how long to keep listening for a second one (neither responder should send it).
const EXTRA_WAIT: Duration = Duration::from_millis(40);
/// Translator QPNs of the cases: this plus the case's index. The scratch preparation uses [`PREP_QPN`].
const CASE_QPN_BASE: u32 = 0x0C_0000;
const PREP_QPN: u32 = 0x0C_FFFF;
/// UDP source port of every crafted request.
const SRC_PORT: u16 = 49152;

/// One collector under test, seen from our raw port.
pub struct Side {
    /// "rxe" or "soft".
    pub name: &'static str,
    /// Its control channel.
    pub control: SocketAddr,
    /// Its HTTP API.
    pub http: SocketAddr,
    /// Shared token.
    pub token: String,
    /// Our port towards it, with our MAC and IP.
    pub port: RawPort,
    pub mac: [u8; 6],
    pub ip: [u8; 4],
}

/// What the collector told one hello, reduced to what a case needs.
struct Session {
    /// Kept open while the case runs; a collector may tie the QP's life to it.
    _conn: TcpStream,
    qpn: u32,
    peer_mac: [u8; 6],
    peer_ip: [u8; 4],
    va: u64,
    rkey: u32,
    len: u64,
}

impl Side {
    fn hello(&self, qpn: u32, start_psn: u32) -> Result<Session> {
        let mut conn = TcpStream::connect_timeout(&self.control, Duration::from_secs(5))
            .with_context(|| format!("{}: connecting to {}", self.name, self.control))?;
        conn.set_read_timeout(Some(Duration::from_secs(20)))?;
        let mut gid = [0u8; 16];
        gid[10..12].copy_from_slice(&[0xFF, 0xFF]);
        gid[12..].copy_from_slice(&self.ip);
        let hello = TranslatorMessage::Hello(Hello {
            version: CONTROL_VERSION,
            token: self.token.clone(),
            mac: self.mac,
            ip: self.ip,
            gid,
            qps: vec![RequesterQp { qpn, start_psn }],
        });
        let mut line = serde_json::to_string(&hello)?;
        line.push('\n');
        conn.write_all(line.as_bytes())?;
        let mut answer = String::new();
        BufReader::new(conn.try_clone()?)
            .read_line(&mut answer)
            .with_context(|| format!("{}: reading the welcome", self.name))?;
        let w: Welcome = match serde_json::from_str(&answer)
            .with_context(|| format!("{}: control answer {answer:?}", self.name))?
        {
            CollectorMessage::Welcome(w) => w,
            CollectorMessage::Refusal(r) => bail!("{}: hello refused: {}", self.name, r.error),
        };
        let region = w
            .regions
            .iter()
            .find(|r| r.id == LIST_ID && matches!(r.geometry, Geometry::Append(_)))
            .with_context(|| format!("{}: no Append list {LIST_ID} in the welcome", self.name))?;
        let qp = w
            .qps
            .first()
            .with_context(|| format!("{}: welcome without a QP", self.name))?;
        Ok(Session {
            _conn: conn,
            qpn: qp.qpn,
            peer_mac: w.mac,
            peer_ip: w.ip,
            va: region.va,
            rkey: region.rkey,
            len: region.len(),
        })
    }

    fn ctx(&self, s: &Session, start_psn: u32, window: u64) -> Ctx {
        Ctx {
            endpoints: UdpEndpoints::new(
                self.mac,
                s.peer_mac,
                self.ip,
                s.peer_ip,
                SRC_PORT,
                dta_protocol::roce::ROCEV2_UDP_PORT,
            ),
            qpn: s.qpn,
            start_psn,
            va: s.va,
            rkey: s.rkey,
            len: s.len,
            window,
        }
    }

    /// Sends one step and waits for its response (or for silence).
    fn exchange(&self, frame: &[u8], peer_ip: [u8; 4]) -> Result<StepOutcome> {
        self.port.drain()?;
        self.port.send(frame)?;
        let mut buf = [0u8; 2048];
        let mut out = StepOutcome::default();
        let mut deadline = Instant::now() + RESPONSE_WAIT;
        while let Some(n) = self.port.recv_until(&mut buf, deadline)? {
            let Some(r) = frames::parse_response(&buf[..n], peer_ip) else {
                continue;
            };
            if out.resp.is_none() {
                out.resp = Some(r);
                deadline = Instant::now() + EXTRA_WAIT;
            } else {
                out.extra += 1;
            }
        }
        Ok(out)
    }

    /// Makes the scratch list readable: its head word says every entry was written, so the Append query
    /// returns all of them.
    pub fn prepare(&self) -> Result<()> {
        let s = self.hello(PREP_QPN, 0)?;
        let ctx = self.ctx(&s, 0, 0);
        let head = LIST_ENTRIES.to_le_bytes();
        let f = dta_protocol::roce::FrameRepr::write_only(
            ctx.endpoints,
            s.qpn,
            0,
            true,
            s.va,
            s.rkey,
            &head,
        );
        let mut buf = vec![0u8; f.buffer_len()];
        f.emit(&mut buf)?;
        let o = self.exchange(&buf, s.peer_ip)?;
        match o.resp {
            Some(r) if r.syndrome.is_some_and(|s| s >> 5 == 0) => Ok(()),
            other => bail!(
                "{}: writing the scratch list's head word was answered with {:?}",
                self.name,
                other.map(|r| r.describe(0))
            ),
        }
    }

    /// The scratch entries, all of them.
    fn scratch(&self) -> Result<Vec<u8>> {
        let v = crate::http::get_json(
            self.http,
            &format!("/query/append?list={LIST_ID}&tail=0&max={LIST_ENTRIES}"),
        )?;
        let entries = v["entries"]
            .as_array()
            .with_context(|| format!("{}: append answer without entries: {v}", self.name))?;
        let mut out = Vec::with_capacity((LIST_ENTRIES * u64::from(LIST_ENTRY_SIZE)) as usize);
        for e in entries {
            let hex = e.as_str().context("entry is not a string")?;
            for i in (0..hex.len()).step_by(2) {
                let byte = hex
                    .get(i..i + 2)
                    .and_then(|b| u8::from_str_radix(b, 16).ok())
                    .with_context(|| format!("entry {hex:?} is not hex"))?;
                out.push(byte);
            }
        }
        if out.len() as u64 != LIST_ENTRIES * u64::from(LIST_ENTRY_SIZE) {
            bail!(
                "{}: the scratch list read back {} bytes",
                self.name,
                out.len()
            );
        }
        Ok(out)
    }

    /// Runs case number `index`.
    pub fn run(&self, index: usize, case: &Case) -> Result<CaseRun> {
        let s = self.hello(CASE_QPN_BASE + index as u32, case.start_psn)?;
        let ctx = self.ctx(&s, case.start_psn, LIST_HEADER + index as u64 * WINDOW);
        let mut steps = Vec::with_capacity(case.steps.len());
        for step in &case.steps {
            let f = frames::build(&ctx, step)?;
            steps.push(self.exchange(&f, s.peer_ip)?);
        }
        let scratch = self.scratch()?;
        Ok(CaseRun { steps, scratch })
    }
}
