//! What every epoch exports beside the lists: the INT drop counters per (node, reason) as what the epoch
//! added, the Key-Write and Key-Increment answers of the operator's key set, and the sketches' changed
//! counters ([`super::sketch`]), stamped with the epoch's time.

use std::collections::{BTreeSet, HashMap};

use dta_protocol::layout::{KeyIncrementGeometry, KeyWriteGeometry};

use super::keys::KeySet;
use super::regions::region;
use super::sketch::{SketchReader, SketchSpec};
use super::table::{Batch, Table, Value};
use crate::error::Result;
use crate::memory::Arena;
use crate::query::int::{drop_counts, Shard};
use crate::query::{key_increment, key_write, KeyWriteAnswer};

/// The redundancy the epoch reads take, from the regions' configuration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Redundancy {
    /// Key-Write copies (its `redundancy`, else `n_max`: copies never written do not vote).
    pub keywrite: Option<u8>,
    /// Key-Increment copies (its `redundancy`, else 1 where `n_max` is 1); none: unknowable, so drop
    /// counts and Key-Increment keys are not exported (a minimum over unwritten copies reads 0).
    pub keyincrement: Option<u8>,
}

/// The per-epoch reader and what it remembers between epochs.
#[derive(Debug)]
pub struct EpochReader {
    shard: Shard,
    n: Redundancy,
    keys: KeySet,
    /// Nodes whose drop counters are read: configured, and every node seen in a drop event.
    nodes: BTreeSet<u32>,
    /// The totals of the last epoch, per (node, reason) and per Key-Increment key.
    drops_last: HashMap<(u32, u8), u64>,
    increments_last: HashMap<u32, u64>,
    sketches: SketchReader,
}

impl EpochReader {
    /// A reader of `keys` and of the drop counters of `nodes` (and of nodes seen later).
    pub fn new(shard: Shard, n: Redundancy, keys: KeySet, nodes: &[u32]) -> Self {
        EpochReader {
            shard,
            n,
            keys,
            nodes: nodes.iter().copied().collect(),
            drops_last: HashMap::new(),
            increments_last: HashMap::new(),
            sketches: SketchReader::default(),
        }
    }

    /// Also reads `sketches` every epoch.
    pub fn with_sketches(mut self, sketches: Vec<SketchSpec>) -> Self {
        self.sketches = SketchReader::new(sketches);
        self
    }

    /// A node seen in a drop event: its counters are read from now on.
    pub fn saw_node(&mut self, node: u32) {
        self.nodes.insert(node);
    }

    /// The epoch's rows at time `epoch_ms`.
    pub fn read(&mut self, arena: &Arena, epoch_ms: u64) -> Result<Vec<Batch>> {
        let mut out = Vec::new();
        let has_increments = arena.find_geometry::<KeyIncrementGeometry>(None).is_ok();
        if let (Some(n), true) = (self.n.keyincrement, has_increments) {
            out.push(self.drop_rows(arena, n, epoch_ms)?);
            out.push(self.increment_rows(arena, n, epoch_ms)?);
        }
        if arena.find_geometry::<KeyWriteGeometry>(None).is_ok() && !self.keys.keywrite.is_empty() {
            out.push(self.write_rows(arena, epoch_ms)?);
        }
        // A sketch that cannot be read says so without costing the epoch its other rows (whose
        // deltas are already taken).
        match self.sketches.read(arena, epoch_ms) {
            Ok(batches) => out.extend(batches),
            Err(e) => log::warn!("export: reading the sketches: {e}"),
        }
        out.retain(|b| !b.is_empty());
        Ok(out)
    }

    fn drop_rows(&mut self, arena: &Arena, n: u8, epoch_ms: u64) -> Result<Batch> {
        let mut b = Batch::new(Table::DropCounts, None, epoch_ms, 0);
        let (nodes, shard) = (&self.nodes, self.shard);
        let counts = region(arena, None, |mem, g: &KeyIncrementGeometry| {
            nodes
                .iter()
                .map(|&node| Ok((node, drop_counts(mem, g, node, None, n, shard)?)))
                .collect::<Result<Vec<_>>>()
        })?;
        for (node, counts) in counts {
            for c in counts {
                let last = self.drops_last.insert((node, c.reason), c.count);
                // Counters only grow; one that shrank was reset (a new region), so all of it is new.
                let delta = match last {
                    Some(l) if l <= c.count => c.count - l,
                    _ => c.count,
                };
                if delta > 0 {
                    b.push(vec![
                        Value::U64(epoch_ms),
                        Value::U32(node),
                        Value::U8(c.reason),
                        Value::U64(delta),
                        Value::U64(c.count),
                    ])?;
                }
            }
        }
        Ok(b)
    }

    fn increment_rows(&mut self, arena: &Arena, n: u8, epoch_ms: u64) -> Result<Batch> {
        let keys: Vec<u32> = self
            .keys
            .keyincrement
            .iter()
            .copied()
            .filter(|&k| self.shard.owns(k))
            .collect();
        let mut b = Batch::new(Table::KeyIncrementValues, None, epoch_ms, keys.len());
        let estimates = region(arena, None, |mem, g: &KeyIncrementGeometry| {
            keys.iter()
                .map(|&k| Ok((k, key_increment(mem, g, k, n)?.estimate)))
                .collect::<Result<Vec<_>>>()
        })?;
        for (key, estimate) in estimates {
            let last = self.increments_last.insert(key, estimate);
            let delta = match last {
                Some(l) if l <= estimate => estimate - l,
                _ => estimate,
            };
            b.push(vec![
                Value::U64(epoch_ms),
                Value::U32(key),
                Value::U64(estimate),
                Value::U64(delta),
            ])?;
        }
        Ok(b)
    }

    fn write_rows(&self, arena: &Arena, epoch_ms: u64) -> Result<Batch> {
        let keys: Vec<u32> = self
            .keys
            .keywrite
            .iter()
            .copied()
            .filter(|&k| self.shard.owns(k))
            .collect();
        let mut b = Batch::new(Table::KeyWriteValues, None, epoch_ms, keys.len());
        let answers = region(arena, None, |mem, g: &KeyWriteGeometry| {
            let n = self.n.keywrite.unwrap_or(g.n_max());
            keys.iter()
                .map(|&k| Ok((k, key_write(mem, g, k, n, 1)?)))
                .collect::<Result<Vec<_>>>()
        })?;
        for (key, answer) in answers {
            let (outcome, value, votes) = match answer {
                KeyWriteAnswer::Found { data, votes, .. } => ("found", data, votes),
                KeyWriteAnswer::Empty { matching } => ("empty", String::new(), matching),
                KeyWriteAnswer::Conflict { candidates } => {
                    let votes = candidates.first().map_or(0, |c| c.votes);
                    ("conflict", String::new(), votes)
                }
            };
            b.push(vec![
                Value::U64(epoch_ms),
                Value::U32(key),
                Value::Str(outcome.into()),
                Value::Str(value),
                Value::U32(votes),
            ])?;
        }
        Ok(b)
    }
}
