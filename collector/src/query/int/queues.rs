//! `int-queues`: a node's congestion events in the queue list.

use dta_protocol::int::mapping::QueueEvent;
use dta_protocol::layout::AppendGeometry;
use serde::{Deserialize, Serialize};

use super::events::{scan, QueueEvents, Window};
use crate::error::{Error, Result};

/// The contract's `QueueEvent`, as answers carry it (serde on the type itself).
pub type QueueEventView = QueueEvent;

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
    /// The node's events in the queue list; none where no queue list is configured.
    pub events: Option<QueueEvents>,
}

impl IntQueuesAnswer {
    /// The answer from `events`.
    pub fn new(node: u32, queue_id: Option<u8>, events: Option<QueueEvents>) -> Self {
        IntQueuesAnswer {
            node,
            queue_id,
            max_occupancy: events
                .as_ref()
                .and_then(|w| w.events.iter().map(|e| e.occupancy).max()),
            events,
        }
    }

    /// The answer of the collector that holds the queue list among several (the others answer none).
    pub fn merge(parts: Vec<IntQueuesAnswer>) -> Result<Self> {
        let mut with_list = parts.iter().filter(|p| p.events.is_some());
        match (with_list.next(), with_list.next()) {
            (Some(_), Some(_)) => Err(Error::BadQuery(
                "two collectors answer with a queue list: configure [int] queue_list on the one \
                 that holds it only"
                    .into(),
            )),
            (Some(p), None) => Ok(p.clone()),
            (None, _) => parts
                .into_iter()
                .next()
                .ok_or_else(|| Error::BadQuery("no answers to merge".into())),
        }
    }
}
