//! Drives the translator engine (`dta_translator::Engine`, sans-IO) with an arbitrary sequence of
//! operations decoded from the input (frames through `handle_frame`, or through `handle_frames` one at a
//! time, which takes Key-Write reports through its run path): well-formed reports of every primitive built from fuzzed fields,
//! raw frames, RoCE responses (ACK, NAK, RNR NAK, ATOMIC ACKNOWLEDGE built from fuzzed PSN, MSN and
//! syndrome, CNPs, raw ones), bounded clock steps, timers, flushes, transmissions and QP re-establishment.
//!
//! Checked on every step:
//! * no panic;
//! * every frame sent is a DTA NACK to a reporter or a valid RoCEv2 request (iCRC included) to a
//!   collector's QP: an RDMA WRITE ONLY or FETCH_ADD that lies entirely inside one region that collector
//!   advertised, with that region's R_Key (atomics 8-byte aligned, in the Key-Increment region only);
//! * a first transmission takes the next PSN and one work request off the queue (`ops_out` +1); a
//!   retransmission repeats exactly the request first sent with its PSN (`retransmitted_frames` +1);
//! * never more unanswered atomics in flight than the collector's `max_dest_rd_atomic`;
//! * report accounting, exact: every frame to the report port is counted once, as a well-formed report
//!   (`reports_in`) or as `malformed` / `bad_redundancy`; a well-formed report is dropped for at most one
//!   reason, and a dropped report queues nothing; an accepted Key-Write queues exactly `redundancy`
//!   WRITEs and an accepted Key-Increment without coalescing exactly `redundancy` FETCH_ADDs (with
//!   coalescing at most that many, the rest counted as coalesced); Append, Postcard and Sketch queue a
//!   bounded number (they batch, cache or merge, which the counters do not show per report);
//! * at the end (all NACKs drained): `dta_nacks_sent` equals the NACK frames seen. When no QP ever failed,
//!   a flush and a lossless responder drain the engine completely, and then: WRITEs first sent for
//!   Key-Write equal the accepted reports' redundancies, FETCH_ADDs first sent plus coalesced increments
//!   equal the accepted Key-Increment redundancies and their adds sum (wrapping) to the accepted
//!   counters times redundancy, and the Append entries first written equal the accepted Append reports.
//!
//! (Over 500 lines: one fuzz target: the input decoder, the model and the invariants must stay together.)
#![no_main]

use std::collections::HashMap;
use std::time::Duration;

use dta_protocol::control::{ResponderQp, Welcome, CONTROL_VERSION};
use dta_protocol::dta::{
    AppendRepr, Body, HeaderForm, KeyIncrementRepr, KeyWriteRepr, NackRepr, PostcardPathLenRepr,
    PostcardRepr, ReportFormat, ReportRepr, SketchOp, SketchRepr, DTA_NACK_UDP_PORT, DTA_UDP_PORT,
    N_MAX,
};
use dta_protocol::layout::{
    AppendGeometry, Geometry, KeyIncrementGeometry, KeyWriteGeometry, PostcardGeometry, Region,
    SketchGeometry, APPEND_HEADER_LEN,
};
use dta_protocol::roce::{
    icrc, AckKind, AethRepr, BthOpcode, Extension, FrameRepr, NakCode, PSN_MASK, ROCEV2_UDP_PORT,
};
use dta_protocol::udp::{UdpEndpoints, UdpFrame, HEADERS_LEN};
use dta_translator::config::KeyRouting;
use dta_translator::{Config, Counters, DropReason, Engine, Event, Handled, Instant};
use libfuzzer_sys::fuzz_target;

mod input;
use input::Src;

const LOCAL_MAC: [u8; 6] = [2, 0, 0, 0, 0, 1];
const LOCAL_IP: [u8; 4] = [198, 18, 0, 1];
const QPN_BASE: u32 = 0x100;
const KW_DATA: usize = 4;
const APPEND_ENTRY: usize = 4;
const APPEND_LIST: u32 = 3;
const SKETCH_ID: u32 = 1;
const SKETCH_ROWS: u32 = 2;
const SKETCH_COLUMNS: u32 = 8;
/// Operations per input at most: long enough for windows to fill and timers to fire, short enough to run fast.
const MAX_OPS: usize = 512;

/// What the harness knows of one collector and its QP.
struct Col {
    ip: [u8; 4],
    mac: [u8; 6],
    /// The collector's (responder's) QPN: requests go there.
    qpn: u32,
    /// The translator's QPN for this collector: responses come here.
    local_qpn: u32,
    regions: Vec<Region>,
    /// The PSN the next first transmission must carry.
    next_psn: u32,
    /// What each PSN first carried, to compare retransmissions with.
    sent: HashMap<u32, (Extension, Vec<u8>)>,
    /// The newest PSN sent, to aim responses at.
    last_psn: Option<u32>,
    /// Atomics first sent and not yet answered (as the engine counted the answers).
    outstanding_atomics: u64,
}

/// What went in and came out, for the accounting checks.
#[derive(Default)]
struct Tally {
    report_frames: u64,
    kw_wrs: u64,
    ki_wrs: u64,
    ki_sum: u64,
    appends: u64,
    kw_sent: u64,
    ki_sent: u64,
    ki_add_sent: u64,
    append_entries_sent: u64,
    nacks_seen: u64,
    reestablished: bool,
}

struct Harness {
    engine: Engine,
    fmt: ReportFormat,
    cols: Vec<Col>,
    now: Instant,
    max_atomics: u32,
    coalescing: bool,
    start_psn: u32,
    tally: Tally,
    buf: Vec<u8>,
    /// Frames go in through `handle_frames` (a burst of one: a Key-Write report takes the engine's run
    /// path) rather than `handle_frame`.
    as_bursts: bool,
}

fn regions(c: usize, kw_nmax: u8, pc_nmax: u8) -> Vec<Region> {
    let base = 0x10_0000 * (c as u64 + 1);
    let rkey = 0x1234 + c as u32;
    let geo = [
        Geometry::KeyWrite(KeyWriteGeometry::new(64, 8, kw_nmax).unwrap()),
        Geometry::KeyIncrement(KeyIncrementGeometry::new(32, 4).unwrap()),
        Geometry::Postcarding(PostcardGeometry::new(16, 5, pc_nmax).unwrap()),
        Geometry::Append(AppendGeometry::new(32, APPEND_ENTRY as u32, 8).unwrap()),
        Geometry::Sketch(SketchGeometry::new(SKETCH_ROWS, SKETCH_COLUMNS).unwrap()),
    ];
    geo.iter()
        .enumerate()
        .map(|(i, g)| Region {
            id: match g {
                Geometry::Append(_) => APPEND_LIST,
                Geometry::Sketch(_) => SKETCH_ID,
                _ => 0,
            },
            va: base + 0x1_0000 * i as u64,
            // A distinct key per region on the second collector, one shared key on the first.
            rkey: rkey + if c == 1 { i as u32 * 0x100 } else { 0 },
            geometry: *g,
        })
        .collect()
}

fn welcome(c: &Col, max_atomics: u32, mtu: u32) -> Welcome {
    Welcome {
        version: CONTROL_VERSION,
        mac: c.mac,
        ip: c.ip,
        qps: vec![ResponderQp {
            qpn: c.qpn,
            peer_qpn: c.local_qpn,
        }],
        max_dest_rd_atomic: max_atomics,
        path_mtu: mtu,
        regions: c.regions.clone(),
        append_heads: Vec::new(),
    }
}

fn queue_sum(e: &Engine, n: usize) -> u64 {
    (0..n).map(|i| e.qp_stats(i).unwrap().queue as u64).sum()
}

fn sum(a: &[u64]) -> u64 {
    a.iter().sum()
}

fn emit(f: &FrameRepr) -> Vec<u8> {
    let mut out = vec![0u8; f.buffer_len()];
    let n = f.emit(&mut out).expect("a built frame emits");
    out.truncate(n);
    out
}

impl Harness {
    fn new(s: &mut Src) -> Option<Self> {
        let flags = s.u16();
        let mut cfg = Config::default();
        cfg.report.dta_header = if flags & 1 != 0 {
            HeaderForm::Compact
        } else {
            HeaderForm::Seq
        };
        cfg.report.keywrite_data_len = KW_DATA;
        cfg.report.append_entry_len = APPEND_ENTRY;
        cfg.sequence.enabled = flags & 2 == 0;
        cfg.requester.adaptive_window = flags & 4 == 0;
        cfg.requester.adaptive_timeout = flags & 8 == 0;
        let coalescing = flags & 16 != 0;
        cfg.key_increment.coalesce_us = if coalescing { 50 } else { 0 };
        cfg.key_increment.coalesce_capacity = 1 + usize::from(s.u8() % 8);
        let two = flags & 32 != 0;
        if flags & 64 != 0 {
            cfg.routing.keys = KeyRouting::DestinationIp;
        }
        if flags & 128 != 0 {
            cfg.rate.packets_per_sec = 100_000;
            cfg.rate.burst_packets = 1 + u64::from(s.u8() % 8);
        }
        let mtu = if flags & 256 != 0 { 256 } else { 1024 };
        let as_bursts = flags & 512 != 0;
        cfg.requester.window = 1 + u32::from(s.u8() % 16);
        cfg.requester.queue_capacity = 1 + u32::from(s.u8() % 64);
        cfg.requester.ack_every = 1 + u32::from(s.u8() % 8);
        cfg.requester.retry_limit = u32::from(s.u8() % 8);
        cfg.postcard.cache_size = 1 + usize::from(s.u8() % 8);
        cfg.postcard.redundancy = 1 + s.u8() % 2;
        cfg.postcard.hops = 1 + s.u8() % 5;
        cfg.sketch.reporters = 1 + u16::from(s.u8() % 3);
        cfg.sketch.column_batch = 1 + u32::from(s.u8() % 8);
        // Sometimes just before the 24-bit PSN wrap.
        let psn = s.u8();
        cfg.local.start_psn = if psn & 1 != 0 {
            PSN_MASK - u32::from(psn >> 1)
        } else {
            u32::from(psn)
        };
        let max_atomics = u32::from(s.u8() % 5);
        let (kw_nmax, pc_nmax) = (1 + s.u8() % 8, 1 + s.u8() % 2);
        let n = if two { 2 } else { 1 };
        let cols: Vec<Col> = (0..n)
            .map(|c| Col {
                ip: [198, 18, 0, 2 + c as u8],
                mac: [2, 0, 0, 0, 0, 2 + c as u8],
                qpn: 0x11 + c as u32,
                local_qpn: QPN_BASE + c as u32,
                regions: regions(c, kw_nmax, pc_nmax),
                next_psn: cfg.local.start_psn,
                sent: HashMap::new(),
                last_psn: None,
                outstanding_atomics: 0,
            })
            .collect();
        let welcomes: Vec<Welcome> = cols.iter().map(|c| welcome(c, max_atomics, mtu)).collect();
        let fmt = cfg.report.format();
        let start_psn = cfg.local.start_psn;
        let engine = Engine::new(cfg, &welcomes, Instant(0)).expect("the harness config is valid");
        Some(Harness {
            engine,
            fmt,
            cols,
            now: Instant(0),
            max_atomics,
            coalescing,
            start_psn,
            tally: Tally::default(),
            buf: Vec::new(),
            as_bursts,
        })
    }

    fn report_frame(&self, s: &mut Src, body: Body) -> Vec<u8> {
        let seq = s.u8();
        let bits = s.u8();
        let mut r = ReportRepr::new(body, self.fmt.form, seq);
        r.base.retransmit = bits & 1 != 0;
        r.base.immediate = bits & 2 != 0;
        let dst = match (bits >> 2) % 4 {
            0 | 1 => self.cols[0].ip,
            2 => self.cols[self.cols.len() - 1].ip,
            _ => [10, 9, 9, 9],
        };
        let ep = UdpEndpoints::new(
            [2, 0, 0, 0, 0, 0x10 + (bits >> 4) % 4],
            LOCAL_MAC,
            [10, 0, 0, 1 + (bits >> 4) % 4],
            dst,
            5000,
            DTA_UDP_PORT,
        );
        let mut payload = vec![0u8; r.buffer_len(&self.fmt)];
        // The emitter refuses a redundancy of 0 or above N_max; build with 1 and put the bad one on the
        // wire by hand, so the engine sees it.
        let bad = match &mut r.body {
            Body::KeyWrite(b) if b.redundancy == 0 || b.redundancy > N_MAX => {
                Some(std::mem::replace(&mut b.redundancy, 1))
            }
            Body::KeyIncrement(b) if b.redundancy == 0 || b.redundancy > N_MAX => {
                Some(std::mem::replace(&mut b.redundancy, 1))
            }
            _ => None,
        };
        let Ok(n) = r.emit(&mut payload, &self.fmt) else {
            // Fields the wire format cannot carry: nothing to send (an empty frame, not for us).
            return Vec::new();
        };
        if let Some(v) = bad {
            payload[self.fmt.form.header_len()] = v;
        }
        let mut out = vec![0u8; HEADERS_LEN + n];
        ep.emit_frame(&mut out, &payload[..n]).unwrap();
        out
    }

    /// A report from fuzzed fields; the fields are drawn from small ranges so that keys collide, lists and
    /// sketches exist and sequences line up often.
    fn report(&self, s: &mut Src, kind: u8) -> Vec<u8> {
        let key = match s.u8() {
            k if k < 200 => u32::from(k % 16),
            _ => s.u32(),
        };
        let redundancy = s.u8() % 10;
        let data = s.bytes(KW_DATA).to_vec();
        let mut kw = [0u8; KW_DATA];
        kw[..data.len()].copy_from_slice(&data);
        match kind % 6 {
            0 => self.report_frame(
                s,
                Body::KeyWrite(KeyWriteRepr {
                    redundancy,
                    key,
                    data: &kw,
                }),
            ),
            1 => {
                let counter = u64::from(s.u16());
                self.report_frame(
                    s,
                    Body::KeyIncrement(KeyIncrementRepr {
                        redundancy,
                        key,
                        counter,
                    }),
                )
            }
            2 => {
                let list_id = if redundancy < 8 {
                    APPEND_LIST
                } else {
                    u32::from(redundancy)
                };
                self.report_frame(s, Body::Append(AppendRepr { list_id, data: &kw }))
            }
            3 => {
                let hop = 1 + s.u8() % 8;
                self.report_frame(
                    s,
                    Body::Postcard(PostcardRepr {
                        key,
                        hop,
                        data: u32::from_le_bytes(kw),
                    }),
                )
            }
            4 => {
                let path_len = 1 + s.u8() % 8;
                let hop = 1 + s.u8() % path_len;
                self.report_frame(
                    s,
                    Body::PostcardPathLen(PostcardPathLenRepr {
                        key,
                        hop,
                        path_len,
                        data: u32::from_le_bytes(kw),
                    }),
                )
            }
            _ => {
                let b = s.u8();
                let sketch_id = if b & 1 == 0 { SKETCH_ID as u8 } else { b >> 4 };
                let op = if b & 2 == 0 {
                    SketchOp::Sum
                } else {
                    SketchOp::Max
                };
                let rows = if b & 4 == 0 {
                    SKETCH_ROWS as usize
                } else {
                    1 + usize::from(b >> 5)
                };
                let reporter_id = u16::from(s.u8() % 4);
                let column = u16::from(s.u8() % 10);
                let mut counters = vec![0u8; 4 * rows];
                let c = s.bytes(counters.len());
                counters[..c.len()].copy_from_slice(c);
                self.report_frame(
                    s,
                    Body::SketchMerge(SketchRepr {
                        sketch_id,
                        op,
                        reporter_id,
                        column,
                        counters: &counters,
                    }),
                )
            }
        }
    }

    /// A response from collector `c` (or a frame dressed as one).
    fn response(&self, s: &mut Src) -> Vec<u8> {
        let b = s.u8();
        let c = &self.cols[usize::from(b & 1) % self.cols.len()];
        let ep = UdpEndpoints::new(c.mac, LOCAL_MAC, c.ip, LOCAL_IP, 49152, ROCEV2_UDP_PORT);
        let last = c.last_psn.unwrap_or(self.start_psn);
        let d = s.u8();
        let psn = match (b >> 1) % 4 {
            0 => last,
            1 => last.wrapping_sub(u32::from(d % 16)) & PSN_MASK,
            2 => c.next_psn.wrapping_add(u32::from(d % 4)) & PSN_MASK,
            _ => s.u32() & PSN_MASK,
        };
        let dest_qp = if d & 0x80 == 0 {
            c.local_qpn
        } else {
            s.u32() & PSN_MASK
        };
        let msn = s.u32() & PSN_MASK;
        let kind = match s.u8() % 16 {
            0..=8 => AckKind::Ack {
                credits: s.u8() % 32,
            },
            9 | 10 => AckKind::Nak(NakCode::PsnSequenceError),
            11 | 12 => AckKind::RnrNak { timer: s.u8() % 32 },
            13 => AckKind::Nak(NakCode::InvalidRequest),
            14 => AckKind::Nak(NakCode::RemoteAccessError),
            _ => AckKind::Nak(NakCode::RemoteOperationalError),
        };
        let aeth = AethRepr { kind, msn };
        let mut f = match (b >> 3) % 8 {
            0..=3 => emit(&FrameRepr::acknowledge(ep, dest_qp, psn, aeth)),
            4 | 5 => emit(&FrameRepr::atomic_acknowledge(
                ep,
                dest_qp,
                psn,
                aeth,
                s.u64(),
            )),
            6 => emit(&FrameRepr::cnp(ep, dest_qp)),
            _ => {
                // A raw AETH syndrome (reserved NAK codes and all), iCRC made right so it gets parsed.
                let mut f = emit(&FrameRepr::acknowledge(ep, dest_qp, psn, aeth));
                f[HEADERS_LEN + 12] = s.u8();
                let _ = icrc::fill(&mut f);
                f
            }
        };
        if b & 0x40 != 0 {
            // Flip a byte after the UDP header and re-seal: odd opcodes and lengths reach the parser.
            let at = HEADERS_LEN + usize::from(s.u8()) % (f.len() - HEADERS_LEN);
            f[at] ^= s.u8() | 1;
            if b & 0x80 != 0 {
                f.truncate(at.max(HEADERS_LEN));
            }
            let _ = icrc::fill(&mut f);
        }
        f
    }

    /// A raw frame: bytes as a UDP payload to the report or RoCE port, or a whole raw frame.
    fn raw(&self, s: &mut Src) -> Vec<u8> {
        let b = s.u8();
        let len = usize::from(s.u8());
        let bytes = s.bytes(len);
        match b % 4 {
            0 => bytes.to_vec(),
            1 | 2 => {
                let c = &self.cols[usize::from(b >> 7) % self.cols.len()];
                let ep = if b % 4 == 1 {
                    UdpEndpoints::new(
                        [2, 0, 0, 0, 0, 0x10],
                        LOCAL_MAC,
                        [10, 0, 0, 1],
                        c.ip,
                        5000,
                        DTA_UDP_PORT,
                    )
                } else {
                    UdpEndpoints::new(c.mac, LOCAL_MAC, c.ip, LOCAL_IP, 49152, ROCEV2_UDP_PORT)
                };
                let mut out = vec![0u8; HEADERS_LEN + bytes.len()];
                ep.emit_frame(&mut out, bytes).unwrap();
                if b % 4 == 2 {
                    let _ = icrc::fill(&mut out);
                }
                out
            }
            _ => {
                // A well-formed report with one byte of its payload changed.
                let mut f = self.report(s, b >> 2);
                if f.len() > HEADERS_LEN {
                    let at = HEADERS_LEN + len % (f.len() - HEADERS_LEN);
                    f[at] ^= s.u8();
                }
                f
            }
        }
    }

    fn col_of_ip(&self, ip: [u8; 4]) -> Option<usize> {
        self.cols.iter().position(|c| c.ip == ip)
    }

    /// Hands `frame` to the engine and checks the counters moved as they must.
    fn feed(&mut self, frame: &[u8]) {
        let n = self.cols.len();
        let before = self.engine.counters().clone();
        let q0 = queue_sum(&self.engine, n);
        let handled = if self.as_bursts {
            let mut forwarded = false;
            self.engine
                .handle_frames(self.now, std::iter::once(frame), |_| forwarded = true);
            if forwarded {
                Handled::NotForUs
            } else {
                Handled::Consumed
            }
        } else {
            self.engine.handle_frame(self.now, frame)
        };
        let after = self.engine.counters().clone();
        let q1 = queue_sum(&self.engine, n);
        assert_eq!(after.frames_in, before.frames_in + 1);
        assert_eq!(after.ops_out, before.ops_out, "handle_frame sends nothing");
        assert_eq!(after.roce_frames_out, before.roce_frames_out);
        let udp = UdpFrame::parse(frame).ok();
        let is_report = udp
            .as_ref()
            .is_some_and(|u| u.endpoints.dst_port == DTA_UDP_PORT);
        let roce_from = udp
            .as_ref()
            .filter(|u| !is_report && u.endpoints.dst_port == ROCEV2_UDP_PORT)
            .and_then(|u| self.col_of_ip(u.endpoints.src_ip));
        let unparsed =
            |c: &Counters| c.dropped(DropReason::Malformed) + c.dropped(DropReason::BadRedundancy);
        let other_drops = |c: &Counters| sum(&c.drops) - unparsed(c);
        if !is_report {
            assert_eq!(after.reports_in, before.reports_in);
            assert_eq!(after.drops, before.drops);
            assert_eq!(q1, q0, "a non-report queued work");
            if let Some(c) = roce_from {
                assert_eq!(handled, Handled::Consumed);
                assert_eq!(after.not_for_us, before.not_for_us);
                let answered = after.atomic_acks - before.atomic_acks;
                let col = &mut self.cols[c];
                assert!(answered <= col.outstanding_atomics, "atomic answered twice");
                col.outstanding_atomics -= answered;
            } else {
                assert_eq!(handled, Handled::NotForUs);
                assert_eq!(after.not_for_us, before.not_for_us + 1);
                assert_eq!(after.atomic_acks, before.atomic_acks);
            }
            return;
        }
        assert_eq!(handled, Handled::Consumed);
        assert_eq!(after.not_for_us, before.not_for_us);
        self.tally.report_frames += 1;
        let udp = udp.unwrap();
        let parsed = ReportRepr::parse(udp.payload, &self.fmt);
        let dreports = sum(&after.reports_in) - sum(&before.reports_in);
        let dunparsed = unparsed(&after) - unparsed(&before);
        let ddrops = other_drops(&after) - other_drops(&before);
        let r = match parsed {
            Err(_) => {
                assert_eq!((dreports, dunparsed, ddrops), (0, 1, 0), "{parsed:?}");
                assert_eq!(q1, q0);
                return;
            }
            Ok(r) => r,
        };
        let op = r.base.opcode;
        assert_eq!(dunparsed, 0);
        let i = op.code() as usize - 1;
        assert_eq!(after.reports_in[i], before.reports_in[i] + 1, "{r:?}");
        assert_eq!(dreports, 1);
        assert!(ddrops <= 1, "one report dropped {ddrops} times: {r:?}");
        if ddrops == 1 {
            assert_eq!(q1, q0, "a dropped report queued work: {r:?}");
            return;
        }
        assert!(q1 >= q0, "accepting a report took work off the queue");
        let queued = q1 - q0;
        let coalesced = after.increments_coalesced - before.increments_coalesced;
        match r.body {
            Body::KeyWrite(kw) => {
                assert_eq!(queued, u64::from(kw.redundancy), "{r:?}");
                self.tally.kw_wrs += u64::from(kw.redundancy);
            }
            Body::KeyIncrement(ki) => {
                let n = u64::from(ki.redundancy);
                if self.coalescing {
                    assert!(queued + coalesced <= n, "{queued} + {coalesced} > {n}");
                } else {
                    assert_eq!((queued, coalesced), (n, 0), "{r:?}");
                }
                self.tally.ki_wrs += n;
                self.tally.ki_sum = self.tally.ki_sum.wrapping_add(ki.counter.wrapping_mul(n));
            }
            Body::Append(_) => {
                assert!(queued <= 2, "{queued}");
                self.tally.appends += 1;
            }
            // An eviction writes the evicted flow's cells, up to 4 runs of them (hops 1, 3, 5, 7), and a
            // completion one whole chunk, each to every copy (N <= 2 here).
            Body::Postcard(_) | Body::PostcardPathLen(_) => assert!(queued <= 10, "{queued}"),
            Body::SketchMerge(_) => assert!(queued <= u64::from(SKETCH_COLUMNS), "{queued}"),
        }
        if !matches!(r.body, Body::KeyIncrement(_)) {
            assert_eq!(coalesced, 0);
        }
    }

    /// Timers and flushes only ever add work.
    fn timers(&mut self, flush: bool) {
        let n = self.cols.len();
        let before = self.engine.counters().clone();
        let q0 = queue_sum(&self.engine, n);
        if flush {
            self.engine.flush(self.now);
        } else {
            self.engine.handle_timeout(self.now);
        }
        let after = self.engine.counters();
        assert!(queue_sum(&self.engine, n) >= q0);
        assert_eq!(after.reports_in, before.reports_in);
        assert_eq!(after.drops, before.drops);
        assert_eq!(after.ops_out, before.ops_out);
        assert_eq!(after.frames_in, before.frames_in);
    }

    /// One `poll_transmit`, checked. Returns the frame sent, if any.
    fn transmit(&mut self) -> Option<Vec<u8>> {
        let n = self.cols.len();
        let before = self.engine.counters().clone();
        let queues: Vec<usize> = (0..n)
            .map(|i| self.engine.qp_stats(i).unwrap().queue)
            .collect();
        let mut buf = std::mem::take(&mut self.buf);
        let sent = self.engine.poll_transmit(self.now, &mut buf);
        let after = self.engine.counters().clone();
        let queues_after: Vec<usize> = (0..n)
            .map(|i| self.engine.qp_stats(i).unwrap().queue)
            .collect();
        let out = sent.then(|| buf.clone());
        self.buf = buf;
        let Some(frame) = out else {
            assert_eq!(queues_after, queues);
            assert_eq!(after.ops_out, before.ops_out);
            assert_eq!(after.roce_frames_out, before.roce_frames_out);
            return None;
        };
        let udp = UdpFrame::parse(&frame).expect("a sent frame parses as UDP");
        if udp.endpoints.dst_port == DTA_NACK_UDP_PORT {
            NackRepr::parse(udp.payload, self.fmt.form).expect("a sent NACK parses");
            assert_eq!(udp.endpoints.src_port, DTA_UDP_PORT);
            assert_eq!(after.roce_frames_out, before.roce_frames_out);
            assert_eq!(queues_after, queues);
            self.tally.nacks_seen += 1;
            return Some(frame);
        }
        let f = FrameRepr::parse(&frame).expect("a sent RoCE frame parses, iCRC included");
        assert_eq!(udp.endpoints.dst_port, ROCEV2_UDP_PORT);
        assert_eq!(f.endpoints.src_ip, LOCAL_IP);
        let c = self
            .col_of_ip(f.endpoints.dst_ip)
            .expect("sent to a collector");
        assert_eq!(after.roce_frames_out, before.roce_frames_out + 1);
        let col = &self.cols[c];
        assert_eq!(f.bth.dest_qp, col.qpn, "sent to the collector's QP");
        assert_eq!(f.endpoints.dst_mac, col.mac);
        let psn = f.bth.psn;
        // Inside one region, with its key.
        let (va, len, region) = match f.ext {
            Extension::Reth(r) => {
                assert_eq!(f.bth.opcode, BthOpcode::RdmaWriteOnly);
                assert_eq!(r.dma_len as usize, f.payload.len());
                assert!(!f.payload.is_empty());
                let g = col
                    .regions
                    .iter()
                    .find(|g| g.contains(r.va, r.dma_len.into()))
                    .unwrap_or_else(|| panic!("WRITE {:#x}+{} outside regions", r.va, r.dma_len));
                assert_eq!(r.rkey, g.rkey, "WRITE with another region's R_Key");
                (r.va, r.dma_len as u64, *g)
            }
            Extension::Atomic(a) => {
                assert_eq!(f.bth.opcode, BthOpcode::FetchAdd);
                assert_eq!(a.va % 8, 0, "misaligned atomic {:#x}", a.va);
                let g = col
                    .regions
                    .iter()
                    .find(|g| g.contains(a.va, 8))
                    .unwrap_or_else(|| panic!("FETCH_ADD {:#x} outside regions", a.va));
                assert!(matches!(g.geometry, Geometry::KeyIncrement(_)));
                assert_eq!(a.rkey, g.rkey, "FETCH_ADD with another region's R_Key");
                (a.va, 8, *g)
            }
            other => panic!("sent something other than a request: {other:?}"),
        };
        let new = sum(&after.ops_out) - sum(&before.ops_out);
        let resent = after.retransmitted_frames - before.retransmitted_frames;
        let col = &mut self.cols[c];
        match (new, resent) {
            (1, 0) => {
                assert_eq!(psn, col.next_psn, "a first transmission skipped a PSN");
                col.next_psn = (psn + 1) & PSN_MASK;
                col.last_psn = Some(psn);
                assert_eq!(
                    queues_after[c] + 1,
                    queues[c],
                    "first sends come off the queue"
                );
                for (i, (a, b)) in queues.iter().zip(&queues_after).enumerate() {
                    assert!(i == c || a == b);
                }
                col.sent.insert(psn, (f.ext, f.payload.to_vec()));
                match f.ext {
                    Extension::Atomic(a) => {
                        col.outstanding_atomics += 1;
                        assert!(
                            col.outstanding_atomics <= u64::from(self.max_atomics),
                            "{} atomics in flight, the collector allows {}",
                            col.outstanding_atomics,
                            self.max_atomics
                        );
                        self.tally.ki_sent += 1;
                        self.tally.ki_add_sent = self.tally.ki_add_sent.wrapping_add(a.swap_add);
                    }
                    _ => match region.geometry {
                        Geometry::KeyWrite(_) => self.tally.kw_sent += 1,
                        Geometry::Append(_) if va != region.va => {
                            assert_eq!(len % APPEND_ENTRY as u64, 0);
                            assert!(va >= region.va + APPEND_HEADER_LEN);
                            self.tally.append_entries_sent += len / APPEND_ENTRY as u64;
                        }
                        _ => {}
                    },
                }
            }
            (0, 1) => {
                assert_eq!(queues_after, queues, "a retransmission took from the queue");
                let (ext, payload) = col
                    .sent
                    .get(&psn)
                    .unwrap_or_else(|| panic!("retransmitted PSN {psn:#x} was never sent"));
                assert_eq!(*ext, f.ext, "PSN {psn:#x} resent with other headers");
                assert_eq!(
                    &payload[..],
                    f.payload,
                    "PSN {psn:#x} resent with other data"
                );
            }
            other => panic!("one frame counted as (new, resent) = {other:?}"),
        }
        Some(frame)
    }

    fn drain(&mut self, limit: usize) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        while out.len() < limit {
            match self.transmit() {
                Some(f) => out.push(f),
                None => break,
            }
        }
        out
    }

    fn events(&mut self, reestablish: bool, s: &mut Src) {
        while let Some(Event::QpError { collector, .. }) = self.engine.poll_event() {
            if !reestablish {
                continue;
            }
            let start = s.u32() & PSN_MASK;
            let w = welcome(&self.cols[collector], self.max_atomics, 1024);
            self.engine
                .reestablish(collector, &w, start, self.now)
                .expect("reestablish with the same welcome");
            let col = &mut self.cols[collector];
            col.next_psn = start;
            col.sent.clear();
            col.last_psn = None;
            col.outstanding_atomics = 0;
            self.tally.reestablished = true;
        }
    }

    fn step(&mut self, s: &mut Src) {
        let op = s.u8();
        match op % 16 {
            0..=5 => {
                let f = self.report(s, op % 16);
                self.feed(&f);
            }
            6 => {
                let f = self.raw(s);
                self.feed(&f);
            }
            7..=9 => {
                let f = self.response(s);
                self.feed(&f);
            }
            10 => {
                let v = u64::from(s.u16());
                self.now = self.now
                    + Duration::from_nanos(
                        v * [1, 1_000, 1_000_000, 100][usize::from(op >> 4) % 4],
                    );
                self.timers(false);
            }
            11 => {
                if let Some(t) = self.engine.poll_timeout() {
                    // Bounded: at most a minute ahead.
                    self.now = self.now.max(t.min(self.now + Duration::from_secs(60)));
                }
                self.timers(false);
            }
            12 => self.timers(true),
            13 | 14 => {
                let n = 1 + usize::from(s.u8() % 32);
                self.drain(n);
            }
            _ => self.events(op & 0x10 != 0, s),
        }
    }

    /// A lossless responder like rxe (in order, duplicates re-ACKed, atomics answered) until the engine
    /// has nothing left; returns whether it got there.
    fn quiesce(&mut self) -> bool {
        let n = self.cols.len();
        let mut expected: Vec<u32> = (0..n)
            .map(|i| {
                let st = self.engine.qp_stats(i).unwrap();
                st.next_psn.wrapping_sub(st.window as u32) & PSN_MASK
            })
            .collect();
        self.engine.flush(self.now);
        for _ in 0..200 {
            loop {
                let frames = self.drain(usize::MAX);
                if frames.is_empty() {
                    break;
                }
                for fr in frames {
                    let Ok(f) = FrameRepr::parse(&fr) else {
                        continue;
                    };
                    let c = self.col_of_ip(f.endpoints.dst_ip).unwrap();
                    let col = &self.cols[c];
                    let mut ep = f.endpoints.reversed();
                    ep.dst_port = ROCEV2_UDP_PORT;
                    let psn = f.bth.psn;
                    let ok = AethRepr {
                        kind: AckKind::Ack { credits: 31 },
                        msn: 0,
                    };
                    let behind = expected[c].wrapping_sub(psn) & PSN_MASK;
                    let resp = if psn == expected[c] || (behind != 0 && behind < 1 << 23) {
                        if psn == expected[c] {
                            expected[c] = (psn + 1) & PSN_MASK;
                        }
                        match f.ext {
                            Extension::Atomic(_) => {
                                FrameRepr::atomic_acknowledge(ep, col.local_qpn, psn, ok, 0)
                            }
                            _ => FrameRepr::acknowledge(ep, col.local_qpn, psn, ok),
                        }
                    } else {
                        let nak = AethRepr {
                            kind: AckKind::Nak(NakCode::PsnSequenceError),
                            msn: 0,
                        };
                        FrameRepr::acknowledge(ep, col.local_qpn, expected[c], nak)
                    };
                    let bytes = emit(&resp);
                    self.feed(&bytes);
                }
            }
            if self.engine.is_idle() {
                return true;
            }
            self.now = self.now + Duration::from_millis(200);
            self.timers(false);
            self.engine.flush(self.now);
        }
        false
    }

    fn finish(&mut self) {
        let c = self.engine.counters().clone();
        let t = &self.tally;
        assert_eq!(
            sum(&c.reports_in)
                + c.dropped(DropReason::Malformed)
                + c.dropped(DropReason::BadRedundancy),
            t.report_frames,
            "report frames not all counted"
        );
        let failed = c.qp_errors > 0 || t.reestablished;
        if !failed {
            let idle = self.quiesce();
            let c = self.engine.counters().clone();
            if c.qp_errors == 0 {
                assert!(idle, "a lossless responder did not drain the engine: {c:?}");
                let t = &self.tally;
                assert_eq!(t.kw_sent, t.kw_wrs, "Key-Write WRITEs sent vs accepted");
                assert_eq!(c.ops_out[0], t.kw_wrs);
                assert_eq!(
                    t.ki_sent + c.increments_coalesced,
                    t.ki_wrs,
                    "FETCH_ADDs sent + coalesced vs accepted"
                );
                assert_eq!(t.ki_add_sent, t.ki_sum, "increments lost or doubled");
                assert_eq!(
                    t.append_entries_sent, t.appends,
                    "Append entries lost or doubled"
                );
            }
        }
        // NACKs go out before anything else, whatever state the QPs are in.
        self.drain(usize::MAX);
        let c = self.engine.counters();
        assert_eq!(
            self.tally.nacks_seen, c.dta_nacks_sent,
            "NACKs counted but not sent"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let mut s = Src(data);
    let Some(mut h) = Harness::new(&mut s) else {
        return;
    };
    let mut ops = 0;
    while !s.is_empty() && ops < MAX_OPS {
        h.step(&mut s);
        ops += 1;
    }
    h.finish();
    if std::env::var_os("DTA_FUZZ_DEBUG").is_some() {
        let t = &h.tally;
        eprintln!(
            "ops {ops} reports {} kw {}/{} ki {}/{} appends {}/{} nacks {} reestablished {}\n{:?}",
            t.report_frames,
            t.kw_sent,
            t.kw_wrs,
            t.ki_sent,
            t.ki_wrs,
            t.append_entries_sent,
            t.appends,
            t.nacks_seen,
            t.reestablished,
            h.engine.counters()
        );
    }
});
