//! The translator engine: a state machine with no sockets and no clock (quinn-proto style).
//!
//! * [`Engine::handle_frame`] takes any received Ethernet frame: DTA reports become work requests on the
//!   collector's QP, RoCE responses drive the requester, everything else comes back as
//!   [`Handled::NotForUs`] for the I/O layer to forward. [`Engine::handle_frames`] does the same for a
//!   whole receive burst in one call.
//! * [`Engine::poll_transmit`] hands out the next frame to send (DTA NACKs first, then RoCE frames).
//! * [`Engine::poll_timeout`] / [`Engine::handle_timeout`] drive retransmissions, idle flushes and the
//!   rate limiter; [`Engine::poll_event`] reports QP errors.
//!
//! (Over 500 lines: the engine's entry points share its state, and the report path from frame to
//! primitive is kept in one place to be read as one. It splits with issue 29's last item, DTA reports
//! lowered into the INT path's work description through one `submit`.)

mod int;
mod key_write_run;
mod link;
mod submit;
mod transmit;

use std::collections::VecDeque;

use dta_protocol::control::Welcome;
use dta_protocol::dta::{BaseRepr, Body, KeyWriteRepr, Opcode, ReportFormat, ReportRepr};
use dta_protocol::hash::key_checksum;
use dta_protocol::layout::Region;
use dta_protocol::roce::{FrameRepr, QPN_MASK, ROCEV2_UDP_PORT};
use dta_protocol::udp::{UdpFrame, UdpView, Uncommon, HEADERS_LEN as UDP_PAYLOAD_AT};
use dta_protocol::Error as WireError;

use crate::config::{Config, KeyRouting};
use crate::counters::{Counters, DropReason};
use crate::error::ConfigError;
use crate::int::IntFrontEnd;
use crate::primitives::keywrite::KeyWriteReport;
use crate::primitives::postcard::Postcard;
use crate::primitives::{FlushMode, Outcome, Sink};
use crate::sequence::{nack_frame, SequenceTracker, Stream, Verdict};
use crate::time::Instant;
use dta_rc::requester::{QpError, Response};
use link::Collector;
use submit::Work;

/// What the engine did with a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handled {
    /// A report or a response: consumed (possibly dropped and counted).
    Consumed,
    /// Not DTA and not from a collector: forward it untouched.
    NotForUs,
}

/// Something the caller must act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The QP to collector `collector` stopped; re-establish it over the control channel and call
    /// [`Engine::reestablish`]. Its queued and unacknowledged work is kept until then.
    QpError {
        /// Collector index.
        collector: usize,
        /// Why.
        error: QpError,
    },
}

/// Gauges of one QP for metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpStats {
    /// Frames in flight.
    pub window: usize,
    /// Work requests queued.
    pub queue: usize,
    /// Next PSN.
    pub next_psn: u32,
    /// Error, if stopped.
    pub error: Option<QpError>,
    /// Base retransmit timeout in force (ns, before backoff).
    pub timeout_ns: u64,
    /// Smoothed RTT (ns), once measured.
    pub srtt_ns: Option<u64>,
    /// The window in force (frames), below the configured window after losses.
    pub window_limit: u32,
}

/// The engine of one worker core.
pub struct Engine {
    cfg: Config,
    fmt: ReportFormat,
    collectors: Vec<Collector>,
    seq: SequenceTracker,
    nacks: VecDeque<Vec<u8>>,
    events: VecDeque<Event>,
    counters: Counters,
    next_qp: usize,
    /// The INT front end, when `[int] enabled`.
    int: Option<IntFrontEnd>,
    /// [`route_index`](Self::route_index) of every sketch id a report can name (a byte), worked out when
    /// the collectors are (re)configured instead of per report.
    sketch_routes: Vec<Option<(usize, usize)>>,
    /// [`route_index`](Self::route_index) of every Append list any collector holds, as (id, collector,
    /// index), sorted by id: one search per report instead of one per collector.
    append_routes: Vec<(u32, usize, usize)>,
}

impl Engine {
    /// An engine for `collectors` (one [`Welcome`] each, from the control channel or a regions file).
    pub fn new(cfg: Config, collectors: &[Welcome], now: Instant) -> Result<Self, ConfigError> {
        cfg.validate()?;
        if collectors.is_empty() {
            return Err(ConfigError::Collector {
                collector: 0,
                why: "no collector configured".into(),
            });
        }
        let mut out = Vec::with_capacity(collectors.len());
        for (i, w) in collectors.iter().enumerate() {
            out.push(Collector::new(&cfg, i, w, now)?);
        }
        let int = cfg
            .int
            .enabled
            .then(|| IntFrontEnd::new(&cfg.int, cfg.postcard.hops));
        let mut e = Engine {
            fmt: cfg.report.format(),
            seq: SequenceTracker::new(cfg.sequence.max_reporters, cfg.sequence.nack_holdoff()),
            cfg,
            collectors: out,
            nacks: VecDeque::new(),
            events: VecDeque::new(),
            counters: Counters::default(),
            next_qp: 0,
            int,
            sketch_routes: Vec::new(),
            append_routes: Vec::new(),
        };
        e.work_out_routes();
        Ok(e)
    }

    /// Works out [`sketch_routes`](Self::sketch_routes) and [`append_routes`](Self::append_routes) for
    /// the collectors as they are.
    fn work_out_routes(&mut self) {
        self.sketch_routes = (0..=u8::MAX)
            .map(|id| self.route_index(u32::from(id), false))
            .collect();
        let mut ids: Vec<u32> = self
            .collectors
            .iter()
            .flat_map(|c| c.regions.append.iter().map(|r| r.id))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        self.append_routes = ids
            .into_iter()
            .filter_map(|id| self.route_index(id, true).map(|(i, k)| (id, i, k)))
            .collect();
    }

    /// Where Append list `id` is: what `route_index(id, true)` finds, from the table.
    #[inline]
    fn route_list(&self, id: u32) -> Option<(usize, usize)> {
        let routes = &self.append_routes;
        let at = routes.binary_search_by_key(&id, |r| r.0).ok()?;
        routes.get(at).map(|&(_, i, k)| (i, k))
    }

    /// The translator QPNs the engine uses, one per collector (for the control channel's hello).
    pub fn local_qpns(&self) -> Vec<u32> {
        (0..self.collectors.len())
            .map(|i| (self.cfg.local.qpn_base + i as u32) & 0xFF_FFFF)
            .collect()
    }

    /// Every counter.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Gauges of collector `i`'s QP.
    pub fn qp_stats(&self, i: usize) -> Option<QpStats> {
        self.collectors.get(i).map(Collector::stats)
    }

    /// Whether every QP has nothing queued or in flight and no DTA NACK waits.
    pub fn is_idle(&self) -> bool {
        self.nacks.is_empty() && self.collectors.iter().all(|c| c.qp.is_idle())
    }

    /// Handles one received frame.
    pub fn handle_frame(&mut self, now: Instant, frame: &[u8]) -> Handled {
        self.frame::<true>(now, frame)
    }

    /// Handles a burst of received frames in order, as [`handle_frame`](Self::handle_frame) on each
    /// (the same state, counters and output), and hands each frame that is not for the translator to
    /// `not_for_us` for the I/O layer to forward. One call per receive burst instead of one per frame: the
    /// per-frame path is inlined into this loop.
    pub fn handle_frames<'f>(
        &mut self,
        now: Instant,
        frames: impl IntoIterator<Item = &'f [u8]>,
        not_for_us: impl FnMut(&'f [u8]),
    ) {
        self.burst::<true>(now, frames, not_for_us);
    }

    /// [`handle_frames`](Self::handle_frames) for a burst from a port that faces the reporters, not the
    /// collectors: RoCE responses there are not for the translator (a host on the reporters' side could
    /// otherwise forge ACKs that retire writes the collector never applied, or NAKs that break a QP), and
    /// go to `not_for_us` like any other frame.
    pub fn handle_reporter_frames<'f>(
        &mut self,
        now: Instant,
        frames: impl IntoIterator<Item = &'f [u8]>,
        not_for_us: impl FnMut(&'f [u8]),
    ) {
        self.burst::<false>(now, frames, not_for_us);
    }

    /// The loop of both: `RESPONSES` says whether RoCE responses are taken.
    #[inline(always)]
    fn burst<'f, const RESPONSES: bool>(
        &mut self,
        now: Instant,
        frames: impl IntoIterator<Item = &'f [u8]>,
        mut not_for_us: impl FnMut(&'f [u8]),
    ) {
        let mut frames = frames.into_iter();
        while let Some(mut f) = frames.next() {
            // A frame that looks like a Key-Write report (the opcode where a report without IP options has
            // it) starts a run of them, which one call handles; it gives back the first frame it leaves to
            // the general path. (One general call site: with two, LLVM took the report path out of line.)
            if f.get(UDP_PAYLOAD_AT) == Some(&Opcode::KeyWrite.code()) {
                match self.key_write_run(f, &mut frames) {
                    Some(other) => f = other,
                    None => return,
                }
            }
            if self.frame::<RESPONSES>(now, f) == Handled::NotForUs {
                not_for_us(f);
            }
        }
    }

    /// [`handle_frame`](Self::handle_frame)'s body, inlined into it and into
    /// [`handle_frames`](Self::handle_frames)' loop.
    #[inline(always)]
    fn frame<const RESPONSES: bool>(&mut self, now: Instant, frame: &[u8]) -> Handled {
        self.counters.frames_in += 1;
        // Fixed offsets, etherparse's checks (dta-protocol tests that both agree), and only the fields a
        // report needs: once per report. Other frames take the general parse apart, so that the common
        // frame's fields stay in registers.
        match UdpView::parse_common(frame) {
            Ok(Some(udp)) => self.udp::<RESPONSES>(now, frame, udp),
            Ok(None) => self.not_for_us(),
            Err(Uncommon) => self.uncommon::<RESPONSES>(now, frame),
        }
    }

    /// A frame that [`UdpView::parse_common`] leaves to the general parse.
    #[cold]
    #[inline(never)]
    fn uncommon<const RESPONSES: bool>(&mut self, now: Instant, frame: &[u8]) -> Handled {
        match UdpView::parse(frame) {
            Some(udp) => self.udp::<RESPONSES>(now, frame, udp),
            None => self.not_for_us(),
        }
    }

    /// Counts a frame to forward.
    fn not_for_us(&mut self) -> Handled {
        self.counters.not_for_us += 1;
        Handled::NotForUs
    }

    /// Handles a UDP datagram, `frame` seen through `udp`.
    #[inline]
    fn udp<const RESPONSES: bool>(&mut self, now: Instant, frame: &[u8], udp: UdpView) -> Handled {
        if udp.dst_port == self.cfg.report.udp_port {
            // Fields by value, so that they stay in registers on the way.
            self.handle_report(now, frame, udp.payload, udp.src_ip, udp.dst_ip);
            return Handled::Consumed;
        }
        if self.int.as_ref().map(IntFrontEnd::udp_port) == Some(udp.dst_port) {
            // No handoff here: several workers split INT frames with `handle_int_frames`. On a sharded
            // engine the reports of other workers' flows are counted as not this engine's, never lost.
            self.handle_int_alone(now, udp.dst_ip, udp.payload);
            return Handled::Consumed;
        }
        // RoCE between a collector and another host crosses a bump in the wire too: only what is
        // addressed to us is a response.
        if RESPONSES && udp.dst_port == ROCEV2_UDP_PORT && udp.dst_ip == self.cfg.local.ip {
            return self.roce(now, frame, udp.src_ip, udp.payload_offset, udp.payload);
        }
        self.not_for_us()
    }

    /// A RoCEv2 datagram: a collector's response, or not for us. Out of line, so that the report path
    /// around it keeps its registers (responses come in bursts of their own).
    ///
    /// Takes the few fields of the view that an ACKNOWLEDGE needs, in registers, so that the report path
    /// does not keep the whole view in memory for this call; other responses take the view again from
    /// `frame` (the same view: the caller's came from `UdpView::parse` or its common path).
    #[inline(never)]
    fn roce(
        &mut self,
        now: Instant,
        frame: &[u8],
        src_ip: [u8; 4],
        payload_offset: usize,
        payload: &[u8],
    ) -> Handled {
        // The first collector on its own first: with one (the common case), no search loop.
        let i = match self.collectors.first() {
            Some(c) if c.ip == src_ip => Some(0),
            _ => self.collectors.iter().position(|c| c.ip == src_ip),
        };
        match i {
            Some(i) => self.handle_roce(now, i, frame, payload_offset, payload),
            None => self.not_for_us(),
        }
    }

    /// Handles a RoCEv2 datagram from collector `i`. A well-formed ACKNOWLEDGE or ATOMIC ACKNOWLEDGE
    /// (the requester's one response per AckReq, or per FETCH_ADD) is read as its few fields, without
    /// the UDP endpoints or the whole repr; anything else takes the full parse of
    /// [`handle_roce_frame`](Self::handle_roce_frame), which gives the same result for those
    /// (dta-protocol tests that both parses agree; the dispatch below is `Requester::on_response_frame`'s
    /// for them).
    #[inline]
    fn handle_roce(
        &mut self,
        now: Instant,
        i: usize,
        frame: &[u8],
        payload_offset: usize,
        payload: &[u8],
    ) -> Handled {
        let col = &mut self.collectors[i];
        match FrameRepr::parse_ack_cached(frame, payload_offset, payload, &mut col.icrc) {
            Some(Ok(a)) => {
                let ours = self.cfg.local.qpn_base + i as u32;
                let c = &mut self.counters;
                if a.dest_qp != ours & QPN_MASK {
                    c.stale_responses += 1;
                } else {
                    col.qp.on_response(now, a.psn, a.aeth.kind, a.orig, c);
                }
                // `qp_event`'s test on the collector at hand (not found again by index, with its
                // bounds check, for every response).
                if col.qp.error().is_some() {
                    self.qp_event(i);
                }
            }
            Some(Err(e)) => self.count_bad_response(&e),
            None => match UdpView::parse(frame).and_then(|udp| udp.frame(frame)) {
                // The whole envelope, which the general parse reads (`frame` is the view's own frame,
                // so this is always there).
                Some(full) => self.handle_roce_frame(now, i, frame, &full),
                None => return self.not_for_us(),
            },
        }
        Handled::Consumed
    }

    /// Counts a response whose parse failed, by why.
    #[cold]
    fn count_bad_response(&mut self, e: &WireError) {
        match e {
            WireError::IcrcMismatch { .. } => self.counters.bad_icrc_responses += 1,
            _ => self.counters.stale_responses += 1,
        }
    }

    /// A RoCEv2 frame from collector `i` other than a well-formed ACKNOWLEDGE or ATOMIC ACKNOWLEDGE.
    #[cold]
    #[inline(never)]
    fn handle_roce_frame(&mut self, now: Instant, i: usize, frame: &[u8], udp: &UdpFrame) {
        let c = &mut self.counters;
        let col = &mut self.collectors[i];
        // The UDP layer parsed once, responses read at fixed offsets, the iCRC of the collector's constant
        // headers remembered (dta-protocol tests that this equals `FrameRepr::parse`, errors included).
        let f = match FrameRepr::parse_udp_cached(frame, udp, &mut col.icrc) {
            Ok(f) => f,
            Err(WireError::IcrcMismatch { .. }) => {
                c.bad_icrc_responses += 1;
                return;
            }
            Err(_) => {
                c.stale_responses += 1;
                return;
            }
        };
        let ours = self.cfg.local.qpn_base + i as u32;
        match col.qp.on_response_frame(now, ours, &f, c) {
            Response::Handled => {}
            Response::Cnp => c.cnps += 1,
            Response::NotOurs => c.stale_responses += 1,
        }
        self.qp_event(i);
    }

    /// Queues collector `i`'s QP error as an event, once.
    #[inline]
    fn qp_event(&mut self, i: usize) {
        if let Some(error) = self.collectors[i].qp.error() {
            if !self.events.iter().any(|e| {
                *e == Event::QpError {
                    collector: i,
                    error,
                }
            }) {
                self.events.push_back(Event::QpError {
                    collector: i,
                    error,
                });
            }
        }
    }

    // Inlined: with one collector (the common case) it is a length test.
    #[inline]
    fn route_key(&self, key: u32, dst_ip: [u8; 4]) -> Option<usize> {
        self.route(|| key_checksum(key), dst_ip)
    }

    /// The collector of a key whose checksum `checksum` gives (called only when more than one collector
    /// is routed by key hash, so one collector, the common case, costs no hash here).
    fn route(&self, checksum: impl FnOnce() -> u32, dst_ip: [u8; 4]) -> Option<usize> {
        match self.cfg.routing.keys {
            KeyRouting::KeyHash if self.collectors.len() == 1 => Some(0),
            KeyRouting::KeyHash => Some(checksum() as usize % self.collectors.len()),
            KeyRouting::DestinationIp => self.collectors.iter().position(|c| c.ip == dst_ip),
        }
    }

    /// The first collector with Append list (`append`) or sketch `id`, and where the region is in that
    /// collector's list of its kind.
    #[inline]
    fn route_index(&self, id: u32, append: bool) -> Option<(usize, usize)> {
        self.collectors.iter().enumerate().find_map(|(i, c)| {
            if append {
                c.regions.append_index(id)
            } else {
                c.regions.sketch_index(id)
            }
            .map(|k| (i, k))
        })
    }

    #[inline]
    fn handle_report(
        &mut self,
        now: Instant,
        frame: &[u8],
        payload: &[u8],
        src_ip: [u8; 4],
        dst_ip: [u8; 4],
    ) {
        // Key-Write, the common report, parsed straight into its values (the same checks and result as
        // `parse_quick`'s, which dta-protocol tests), so that its body is not matched twice.
        if payload.first() == Some(&Opcode::KeyWrite.code()) {
            let Some((base, kw)) = ReportRepr::parse_key_write(payload, &self.fmt) else {
                self.malformed(payload);
                return;
            };
            self.report(now, frame, base, src_ip, dst_ip, |e| {
                e.key_write_parts(kw.redundancy, kw.key, kw.data, dst_ip)
            });
            return;
        }
        // Fixed offsets for the configured format; a report that does not pass goes through the layered
        // parse for its error (dta-protocol tests that both agree, errors included).
        let Some(r) = ReportRepr::parse_quick(payload, &self.fmt) else {
            self.malformed(payload);
            return;
        };
        self.report(now, frame, r.base, src_ip, dst_ip, |e| {
            e.dispatch(now, &r, frame, dst_ip)
        });
    }

    /// A parsed report with base header `base`: counted, its seqnum tracked, then handed to `dispatch`,
    /// whose drop is counted (a full queue rolls the seqnum back and NACKs).
    #[inline(always)]
    fn report(
        &mut self,
        now: Instant,
        frame: &[u8],
        base: BaseRepr,
        src_ip: [u8; 4],
        dst_ip: [u8; 4],
        dispatch: impl FnOnce(&mut Self) -> Result<(), DropReason>,
    ) {
        let op = base.opcode;
        self.counters.reports_in[op.index()] += 1;
        // Built where it is used, off the common path (an untracked report needs none).
        let stream = || Stream {
            reporter: src_ip,
            collector: dst_ip,
            opcode: op,
        };
        // Sequence tracking (`tracks`). Set inside the tracked branch rather than matched out of it: the
        // match made the untracked path store a `None` and test it again before `dispatch` (~2
        // instructions a report).
        let mut tracked = None;
        if let (Some(seq), true) = (base.seqnum, self.tracks(&base)) {
            let Some(seq) = self.track(now, frame, stream(), seq) else {
                return;
            };
            tracked = Some(seq);
        }
        if let Err(reason) = dispatch(self) {
            // Refused for now (no room, or a collector that cannot be used until it comes back): a
            // retransmittable report is NACKed so that its reporter sends it again.
            if matches!(
                reason,
                DropReason::QueueFull | DropReason::CollectorUnusable
            ) {
                if let Some(seq) = tracked {
                    let last = self.seq.rollback(stream(), seq);
                    self.send_nack(frame, op, last);
                }
            }
            self.counters.drop(reason);
        }
    }

    /// A Key-Write report to its collector, through `Collector::key_write_unrolled`. Its two callers are
    /// [`key_write_parts`](Self::key_write_parts) (one report, out of line) and the run loop of
    /// [`key_write_run`](Self::key_write_run) (inlined there); [`dispatch`](Self::dispatch) never sees a
    /// Key-Write (see there).
    #[inline(always)]
    fn key_write(&mut self, kw: &KeyWriteRepr, dst: [u8; 4]) -> Result<(), DropReason> {
        // Once per report: the entries store it and key-hash routing uses it.
        let checksum = key_checksum(kw.key);
        let i = self.route(|| checksum, dst).ok_or(DropReason::NoRegion)?;
        // Key-Write is written at once: its one outcome is `Accepted`.
        self.collectors[i].key_write_unrolled(kw, checksum)
    }

    /// [`key_write`](Self::key_write) of the report `redundancy`, `key`, `data`, its fields in registers:
    /// the general path's, for a Key-Write report that [`key_write_run`](Self::key_write_run) leaves to it
    /// (a tracked one, or one [`handle_frame`](Self::handle_frame) is given).
    ///
    /// Out of the receive loop: inlined there, its values took registers from the loop around every other
    /// report's path (Sketch-Merge's lost ~6 instructions a report to spills); out of line they have the
    /// whole register file for one call's cost.
    #[inline(never)]
    fn key_write_parts(
        &mut self,
        redundancy: u8,
        key: u32,
        data: &[u8],
        dst: [u8; 4],
    ) -> Result<(), DropReason> {
        let kw = KeyWriteRepr {
            redundancy,
            key,
            data,
        };
        self.key_write(&kw, dst)
    }

    /// Counts the drop of a report that does not parse, by [`ReportRepr::parse`]'s reason.
    #[cold]
    fn malformed(&mut self, payload: &[u8]) {
        let reason = match ReportRepr::parse(payload, &self.fmt) {
            Err(WireError::BadRedundancy { .. }) => DropReason::BadRedundancy,
            // `parse_quick` refused it, so `parse` does too (dta-protocol tests that they agree).
            _ => DropReason::Malformed,
        };
        self.counters.drop(reason);
    }

    /// Whether the report with base header `base` has its seqnum tracked under this configuration.
    #[inline(always)]
    fn tracks(&self, base: &BaseRepr) -> bool {
        tracked(base, self.cfg.sequence.enabled)
    }

    /// Checks a tracked report's seqnum: `Some(seq)` to go on, `None` when it was dropped (and NACKed
    /// after a gap).
    #[cold]
    fn track(&mut self, now: Instant, frame: &[u8], stream: Stream, seq: u8) -> Option<u8> {
        match self.seq.check(now, stream, seq) {
            Some(Verdict::Accept) | None => Some(seq),
            Some(Verdict::Gap { nack }) => {
                if let Some(s) = nack {
                    self.send_nack(frame, stream.opcode, s);
                }
                self.counters.drop(DropReason::OutOfOrder);
                None
            }
            Some(Verdict::Duplicate) => {
                self.counters.drop(DropReason::Duplicate);
                None
            }
        }
    }

    /// Queues a DTA NACK to the reporter of `frame` (a report frame that [`UdpView::parse`] took).
    #[cold]
    fn send_nack(&mut self, frame: &[u8], op: Opcode, seqnum: u8) {
        let Ok(report) = UdpFrame::parse(frame) else {
            return;
        };
        if let Some(f) = nack_frame(&report.endpoints, self.fmt.form, op, seqnum) {
            self.counters.dta_nacks_sent += 1;
            self.nacks.push_back(f);
        }
    }

    // Inlined into its one caller: the report is then read from registers, not spilled for a call.
    #[inline(always)]
    fn dispatch(
        &mut self,
        now: Instant,
        r: &ReportRepr,
        frame: &[u8],
        dst: [u8; 4],
    ) -> Result<(), DropReason> {
        // Each arm submits the work its body lowers to, so that `submit` (inlined) is specialised to it.
        let outcome = match r.body {
            // `handle_report` takes Key-Write reports through `ReportRepr::parse_key_write` before
            // dispatch (and the burst loop's `key_write_run` takes runs of them before even that), so
            // this arm is the general path only: correct if reached, never a panic on input.
            Body::KeyWrite(repr) => {
                let kw = KeyWriteReport {
                    repr,
                    checksum: key_checksum(repr.key),
                };
                self.submit(now, dst, Work::KeyWrite(kw))?
            }
            Body::KeyIncrement(ki) => self.submit(now, dst, Work::KeyIncrement(ki))?,
            Body::Append(a) => self.submit(now, dst, Work::Append(a))?,
            Body::Postcard(p) => {
                let p = Postcard {
                    key: p.key,
                    hop: p.hop,
                    path_len: self.cfg.postcard.hops,
                    data: p.data,
                    opcode: Opcode::Postcard,
                    // Opcode 0x04's paths are B hops long by definition.
                    length_known: true,
                };
                self.submit(now, dst, Work::Postcard(p))?
            }
            Body::PostcardPathLen(p) => {
                let p = Postcard {
                    key: p.key,
                    hop: p.hop,
                    path_len: p.path_len,
                    data: p.data,
                    opcode: Opcode::PostcardPathLen,
                    length_known: true,
                };
                self.submit(now, dst, Work::Postcard(p))?
            }
            Body::SketchMerge(s) => self.submit(now, dst, Work::SketchMerge(s))?,
        };
        match outcome {
            Outcome::Accepted => Ok(()),
            Outcome::Duplicate => Err(DropReason::Duplicate),
            Outcome::Gap { last_in_order } => {
                self.send_nack(frame, r.base.opcode, last_in_order);
                Err(DropReason::OutOfOrder)
            }
        }
    }

    /// Writes the next frame to send into `out` (cleared first); false when nothing may go now.
    pub fn poll_transmit(&mut self, now: Instant, out: &mut Vec<u8>) -> bool {
        if let Some(f) = self.nacks.pop_front() {
            *out = f;
            return true;
        }
        self.poll_qps(|qp, c| qp.poll_transmit(now, c, out).then_some(()))
            .is_some()
    }

    /// At most how many frames [`poll_transmit`](Self::poll_transmit) would give now (queued work, frames
    /// awaiting retransmission, DTA NACKs; the window and the rate limiter may hold some back): how many
    /// NIC buffers a transmit burst needs.
    pub fn pending_frames(&self) -> usize {
        self.nacks.len()
            + self
                .collectors
                .iter()
                .map(|c| c.qp.pending_frames())
                .sum::<usize>()
    }

    /// DTA NACKs waiting to go back to their reporters: [`poll_transmit_into`](Self::poll_transmit_into)
    /// gives these first. A daemon sends them out of the port their reports came in on, before it builds
    /// the RoCE burst for the collector port.
    pub fn pending_nacks(&self) -> usize {
        self.nacks.len()
    }

    /// [`poll_transmit`](Self::poll_transmit) straight into `buf`, a NIC buffer's data room: the frame is
    /// built where it is sent instead of in a `Vec` that is then copied. Returns the frame's length, or
    /// `None` when nothing may go now. A frame longer than `buf` stays queued: give a buffer of at least the
    /// path MTU plus 128 bytes (an mbuf's 2 KiB room).
    pub fn poll_transmit_into(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        if let Some(f) = self.nacks.front() {
            let room = buf.get_mut(..f.len())?;
            room.copy_from_slice(f);
            let n = f.len();
            self.nacks.pop_front();
            return Some(n);
        }
        self.poll_qps(|qp, c| qp.poll_transmit_into(now, c, buf))
    }

    /// The first QP, round robin, that `send` gets a frame from.
    #[inline]
    fn poll_qps<T>(
        &mut self,
        mut send: impl FnMut(&mut dta_rc::Requester, &mut Counters) -> Option<T>,
    ) -> Option<T> {
        let n = self.collectors.len();
        if n == 1 {
            // One collector, the common case: no round robin (and no divisions).
            return send(&mut self.collectors[0].qp, &mut self.counters);
        }
        for k in 0..n {
            let i = (self.next_qp + k) % n;
            if let Some(t) = send(&mut self.collectors[i].qp, &mut self.counters) {
                // Round robin: the next call starts after this QP, so one busy collector cannot starve
                // the others.
                self.next_qp = (i + 1) % n;
                return Some(t);
            }
        }
        None
    }

    /// The next instant [`handle_timeout`](Self::handle_timeout) has work.
    pub fn poll_timeout(&self) -> Option<Instant> {
        // One fold over every requester's and primitive's deadline (see `Earliest`).
        let mut t = crate::time::Earliest::NONE;
        for c in &self.collectors {
            c.qp.add_timeouts(&mut t);
            c.prims.add_timeouts(&mut t);
        }
        t.get()
    }

    /// Runs every timer due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.flush_inner(now, FlushMode::Due);
    }

    /// Writes everything batched or cached now (end of an offline capture, shutdown).
    pub fn flush(&mut self, now: Instant) {
        self.flush_inner(now, FlushMode::All);
    }

    fn flush_inner(&mut self, now: Instant, mode: FlushMode) {
        for (i, col) in self.collectors.iter_mut().enumerate() {
            let mut out = Sink {
                qp: &mut col.qp,
                mtu: col.mtu,
                counters: &mut self.counters,
            };
            for p in col.prims.timed() {
                p.flush(now, mode, &col.regions, &mut out);
            }
            if let Some(error) = col.qp.on_timeout(now, &mut self.counters) {
                self.events.push_back(Event::QpError {
                    collector: i,
                    error,
                });
            }
        }
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Resumes collector `i`'s QP after the control channel re-established it (`welcome` is the new
    /// answer; its first QP is used). Unacknowledged work is sent again from `start_psn`.
    pub fn reestablish(
        &mut self,
        i: usize,
        welcome: &Welcome,
        start_psn: u32,
        now: Instant,
    ) -> Result<(), ConfigError> {
        let builder = Collector::builder(&self.cfg, i, welcome)?;
        let col = self.collectors.get_mut(i).ok_or(ConfigError::Collector {
            collector: i,
            why: "no such collector".into(),
        })?;
        col.qp.reestablish(builder, start_psn, now);
        self.events
            .retain(|e| !matches!(e, Event::QpError { collector, .. } if *collector == i));
        Ok(())
    }

    /// Replaces collector `i` after it restarted: its memory is new (regions at other addresses), so the
    /// queued and unacknowledged work, which names the old addresses, cannot be sent again, and per-collector
    /// state (Append heads, cached postcards, partial sketch merges) starts over as the new memory does.
    /// [`reestablish`](Self::reestablish) is for a QP error on a collector that kept its memory. Returns the
    /// reports lost with the old memory (those its queued and unacknowledged work completes, and those its
    /// primitives held), for the caller to count.
    pub fn replace_collector(
        &mut self,
        i: usize,
        welcome: &Welcome,
        start_psn: u32,
        now: Instant,
    ) -> Result<u64, ConfigError> {
        if i >= self.collectors.len() {
            return Err(ConfigError::Collector {
                collector: i,
                why: "no such collector".into(),
            });
        }
        let mut fresh = Collector::new(&self.cfg, i, welcome, now)?;
        fresh
            .qp
            .reestablish(Collector::builder(&self.cfg, i, welcome)?, start_psn, now);
        let old = std::mem::replace(&mut self.collectors[i], fresh);
        // The new memory may hold other sketches and Append lists.
        self.work_out_routes();
        self.events
            .retain(|e| !matches!(e, Event::QpError { collector, .. } if *collector == i));
        Ok(old.held_reports())
    }

    /// Whether a collector's `welcome` is one the engine can use as collector `i` (what
    /// [`new`](Self::new) and [`replace_collector`](Self::replace_collector) check: QPs, path MTU,
    /// regions, the Key-Write entry size against the reports'), and why not. A control client asks before
    /// it hands a welcome on, so that it can refuse it, say why and try again.
    pub fn check_welcome(cfg: &Config, i: usize, welcome: &Welcome) -> Result<(), ConfigError> {
        Collector::new(cfg, i, welcome, Instant::ZERO).map(drop)
    }

    /// Detaches collector `i`, which came back with memory the engine cannot use (its welcome was
    /// refused): its old memory is gone, so its queued and unacknowledged work and its primitives' state
    /// (batches, cached flows, merges) are dropped, and until [`replace_collector`](Self::replace_collector)
    /// gives it usable memory every report for it is refused and counted
    /// ([`DropReason::CollectorUnusable`]; a retransmittable one NACKed). Returns the reports lost, for the
    /// caller to count with those lost to restarts.
    pub fn detach_collector(&mut self, i: usize) -> Result<u64, ConfigError> {
        let cfg = &self.cfg;
        let col = self.collectors.get_mut(i).ok_or(ConfigError::Collector {
            collector: i,
            why: "no such collector".into(),
        })?;
        let lost = col.prims.held_reports() + col.qp.close();
        col.prims = crate::primitives::Primitives::new(cfg);
        self.events
            .retain(|e| !matches!(e, Event::QpError { collector, .. } if *collector == i));
        Ok(lost)
    }

    /// Reports taken and not yet written: queued or unacknowledged on a QP, or held by a primitive
    /// (batched, cached, coalesced, merged). What a stop that cannot wait any longer loses, in reports.
    pub fn held_reports(&self) -> u64 {
        self.collectors.iter().map(Collector::held_reports).sum()
    }

    /// Offline mode: with no collector to answer, treat every frame sent so far as acknowledged, so the
    /// window never fills. Never use it with a live collector.
    pub fn assume_delivered(&mut self) {
        for c in &mut self.collectors {
            c.qp.assume_delivered();
        }
    }

    /// The regions of collector `i` as configured (for tests and tools).
    pub fn regions(&self, i: usize) -> Option<Vec<Region>> {
        self.collectors.get(i).map(Collector::region_list)
    }
}

/// Whether a report with base header `base` has its seqnum tracked, tracking on or not (`enabled`): a
/// retransmittable report in the seq form (the compact form has no seqnum). [`Engine::tracks`]'s rule,
/// and the Key-Write run's.
#[inline(always)]
fn tracked(base: &BaseRepr, enabled: bool) -> bool {
    base.seqnum.is_some() && base.retransmit && enabled
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod ack_dispatch_tests;
