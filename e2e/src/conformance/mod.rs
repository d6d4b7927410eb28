//! Differential conformance of the software RoCEv2 responder against Linux Soft-RoCE (rxe).
//!
//! One script of crafted RoCEv2 requests ([`cases::all`]) goes to a real rxe QP (the collector's ibverbs
//! backend on an rxe device) and to our software responder (the collector's soft backend), through the
//! same code: a raw Ethernet port, a fresh QP per case (its own control-channel hello), each request
//! followed by a wait for its response or for silence. The responses are compared field by field (BTH
//! opcode, flags, P_Key, destination QP and PSN; AETH syndrome and MSN; the original value of an ATOMIC
//! ACKNOWLEDGE; whether anything came back at all) and after each case the scratch region's bytes, read
//! through the collector's Append query, are compared as well. rxe is the judge: a difference is either
//! fixed in `collector/src/responder/` or listed below as a deliberate departure with its reason.
//!
//! # Deliberate departures
//!
//! | case | step | rxe (Linux 6.1) | ours | why |
//! |---|---|---|---|---|
//! | `duplicate_before_any` | 0 | ACK PSN 0xFFFFFF | ACK PSN start − 1 | rxe bug: its `resp.ack_psn` starts at 0 rather than at the RTR `rq_psn`, so until the first request completes a duplicate is acknowledged as PSN 0xFFFFFF whatever the start PSN. We acknowledge the PSN before the first one expected (C9-105: the last PSN acknowledged). Either is behind the requester's window and ignored by it. |
//! | `psn_2pow23_behind` | 0 | ACK PSN 0xFFFFFF | ACK PSN start − 1 | the same rxe bug (the duplicate arrives before anything else). |
//! | `write_first` | all | ACK, 1024 bytes written; the following WRITE ONLY NAKed invalid request | NAK invalid request, QP in error; nothing written | dta never sends a multi-packet WRITE (DESIGN.md section 4: every write is one WRITE ONLY within the path MTU), so the responder refuses a WRITE FIRST at once instead of half-supporting messages. |
//!
//! Differences found by this comparison and fixed in `collector/src/responder/` (each with a test in
//! `collector/tests/responder_conformance.rs`): a replayed atomic carries the QP's current MSN, not the
//! original answer's; RDMA READ is refused with NAK invalid request (it was dropped); SEND FIRST/ONLY (also
//! with immediate or invalidate) and WRITE with immediate get an RNR NAK with timer 12 and leave the QP
//! usable (they were dropped, or NAKed invalid request); a SEND or WRITE MIDDLE/LAST without its FIRST is
//! NAKed invalid request (it was dropped); a WRITE ONLY whose payload differs from its RETH DMA length is
//! NAKed invalid request (it was dropped as malformed); the R_Key and bounds are checked before the length
//! (a 1028-byte WRITE with a bad key is a remote access error); a duplicate SEND is re-ACKed.
//!
//! Things the comparison does not look at: IPv4 and UDP header fields of the responses (rxe answers
//! from a UDP source port hashed from its QPN, ours from the request's source port; DESIGN.md section 4
//! has the translator match responses by QPN, not port), and the iCRC value beyond its being correct.
//!
//! `dta-e2e-conformance` (e2e/src/bin/conformance.rs) builds the network and the collectors in a VM
//! guest that has `rdma_rxe` and runs the script; `collector/tests/responder_conformance.rs` keeps the
//! answers rxe gave as literal expectations for the in-process responder.
//!
//! (Over 500 lines: the driver and the comparison of two responders' answers, step by step.)

pub mod cases;
pub mod frames;
pub mod wire;

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use dta_protocol::control::{
    CollectorMessage, Hello, RequesterQp, TranslatorMessage, Welcome, CONTROL_VERSION,
};
use dta_protocol::layout::Geometry;
use dta_protocol::roce::PSN_MASK;
use dta_protocol::udp::UdpEndpoints;

use cases::{Case, Op, QpRef, Step, WINDOW};
use frames::{Ctx, Resp};
use wire::RawPort;

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

/// A difference we keep on purpose.
#[derive(Debug, Clone, Copy)]
pub struct Departure {
    /// Case name.
    pub case: &'static str,
    /// Step index; `None` for every step and the memory of the case.
    pub step: Option<usize>,
    /// Why.
    pub reason: &'static str,
}

/// Differences we keep on purpose: the same rows as the module documentation's table.
pub const DEPARTURES: &[Departure] = &[
    Departure {
        case: "duplicate_before_any",
        step: Some(0),
        reason: "rxe acks PSN 0xFFFFFF before its first completion (resp.ack_psn starts at 0, an rxe bug); we ack start-1",
    },
    Departure {
        case: "psn_2pow23_behind",
        step: Some(0),
        reason: "rxe acks PSN 0xFFFFFF before its first completion (resp.ack_psn starts at 0, an rxe bug); we ack start-1",
    },
    Departure {
        case: "write_first",
        step: None,
        reason: "dta never sends multi-packet WRITEs (DESIGN.md 4); a WRITE FIRST is refused with NAK invalid request",
    },
];

const FIX_ATOMIC_MSN: &str = "replayed atomics carry the current MSN";
const FIX_RNR: &str = "RNR NAK (timer 12) for a request that needs a receive";
const FIX_NO_FIRST: &str = "MIDDLE/LAST without FIRST: NAK invalid request";

/// Cases in which our responder differed from rxe until it was fixed (what the fix was).
pub const FIXED: &[(&str, &str)] = &[
    ("duplicate_fetch_add", FIX_ATOMIC_MSN),
    ("duplicate_fetch_add_after_write", FIX_ATOMIC_MSN),
    ("stale_duplicate_fetch_add", FIX_ATOMIC_MSN),
    (
        "rdma_read",
        "READ refused with NAK invalid request (was dropped)",
    ),
    ("send_only", FIX_RNR),
    ("send_first", FIX_RNR),
    ("send_only_immediate", FIX_RNR),
    ("send_only_invalidate", FIX_RNR),
    ("write_with_immediate", FIX_RNR),
    ("send_last_without_first", FIX_NO_FIRST),
    ("write_middle_without_first", FIX_NO_FIRST),
    ("write_last_without_first", FIX_NO_FIRST),
    (
        "write_dma_length_mismatch",
        "payload vs RETH DMA length: NAK invalid request (was dropped as malformed)",
    ),
    (
        "oversized_write_bad_rkey",
        "R_Key and bounds checked before the length",
    ),
    (
        "duplicate_send",
        "a duplicate SEND is re-ACKed (was dropped)",
    ),
];

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

/// What one request got back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StepOutcome {
    /// The first response, if any.
    pub resp: Option<Resp>,
    /// Responses after the first (none expected).
    pub extra: u32,
}

impl StepOutcome {
    /// A short human form.
    pub fn describe(&self, start_psn: u32) -> String {
        let mut t = match &self.resp {
            Some(r) => r.describe(start_psn),
            None => "-".into(),
        };
        if self.extra > 0 {
            t.push_str(&format!(" (+{} more)", self.extra));
        }
        t
    }
}

/// One side's results for one case.
#[derive(Debug, Clone)]
pub struct CaseRun {
    /// Per step.
    pub steps: Vec<StepOutcome>,
    /// The scratch entries after the case.
    pub scratch: Vec<u8>,
}

/// The fields in which two outcomes differ (empty when they agree).
pub fn differences(a: &StepOutcome, b: &StepOutcome) -> Vec<&'static str> {
    let mut d = Vec::new();
    match (&a.resp, &b.resp) {
        (None, None) => {}
        (Some(_), None) | (None, Some(_)) => d.push("presence"),
        (Some(x), Some(y)) => {
            let checks: [(&'static str, bool); 9] = [
                ("opcode", x.opcode == y.opcode),
                ("bth-flags", x.flags == y.flags),
                ("pkey", x.pkey == y.pkey),
                ("dest-qp", x.dest_qp == y.dest_qp),
                ("psn", x.psn == y.psn),
                ("syndrome", x.syndrome == y.syndrome),
                ("msn", x.msn == y.msn),
                ("orig", x.orig == y.orig),
                ("icrc", x.icrc_ok == y.icrc_ok),
            ];
            d.extend(checks.iter().filter(|c| !c.1).map(|c| c.0));
        }
    }
    if a.extra != b.extra {
        d.push("extra-responses");
    }
    d
}

/// The verdict on one case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Same responses and memory.
    Match,
    /// Same now; differed before a fix in our responder.
    Fixed(&'static str),
    /// Differs, on purpose.
    Departure(Vec<&'static str>),
    /// Differs without a documented reason.
    Different,
}

/// One row of the report.
#[derive(Debug, Clone)]
pub struct Row {
    pub case: Case,
    pub judge: Option<CaseRun>,
    pub ours: CaseRun,
    /// Per step: fields that differ.
    pub step_diffs: Vec<Vec<&'static str>>,
    /// Whether the case's window and the bytes outside every window agree.
    pub memory_equal: Option<bool>,
    pub verdict: Option<Verdict>,
}

/// Compares the two sides of case `index` (of `count`) and decides the verdict.
pub fn judge(index: usize, count: usize, case: Case, judge: Option<CaseRun>, ours: CaseRun) -> Row {
    let Some(j) = judge else {
        return Row {
            case,
            judge: None,
            ours,
            step_diffs: Vec::new(),
            memory_equal: None,
            verdict: None,
        };
    };
    let step_diffs: Vec<Vec<&'static str>> = j
        .steps
        .iter()
        .zip(&ours.steps)
        .map(|(a, b)| differences(a, b))
        .collect();
    let w = |m: &[u8]| {
        let lo = (index as u64 * WINDOW) as usize;
        let hi = lo + WINDOW as usize;
        (
            m.get(lo..hi).map(<[u8]>::to_vec),
            m.get(count * WINDOW as usize..).map(<[u8]>::to_vec),
        )
    };
    let memory_equal = w(&j.scratch) == w(&ours.scratch);
    let excused = |step: Option<usize>| {
        DEPARTURES
            .iter()
            .filter(|d| d.case == case.name && (d.step.is_none() || d.step == step))
            .map(|d| d.reason)
            .collect::<Vec<_>>()
    };
    let mut reasons = Vec::new();
    let mut unexplained = false;
    for (i, d) in step_diffs.iter().enumerate() {
        if !d.is_empty() {
            let r = excused(Some(i));
            unexplained |= r.is_empty();
            reasons.extend(r);
        }
    }
    if !memory_equal {
        let r = excused(None);
        unexplained |= r.is_empty();
        reasons.extend(r);
    }
    reasons.dedup();
    let verdict = if unexplained {
        Verdict::Different
    } else if !reasons.is_empty() {
        Verdict::Departure(reasons)
    } else if let Some((_, what)) = FIXED.iter().find(|(c, _)| *c == case.name) {
        Verdict::Fixed(what)
    } else {
        Verdict::Match
    };
    Row {
        case,
        judge: Some(j),
        ours,
        step_diffs,
        memory_equal: Some(memory_equal),
        verdict: Some(verdict),
    }
}

/// A short form of a request, PSN relative to the case's start.
pub fn describe_step(s: &Step) -> String {
    let op = match s.op {
        Op::Write { len, .. } => format!("WRITE {len}B"),
        Op::UcWrite { .. } => "UC-WRITE".into(),
        Op::WriteImm { .. } => "WRITE-IMM".into(),
        Op::FetchAdd { add, .. } => format!("FETCH_ADD +{add}"),
        Op::CmpSwap { compare, swap, .. } => format!("CMP_SWAP {compare}->{swap:#x}"),
        Op::Read { len, .. } => format!("READ {len}B"),
        Op::Send { len, .. } => format!("SEND {len}B"),
        Op::Raw {
            code, reth, len, ..
        } => match reth {
            Some((_, dma)) => format!("op {code:#04x} dma={dma} {len}B"),
            None => format!("op {code:#04x} {len}B"),
        },
    };
    let mut t = format!("{op} psn{:+}", s.psn);
    if s.ack_req {
        t.push_str(" A");
    }
    if s.key != cases::Key::Good {
        t.push_str(" badkey");
    }
    if s.qp == QpRef::Unknown {
        t.push_str(" qp?");
    }
    if s.pkey != 0xFFFF {
        t.push_str(&format!(" pkey={:#x}", s.pkey));
    }
    if s.bad_icrc {
        t.push_str(" badcrc");
    }
    t
}

/// The report as text: one line per step, a memory line and a verdict per case, then the departures.
pub fn render(rows: &[Row]) -> String {
    let mut t = String::new();
    let judged = rows.iter().any(|r| r.judge.is_some());
    t.push_str(&format!(
        "{:<30} {:<28} {:<34} {:<34} {}\n",
        "case",
        "request",
        "rxe",
        "ours (soft)",
        if judged { "differs in" } else { "" }
    ));
    for r in rows {
        let start = r.case.start_psn & PSN_MASK;
        for (i, step) in r.case.steps.iter().enumerate() {
            let judge = r
                .judge
                .as_ref()
                .and_then(|j| j.steps.get(i))
                .map_or("(not run)".to_string(), |o| o.describe(start));
            let ours = r
                .ours
                .steps
                .get(i)
                .map_or(String::new(), |o| o.describe(start));
            let diff = r.step_diffs.get(i).map_or(String::new(), |d| d.join(","));
            t.push_str(&format!(
                "{:<30} {:<28} {:<34} {:<34} {}\n",
                if i == 0 { r.case.name } else { "" },
                describe_step(step),
                judge,
                ours,
                diff
            ));
        }
        let mem = match r.memory_equal {
            Some(true) => "memory equal",
            Some(false) => "MEMORY DIFFERS",
            None => "memory not compared",
        };
        let verdict = match &r.verdict {
            None => "-".to_string(),
            Some(Verdict::Match) => "match".into(),
            Some(Verdict::Fixed(w)) => format!("fixed: {w}"),
            Some(Verdict::Departure(rs)) => format!("departure: {}", rs.join("; ")),
            Some(Verdict::Different) => "DIFFERENT (not a documented departure)".into(),
        };
        t.push_str(&format!("{:<30} {mem}; verdict: {verdict}\n", ""));
    }
    if !DEPARTURES.is_empty() {
        t.push_str("\nDeliberate departures from rxe:\n");
        for d in DEPARTURES {
            let step = d.step.map_or("all".to_string(), |s| s.to_string());
            t.push_str(&format!("  {} (step {step}): {}\n", d.case, d.reason));
        }
    }
    t
}
