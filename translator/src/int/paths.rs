//! The switches each flow's per-hop reports named, so that a report of hop 1 carries the hops already
//! written with it.
//!
//! Why: a per-hop report does not say how long its path is, so the postcard cache entry that holds hop 1
//! writes the blanks that end the path, over every hop it lacks (`primitives::postcard`). A hop-1 report
//! that arrives after the flow's other hops were written (reordered, duplicated, or a switch reporting
//! the flow again, as fabric-tna's flow report filter does when a flow's state changes) would be an
//! entry of hop 1 alone: its write would blank the rest, and the path would read as one hop while the
//! hop records still show them all. With what the flow's reports said remembered here, that report is
//! sent with every remembered hop, so its entry holds, and writes again, the whole path known.
//!
//! Reports of other hops are sent alone, as before: an entry without hop 1 writes only its own cells, so
//! it cannot shorten a path. A report naming another switch at a remembered hop means the path changed:
//! the flow is remembered afresh from it. [`PATH_MEMORY`] flows are remembered, [`WAYS`] to a set chosen
//! by the flow key's low bits (a CRC), the set's least recently reported flow giving way to a new one (a
//! direct-mapped memory forgot a flow whenever any later flow shared its slot: with 5,000 flows in 65,536
//! slots, 8 % of them). A flow forgotten is a new flow again, and a late hop 1 of it writes what it alone
//! knows, as before this memory.

use dta_protocol::layout::MAX_HOPS;

/// Flows remembered (a power of two). 41 bytes each: 2.6 MiB, reserved at the first per-hop report.
pub const PATH_MEMORY: usize = 1 << 16;
/// Flows to a set.
pub const WAYS: usize = 4;
const SETS: usize = PATH_MEMORY / WAYS;

/// The switches one flow's per-hop reports named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownPath {
    nodes: [u32; MAX_HOPS as usize],
    /// Bit i: hop i + 1 is known.
    have: u8,
}

impl KnownPath {
    /// The (hop, node) pairs known, hop by hop.
    pub fn hops(&self) -> impl Iterator<Item = (u8, u32)> + '_ {
        (0..MAX_HOPS)
            .filter(|&i| self.have & (1 << i) != 0)
            .map(|i| (i + 1, self.nodes[usize::from(i)]))
    }
}

/// What per-hop reports said, per flow: [`WAYS`] slots to a set, each slot's parts in arrays of zeros
/// (memory the system maps only where flows land; a slot with no hop known is empty).
#[derive(Debug, Default)]
pub struct PathMemory {
    flows: Vec<u32>,
    nodes: Vec<[u32; MAX_HOPS as usize]>,
    have: Vec<u8>,
    /// The report count when the slot's flow last reported (for least recently used).
    used: Vec<u32>,
    reports: u32,
}

impl PathMemory {
    /// Records that hop `hop` (1..=8) of `flow` is switch `node`, and returns the hops a postcard of it
    /// should carry: for hop 1 every hop known of the flow, for another hop that hop alone.
    pub fn record(&mut self, flow: u32, hop: u8, node: u32) -> KnownPath {
        if self.flows.is_empty() {
            self.flows = vec![0; PATH_MEMORY];
            self.nodes = vec![[0; MAX_HOPS as usize]; PATH_MEMORY];
            self.have = vec![0; PATH_MEMORY];
            self.used = vec![0; PATH_MEMORY];
        }
        self.reports = self.reports.wrapping_add(1);
        let s = self.slot(flow);
        // hop is 1..=postcard.hops, at most MAX_HOPS (checked by the configuration); masked all the same.
        let i = usize::from(hop.wrapping_sub(1)) & (MAX_HOPS as usize - 1);
        let bit = 1u8 << i;
        let (known_flow, nodes, have) = (&mut self.flows[s], &mut self.nodes[s], &mut self.have[s]);
        // A new flow in this slot, or this flow's path changed at this hop: start over.
        if *have == 0 || *known_flow != flow || (*have & bit != 0 && nodes[i] != node) {
            *known_flow = flow;
            *have = 0;
        }
        nodes[i] = node;
        *have |= bit;
        self.used[s] = self.reports;
        let mut k = KnownPath {
            nodes: [0; MAX_HOPS as usize],
            have: bit,
        };
        if i == 0 {
            k.nodes = *nodes;
            k.have = *have;
        } else {
            k.nodes[i] = node;
        }
        k
    }

    /// The slot of `flow`: its own in its set, else an empty one, else the least recently used.
    fn slot(&self, flow: u32) -> usize {
        let base = (flow as usize & (SETS - 1)) * WAYS;
        let set = base..base + WAYS;
        if let Some(s) = set
            .clone()
            .find(|&s| self.have[s] != 0 && self.flows[s] == flow)
        {
            return s;
        }
        let age = |s: usize| {
            if self.have[s] == 0 {
                u32::MAX
            } else {
                self.reports.wrapping_sub(self.used[s])
            }
        };
        set.max_by_key(|&s| age(s)).unwrap_or(base)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hops(k: KnownPath) -> Vec<(u8, u32)> {
        k.hops().collect()
    }

    #[test]
    fn hop_1_carries_every_hop_known() {
        let mut m = PathMemory::default();
        // Hops 2..=5 first (hop 1 late), each sent alone.
        for hop in 2..=5u8 {
            assert_eq!(
                hops(m.record(7, hop, 100 + u32::from(hop))),
                [(hop, 100 + u32::from(hop))]
            );
        }
        let all = [(1, 101), (2, 102), (3, 103), (4, 104), (5, 105)];
        assert_eq!(hops(m.record(7, 1, 101)), all);
        // Repeated: the same again.
        assert_eq!(hops(m.record(7, 1, 101)), all);
        // Hop 3 is another switch now: the path changed, and only what came since is known.
        assert_eq!(hops(m.record(7, 3, 333)), [(3, 333)]);
        assert_eq!(hops(m.record(7, 1, 101)), [(1, 101), (3, 333)]);
        // Flows sharing its set: three more fit beside it, and it was reported last, so a fourth
        // takes the least recently reported one's slot, not its.
        let set = |k: u32| 7 + k * SETS as u32;
        for k in 1..=3 {
            m.record(set(k), 2, 9);
        }
        assert_eq!(hops(m.record(7, 1, 101)), [(1, 101), (3, 333)]);
        m.record(set(4), 2, 9);
        assert_eq!(hops(m.record(set(1), 1, 5)), [(1, 5)]);
        assert_eq!(hops(m.record(7, 1, 101)), [(1, 101), (3, 333)]);
        // Four newer flows in the set: the first is forgotten.
        for k in 5..=8 {
            m.record(set(k), 2, 9);
        }
        assert_eq!(hops(m.record(7, 1, 101)), [(1, 101)]);
    }
}
