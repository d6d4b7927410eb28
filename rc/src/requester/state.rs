//! The requester's state: the one struct of the state machine, its fields and their invariants
//! (`win`, `sent`, `atomics`, `probe`), the public types around it, and the questions a caller asks of
//! it. Every other file of the requester is one job done on these fields, and imports them from here.

use dta_protocol::roce::NakCode;

use super::build::Stage8;
use super::ring::Ring;
use super::timer_table::TimerTable;
use crate::config::{RateConfig, RequesterConfig};
use crate::dcqcn::Dcqcn;
use crate::frames::FrameBuilder;
use crate::rate::RateLimiter;
use crate::rtt::RttEstimator;
use crate::time::Instant;

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

/// One QP's requester.
pub struct Requester {
    pub(super) p: RequesterParams,
    pub(super) builder: FrameBuilder,
    pub(super) rate: RateLimiter,
    /// Rate cuts on congestion notifications; its cap is applied to `rate`.
    pub(super) dcqcn: Dcqcn,
    /// The window and then the queue, in one ring: `ring[..win]` is the window (sent, or waiting for a
    /// go-back-N retransmission), `ring[win..]` the queue of work requests not sent yet (their `psn`,
    /// `sent_at` and flags are set when they enter the window). One ring, so that a work request is written
    /// once when queued and retired by moving the ring's head, instead of moved from a queue into a window
    /// (two ~90-byte moves a frame, which callgrind counted) and dropped through a `VecDeque` drain.
    pub(super) ring: Ring,
    /// Entries of `ring` in the window.
    pub(super) win: usize,
    /// `ring[..sent]` is on the wire; `ring[sent..win]` waits for a go-back-N retransmission.
    pub(super) sent: usize,
    /// Work requests in the window whose payload has a heap buffer (counted as they enter it): without
    /// any, retiring is moving the ring's head, with no look at each work request (~14 instructions
    /// each under callgrind, 16 a Key-Write ACK).
    pub(super) heap_in_win: usize,
    pub(super) next_psn: u32,
    pub(super) since_ack_req: u32,
    /// Atomics in the window, answered or not, until they retire. The responder keeps the answers of its
    /// newest `max_dest_rd_atomic` atomics only (rxe's responder resources, a ring every new atomic
    /// overwrites) and silently drops a duplicate whose answer is gone. An atomic stays in the window
    /// until everything before it is acknowledged, so counting it until then (as IBA counts an
    /// outstanding atomic until it completes, in order) keeps the answer of the oldest unretired atomic
    /// in that cache: counting only unanswered ones let newer atomics push it out, and its
    /// retransmission then went unanswered forever (a livelock seen against rxe under netem).
    pub(super) atomics: u32,
    pub(super) retries: u32,
    pub(super) backoff: u32,
    pub(super) rtt: RttEstimator,
    /// The configured retransmit timeout in ns (`p` never changes): the timers are armed in whole ns on
    /// every response and window's first frame, where `Duration` arithmetic cost ~30 instructions.
    pub(super) fixed_rto_ns: u64,
    /// The window in force (frames), below `cfg.window` after losses.
    pub(super) cwnd: u32,
    /// Frames acknowledged since `cwnd` last grew.
    pub(super) cwnd_acked: u32,
    /// The retransmit timeout, the RNR wait, the rate limiter's wait and DCQCN's recovery step, each
    /// named (see [`Timer`](super::timer_table::Timer) for what each means and when it is set).
    pub(super) timers: TimerTable,
    /// Whether a rate applies now (see `sync_limited`).
    pub(super) limited: bool,
    /// The PSN and time of the last go-back-N from a sequence NAK, to ignore the echoes of the same loss.
    pub(super) last_rewind: Option<(u32, Instant)>,
    /// After a retransmit timeout: how many frames of the window had been sent. Only the oldest frame
    /// goes again (a probe, like TCP's retransmission after an RTO) until a response says where the
    /// responder is, so a timeout that fired while ACKs were merely late costs one duplicate, not a
    /// window.
    pub(super) probe: Option<usize>,
    pub(super) error: Option<QpError>,
    /// The staging area of bursts of 8-byte WRITEs, kept between bursts (see
    /// [`Writes8`](super::build::Writes8)).
    pub(super) stage8: Option<Box<Stage8>>,
    /// Closed ([`close`](Self::close)): its collector cannot be used; it takes no work.
    pub(super) closed: bool,
    /// Tests only: every ACKNOWLEDGE through `on_ack_any`, the general path that `on_ack`'s inline
    /// prefix (the window's front) must equal; a twin with it set is its model.
    #[cfg(test)]
    pub(super) slow_acks: bool,
}

impl Requester {
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
