//! Which worker owns a flow's INT state ([`Shard`]), and what a call may do with other workers' flows
//! (`Stage`).

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

/// What a call may do with the reports of other workers' flows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stage {
    /// The worker that received the frame: it translates every report, and leaves the work on other
    /// workers' flows to their owners.
    Received,
    /// The receiver on a path that cannot hand work over (`Engine::handle_frame(s)`): as
    /// [`Received`](Self::Received), but the reports of other workers' flows are counted as
    /// [`IntDrop::NotOwner`](super::counters::IntDrop::NotOwner) instead of being left to a handoff
    /// that will not happen.
    Alone,
}

#[cfg(test)]
mod tests;
