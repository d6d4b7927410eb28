//! Counters for a metrics endpoint. Plain `u64`s owned by one engine (one core), so updating them costs
//! an add; an exporter reads them through [`Engine::counters`](crate::Engine::counters) and sums across cores.

use std::ops::AddAssign;

use dta_protocol::dta::Opcode;
use dta_rc::{Tag, Tally};

use crate::int::IntCounters;
use crate::reasons::reasons;

reasons! {
    /// Why a report (or part of one) was not turned into RDMA traffic.
    DropReason {
        /// The UDP payload is not a well-formed report (length, reserved bits, unknown opcode).
        Malformed => "malformed",
        /// Redundancy 0 or above N_max (never clamped).
        BadRedundancy => "bad_redundancy",
        /// No collector holds a region for this report (Append list or sketch id unknown, kind missing).
        NoRegion => "no_region",
        /// The report's redundancy exceeds the region's `n_max`, or its data size the region's entry.
        GeometryMismatch => "geometry_mismatch",
        /// A postcard's hop beyond its path length.
        BadHop => "bad_hop",
        /// A sketch report whose rows, op or column do not fit the sketch region.
        BadSketch => "bad_sketch",
        /// The QP's queue is full and the report is not retransmittable.
        QueueFull => "queue_full",
        /// A retransmittable report that arrived after a gap in its reporter's sequence (it was NACKed).
        OutOfOrder => "out_of_order",
        /// A retransmittable report seen before (behind the expected seqnum).
        Duplicate => "duplicate",
        /// Its collector came back with memory the translator cannot use (the welcome was refused; the
        /// control client retries): nothing can be written there until it comes back usable.
        CollectorUnusable => "collector_unusable",
    }
}

impl DropReason {
    /// The slot in [`Counters::drops`]: the declaration order, which is also the order of
    /// [`ALL`](Self::ALL) (both come from the one list above).
    const fn index(self) -> usize {
        self as usize
    }
}

/// The [`Tag`] of a primitive's work requests: its [`Opcode::index`], so that a first send is counted in
/// [`Counters::ops_out`] by one index.
pub const fn primitive_tag(op: Opcode) -> Tag {
    Tag(op.index() as u8)
}

/// Every counter of one engine.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Frames handed to the engine.
    pub frames_in: u64,
    /// Frames returned as not for the translator (to be forwarded).
    pub not_for_us: u64,
    /// Well-formed reports per primitive (index: [`Opcode::index`]).
    pub reports_in: [u64; Opcode::COUNT],
    /// RDMA operations first sent per primitive (retransmissions not included).
    pub ops_out: [u64; Opcode::COUNT],
    /// Head-word writes of Append lists.
    pub append_head_writes: u64,
    /// Increments folded into an earlier one by coalescing.
    pub increments_coalesced: u64,
    /// Postcard chunks written because a newer flow evicted them.
    pub postcard_evictions: u64,
    /// Postcard chunks written because the flow went idle.
    pub postcard_timeouts: u64,
    /// Postcard flushes of an entry without hop 1, which wrote only the cells it held.
    pub postcard_continuations: u64,
    /// The INT front end's counters.
    pub int: IntCounters,
    /// Append partial batches written on idle.
    pub append_idle_flushes: u64,
    /// Reports dropped, by [`DropReason`] (index: its position in [`DropReason::ALL`]).
    pub drops: [u64; DropReason::ALL.len()],
    /// DTA NACKs sent to reporters.
    pub dta_nacks_sent: u64,
    /// RoCE frames sent again (go-back-N or timeout).
    pub retransmitted_frames: u64,
    /// Retransmit timeouts that fired.
    pub retransmit_timeouts: u64,
    /// PSN sequence error NAKs received.
    pub nak_psn_sequence: u64,
    /// RNR NAKs received.
    pub nak_rnr: u64,
    /// Invalid request NAKs received.
    pub nak_invalid_request: u64,
    /// Remote access error NAKs received.
    pub nak_remote_access: u64,
    /// Remote operational error NAKs received.
    pub nak_remote_operational: u64,
    /// ACKs received (coalesced ones count once).
    pub acks: u64,
    /// ATOMIC ACKNOWLEDGEs matched to their request.
    pub atomic_acks: u64,
    /// Responses that matched nothing in flight (duplicates, stale, wrong QP), and RoCE frames from a
    /// collector that do not parse.
    pub stale_responses: u64,
    /// RoCE frames from a collector whose iCRC is wrong (corrupted on the way: dropped unread).
    pub bad_icrc_responses: u64,
    /// Congestion notification packets received.
    pub cnps: u64,
    /// QPs that went into error.
    pub qp_errors: u64,
    /// Times a frame waited for rate-limiter tokens.
    pub rate_limited: u64,
    /// RoCE frames sent, retransmissions included.
    pub roce_frames_out: u64,
    /// RoCE bytes sent, retransmissions included.
    pub roce_bytes_out: u64,
}

impl Counters {
    /// Counts a dropped report.
    pub fn drop(&mut self, reason: DropReason) {
        self.drops[reason.index()] += 1;
    }

    /// Reports dropped for `reason`.
    pub fn dropped(&self, reason: DropReason) -> u64 {
        self.drops[reason.index()]
    }
}

/// The requesters' counts, each into the field it always went to (the metrics are named after these
/// fields): one add each, as when the requester wrote them itself.
impl Tally for Counters {
    #[inline(always)]
    fn first_sent(&mut self, tag: Tag) {
        // A tag is always a primitive's (`primitive_tag`); one out of range is not counted rather
        // than a panic path in the transmit loop.
        if let Some(n) = self.ops_out.get_mut(usize::from(tag.0)) {
            *n += 1;
        }
    }
    #[inline(always)]
    fn frames_out(&mut self, frames: u64, bytes: u64) {
        self.roce_frames_out += frames;
        self.roce_bytes_out += bytes;
    }
    dta_rc::tally_events! {
        retransmitted => retransmitted_frames,
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

/// Sums another engine's counters into these (an exporter adds up its workers). Every field is named
/// below without `..`, so a field added to [`Counters`] does not compile until it is summed here too.
impl AddAssign<&Counters> for Counters {
    fn add_assign(&mut self, o: &Counters) {
        let Counters {
            frames_in,
            not_for_us,
            reports_in,
            ops_out,
            append_head_writes,
            increments_coalesced,
            postcard_evictions,
            postcard_timeouts,
            postcard_continuations,
            int,
            append_idle_flushes,
            drops,
            dta_nacks_sent,
            retransmitted_frames,
            retransmit_timeouts,
            nak_psn_sequence,
            nak_rnr,
            nak_invalid_request,
            nak_remote_access,
            nak_remote_operational,
            acks,
            atomic_acks,
            stale_responses,
            bad_icrc_responses,
            cnps,
            qp_errors,
            rate_limited,
            roce_frames_out,
            roce_bytes_out,
        } = self;
        for (a, b) in reports_in.iter_mut().zip(&o.reports_in) {
            *a += b;
        }
        for (a, b) in ops_out.iter_mut().zip(&o.ops_out) {
            *a += b;
        }
        // `drops` is sized by `DropReason::ALL`, so every reason is summed.
        for (a, b) in drops.iter_mut().zip(&o.drops) {
            *a += b;
        }
        *frames_in += o.frames_in;
        *not_for_us += o.not_for_us;
        *append_head_writes += o.append_head_writes;
        *increments_coalesced += o.increments_coalesced;
        *postcard_evictions += o.postcard_evictions;
        *postcard_timeouts += o.postcard_timeouts;
        *postcard_continuations += o.postcard_continuations;
        *int += &o.int;
        *append_idle_flushes += o.append_idle_flushes;
        *dta_nacks_sent += o.dta_nacks_sent;
        *retransmitted_frames += o.retransmitted_frames;
        *retransmit_timeouts += o.retransmit_timeouts;
        *nak_psn_sequence += o.nak_psn_sequence;
        *nak_rnr += o.nak_rnr;
        *nak_invalid_request += o.nak_invalid_request;
        *nak_remote_access += o.nak_remote_access;
        *nak_remote_operational += o.nak_remote_operational;
        *acks += o.acks;
        *atomic_acks += o.atomic_acks;
        *stale_responses += o.stale_responses;
        *bad_icrc_responses += o.bad_icrc_responses;
        *cnps += o.cnps;
        *qp_errors += o.qp_errors;
        *rate_limited += o.rate_limited;
        *roce_frames_out += o.roce_frames_out;
        *roce_bytes_out += o.roce_bytes_out;
    }
}

impl AddAssign for Counters {
    fn add_assign(&mut self, o: Counters) {
        *self += &o;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drop_reasons_have_distinct_slots() {
        let mut c = Counters::default();
        for (i, r) in DropReason::ALL.iter().enumerate() {
            assert_eq!(r.index(), i);
            for _ in 0..=i {
                c.drop(*r);
            }
        }
        assert_eq!(c.dropped(DropReason::Duplicate), 9);
        assert_eq!(c.dropped(DropReason::CollectorUnusable), 10);
        assert_eq!(c.dropped(DropReason::Malformed), 1);
        // Per-primitive slots follow the declaration order, which follows the wire codes.
        for (i, op) in Opcode::ALL.iter().enumerate() {
            assert_eq!((op.index(), primitive_tag(*op).0), (i, i as u8));
            assert_eq!(usize::from(op.code()), i + 1);
        }
    }

    #[test]
    fn add_assign_sums_every_field() {
        // Each field gets a distinct value; summing twice into zero doubles every one of them.
        let mut one = Counters::default();
        let mut v = 0u64;
        let mut next = || {
            v += 1;
            v
        };
        one.frames_in = next();
        one.not_for_us = next();
        one.reports_in = [next(), next(), next(), next(), next(), next()];
        one.ops_out = [next(), next(), next(), next(), next(), next()];
        for r in DropReason::ALL {
            one.drops[r.index()] = next();
        }
        one.bad_icrc_responses = next();
        one.roce_bytes_out = next();
        let mut sum = Counters::default();
        sum += &one;
        sum += one.clone();
        assert_eq!(sum.frames_in, 2 * one.frames_in);
        assert_eq!(sum.reports_in[5], 2 * one.reports_in[5]);
        assert_eq!(sum.ops_out[0], 2 * one.ops_out[0]);
        for r in DropReason::ALL {
            assert_eq!(sum.dropped(r), 2 * one.dropped(r));
        }
        assert_eq!(sum.bad_icrc_responses, 2 * one.bad_icrc_responses);
        assert_eq!(sum.roce_bytes_out, 2 * one.roce_bytes_out);
    }
}
