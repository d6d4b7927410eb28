//! `int-flow`: a flow's hop records, one Key-Write per (flow, hop), and their totals.

use dta_protocol::int::inner::FlowKey;
use dta_protocol::int::mapping::{flow_hop_key, flow_key, HopRecord, HOP_RECORD_LEN};
use dta_protocol::layout::KeyWriteGeometry;
use serde::{Deserialize, Serialize};

use super::{from_hex, FlowText, Shard};
use crate::error::{Error, Result};
use crate::query::{key_write, KeyWriteAnswer};

/// The contract's `HopRecord`, as answers carry it (serde on the type itself).
pub type HopView = HopRecord;

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
        // Each hop key lives on one collector: a hop twice means the shards were not I/N of one N.
        if let Some(w) = all.hops.windows(2).find(|w| w[0].hop == w[1].hop) {
            return Err(Error::BadQuery(format!(
                "hop {} answered by two collectors: their shards overlap",
                w[0].hop
            )));
        }
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
        .ok_or_else(|| Error::BadQuery(format!("data {hex} is shorter than a hop record")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_decode_from_the_first_12_data_bytes() {
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
