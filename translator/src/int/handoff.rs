//! The work a receiving worker leaves to a flow's owner ([`FlowWork`]), and the message that carries it
//! between workers ([`emit`], [`Message`]).
//!
//! Why a message and not the frame: the receiver has already parsed the report (outer headers, the INT
//! header, the inner packet, the flow key, the hop's place). Handing the owner the frame made it parse all
//! of it again, on another core's cache lines, to do the one thing only it may do: apply the flow's
//! state (its remembered path, its postcard cache line). So the receiver writes what it computed into the
//! frame's own buffer (VPP's buffer-opaque pattern, sized for a whole path) and the owner reads fixed
//! fields. Measured with two workers on INT v0.5 (issue 25's note).
//!
//! The message never leaves the process: it travels the handoff rings between workers of one daemon,
//! where only frames those workers put arrive. It still starts like an Ethernet frame (zero addresses,
//! the IEEE local experimental EtherType) so that no frame a port receives, which steering sends by its
//! UDP port, can be mistaken for one, and its reader checks every length.
//!
//! ```text
//! 0..12   zero (the addresses)      18  items (1..=MAX_ITEMS)
//! 12..14  0x88B5 (EtherType)        19  zero
//! 14..18  the report's destination IPv4 address (it picks the collector)
//! 20..    items, ITEM_LEN bytes each, all big-endian:
//!         0 kind  1 hop  2 path length  3 queue id  4..8 flow  8..12 node  12..16 hop latency
//!         16..20 queue occupancy (the last three of a hop record, zero otherwise)
//! ```
//!
//! A per-hop report leaves two items (its path's hop, its hop record): 60 bytes, one cache line. That
//! line is what the owner's core must fetch from the receiver's, where it was just written: measured
//! here, such a line costs several times a clean one, so the layout is kept tight.

use smallvec::SmallVec;

use dta_protocol::int::mapping::HopRecord;

use super::action::Actions;

/// What translating one UDP payload gave: the actions of this worker, and the work it leaves to other
/// workers, (owner, work) in report order.
#[derive(Debug, Default)]
pub struct Translated {
    /// This worker's actions.
    pub actions: Actions,
    /// Work for the owners of other workers' flows (a sink report of 8 hops leaves 16 items).
    pub handed: SmallVec<[(usize, FlowWork); 16]>,
}

impl Translated {
    /// Empties both lists.
    pub fn clear(&mut self) {
        self.actions.clear();
        self.handed.clear();
    }
}

/// What a flow's owner does for one report of the flow that another worker received and translated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowWork {
    /// A per-hop report placed by its TTL: the owner remembers hop `hop` of `flow` is `node`, then sends
    /// the postcards its path memory returns (every known hop for hop 1, else this one), `path_len` a
    /// bound (see [`paths`](super::paths)).
    PerHop {
        /// The flow's key.
        flow: u32,
        /// 1-based hop.
        hop: u8,
        /// The configured path length (a bound).
        path_len: u8,
        /// The switch.
        node: u32,
    },
    /// A postcard whose path length is known (a sink report's stack, a topology placement).
    Postcard {
        /// The flow's key.
        flow: u32,
        /// 1-based hop.
        hop: u8,
        /// The path's length.
        path_len: u8,
        /// The switch.
        node: u32,
    },
    /// A hop record of the flow.
    Hop {
        /// The flow's key.
        flow: u32,
        /// 1-based hop.
        hop: u8,
        /// What the switch measured.
        record: HopRecord,
    },
}

/// The EtherType of a message (IEEE 802 local experimental 1).
pub const ETHERTYPE: u16 = 0x88B5;
/// Bytes before the items.
pub const HEADER_LEN: usize = 20;
/// Bytes of one item.
pub const ITEM_LEN: usize = 20;
/// Most items in one message: a v2.0 group naming one owner's flows more often than this is carried by
/// several messages. 64 keeps a message (1,300 bytes) inside one standard mbuf's data room.
pub const MAX_ITEMS: usize = 64;
/// Longest message.
pub const MAX_LEN: usize = HEADER_LEN + MAX_ITEMS * ITEM_LEN;

mod field {
    use core::ops::Range;
    pub const ZERO: Range<usize> = 0..12;
    pub const ETHERTYPE: Range<usize> = 12..14;
    pub const DST_IP: Range<usize> = 14..18;
    pub const ITEMS: usize = 18;
    pub const RESERVED: usize = 19;

    pub const KIND: usize = 0;
    pub const HOP: usize = 1;
    pub const PATH_LEN: usize = 2;
    pub const QUEUE_ID: usize = 3;
    pub const FLOW: Range<usize> = 4..8;
    pub const NODE: Range<usize> = 8..12;
    pub const LATENCY: Range<usize> = 12..16;
    pub const OCCUPANCY: Range<usize> = 16..20;
}

const KIND_PER_HOP: u8 = 1;
const KIND_POSTCARD: u8 = 2;
const KIND_HOP: u8 = 3;

/// Writes a message of `items` (1..=[`MAX_ITEMS`]) for a report sent to `dst_ip` into `buf`; its length,
/// or `None` when there are no items, more than [`MAX_ITEMS`], or `buf` is too short for them.
pub fn emit(
    dst_ip: [u8; 4],
    items: impl IntoIterator<Item = FlowWork>,
    buf: &mut [u8],
) -> Option<usize> {
    let mut items = items.into_iter();
    let mut n = 0;
    for w in items.by_ref() {
        let at = HEADER_LEN + n * ITEM_LEN;
        if n == MAX_ITEMS {
            return None;
        }
        emit_item(&w, buf.get_mut(at..at + ITEM_LEN)?);
        n += 1;
    }
    if n == 0 {
        return None;
    }
    let head = buf.get_mut(..HEADER_LEN)?;
    head[field::ZERO].fill(0);
    head[field::ETHERTYPE].copy_from_slice(&ETHERTYPE.to_be_bytes());
    head[field::DST_IP].copy_from_slice(&dst_ip);
    head[field::ITEMS] = n as u8;
    head[field::RESERVED] = 0;
    Some(HEADER_LEN + n * ITEM_LEN)
}

/// Writes one item into its `ITEM_LEN` bytes.
fn emit_item(w: &FlowWork, b: &mut [u8]) {
    let none = HopRecord {
        node: 0,
        hop_latency: 0,
        queue_id: 0,
        queue_occupancy: 0,
    };
    let (kind, flow, hop, path_len, node, record) = match *w {
        FlowWork::PerHop {
            flow,
            hop,
            path_len,
            node,
        } => (KIND_PER_HOP, flow, hop, path_len, node, none),
        FlowWork::Postcard {
            flow,
            hop,
            path_len,
            node,
        } => (KIND_POSTCARD, flow, hop, path_len, node, none),
        FlowWork::Hop { flow, hop, record } => (KIND_HOP, flow, hop, 0, record.node, record),
    };
    b[field::KIND] = kind;
    b[field::HOP] = hop;
    b[field::PATH_LEN] = path_len;
    b[field::QUEUE_ID] = record.queue_id;
    b[field::FLOW].copy_from_slice(&flow.to_be_bytes());
    b[field::NODE].copy_from_slice(&node.to_be_bytes());
    b[field::LATENCY].copy_from_slice(&record.hop_latency.to_be_bytes());
    b[field::OCCUPANCY].copy_from_slice(&record.queue_occupancy.to_be_bytes());
}

/// Whether `frame` is a message (its first 14 bytes say so; [`Message::parse`] checks the rest).
#[inline]
pub fn is_message(frame: &[u8]) -> bool {
    frame.len() >= HEADER_LEN
        && frame[field::ETHERTYPE] == ETHERTYPE.to_be_bytes()
        && frame[field::ZERO].iter().all(|&b| b == 0)
}

/// A message read: checked once, its items read from fixed offsets.
#[derive(Debug, Clone, Copy)]
pub struct Message<'a> {
    dst_ip: [u8; 4],
    items: &'a [u8],
}

/// Why a message was refused (a bug between workers, never a frame from the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum MessageError {
    /// Not a message at all.
    #[error("not a flow-work message")]
    NotMessage,
    /// Its item count disagrees with its length, or is 0 or over [`MAX_ITEMS`].
    #[error("flow-work message of {len} bytes claims {items} items")]
    Length {
        /// Its length.
        len: usize,
        /// The items it claims.
        items: u8,
    },
    /// An item of an unknown kind.
    #[error("flow-work item of unknown kind {0}")]
    Kind(u8),
}

impl<'a> Message<'a> {
    /// Reads `frame` as a message; every item's kind is checked, so [`items`](Self::items) cannot fail.
    pub fn parse(frame: &'a [u8]) -> Result<Self, MessageError> {
        if !is_message(frame) || frame[field::RESERVED] != 0 {
            return Err(MessageError::NotMessage);
        }
        let n = frame[field::ITEMS];
        let len = HEADER_LEN + usize::from(n) * ITEM_LEN;
        if n == 0 || usize::from(n) > MAX_ITEMS || frame.len() != len {
            return Err(MessageError::Length {
                len: frame.len(),
                items: n,
            });
        }
        let items = &frame[HEADER_LEN..];
        for b in items.chunks_exact(ITEM_LEN) {
            if !matches!(b[field::KIND], KIND_PER_HOP | KIND_POSTCARD | KIND_HOP) {
                return Err(MessageError::Kind(b[field::KIND]));
            }
        }
        let mut dst_ip = [0; 4];
        dst_ip.copy_from_slice(&frame[field::DST_IP]);
        Ok(Message { dst_ip, items })
    }

    /// The report's destination address.
    pub fn dst_ip(&self) -> [u8; 4] {
        self.dst_ip
    }

    /// The items, in the order the receiver wrote them.
    pub fn items(&self) -> impl ExactSizeIterator<Item = FlowWork> + 'a {
        self.items.chunks_exact(ITEM_LEN).map(|b| {
            let be = |r: core::ops::Range<usize>| {
                u32::from_be_bytes([b[r.start], b[r.start + 1], b[r.start + 2], b[r.start + 3]])
            };
            let (flow, hop, path_len, node) = (
                be(field::FLOW),
                b[field::HOP],
                b[field::PATH_LEN],
                be(field::NODE),
            );
            match b[field::KIND] {
                KIND_PER_HOP => FlowWork::PerHop {
                    flow,
                    hop,
                    path_len,
                    node,
                },
                KIND_POSTCARD => FlowWork::Postcard {
                    flow,
                    hop,
                    path_len,
                    node,
                },
                // KIND_HOP (parse checked every kind).
                _ => FlowWork::Hop {
                    flow,
                    hop,
                    record: HopRecord {
                        node,
                        hop_latency: be(field::LATENCY),
                        queue_id: b[field::QUEUE_ID],
                        queue_occupancy: be(field::OCCUPANCY),
                    },
                },
            }
        })
    }
}

#[cfg(test)]
mod tests;
