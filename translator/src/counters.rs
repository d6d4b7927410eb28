//! Counters for a metrics endpoint. Plain `u64`s owned by one engine (one core), so updating them costs
//! an add; an exporter reads them through [`Engine::counters`](crate::Engine::counters) and sums across cores.

use dta_protocol::dta::Opcode;

/// Why a report (or part of one) was not turned into RDMA traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// The UDP payload is not a well-formed report (length, reserved bits, unknown opcode).
    Malformed,
    /// Redundancy 0 or above N_max (never clamped).
    BadRedundancy,
    /// No collector holds a region for this report (Append list or sketch id unknown, kind missing).
    NoRegion,
    /// The report's redundancy exceeds the region's `n_max`, or its data size the region's entry.
    GeometryMismatch,
    /// A postcard's hop beyond its path length.
    BadHop,
    /// A sketch report whose rows, op or column do not fit the sketch region.
    BadSketch,
    /// The QP's queue is full and the report is not retransmittable.
    QueueFull,
    /// A retransmittable report that arrived after a gap in its reporter's sequence (it was NACKed).
    OutOfOrder,
    /// A retransmittable report seen before (behind the expected seqnum).
    Duplicate,
}

impl DropReason {
    /// Every reason, in counter order.
    pub const ALL: [DropReason; 9] = [
        DropReason::Malformed,
        DropReason::BadRedundancy,
        DropReason::NoRegion,
        DropReason::GeometryMismatch,
        DropReason::BadHop,
        DropReason::BadSketch,
        DropReason::QueueFull,
        DropReason::OutOfOrder,
        DropReason::Duplicate,
    ];

    /// A metrics label.
    pub const fn label(self) -> &'static str {
        match self {
            DropReason::Malformed => "malformed",
            DropReason::BadRedundancy => "bad_redundancy",
            DropReason::NoRegion => "no_region",
            DropReason::GeometryMismatch => "geometry_mismatch",
            DropReason::BadHop => "bad_hop",
            DropReason::BadSketch => "bad_sketch",
            DropReason::QueueFull => "queue_full",
            DropReason::OutOfOrder => "out_of_order",
            DropReason::Duplicate => "duplicate",
        }
    }

    const fn index(self) -> usize {
        self as usize
    }
}

/// Index of an opcode in the per-primitive arrays (0 for Key-Write ... 5 for Postcarding with path length).
pub const fn opcode_index(op: Opcode) -> usize {
    op.code() as usize - 1
}

/// Every counter of one engine.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Frames handed to the engine.
    pub frames_in: u64,
    /// Frames returned as not for the translator (to be forwarded).
    pub not_for_us: u64,
    /// Well-formed reports per primitive (index: [`opcode_index`]).
    pub reports_in: [u64; 6],
    /// RDMA operations first sent per primitive (retransmissions not included).
    pub ops_out: [u64; 6],
    /// Head-word writes of Append lists.
    pub append_head_writes: u64,
    /// Increments folded into an earlier one by coalescing.
    pub increments_coalesced: u64,
    /// Postcard chunks written because a newer flow evicted them.
    pub postcard_evictions: u64,
    /// Postcard chunks written because the flow went idle.
    pub postcard_timeouts: u64,
    /// Append partial batches written on idle.
    pub append_idle_flushes: u64,
    /// Reports dropped, by [`DropReason`].
    pub drops: [u64; 9],
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
    /// Responses that matched nothing in flight (duplicates, stale, wrong QP).
    pub stale_responses: u64,
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
        assert_eq!(c.dropped(DropReason::Malformed), 1);
        assert_eq!(opcode_index(Opcode::PostcardPathLen), 5);
    }
}
