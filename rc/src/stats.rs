//! What a requester counts, and where: every count goes through a [`Tally`], which the caller supplies
//! on each call that can count. A caller that keeps its own counters (the translator's engine, which sums
//! every QP's into one set of metrics) implements `Tally` on them, so a count is the same add it always
//! was; [`RcStats`] is the requester's own set, for a caller with nothing of its own (the DART reporter).

/// An opaque tag that a work request carries (the caller's, e.g. which of its primitives asked): handed
/// back to [`Tally::first_sent`] when the request is first sent, and otherwise never looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Tag(pub u8);

/// The counts of one or more requesters. Every method is one event, counted once per occurrence.
pub trait Tally {
    /// A work request went on the wire for the first time (retransmissions are not counted here).
    fn first_sent(&mut self, tag: Tag);
    /// `frames` frames of `bytes` bytes in all were sent, retransmissions included.
    fn frames_out(&mut self, frames: u64, bytes: u64);
    /// A frame was sent again (go-back-N, or the probe after a timeout).
    fn retransmitted(&mut self);
    /// The rate limiter held a frame back (once per wait, not per poll).
    fn rate_limited(&mut self);
    /// A response matched nothing in flight (a duplicate, a stale or misplaced one, or one to a QP in
    /// error).
    fn stale_response(&mut self);
    /// An ACKNOWLEDGE was taken (a coalesced one counts once).
    fn ack(&mut self);
    /// An ATOMIC ACKNOWLEDGE was matched to its request (a duplicate answer is not counted).
    fn atomic_ack(&mut self);
    /// A PSN sequence error NAK arrived.
    fn nak_psn_sequence(&mut self);
    /// An RNR NAK arrived.
    fn nak_rnr(&mut self);
    /// An invalid request NAK arrived.
    fn nak_invalid_request(&mut self);
    /// A remote access error NAK arrived.
    fn nak_remote_access(&mut self);
    /// A remote operational error NAK arrived.
    fn nak_remote_operational(&mut self);
    /// The retransmit timer fired.
    fn retransmit_timeout(&mut self);
    /// The QP went into error.
    fn qp_error(&mut self);
}

/// One requester's counts, by the names of [`Tally`]'s events.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RcStats {
    /// Work requests sent for the first time.
    pub first_sent: u64,
    /// Frames sent, retransmissions included.
    pub frames_out: u64,
    /// Bytes sent, retransmissions included.
    pub bytes_out: u64,
    /// Frames sent again.
    pub retransmitted: u64,
    /// Waits for rate-limiter tokens.
    pub rate_limited: u64,
    /// Responses that matched nothing in flight.
    pub stale_responses: u64,
    /// ACKNOWLEDGEs taken.
    pub acks: u64,
    /// ATOMIC ACKNOWLEDGEs matched.
    pub atomic_acks: u64,
    /// PSN sequence error NAKs.
    pub nak_psn_sequence: u64,
    /// RNR NAKs.
    pub nak_rnr: u64,
    /// Invalid request NAKs.
    pub nak_invalid_request: u64,
    /// Remote access error NAKs.
    pub nak_remote_access: u64,
    /// Remote operational error NAKs.
    pub nak_remote_operational: u64,
    /// Retransmit timeouts.
    pub retransmit_timeouts: u64,
    /// Times the QP went into error.
    pub qp_errors: u64,
}

/// The [`Tally`] methods that add one to one field, for an `impl Tally` whose counters name them its
/// own way: `tally_events! { ack => acks, qp_error => qp_errors, ... }` inside the impl block.
#[macro_export]
macro_rules! tally_events {
    ($($event:ident => $field:ident),* $(,)?) => {
        $(
            #[inline(always)]
            fn $event(&mut self) {
                self.$field += 1;
            }
        )*
    };
}

impl Tally for RcStats {
    #[inline(always)]
    fn first_sent(&mut self, _: Tag) {
        self.first_sent += 1;
    }
    #[inline(always)]
    fn frames_out(&mut self, frames: u64, bytes: u64) {
        self.frames_out += frames;
        self.bytes_out += bytes;
    }
    crate::tally_events! {
        retransmitted => retransmitted,
        rate_limited => rate_limited,
        stale_response => stale_responses,
        ack => acks,
        atomic_ack => atomic_acks,
        nak_psn_sequence => nak_psn_sequence,
        nak_rnr => nak_rnr,
        nak_invalid_request => nak_invalid_request,
        nak_remote_access => nak_remote_access,
        nak_remote_operational => nak_remote_operational,
        retransmit_timeout => retransmit_timeouts,
        qp_error => qp_errors,
    }
}
