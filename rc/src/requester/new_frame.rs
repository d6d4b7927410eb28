//! The rules every new frame follows, whichever path sends it (`transmit` one frame at a time,
//! `burst` many in a loop): the window's room, the responder's atomic limit, the AckReq cadence and
//! the AckReq before a stall, and the state a frame that went changes. Said once here, in
//! [`NewFrames`], which both paths drive.

use dta_protocol::roce::PSN_MASK;

use super::state::Requester;
use super::timer_table::Timer;
use super::work::InFlight;
use crate::psn;
use crate::stats::Tally;
use crate::time::Instant;

/// Whether the responder's atomic limit (`max` atomics in the window) holds back the next work request
/// after a frame that is an atomic or not (`atomic`), sent with `atomics` atomics in the window before
/// it; `next_atomic` says whether the next is an atomic, and is asked only when the limit could bite.
/// Such a frame is the last before a stall, so it asks for an ACK (or the window waits for the timeout).
#[inline(always)]
fn atomic_limit_stalls(
    atomic: bool,
    atomics: u32,
    max: u32,
    next_atomic: impl FnOnce() -> bool,
) -> bool {
    atomics + u32::from(atomic) >= max && next_atomic()
}

/// New frames leaving the queue for the window, frame `k` being the `k`th (from 0): the requester's
/// state they change, kept here (in registers, in a loop) while they go and written back once by
/// [`end`](Self::end). Frame `k` is work request `first + k` of the ring.
pub(super) struct NewFrames {
    /// The window's length before the first frame.
    first: usize,
    /// How many frames the window and the queue have room for: a frame is the last before either
    /// ends when `k + 1 == room` (it asks for an ACK).
    room: usize,
    /// Frames sent.
    k: usize,
    /// The next frame's PSN (24 bits: `psn::add` keeps it so, and the BTH word takes it as it is).
    psn: u32,
    /// Atomics in the window.
    atomics: u32,
    /// Frames sent with a heap buffer.
    heap: usize,
    /// The AckReq cadence as the index of the next frame to ask: `since_ack_req` frames went since the
    /// last ask, so frame `ack_every - 1 - since_ack_req` asks (the first, if that is negative), and
    /// each ask puts the next one `ack_every` frames on. One compare a frame where a count took an
    /// add, a compare and a select.
    next_ack: usize,
    ack_every: usize,
    max_atomics: u32,
}

impl NewFrames {
    /// The frames that go next from `r`'s queue.
    #[inline(always)]
    pub(super) fn start(r: &Requester) -> Self {
        let ack_every = r.p.cfg.ack_every as usize;
        let first = r.win;
        NewFrames {
            first,
            room: (r.cwnd as usize).min(r.ring.len()).saturating_sub(first),
            k: 0,
            psn: r.next_psn & PSN_MASK,
            atomics: r.atomics,
            heap: 0,
            next_ack: ack_every
                .saturating_sub(1)
                .saturating_sub(r.since_ack_req as usize),
            ack_every,
            max_atomics: r.p.max_atomics,
        }
    }

    /// Frames the window and the queue have room for, from the first.
    #[inline(always)]
    pub(super) fn room(&self) -> usize {
        self.room
    }

    /// Frames sent so far.
    #[inline(always)]
    pub(super) fn count(&self) -> usize {
        self.k
    }

    /// The ring index of the next frame's work request.
    #[inline(always)]
    pub(super) fn at(&self) -> usize {
        self.first + self.k
    }

    /// Whether the responder's atomic limit holds back the next frame (`atomic`: whether it is one).
    #[inline(always)]
    pub(super) fn atomic_limit(&self, atomic: bool) -> bool {
        atomic && self.atomics >= self.max_atomics
    }

    /// Whether the next frame (`atomic`: whether it is one) is the last before a stall: the last the
    /// window or the queue holds, or the atomic limit holds back the one after it (`next_atomic`:
    /// whether that is an atomic, asked only when the limit could bite).
    #[inline(always)]
    pub(super) fn stalls(&self, atomic: bool, next_atomic: impl FnOnce() -> bool) -> bool {
        self.k + 1 >= self.room
            || atomic_limit_stalls(atomic, self.atomics, self.max_atomics, next_atomic)
    }

    /// Whether the next frame asks for an ACK: the cadence's turn, or the last before a stall
    /// (`stalls`).
    #[inline(always)]
    pub(super) fn ack_req(&self, stalls: bool) -> bool {
        self.k >= self.next_ack || stalls
    }

    /// The next frame's PSN.
    #[inline(always)]
    pub(super) fn psn(&self) -> u32 {
        self.psn
    }

    /// The next frame's BTH word: AckReq (`ack_req`) and its PSN.
    #[inline(always)]
    pub(super) fn word(&self, ack_req: bool) -> u32 {
        u32::from(ack_req) << 31 | self.psn
    }

    /// The next frame went, of the work request in `f` (an atomic or not, with a heap buffer or not,
    /// asking for an ACK or not) at `now`: its sending's facts, its first send counted, and the counts.
    #[inline(always)]
    pub(super) fn sent(
        &mut self,
        f: &mut InFlight,
        now: Instant,
        (atomic, heap, ack_req): (bool, bool, bool),
        c: &mut impl Tally,
    ) {
        f.psn = self.psn;
        f.answered = false;
        f.sent_at = now;
        f.resent = false;
        c.first_sent(f.wr.tag);
        if ack_req {
            self.next_ack = self.k + self.ack_every;
        }
        self.psn = psn::add(self.psn, 1);
        self.atomics += u32::from(atomic);
        self.heap += usize::from(heap);
        self.k += 1;
    }

    /// Writes the frames that went (at least one, `bytes` in all, at `now`) back into `r`: its window,
    /// PSN, cadence and counts, the frames counted out, and the retransmission timer armed if it was
    /// not.
    #[inline(always)]
    pub(super) fn end(self, r: &mut Requester, now: Instant, bytes: u64, c: &mut impl Tally) {
        let k = self.k;
        debug_assert!(k > 0);
        // Frames sent since the last ask: the `k` after the last one that asked (`next_ack` is
        // `ack_every` past it), or the `since_ack_req` before them and all `k` when none asked.
        let since = (k + self.ack_every)
            .saturating_sub(1)
            .saturating_sub(self.next_ack);
        r.since_ack_req = u32::try_from(since).unwrap_or(u32::MAX);
        r.atomics = self.atomics;
        r.heap_in_win += self.heap;
        r.win += k;
        r.sent += k;
        r.next_psn = self.psn;
        r.frames_went(now, k, bytes, c);
    }
}

impl Requester {
    /// `k` frames (`bytes` in all) went at `now`: counted, and the retransmission timer armed if it
    /// was not (its entry is the instant it was armed at).
    #[inline(always)]
    pub(super) fn frames_went(&mut self, now: Instant, k: usize, bytes: u64, c: &mut impl Tally) {
        c.frames_out(k as u64, bytes);
        if !self.timers.is_set(Timer::Retransmit) {
            self.timers.set(Timer::Retransmit, now);
        }
    }
}
