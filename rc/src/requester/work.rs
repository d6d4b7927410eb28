//! A work request, and the slot of the ring that holds it with the facts of its sending.

use crate::frames::Op;
use crate::stats::Tag;
use crate::time::Instant;

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
    /// restart, a stop), they are counted as lost, in reports
    /// ([`Requester::held_reports`](crate::Requester::held_reports)).
    pub reports: u32,
}

/// A work request in the ring: queued, or in the window with the facts of its sending.
#[derive(Debug)]
pub(super) struct InFlight {
    pub(super) wr: WorkRequest,
    /// When it was first sent (in the window).
    pub(super) sent_at: Instant,
    /// Its PSN (in the window).
    pub(super) psn: u32,
    /// For atomics: the ATOMIC ACKNOWLEDGE arrived.
    pub(super) answered: bool,
    /// Sent more than once: its response cannot be told apart, so it gives no RTT sample (Karn).
    pub(super) resent: bool,
}
