//! Queries that speak INT (issue 17): a flow's path, its per-hop state and a switch's drops, read where the
//! translator's INT front end writes them (`dta_protocol::int::mapping`, the contract). Each is an
//! existing primitive's query on the contract's keys, its answer decoded into the contract's records:
//! Postcarding for the path, Key-Write per (flow, hop) for the hop records, Key-Increment per (node,
//! reason) for the drop counts, and the Append entries of the drop and queue lists for the events.
//!
//! Keys spread over collectors (`key_checksum(key) mod n`, the translator's routing), so one flow's hop
//! records can sit on several collectors. A [`Shard`] restricts a query to the keys of one collector, and
//! the `merge` functions join the shards' answers into the answer one collector holding every key would
//! give.

use std::fmt;
use std::net::IpAddr;

use dta_protocol::hash::key_checksum;
use dta_protocol::int::inner::FlowKey;
use dta_protocol::int::mapping::{
    drop_counter_key, flow_hop_key, flow_key, DropEvent, HopRecord, QueueEvent, EVENT_LEN,
    HOP_RECORD_LEN,
};
use dta_protocol::layout::{AppendGeometry, KeyIncrementGeometry, KeyWriteGeometry};
use serde::{Deserialize, Serialize};

use super::{append_read, key_increment, key_write, KeyWriteAnswer, PathAnswer};
use crate::error::{Error, Result};

const TCP: u8 = 6;
const UDP: u8 = 17;

/// Parses a flow written `SRC,DST,PROTO,SPORT,DPORT`: IPv4 or IPv6 addresses (both of one family),
/// the protocol as a number or `tcp` / `udp`, and the ports.
pub fn parse_flow(s: &str) -> Result<FlowKey> {
    let bad = |why: String| Error::BadQuery(format!("flow {s:?}: {why}"));
    let fields: Vec<&str> = s.split(',').map(str::trim).collect();
    let [src, dst, proto, sport, dport] = fields[..] else {
        return Err(bad(format!(
            "{} fields; expected SRC,DST,PROTO,SPORT,DPORT",
            fields.len()
        )));
    };
    let addr = |name: &str, v: &str| {
        v.parse::<IpAddr>()
            .map_err(|_| bad(format!("{name} {v:?} is not an IPv4 or IPv6 address")))
    };
    let (src, dst) = (addr("source", src)?, addr("destination", dst)?);
    if src.is_ipv4() != dst.is_ipv4() {
        return Err(bad(
            "source and destination are of different IP versions".into()
        ));
    }
    let protocol = match proto.to_ascii_lowercase().as_str() {
        "tcp" => TCP,
        "udp" => UDP,
        p => p.parse::<u8>().map_err(|_| {
            bad(format!(
                "protocol {proto:?} is neither tcp, udp nor a number 0..=255"
            ))
        })?,
    };
    let port = |name: &str, v: &str| {
        v.parse::<u16>()
            .map_err(|_| bad(format!("{name} port {v:?} is not a number 0..=65535")))
    };
    let (src_port, dst_port) = (port("source", sport)?, port("destination", dport)?);
    // The front end reads ports for TCP and UDP only and keys every other flow with ports 0
    // (dta_protocol::int::inner): a flow of another protocol with ports was never written.
    if !matches!(protocol, TCP | UDP) && (src_port, dst_port) != (0, 0) {
        return Err(bad(format!(
            "protocol {protocol} carries no ports for INT: give 0,0 (only tcp and udp flows have ports)"
        )));
    }
    Ok(FlowKey {
        src,
        dst,
        protocol,
        src_port,
        dst_port,
    })
}

/// A flow as [`parse_flow`] reads it back: `SRC,DST,PROTO,SPORT,DPORT`, the protocol as a number.
pub struct FlowText<'a>(pub &'a FlowKey);

impl fmt::Display for FlowText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let k = self.0;
        write!(
            f,
            "{},{},{},{},{}",
            k.src, k.dst, k.protocol, k.src_port, k.dst_port
        )
    }
}

/// The keys one collector of several holds: those with `key_checksum(key) mod count == index`, the
/// translator's key-hash routing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// This collector's position in the translator's `[[collectors]]` order.
    pub index: u32,
    /// How many collectors there are.
    pub count: u32,
}

impl Shard {
    /// One collector holding every key.
    pub const ALL: Shard = Shard { index: 0, count: 1 };

    /// Parses `I/N` with I < N.
    pub fn parse(s: &str) -> Result<Self> {
        let parsed = s
            .split_once('/')
            .and_then(|(i, n)| Some((i.trim().parse().ok()?, n.trim().parse().ok()?)));
        match parsed {
            Some((index, count)) if index < count => Ok(Shard { index, count }),
            _ => Err(Error::BadQuery(format!(
                "shard {s:?} is not I/N with I < N (this collector's index among N)"
            ))),
        }
    }

    /// Whether this collector holds `key`.
    pub fn owns(&self, key: u32) -> bool {
        key_checksum(key) % self.count == self.index
    }
}

impl Default for Shard {
    fn default() -> Self {
        Shard::ALL
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// A flow's path (`int-path`): the Postcarding answer for `flow_key(flow)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IntPathAnswer {
    /// The flow, `SRC,DST,PROTO,SPORT,DPORT`.
    pub flow: String,
    /// Its key, `flow_key(flow)`.
    pub flow_key: u32,
    /// The path (node ids hop by hop), or why there is none.
    #[serde(flatten)]
    pub path: PathAnswer,
}

/// One switch's record of a flow, as the contract's `HopRecord`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HopView {
    /// The switch's node id.
    pub node: u32,
    /// Hop latency in the switch's unit.
    pub hop_latency: u32,
    /// Queue id.
    pub queue_id: u8,
    /// Queue occupancy (24 bits).
    pub queue_occupancy: u32,
}

impl From<HopRecord> for HopView {
    fn from(r: HopRecord) -> Self {
        HopView {
            node: r.node,
            hop_latency: r.hop_latency,
            queue_id: r.queue_id,
            queue_occupancy: r.queue_occupancy,
        }
    }
}

/// A record some of a hop's matching slots hold, and how many.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HopCandidate {
    /// The record.
    pub record: HopView,
    /// Slots holding it.
    pub votes: u32,
}

/// The Key-Write outcome of one hop, its data decoded as a hop record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum HopOutcome {
    /// One record won.
    Found {
        /// The record.
        record: HopView,
        /// Its votes.
        votes: u32,
        /// Distinct slots read.
        slots_read: u32,
    },
    /// No record (the path is shorter, or its slots were overwritten).
    Empty {
        /// Slots whose checksum matched.
        matching: u32,
    },
    /// Matching slots disagree and no record wins.
    Conflict {
        /// Every distinct record, most votes first.
        candidates: Vec<HopCandidate>,
    },
}

/// One hop of `int-flow`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HopAnswer {
    /// The hop, 1-based.
    pub hop: u8,
    /// Its Key-Write key, `flow_hop_key(flow_key, hop)`.
    pub key: u32,
    /// What its slots hold.
    #[serde(flatten)]
    pub outcome: HopOutcome,
}

/// The highest queue occupancy on the path and where it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MaxOccupancy {
    /// The hop.
    pub hop: u8,
    /// The switch.
    pub node: u32,
    /// The queue.
    pub queue_id: u8,
    /// The occupancy.
    pub occupancy: u32,
}

/// Totals over the found hops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowTotals {
    /// Hops with a found record.
    pub hops_found: u32,
    /// Sum of their hop latencies (the path's latency where every hop was found).
    pub latency_sum: u64,
    /// Their highest occupancy (the lowest hop on a tie); none when no hop was found.
    pub max_occupancy: Option<MaxOccupancy>,
}

impl FlowTotals {
    /// The totals of `hops`.
    pub fn of(hops: &[HopAnswer]) -> Self {
        let mut t = FlowTotals {
            hops_found: 0,
            latency_sum: 0,
            max_occupancy: None,
        };
        for h in hops {
            let HopOutcome::Found { record: r, .. } = h.outcome else {
                continue;
            };
            t.hops_found += 1;
            t.latency_sum += u64::from(r.hop_latency);
            let higher = t.max_occupancy.map_or(true, |m| {
                (r.queue_occupancy, std::cmp::Reverse(h.hop))
                    > (m.occupancy, std::cmp::Reverse(m.hop))
            });
            if higher {
                t.max_occupancy = Some(MaxOccupancy {
                    hop: h.hop,
                    node: r.node,
                    queue_id: r.queue_id,
                    occupancy: r.queue_occupancy,
                });
            }
        }
        t
    }
}

/// A flow's per-hop state (`int-flow`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IntFlowAnswer {
    /// The flow, `SRC,DST,PROTO,SPORT,DPORT`.
    pub flow: String,
    /// Its key.
    pub flow_key: u32,
    /// Hops read, in hop order.
    pub hops: Vec<HopAnswer>,
    /// Totals over the found hops.
    pub totals: FlowTotals,
}

impl IntFlowAnswer {
    /// The answer for `hops` (sorted here by hop), with its totals.
    pub fn new(flow: &FlowKey, mut hops: Vec<HopAnswer>) -> Self {
        hops.sort_by_key(|h| h.hop);
        IntFlowAnswer {
            flow: FlowText(flow).to_string(),
            flow_key: flow_key(flow),
            totals: FlowTotals::of(&hops),
            hops,
        }
    }

    /// Joins the answers of the collectors of one flow's shards.
    pub fn merge(parts: Vec<IntFlowAnswer>) -> Result<Self> {
        let mut parts = parts.into_iter();
        let mut all = parts
            .next()
            .ok_or_else(|| Error::BadQuery("no answers to merge".into()))?;
        for p in parts {
            if p.flow_key != all.flow_key {
                return Err(Error::BadQuery(format!(
                    "answers for different flows ({} and {})",
                    all.flow, p.flow
                )));
            }
            all.hops.extend(p.hops);
        }
        all.hops.sort_by_key(|h| h.hop);
        all.totals = FlowTotals::of(&all.hops);
        Ok(all)
    }
}

/// Reads hops `1..=hops` of flow key `flow` that `shard` holds from the Key-Write region `mem`, with
/// redundancy `n` and threshold `threshold`.
pub fn flow_hops(
    mem: &[u8],
    g: &KeyWriteGeometry,
    flow: u32,
    hops: u8,
    n: u8,
    threshold: u32,
    shard: Shard,
) -> Result<Vec<HopAnswer>> {
    if g.data_len() < HOP_RECORD_LEN {
        return Err(Error::BadQuery(format!(
            "the key_write region holds {} data bytes per entry, fewer than a {HOP_RECORD_LEN}-byte \
             INT hop record",
            g.data_len()
        )));
    }
    (1..=hops)
        .map(|hop| (hop, flow_hop_key(flow, hop)))
        .filter(|&(_, key)| shard.owns(key))
        .map(|(hop, key)| {
            let outcome = match key_write(mem, g, key, n, threshold)? {
                KeyWriteAnswer::Found {
                    data,
                    votes,
                    slots_read,
                } => HopOutcome::Found {
                    record: hop_record(&data)?,
                    votes,
                    slots_read,
                },
                KeyWriteAnswer::Empty { matching } => HopOutcome::Empty { matching },
                KeyWriteAnswer::Conflict { candidates } => HopOutcome::Conflict {
                    candidates: candidates
                        .iter()
                        .map(|c| {
                            Ok(HopCandidate {
                                record: hop_record(&c.data)?,
                                votes: c.votes,
                            })
                        })
                        .collect::<Result<_>>()?,
                },
            };
            Ok(HopAnswer { hop, key, outcome })
        })
        .collect()
}

/// The hop record in the first bytes of a Key-Write answer's hex data.
fn hop_record(hex: &str) -> Result<HopView> {
    let bytes = from_hex(hex)?;
    HopRecord::decode(&bytes)
        .map(HopView::from)
        .ok_or_else(|| Error::BadQuery(format!("data {hex} is shorter than a hop record")))
}

fn from_hex(s: &str) -> Result<Vec<u8>> {
    let digit = |c: u8| (c as char).to_digit(16);
    s.as_bytes()
        .chunks(2)
        .map(|p| match p {
            [h, l] => Some(digit(*h)? as u8 * 16 + digit(*l)? as u8),
            _ => None,
        })
        .collect::<Option<Vec<u8>>>()
        .ok_or_else(|| Error::BadQuery(format!("{s:?} is not hex")))
}

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

/// A dropped packet, as the contract's `DropEvent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DropEventView {
    /// The flow's key (0 when the report had no parsable inner packet).
    pub flow: u32,
    /// The switch that dropped it.
    pub node: u32,
    /// The port.
    pub port: u16,
    /// The drop reason.
    pub reason: u8,
    /// The queue.
    pub queue_id: u8,
    /// The switch's timestamp (low 32 bits).
    pub timestamp: u32,
}

impl From<DropEvent> for DropEventView {
    fn from(e: DropEvent) -> Self {
        DropEventView {
            flow: e.flow,
            node: e.node,
            port: e.port,
            reason: e.reason,
            queue_id: e.queue_id,
            timestamp: e.timestamp,
        }
    }
}

/// A congested queue, as the contract's `QueueEvent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueEventView {
    /// The switch.
    pub node: u32,
    /// The egress port.
    pub port: u16,
    /// The queue.
    pub queue_id: u8,
    /// The queue's occupancy.
    pub occupancy: u32,
    /// The switch's timestamp (low 32 bits).
    pub timestamp: u32,
}

impl From<QueueEvent> for QueueEventView {
    fn from(e: QueueEvent) -> Self {
        QueueEventView {
            node: e.node,
            port: e.port,
            queue_id: e.queue_id,
            occupancy: e.occupancy,
            timestamp: e.timestamp,
        }
    }
}

/// The events of interest found in a window of an event list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventWindow<E> {
    /// The list's id.
    pub list: u32,
    /// The list's head word when read.
    pub head: u64,
    /// Absolute index of the first entry scanned.
    pub first: u64,
    /// Entries scanned (`first..first + scanned`), kept or not.
    pub scanned: u64,
    /// Entries before `first` that the asked-for tail wanted but the ring had overwritten.
    pub overrun: u64,
    /// Where a next read continues.
    pub next_tail: u64,
    /// The events kept, oldest first.
    pub events: Vec<E>,
}

/// The drop events of one node in a window of the drop list.
pub type DropEvents = EventWindow<DropEventView>;
/// The queue events of one node in a window of the queue list.
pub type QueueEvents = EventWindow<QueueEventView>;

/// Where an event list read starts and how far it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// First entry to scan; none: the newest `max` entries.
    pub tail: Option<u64>,
    /// Most entries to scan.
    pub max: usize,
}

/// Scans a window of the event list `mem` (id `list`), decoding each 16-byte entry with `decode` and
/// keeping those `keep` accepts. The ring's overruns are handled as by the Append query.
fn scan<E>(
    mem: &[u8],
    g: &AppendGeometry,
    list: u32,
    window: Window,
    decode: impl Fn(&[u8]) -> Option<E>,
    keep: impl Fn(&E) -> bool,
) -> Result<EventWindow<E>> {
    if g.entry_size() as usize != EVENT_LEN {
        return Err(Error::BadQuery(format!(
            "list {list} has {}-byte entries, not {EVENT_LEN}-byte INT events",
            g.entry_size()
        )));
    }
    let tail = match window.tail {
        Some(t) => t,
        None => AppendGeometry::decode_head(mem)
            .ok_or_else(|| Error::BadQuery(format!("list {list} is shorter than its header")))?
            .saturating_sub(window.max as u64),
    };
    let read = append_read(mem, g, tail, window.max)?;
    let mut events = Vec::new();
    for hex in &read.entries {
        let e = decode(&from_hex(hex)?)
            .ok_or_else(|| Error::BadQuery(format!("list {list} entry {hex} is too short")))?;
        if keep(&e) {
            events.push(e);
        }
    }
    Ok(EventWindow {
        list,
        head: read.head,
        first: read.first,
        scanned: read.entries.len() as u64,
        overrun: read.overrun,
        next_tail: read.next_tail,
        events,
    })
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
    scan(
        mem,
        g,
        list,
        window,
        |b| DropEvent::decode(b).map(DropEventView::from),
        |e| e.node == node && reason.map_or(true, |r| e.reason == r),
    )
}

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
    scan(
        mem,
        g,
        list,
        window,
        |b| QueueEvent::decode(b).map(QueueEventView::from),
        |e| e.node == node && queue.map_or(true, |q| e.queue_id == q),
    )
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
    /// The node's events in the drop list; none where no drop list is configured.
    pub events: Option<DropEvents>,
}

impl IntDropsAnswer {
    /// The answer from `counts` and `events`.
    pub fn new(
        node: u32,
        reason: Option<u8>,
        mut counts: Vec<DropCount>,
        events: Option<DropEvents>,
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

    /// Joins the answers of the collectors of the node's shards; the drop list lives on one of them.
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
            match (&events, p.events) {
                (Some(a), Some(b)) => {
                    return Err(Error::BadQuery(format!(
                        "two collectors answer with a drop list (lists {} and {}): configure \
                         [int] drop_list on the one that holds it only",
                        a.list, b.list
                    )))
                }
                (None, b) => events = b,
                (Some(_), None) => {}
            }
        }
        Ok(IntDropsAnswer::new(node, reason, counts, events))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn v4(a: [u8; 4]) -> IpAddr {
        IpAddr::V4(Ipv4Addr::from(a))
    }

    #[test]
    fn flows_parse_with_v4_v6_and_protocol_names() {
        let f = parse_flow("10.0.0.1,10.0.0.2,tcp,12345,80").unwrap();
        assert_eq!(
            f,
            FlowKey {
                src: v4([10, 0, 0, 1]),
                dst: v4([10, 0, 0, 2]),
                protocol: 6,
                src_port: 12345,
                dst_port: 80,
            }
        );
        // The contract's Python vector (mapping.rs): the parsed flow keys to it.
        assert_eq!(flow_key(&f), 0x3db5_e2e5);
        assert_eq!(
            parse_flow(" 10.0.0.1 , 10.0.0.2 , TCP , 12345 , 80 ").unwrap(),
            f
        );
        assert_eq!(parse_flow("10.0.0.1,10.0.0.2,6,12345,80").unwrap(), f);
        let f6 = parse_flow("2001:db8::1,2001:db8::2,udp,5000,4791").unwrap();
        assert_eq!(
            f6.src,
            IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1))
        );
        assert_eq!((f6.protocol, f6.src_port, f6.dst_port), (17, 5000, 4791));
        assert_eq!(flow_key(&f6), 0x17a0_24e1);
        assert_eq!(
            parse_flow("10.0.0.1,10.0.0.2,Udp,1,2").unwrap().protocol,
            17
        );
        // Protocols without ports: by number, ports 0.
        let icmp = parse_flow("10.0.0.1,10.0.0.2,1,0,0").unwrap();
        assert_eq!((icmp.protocol, icmp.src_port), (1, 0));
        // Written back the way it parses.
        assert_eq!(
            FlowText(&f6).to_string(),
            "2001:db8::1,2001:db8::2,17,5000,4791"
        );
        assert_eq!(parse_flow(&FlowText(&f6).to_string()).unwrap(), f6);
    }

    #[test]
    fn bad_flows_say_what_is_wrong() {
        let cases = [
            (
                "10.0.0.1,10.0.0.2,tcp,80",
                "4 fields; expected SRC,DST,PROTO,SPORT,DPORT",
            ),
            ("10.0.0.1,10.0.0.2,tcp,1,2,3", "6 fields"),
            ("", "1 fields"),
            (
                "10.0.0.256,10.0.0.2,tcp,1,2",
                "source \"10.0.0.256\" is not an IPv4 or IPv6 address",
            ),
            (
                "10.0.0.1,host,tcp,1,2",
                "destination \"host\" is not an IPv4",
            ),
            ("10.0.0.1,::1,tcp,1,2", "different IP versions"),
            (
                "10.0.0.1,10.0.0.2,sctp,1,2",
                "protocol \"sctp\" is neither tcp, udp nor a number",
            ),
            ("10.0.0.1,10.0.0.2,256,1,2", "protocol \"256\""),
            (
                "10.0.0.1,10.0.0.2,tcp,65536,2",
                "source port \"65536\" is not a number 0..=65535",
            ),
            ("10.0.0.1,10.0.0.2,tcp,1,-2", "destination port \"-2\""),
            (
                "10.0.0.1,10.0.0.2,1,0,7",
                "protocol 1 carries no ports for INT",
            ),
        ];
        for (text, why) in cases {
            let e = parse_flow(text).unwrap_err().to_string();
            assert!(e.contains(why), "{text:?}: {e}");
            assert!(e.contains(&format!("flow {text:?}")), "{e}");
        }
    }

    #[test]
    fn shards_parse_and_own_by_key_hash() {
        assert_eq!(Shard::parse("1/3").unwrap(), Shard { index: 1, count: 3 });
        assert_eq!(Shard::parse("0/1").unwrap(), Shard::ALL);
        for bad in ["3/3", "1", "a/2", "1/0", "-1/2", ""] {
            let e = Shard::parse(bad).unwrap_err().to_string();
            assert!(e.contains("is not I/N with I < N"), "{bad:?}: {e}");
        }
        assert_eq!(Shard { index: 2, count: 5 }.to_string(), "2/5");
        // key_checksum(1) = 0x99f8b879 (DESIGN.md section 3) = 2583214201, which is 1 mod 2 and 1 mod 3.
        assert!(Shard { index: 1, count: 2 }.owns(1));
        assert!(!Shard { index: 0, count: 2 }.owns(1));
        assert!(Shard { index: 1, count: 3 }.owns(1));
        assert!(Shard::ALL.owns(1));
    }

    #[test]
    fn hex_and_records() {
        assert_eq!(from_hex("00ff1a").unwrap(), [0, 255, 26]);
        assert!(from_hex("0").is_err());
        assert!(from_hex("zz").is_err());
        // The contract's struct.pack vector (mapping.rs), with the 4 zero bytes of a 16-byte entry.
        assert_eq!(
            hop_record("04030201dc050000efcdab0500000000").unwrap(),
            HopView {
                node: 0x0102_0304,
                hop_latency: 1500,
                queue_id: 5,
                queue_occupancy: 0xAB_CDEF
            }
        );
        assert!(hop_record("04030201dc050000efcdab").is_err());
    }
}
