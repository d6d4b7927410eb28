//! One switch's report about one packet lowered to [`Action`]s: a drop counted and its event, a
//! sink report's whole path, a per-hop report placed on its path (by TTL or topology), a congested
//! queue's event; what touches the flow's state done here when this worker owns the flow, else left to
//! its owner as [`FlowWork`].

use smallvec::SmallVec;

use dta_protocol::int::inner::InnerRepr;
use dta_protocol::int::mapping::{flow_key, DropEvent, QueueEvent};
use dta_protocol::int::metadata::Metadata;

use super::action::{Action, Actions};
use super::counters::{IntCounters, IntDrop};
use super::front::IntFrontEnd;
use super::handoff::{FlowWork, Translated};
use super::hop::{reason, Hop, Report};
use super::shard::Stage;
use super::topology::Placement;

/// INT allows at most this many hops in a stack.
const INT_MAX_HOPS: usize = 8;

impl IntFrontEnd {
    /// One report of one switch (`hop`) about the packet `inner`, translated here; what touches its
    /// flow's state is done here when the flow is this worker's, else left to its owner in
    /// `out.handed` (or, [`Stage::Alone`], counted as not this worker's).
    pub(super) fn report(
        &mut self,
        r: Report<'_>,
        stage: Stage,
        c: &mut IntCounters,
        out: &mut Translated,
    ) {
        let Report {
            start,
            inner,
            hop,
            drop,
            congested,
        } = r;
        let Some(node) = hop.node else {
            return c.drop(IntDrop::NoNode);
        };
        let parsed = InnerRepr::parse(start, inner, self.detect);
        if let Some((queue_id, reason)) = drop {
            // A drop touches no flow's state. It is counted even when its packet cannot be parsed: the
            // switch and reason are known.
            let flow = parsed.as_ref().map_or(0, |p| flow_key(&p.flow));
            c.nodes.get_mut(node).drops += 1;
            if self.cfg.drop_counts {
                out.actions.push(Action::DropCount { node, reason });
            }
            if !self.cfg.drop_list.is_empty() {
                out.actions.push(Action::DropEvent(DropEvent {
                    flow,
                    node,
                    port: hop.port,
                    reason,
                    queue_id,
                    timestamp: hop.timestamp,
                }));
            }
            c.reports += 1;
            return;
        }
        let p = match parsed {
            Ok(p) => p,
            Err(e) => {
                return c.drop(match reason(&e) {
                    IntDrop::Malformed if inner.is_empty() => IntDrop::NoFlow,
                    r => r,
                })
            }
        };
        let flow = flow_key(&p.flow);
        let owner = self.shard.owner(flow);
        if owner != self.shard.index && stage == Stage::Alone {
            return c.drop(IntDrop::NotOwner);
        }
        if let Some(md) = p.int_md {
            // A sink's report: the Q flag is about the sink's own queue, as on a per-hop report.
            if self.whole_path(flow, owner, node, hop, md.hops(), md.hop_count(), c, out)
                && congested
            {
                self.queue_event(node, &hop, c, &mut out.actions);
            }
            return;
        }
        let Some(place) = self.place(node, &hop, p.ttl) else {
            return c.drop(IntDrop::NoHop);
        };
        if place.path_len > self.hops {
            return c.drop(IntDrop::TooManyHops);
        }
        let h = place.hop;
        if congested {
            self.queue_event(node, &hop, c, &mut out.actions);
        }
        if self.cfg.path {
            let (hop, path_len) = (h, place.path_len);
            let w = if self.topology.is_some() {
                // The length is known: the cache composes entries in any order (no blanks inside).
                FlowWork::Postcard {
                    flow,
                    hop,
                    path_len,
                    node,
                }
            } else {
                FlowWork::PerHop {
                    flow,
                    hop,
                    path_len,
                    node,
                }
            };
            self.flow_work(owner, w, out);
        }
        if self.cfg.flow_state {
            let record = hop.record(node);
            self.flow_work(
                owner,
                FlowWork::Hop {
                    flow,
                    hop: h,
                    record,
                },
                out,
            );
        }
        c.reports += 1;
    }

    /// Work on a flow owned by worker `owner`: done now when that is this worker, else left to it.
    #[inline]
    fn flow_work(&mut self, owner: usize, w: FlowWork, out: &mut Translated) {
        if owner == self.shard.index {
            self.apply(w, &mut out.actions);
        } else {
            out.handed.push((owner, w));
        }
    }

    /// Does work on one of this worker's flows: the actions it stands for, into `out`.
    pub fn apply(&mut self, w: FlowWork, out: &mut Actions) {
        match w {
            // Hop 1 with the hops already known of the flow, so its cache entry cannot blank them.
            FlowWork::PerHop {
                flow,
                hop,
                path_len,
                node,
            } => {
                for (hop, node) in self.paths.record(flow, hop, node).hops() {
                    out.push(Action::Postcard {
                        flow,
                        hop,
                        path_len,
                        length_known: false,
                        node,
                    });
                }
            }
            FlowWork::Postcard {
                flow,
                hop,
                path_len,
                node,
            } => out.push(Action::Postcard {
                flow,
                hop,
                path_len,
                length_known: true,
                node,
            }),
            FlowWork::Hop { flow, hop, record } => out.push(Action::Hop { flow, hop, record }),
        }
    }

    /// A congested-queue event of `node`: counted per switch, and appended where the queue list is
    /// configured.
    fn queue_event(&self, node: u32, hop: &Hop, c: &mut IntCounters, out: &mut Actions) {
        c.nodes.get_mut(node).congested += 1;
        if self.cfg.queue_list.is_empty() {
            return;
        }
        let (queue_id, occupancy) = hop.queue.unwrap_or((0, 0));
        out.push(Action::QueueEvent(QueueEvent {
            node,
            port: hop.port,
            queue_id,
            occupancy,
            timestamp: hop.timestamp,
        }));
    }

    /// A sink report of flow `flow` (worker `owner`'s): the stack's hops (newest first) and the reporting
    /// node. Whether it was translated
    /// (else it is counted as dropped).
    #[allow(clippy::too_many_arguments)]
    fn whole_path(
        &mut self,
        flow: u32,
        owner: usize,
        node: u32,
        sink: Hop,
        stack: impl Iterator<Item = Metadata>,
        count: usize,
        c: &mut IntCounters,
        out: &mut Translated,
    ) -> bool {
        if count > INT_MAX_HOPS {
            c.drop(IntDrop::TooManyHops);
            return false;
        }
        let mut path: SmallVec<[Hop; INT_MAX_HOPS + 1]> = SmallVec::new();
        for m in stack {
            let h = Hop::from_metadata(&m);
            if h.node.is_none() {
                c.drop(IntDrop::NoNode);
                return false;
            }
            path.push(h);
        }
        path.reverse();
        // The sink's own view ends the path, unless it already pushed itself onto the stack.
        if path.last().and_then(|h| h.node) != Some(node) {
            path.push(Hop {
                node: Some(node),
                ..sink
            });
        }
        if path.len() > usize::from(self.hops) {
            c.drop(IntDrop::TooManyHops);
            return false;
        }
        let len = path.len() as u8;
        for (i, h) in path.iter().enumerate() {
            let (hop, node) = (i as u8 + 1, h.node.unwrap_or(node));
            if self.cfg.path {
                let w = FlowWork::Postcard {
                    flow,
                    hop,
                    path_len: len,
                    node,
                };
                self.flow_work(owner, w, out);
            }
            if self.cfg.flow_state {
                let record = h.record(node);
                self.flow_work(owner, FlowWork::Hop { flow, hop, record }, out);
            }
        }
        c.whole_paths += 1;
        c.reports += 1;
        true
    }

    /// Where a per-hop report of `node` puts it: by the fabric's topology where one is configured, else
    /// by the inner packet's TTL, on a path of at most `hops`.
    fn place(&self, node: u32, hop: &Hop, ttl: u8) -> Option<Placement> {
        match &self.topology {
            Some(t) => t.place(node, hop.ports),
            None => self.hop_from_ttl(ttl).map(|hop| Placement {
                hop,
                path_len: self.hops,
            }),
        }
    }

    /// `initial - ttl + hop_offset` for the smallest configured initial TTL at or above `ttl`, when that
    /// is a hop of the path (1..=hops).
    fn hop_from_ttl(&self, ttl: u8) -> Option<u8> {
        let initial = self
            .cfg
            .initial_ttls
            .iter()
            .copied()
            .filter(|&i| i >= ttl)
            .min()?;
        let hop = u32::from(initial - ttl) + u32::from(self.cfg.hop_offset);
        (1..=u32::from(self.hops))
            .contains(&hop)
            .then_some(hop as u8)
    }
}
