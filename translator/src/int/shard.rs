//! Which worker owns a flow's INT state ([`Shard`]), the workers a received frame must also go to
//! ([`HandOver`]), and whose part of a report's work a call does (`Stage`).

/// Which of a daemon's workers this front end is (one, alone, by default): who owns a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// This worker's index.
    pub index: usize,
    /// Workers (at most 64: the hand-over set is a bit mask).
    pub count: usize,
}

impl Default for Shard {
    fn default() -> Self {
        Shard { index: 0, count: 1 }
    }
}

impl Shard {
    /// The worker that owns flow `flow`'s state (its Postcarding line, its remembered hops). Hashed
    /// again, so that the worker does not follow the collector shard the flow key picks.
    #[inline]
    pub fn owner(&self, flow: u32) -> usize {
        if self.count <= 1 {
            return 0;
        }
        dta_protocol::hash::key_checksum(flow) as usize % self.count
    }
}

/// Whose part of a report's work a call does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stage {
    /// The worker that received the frame: the packet, the sequence, what needs no flow state, and the
    /// reports of its own flows.
    Received,
    /// A flow owner given the frame by the receiver: its own flows' reports only.
    HandedOver,
    /// The receiver on a path that cannot hand frames over (`Engine::handle_frame(s)`): as
    /// [`Received`](Self::Received), but the reports of other workers' flows are counted as
    /// [`IntDrop::NotOwner`](super::counters::IntDrop::NotOwner) instead of being left to a handoff
    /// that will not happen.
    Alone,
}

/// Workers a received frame must also go to (bit `k`: worker `k`).
pub type HandOver = u64;

#[cfg(test)]
mod tests;
