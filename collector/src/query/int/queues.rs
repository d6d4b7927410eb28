//! `int-queues`: a node's congestion events in the queue list.

use dta_protocol::int::mapping::QueueEvent;
use dta_protocol::layout::AppendGeometry;
use serde::{Deserialize, Serialize};

use super::events::{scan, QueueEvents, Window};
use crate::error::{Error, Result};

/// The events of `node` (and of queue `queue`, when given) in a window of the queue list `mem` (id
/// `list`).
pub fn queue_events(
    mem: &[u8],
    g: &AppendGeometry,
    list: u32,
    node: u32,
    queue: Option<u8>,
    window: Window,
) -> Result<QueueEvents> {
    scan(mem, g, list, window, QueueEvent::decode, |e| {
        e.node == node && queue.map_or(true, |q| e.queue_id == q)
    })
}

/// A node's congestion events (`int-queues`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IntQueuesAnswer {
    /// The switch.
    pub node: u32,
    /// The queue asked for; none for all.
    pub queue_id: Option<u8>,
    /// The highest occupancy among the events found, none without events.
    pub max_occupancy: Option<u32>,
    /// The node's events in each queue list (one per translator worker where there are several), in
    /// list order; empty where no queue list is configured.
    pub events: Vec<QueueEvents>,
}

impl IntQueuesAnswer {
    /// The answer from `events`.
    pub fn new(node: u32, queue_id: Option<u8>, events: Vec<QueueEvents>) -> Self {
        IntQueuesAnswer {
            node,
            queue_id,
            max_occupancy: events
                .iter()
                .flat_map(|w| w.events.iter().map(|e| e.occupancy))
                .max(),
            events,
        }
    }

    /// The answers of several collectors joined: the queue lists each holds (a list twice is refused).
    pub fn merge(parts: Vec<IntQueuesAnswer>) -> Result<Self> {
        let mut parts = parts.into_iter();
        let first = parts
            .next()
            .ok_or_else(|| Error::BadQuery("no answers to merge".into()))?;
        let (node, queue_id) = (first.node, first.queue_id);
        let mut events = first.events;
        for p in parts {
            if (p.node, p.queue_id) != (node, queue_id) {
                return Err(Error::BadQuery(format!(
                    "answers for different questions (node {node} and node {})",
                    p.node
                )));
            }
            events.extend(p.events);
        }
        super::events::one_answer_per_list(&mut events, "queue_list")?;
        Ok(IntQueuesAnswer::new(node, queue_id, events))
    }
}
