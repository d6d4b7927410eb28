//! The RoCEv2 requester of one QP: PSNs, AckReq cadence, the retransmission window, go-back-N,
//! retransmit timeout with backoff, RNR waits, atomic responses and the QP error state.
//!
//! Work requests enter a bounded queue; [`Requester::poll_transmit`] (or
//! [`poll_transmit_into`](Requester::poll_transmit_into), straight into a NIC buffer) takes them into the
//! window as the window, the responder's atomic limit and the rate limiter allow. Queue and window are one
//! ring (`ring::Ring`), the window at its head, so taking a work request in moves a boundary, not the
//! request, and retiring acknowledged ones moves the head. The window keeps the work request, not
//! the frame: a retransmission rebuilds the identical frame from the same PSN, which costs less than
//! keeping a copy of every frame in flight.
//!
//! One state machine, one struct: its fields and their invariants (`win`, `sent`, `atomics`, `probe`)
//! are declared here, and each file below is one job done on them: `queue` (taking work in),
//! `transmit` and `burst` (sending), `pacing` (rate and congestion), `window` (its size and retiring),
//! `ack` (responses), `timers` (the retransmit timeout) with `timer_table` (every timer, named),
//! `lifecycle` (error, close, re-establishment) and `ring` (the storage behind window and queue).

use dta_protocol::roce::NakCode;

use crate::config::{RateConfig, RequesterConfig};
use crate::dcqcn::Dcqcn;
use crate::frames::{FrameBuilder, Op};
use crate::rate::RateLimiter;
use crate::rtt::RttEstimator;
use crate::stats::Tag;
use crate::time::{nanos, Instant};

use self::burst::Stage8;
use self::ring::Ring;
use self::timer_table::{Timer, TimerTable};

mod ack;
mod burst;
mod lifecycle;
mod pacing;
mod queue;
mod ring;
mod timer_table;
mod timers;
mod transmit;
mod window;

/// An operation and the caller's tag for it (handed back when it is first sent, see
/// [`Tally::first_sent`](crate::Tally::first_sent)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkRequest {
    /// What to do.
    pub op: Op,
    /// The caller's tag.
    pub tag: Tag,
    /// Reports this work request completes (the caller's unit; the requester only sums them). Every
    /// report the translator's engine takes is carried by exactly one work
    /// request (the last of its own, or the one that writes what the caller batched or cached) or held
    /// by the caller until one carries it: acknowledged, its reports are written; dropped (a collector
    /// restart, a stop), they are counted as lost, in reports ([`Requester::held_reports`]).
    pub reports: u32,
}

/// Why a QP stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QpError {
    /// The responder refused a request (bad R_Key, bounds, alignment, or it failed).
    Nak(NakCode),
    /// Timeouts or RNR NAKs in a row beyond the retry limit.
    RetriesExhausted,
}

/// What [`Requester::on_response_frame`] made of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Response {
    /// An ACKNOWLEDGE or ATOMIC ACKNOWLEDGE for this QP, handled.
    Handled,
    /// A congestion notification.
    Cnp,
    /// Not a response to this QP (another QPN, or a request opcode).
    NotOurs,
}

/// Requester parameters: the configuration plus what the collector advertised.
#[derive(Debug, Clone)]
pub struct RequesterParams {
    /// Configured behaviour.
    pub cfg: RequesterConfig,
    /// Rate limits.
    pub rate: RateConfig,
    /// The responder's `max_dest_rd_atomic`.
    pub max_atomics: u32,
    /// First PSN.
    pub start_psn: u32,
}

/// A work request in the ring: queued, or in the window with the facts of its sending.
#[derive(Debug)]
struct InFlight {
    wr: WorkRequest,
    /// When it was first sent (in the window).
    sent_at: Instant,
    /// Its PSN (in the window).
    psn: u32,
    /// For atomics: the ATOMIC ACKNOWLEDGE arrived.
    answered: bool,
    /// Sent more than once: its response cannot be told apart, so it gives no RTT sample (Karn).
    resent: bool,
}

/// One QP's requester.
pub struct Requester {
    p: RequesterParams,
    builder: FrameBuilder,
    rate: RateLimiter,
    /// Rate cuts on congestion notifications; its cap is applied to `rate`.
    dcqcn: Dcqcn,
    /// The window and then the queue, in one ring: `ring[..win]` is the window (sent, or waiting for a
    /// go-back-N retransmission), `ring[win..]` the queue of work requests not sent yet (their `psn`,
    /// `sent_at` and flags are set when they enter the window). One ring, so that a work request is written
    /// once when queued and retired by moving the ring's head, instead of moved from a queue into a window
    /// (two ~90-byte moves a frame, which callgrind counted) and dropped through a `VecDeque` drain.
    ring: Ring,
    /// Entries of `ring` in the window.
    win: usize,
    /// `ring[..sent]` is on the wire; `ring[sent..win]` waits for a go-back-N retransmission.
    sent: usize,
    /// Work requests in the window whose payload has a heap buffer (counted as they enter it): without
    /// any, retiring is moving the ring's head, with no look at each work request (~14 instructions
    /// each under callgrind, 16 a Key-Write ACK).
    heap_in_win: usize,
    next_psn: u32,
    since_ack_req: u32,
    /// Atomics in the window, answered or not, until they retire. The responder keeps the answers of its
    /// newest `max_dest_rd_atomic` atomics only (rxe's responder resources, a ring every new atomic
    /// overwrites) and silently drops a duplicate whose answer is gone. An atomic stays in the window
    /// until everything before it is acknowledged, so counting it until then (as IBA counts an
    /// outstanding atomic until it completes, in order) keeps the answer of the oldest unretired atomic
    /// in that cache: counting only unanswered ones let newer atomics push it out, and its
    /// retransmission then went unanswered forever (a livelock seen against rxe under netem).
    atomics: u32,
    retries: u32,
    backoff: u32,
    rtt: RttEstimator,
    /// The configured retransmit timeout in ns (`p` never changes): the timers are armed in whole ns on
    /// every response and window's first frame, where `Duration` arithmetic cost ~30 instructions.
    fixed_rto_ns: u64,
    /// The window in force (frames), below `cfg.window` after losses.
    cwnd: u32,
    /// Frames acknowledged since `cwnd` last grew.
    cwnd_acked: u32,
    /// The retransmit timeout, the RNR wait, the rate limiter's wait and DCQCN's recovery step, each
    /// named (see [`Timer`] for what each means and when it is set).
    timers: TimerTable,
    /// Whether a rate applies now (see `sync_limited`).
    limited: bool,
    /// The PSN and time of the last go-back-N from a sequence NAK, to ignore the echoes of the same loss.
    last_rewind: Option<(u32, Instant)>,
    /// After a retransmit timeout: how many frames of the window had been sent. Only the oldest frame
    /// goes again (a probe, like TCP's retransmission after an RTO) until a response says where the
    /// responder is, so a timeout that fired while ACKs were merely late costs one duplicate, not a
    /// window.
    probe: Option<usize>,
    error: Option<QpError>,
    /// The staging area of bursts of 8-byte WRITEs, kept between bursts (see [`Writes8`]).
    stage8: Option<Box<Stage8>>,
    /// Closed ([`close`](Self::close)): its collector cannot be used; it takes no work.
    closed: bool,
    /// Tests only: every ACKNOWLEDGE through `on_ack_any`, the general path that the fast ones
    /// (`on_ack`'s front, `on_ack_past_front`) must equal; a twin with it set is their model.
    #[cfg(test)]
    slow_acks: bool,
}

impl Requester {
    /// A fresh QP at `now`.
    pub fn new(p: RequesterParams, builder: FrameBuilder, now: Instant) -> Self {
        let rate = RateLimiter::new(&p.rate, now);
        let dcqcn = Dcqcn::new(p.rate.congestion.clone(), p.rate.packets_per_sec);
        let base = p.cfg.retransmit_timeout();
        let rtt = RttEstimator::new(base, base, p.cfg.max_retransmit_timeout());
        let mut r = Requester {
            rtt,
            fixed_rto_ns: nanos(base),
            cwnd: p.cfg.window,
            cwnd_acked: 0,
            dcqcn,
            next_psn: p.start_psn,
            p,
            builder,
            rate,
            ring: Ring::new(),
            win: 0,
            sent: 0,
            heap_in_win: 0,
            since_ack_req: 0,
            atomics: 0,
            retries: 0,
            backoff: 0,
            timers: TimerTable::default(),
            last_rewind: None,
            probe: None,
            error: None,
            limited: true,
            stage8: Some(burst::stage8()),
            closed: false,
            #[cfg(test)]
            slow_acks: false,
        };
        r.timers.set_to(Timer::Congestion, r.dcqcn.poll_timeout());
        r.sync_limited();
        r
    }

    /// Room left in the queue.
    pub fn queue_room(&self) -> usize {
        self.queue_limit().saturating_sub(self.ring.len())
    }

    /// The ring length at which the queue is full, `window + queue_capacity`: what
    /// [`queue_room`](Self::queue_room) is measured from. It holds while work requests are only pushed
    /// (nothing sent or acknowledged), so a caller that pushes many in a row (a run of reports) takes it
    /// once and asks [`queue_fits`](Self::queue_fits) per push.
    pub fn queue_limit(&self) -> usize {
        self.win + self.p.cfg.queue_capacity as usize
    }

    /// Whether `n` (at least 1) more work requests fit the queue whose limit is `limit`
    /// ([`queue_limit`](Self::queue_limit), taken since the last send or acknowledgement):
    /// `queue_room() >= n`, in one compare.
    #[inline]
    pub fn queue_fits(&self, limit: usize, n: usize) -> bool {
        self.ring.len() + n <= limit
    }

    /// Work requests waiting for the window.
    pub fn queue_depth(&self) -> usize {
        self.ring.len() - self.win
    }

    /// Frames that would go if the window and the rate let them: queued work requests and frames awaiting
    /// retransmission (a bound for sizing a transmit burst).
    pub fn pending_frames(&self) -> usize {
        self.ring.len() - self.sent.min(self.win)
    }

    /// Frames in flight (sent or awaiting retransmission, unacknowledged).
    pub fn window_occupancy(&self) -> usize {
        self.win
    }

    /// The PSN the next new frame gets.
    pub fn next_psn(&self) -> u32 {
        self.next_psn
    }

    /// The error the QP stopped with, if it did.
    pub fn error(&self) -> Option<QpError> {
        self.error
    }

    /// Whether nothing is queued or in flight.
    pub fn is_idle(&self) -> bool {
        self.ring.is_empty()
    }

    /// The responder QP.
    pub fn dest_qp(&self) -> u32 {
        self.builder.dest_qp()
    }

    /// Whether the QP was [`close`](Self::close)d.
    pub fn is_closed(&self) -> bool {
        self.closed
    }
}

#[cfg(test)]
mod tests;
