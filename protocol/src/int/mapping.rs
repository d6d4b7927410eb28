//! Where INT reports land in DTA memory: the keys and record layouts the translator's INT front end
//! writes and the collector's INT queries read (issue 17). Like DESIGN.md section 3, this is a contract
//! between the two; both sides use these functions, and the tests pin them to vectors computed with
//! Python's `zlib` and `struct`, not with this code.
//!
//! | what | primitive | key or list | record |
//! |---|---|---|---|
//! | a flow's path | Postcarding | [`flow_key`] | hop i = the node id of the i-th switch |
//! | a flow's per-hop state | Key-Write | [`flow_hop_key`]`(flow, hop)` | [`HopRecord`], 12 bytes |
//! | drops per node and reason | Key-Increment | [`drop_counter_key`]`(node, reason)` | the count |
//! | drop events | Append | the configured drop list | [`DropEvent`], 16 bytes |
//! | congestion (queue) events | Append | the configured queue list | [`QueueEvent`], 16 bytes |
//!
//! Per-hop state is keyed by (flow, hop) rather than by flow: a fabric-tna switch reports its own hop only,
//! and a Key-Write is last-writer-wins, so one record per flow would keep only the last switch's view.
//! The path's total latency and its highest queue occupancy are the sum and the maximum of the hop
//! records, which the `int-flow` query computes. Records are little-endian, as the rest of the collector's
//! memory (`key_le`, the Append head word).

use super::inner::FlowKey;
use crate::roce::crc_table::CRC32_ISO_HDLC;
use serde::{Deserialize, Serialize};
use std::net::IpAddr;

/// Bytes of a [`HopRecord`] (the Key-Write data; the region's data size must be at least this).
pub const HOP_RECORD_LEN: usize = 12;
/// Bytes of a [`DropEvent`] or a [`QueueEvent`] (the Append lists' entry size).
pub const EVENT_LEN: usize = 16;

/// The flow's key: zlib's CRC-32 over the source and destination addresses (4 or 16 bytes each), the
/// protocol byte and the two ports (big-endian, as on the wire).
pub fn flow_key(f: &FlowKey) -> u32 {
    let mut b = [0u8; 37];
    let mut n = 0;
    for a in [f.src, f.dst] {
        match a {
            IpAddr::V4(v4) => {
                b[n..n + 4].copy_from_slice(&v4.octets());
                n += 4;
            }
            IpAddr::V6(v6) => {
                b[n..n + 16].copy_from_slice(&v6.octets());
                n += 16;
            }
        }
    }
    b[n] = f.protocol;
    b[n + 1..n + 3].copy_from_slice(&f.src_port.to_be_bytes());
    b[n + 3..n + 5].copy_from_slice(&f.dst_port.to_be_bytes());
    CRC32_ISO_HDLC.checksum(&b[..n + 5])
}

/// The Key-Write key of hop `hop` (1-based) of flow `flow`: CRC-32 over `flow_le ‖ 'H' ‖ hop`.
pub fn flow_hop_key(flow: u32, hop: u8) -> u32 {
    let f = flow.to_le_bytes();
    CRC32_ISO_HDLC.checksum(&[f[0], f[1], f[2], f[3], b'H', hop])
}

/// The Key-Increment key counting drops at `node` for `reason`: CRC-32 over `'D' ‖ node_le ‖ reason`.
pub fn drop_counter_key(node: u32, reason: u8) -> u32 {
    let n = node.to_le_bytes();
    CRC32_ISO_HDLC.checksum(&[b'D', n[0], n[1], n[2], n[3], reason])
}

/// One switch's view of a flow: `node:u32, hop_latency:u32, queue_id:8 ‖ occupancy:24 (one u32)`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct HopRecord {
    /// The switch (node id, or fabric-tna's switch id).
    pub node: u32,
    /// Hop latency in the switch's time unit (nanoseconds in practice); 0 when the report had none.
    pub hop_latency: u32,
    /// Queue id.
    pub queue_id: u8,
    /// Queue occupancy (24 bits; larger values saturate).
    pub queue_occupancy: u32,
}

impl HopRecord {
    /// The record's bytes.
    pub fn encode(&self) -> [u8; HOP_RECORD_LEN] {
        let mut b = [0u8; HOP_RECORD_LEN];
        b[0..4].copy_from_slice(&self.node.to_le_bytes());
        b[4..8].copy_from_slice(&self.hop_latency.to_le_bytes());
        let q = (u32::from(self.queue_id) << 24) | self.queue_occupancy.min(0xFF_FFFF);
        b[8..12].copy_from_slice(&q.to_le_bytes());
        b
    }

    /// Reads a record from the first [`HOP_RECORD_LEN`] bytes of `b` (`None` when shorter).
    pub fn decode(b: &[u8]) -> Option<Self> {
        let b = b.get(..HOP_RECORD_LEN)?;
        let q = le32(&b[8..12]);
        Some(HopRecord {
            node: le32(&b[0..4]),
            hop_latency: le32(&b[4..8]),
            queue_id: (q >> 24) as u8,
            queue_occupancy: q & 0xFF_FFFF,
        })
    }
}

/// A dropped packet: `flow:u32, node:u32, port:u16, reason:8, queue_id:8, timestamp:u32`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DropEvent {
    /// The flow's [`flow_key`] (0 when the report carried no parsable inner packet).
    pub flow: u32,
    /// The switch that dropped it.
    pub node: u32,
    /// The port (egress when known, else ingress).
    pub port: u16,
    /// The switch's drop reason code.
    pub reason: u8,
    /// The queue.
    pub queue_id: u8,
    /// The switch's timestamp of the report (low 32 bits).
    pub timestamp: u32,
}

impl DropEvent {
    /// The entry's bytes.
    pub fn encode(&self) -> [u8; EVENT_LEN] {
        let mut b = [0u8; EVENT_LEN];
        b[0..4].copy_from_slice(&self.flow.to_le_bytes());
        b[4..8].copy_from_slice(&self.node.to_le_bytes());
        b[8..10].copy_from_slice(&self.port.to_le_bytes());
        b[10] = self.reason;
        b[11] = self.queue_id;
        b[12..16].copy_from_slice(&self.timestamp.to_le_bytes());
        b
    }

    /// Reads an entry (`None` when shorter than [`EVENT_LEN`]).
    pub fn decode(b: &[u8]) -> Option<Self> {
        let b = b.get(..EVENT_LEN)?;
        Some(DropEvent {
            flow: le32(&b[0..4]),
            node: le32(&b[4..8]),
            port: u16::from_le_bytes([b[8], b[9]]),
            reason: b[10],
            queue_id: b[11],
            timestamp: le32(&b[12..16]),
        })
    }
}

/// A congested queue: `node:u32, port:u16, queue_id:8, reserved:8, occupancy:u32, timestamp:u32`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct QueueEvent {
    /// The switch.
    pub node: u32,
    /// The egress port.
    pub port: u16,
    /// The queue.
    pub queue_id: u8,
    /// The queue's occupancy.
    pub occupancy: u32,
    /// The switch's timestamp of the report (low 32 bits).
    pub timestamp: u32,
}

impl QueueEvent {
    /// The entry's bytes.
    pub fn encode(&self) -> [u8; EVENT_LEN] {
        let mut b = [0u8; EVENT_LEN];
        b[0..4].copy_from_slice(&self.node.to_le_bytes());
        b[4..6].copy_from_slice(&self.port.to_le_bytes());
        b[6] = self.queue_id;
        b[8..12].copy_from_slice(&self.occupancy.to_le_bytes());
        b[12..16].copy_from_slice(&self.timestamp.to_le_bytes());
        b
    }

    /// Reads an entry (`None` when shorter than [`EVENT_LEN`]).
    pub fn decode(b: &[u8]) -> Option<Self> {
        let b = b.get(..EVENT_LEN)?;
        Some(QueueEvent {
            node: le32(&b[0..4]),
            port: u16::from_le_bytes([b[4], b[5]]),
            queue_id: b[6],
            occupancy: le32(&b[8..12]),
            timestamp: le32(&b[12..16]),
        })
    }
}

fn le32(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

/// The Append lists of one kind of INT event (`int.drop_list`, `int.queue_list`): none, one, or one per
/// worker. An Append list's head has one writer, so a daemon whose workers all take INT reports gives
/// each worker a list of its own, and the collector's queries read them all (`[int] drop_list` takes the
/// same array there). A TOML integer is one list, an array several.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct EventLists(Vec<u32>);

impl EventLists {
    /// The lists `ids`.
    pub fn new(ids: impl Into<Vec<u32>>) -> Self {
        EventLists(ids.into())
    }

    /// One list.
    pub fn one(id: u32) -> Self {
        EventLists(vec![id])
    }

    /// The list an engine writes: the first (a worker's configuration keeps only its own, see
    /// [`of_worker`](Self::of_worker)).
    pub fn first(&self) -> Option<u32> {
        self.0.first().copied()
    }

    /// Whether no list is configured.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// How many lists.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The ids, in order.
    pub fn ids(&self) -> &[u32] {
        &self.0
    }

    /// Worker `k`'s own list, alone (none when there is none for it).
    pub fn of_worker(&self, k: usize) -> Self {
        EventLists(self.0.get(k).copied().into_iter().collect())
    }
}

impl<'de> Deserialize<'de> for EventLists {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Lists;
        impl<'de> serde::de::Visitor<'de> for Lists {
            type Value = EventLists;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an Append list id, or an array of ids (one per worker)")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<EventLists, E> {
                u32::try_from(v)
                    .map(EventLists::one)
                    .map_err(|_| E::custom(format!("list id {v} is not a 32-bit unsigned id")))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<EventLists, E> {
                u32::try_from(v)
                    .map(EventLists::one)
                    .map_err(|_| E::custom(format!("list id {v} is not a 32-bit unsigned id")))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<EventLists, A::Error> {
                let mut ids = Vec::new();
                while let Some(id) = seq.next_element::<u32>()? {
                    ids.push(id);
                }
                Ok(EventLists(ids))
            }
        }
        d.deserialize_any(Lists)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    // Every expected value below is from Python: zlib.crc32 and struct.pack('<...').

    #[test]
    fn flow_keys_match_zlib() {
        let v4 = FlowKey {
            src: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
            dst: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
            protocol: 6,
            src_port: 12345,
            dst_port: 80,
        };
        assert_eq!(flow_key(&v4), 0x3db5_e2e5);
        let v6 = FlowKey {
            src: IpAddr::V6("2001:db8::1".parse::<Ipv6Addr>().unwrap()),
            dst: IpAddr::V6("2001:db8::2".parse::<Ipv6Addr>().unwrap()),
            protocol: 17,
            src_port: 5000,
            dst_port: 4791,
        };
        assert_eq!(flow_key(&v6), 0x17a0_24e1);
        assert_eq!(flow_hop_key(0x3db5_e2e5, 3), 0x02e9_e3f1);
        assert_eq!(drop_counter_key(7, 71), 0x7f93_e1fa);
    }

    #[test]
    fn records_match_struct_pack() {
        let h = HopRecord {
            node: 0x0102_0304,
            hop_latency: 1500,
            queue_id: 5,
            queue_occupancy: 0xAB_CDEF,
        };
        assert_eq!(hex::encode(h.encode()), "04030201dc050000efcdab05");
        assert_eq!(HopRecord::decode(&h.encode()), Some(h));
        let d = DropEvent {
            flow: 0x3db5_e2e5,
            node: 7,
            port: 130,
            reason: 71,
            queue_id: 2,
            timestamp: 0xdead_beef,
        };
        assert_eq!(hex::encode(d.encode()), "e5e2b53d0700000082004702efbeadde");
        assert_eq!(DropEvent::decode(&d.encode()), Some(d));
        let q = QueueEvent {
            node: 7,
            port: 130,
            queue_id: 2,
            occupancy: 0x7_FFFF,
            timestamp: 0xdead_beef,
        };
        assert_eq!(hex::encode(q.encode()), "0700000082000200ffff0700efbeadde");
        assert_eq!(QueueEvent::decode(&q.encode()), Some(q));
        assert_eq!(HopRecord::decode(&[0; 11]), None);
        assert_eq!(DropEvent::decode(&[0; 15]), None);
    }

    #[test]
    fn occupancy_saturates_at_24_bits() {
        let h = HopRecord {
            queue_occupancy: 0x1FF_FFFF,
            queue_id: 1,
            ..HopRecord::default()
        };
        assert_eq!(
            HopRecord::decode(&h.encode()).map(|r| r.queue_occupancy),
            Some(0xFF_FFFF)
        );
    }

    #[test]
    fn event_lists_read_one_id_or_one_per_worker() {
        let one: EventLists = serde_json::from_str("10").unwrap();
        assert_eq!((one.ids(), one.first()), (&[10][..], Some(10)));
        let many: EventLists = serde_json::from_str("[10, 12, 14]").unwrap();
        assert_eq!(many.ids(), [10, 12, 14]);
        assert_eq!(many.of_worker(1).ids(), [12]);
        assert!(many.of_worker(3).is_empty());
        assert_eq!(serde_json::to_string(&many).unwrap(), "[10,12,14]");
        for bad in ["-1", "4294967296", "\"ten\"", "[1, -2]"] {
            assert!(serde_json::from_str::<EventLists>(bad).is_err(), "{bad}");
        }
    }
}
