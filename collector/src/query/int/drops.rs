//! `int-drops`: a node's drop counters, one Key-Increment per (node, reason), and its drop events.

use dta_protocol::int::mapping::{drop_counter_key, DropEvent};
use dta_protocol::layout::{AppendGeometry, KeyIncrementGeometry};
use serde::{Deserialize, Serialize};

use super::events::{scan, DropEvents, Window};
use super::Shard;
use crate::error::{Error, Result};
use crate::query::key_increment;

/// A drop counter: how many packets `node` dropped for `reason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DropCount {
    /// The drop reason.
    pub reason: u8,
    /// Its Key-Increment key, `drop_counter_key(node, reason)`.
    pub key: u32,
    /// The count (count-min estimate).
    pub count: u64,
}

/// Reads the drop counters of `node` that `shard` holds: for `reason` alone (listed even when 0), or for
/// every reason (listed when not 0), with redundancy `n`.
pub fn drop_counts(
    mem: &[u8],
    g: &KeyIncrementGeometry,
    node: u32,
    reason: Option<u8>,
    n: u8,
    shard: Shard,
) -> Result<Vec<DropCount>> {
    let single = reason.is_some();
    let reasons = match reason {
        Some(r) => r..=r,
        None => 0..=u8::MAX,
    };
    let mut counts = Vec::new();
    for reason in reasons {
        let key = drop_counter_key(node, reason);
        if !shard.owns(key) {
            continue;
        }
        let count = key_increment(mem, g, key, n)?.estimate;
        // An asked-for reason is an answer even at 0; over all 256, zeros are noise.
        if count > 0 || single {
            counts.push(DropCount { reason, key, count });
        }
    }
    Ok(counts)
}

/// The events of `node` (and of `reason`, when given) in a window of the drop list `mem` (id `list`).
pub fn drop_events(
    mem: &[u8],
    g: &AppendGeometry,
    list: u32,
    node: u32,
    reason: Option<u8>,
    window: Window,
) -> Result<DropEvents> {
    scan(mem, g, list, window, DropEvent::decode, |e| {
        e.node == node && reason.map_or(true, |r| e.reason == r)
    })
}

/// A node's drops (`int-drops`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IntDropsAnswer {
    /// The switch.
    pub node: u32,
    /// The reason asked for; none for all.
    pub reason: Option<u8>,
    /// Counts per reason, in reason order.
    pub counts: Vec<DropCount>,
    /// Their sum.
    pub total: u64,
    /// The node's events in each drop list (one per translator worker where there are several), in
    /// list order; empty where no drop list is configured.
    pub events: Vec<DropEvents>,
}

impl IntDropsAnswer {
    /// The answer from `counts` and `events`.
    pub fn new(
        node: u32,
        reason: Option<u8>,
        mut counts: Vec<DropCount>,
        events: Vec<DropEvents>,
    ) -> Self {
        counts.sort_by_key(|c| c.reason);
        IntDropsAnswer {
            node,
            reason,
            total: counts.iter().map(|c| c.count).fold(0, u64::saturating_add),
            counts,
            events,
        }
    }

    /// Joins the answers of the collectors of the node's shards; each drop list lives on one of them.
    pub fn merge(parts: Vec<IntDropsAnswer>) -> Result<Self> {
        let mut parts = parts.into_iter();
        let first = parts
            .next()
            .ok_or_else(|| Error::BadQuery("no answers to merge".into()))?;
        let (node, reason) = (first.node, first.reason);
        let mut counts = first.counts;
        let mut events = first.events;
        for p in parts {
            if (p.node, p.reason) != (node, reason) {
                return Err(Error::BadQuery(format!(
                    "answers for different questions (node {node} and node {})",
                    p.node
                )));
            }
            counts.extend(p.counts);
            events.extend(p.events);
        }
        super::events::one_answer_per_list(&mut events, "drop_list")?;
        let answer = IntDropsAnswer::new(node, reason, counts, events);
        // Each counter key lives on one collector: a reason twice means the shards overlap.
        if let Some(w) = answer
            .counts
            .windows(2)
            .find(|w| w[0].reason == w[1].reason)
        {
            return Err(Error::BadQuery(format!(
                "reason {} answered by two collectors: their shards overlap",
                w[0].reason
            )));
        }
        Ok(answer)
    }
}
