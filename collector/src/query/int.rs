//! Queries that speak INT (issue 17): a flow's path, its per-hop state, a switch's drops and its
//! congested queues, read where the translator's INT front end writes them
//! (`dta_protocol::int::mapping`, the contract). Each is an existing primitive's query on the contract's
//! keys, its answer decoded into the contract's records: Postcarding for the path, Key-Write per (flow,
//! hop) for the hop records, Key-Increment per (node, reason) for the drop counts, and the Append entries
//! of the drop and queue lists for the events.
//!
//! Keys spread over collectors (`key_checksum(key) mod n`, the translator's routing), so one flow's hop
//! records can sit on several collectors. A [`Shard`] restricts a query to the keys of one collector, and
//! the `merge` functions join the shards' answers into the answer one collector holding every key would
//! give. (With 2, 4, 8 or 16 collectors, hops 1..=7 of a flow happen to share one: CRC-32 is affine, and
//! the low four bits of `key_checksum(flow_hop_key(f, hop))` do not depend on the hop's low three bits.
//! Nothing here relies on it.)

mod drops;
mod events;
mod flow;
mod hops;
mod path;
mod queues;
mod shard;

pub use drops::{drop_counts, drop_events, DropCount, IntDropsAnswer};
pub use events::{DropEventView, DropEvents, EventWindow, QueueEventView, QueueEvents, Window};
pub use flow::{parse_flow, FlowText};
pub use hops::{
    flow_hops, FlowTotals, HopAnswer, HopCandidate, HopOutcome, HopView, IntFlowAnswer,
    MaxOccupancy,
};
pub use path::IntPathAnswer;
pub use queues::{queue_events, IntQueuesAnswer};
pub use shard::Shard;

use crate::error::{Error, Result};

/// Bytes from the lower-case hex the Key-Write and Append queries answer with.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_decodes_and_refuses_odd_or_bad_digits() {
        assert_eq!(from_hex("00ff1a").unwrap(), [0, 255, 26]);
        assert!(from_hex("").unwrap().is_empty());
        assert!(from_hex("0").is_err());
        assert!(from_hex("zz").is_err());
    }
}
