//! The workloads: deterministic sequences of reports from a seed.
//!
//! Every random choice comes from one [`SplitMix64`] in a fixed order per frame, documented on each
//! variant, so `pktgen/trex/dta_workloads.py` can rebuild the same frames. Seqnums count per opcode from 0
//! (mod 256), as a reporter numbers its streams; reports are not retransmittable (a load generator does not
//! replay).

use dta_protocol::dta::{Opcode, SketchOp};
use dta_reporter::Report;
use serde::Serialize;

use crate::fattree::{FatTree, HOPS};
use crate::keys::KeyDist;
use crate::rng::SplitMix64;

/// Which workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Key-Write INT path tracing: key, then a fat-tree path (6 draws); data = the first D/4 (at most 5)
    /// switch IDs, zero padded to D (D = 4: a 4-byte postcard value; D = 28: the 5 x 4-byte path).
    Keywrite,
    /// Key-Increment counters: key (1 draw); counter = the configured addend.
    Keyincrement,
    /// Append 4-byte events over many lists: list (1 draw); data = the event number, big-endian in E bytes.
    Append,
    /// Postcarding 5-hop paths: every 5 frames a new flow, key then path (7 draws); frame j of the flow is
    /// hop j + 1 with that hop's switch ID.
    Postcard,
    /// Sketch-Merge columns: reporter = i mod R, column = (i / R) mod C; `rows` counter draws (mod 1024).
    Sketch,
    /// A third each of Key-Write, Key-Increment and Append: 1 draw picks which, then that workload's draws.
    Mix,
}

/// Parameters of a workload.
#[derive(Debug, Clone)]
pub struct Params {
    /// Which workload.
    pub kind: Kind,
    /// Key (or, for Append, list id) distribution.
    pub keys: KeyDist,
    /// Key-Write / Key-Increment redundancy N.
    pub redundancy: u8,
    /// Key-Write data size D.
    pub keywrite_data_len: usize,
    /// Append entry size E.
    pub append_entry_len: usize,
    /// The fat tree paths run through.
    pub tree: FatTree,
    /// Key-Increment addend.
    pub counter: u64,
    /// Sketch id, rows, columns and reporters.
    pub sketch: SketchParams,
    /// Seed.
    pub seed: u64,
}

/// Sketch-Merge workload shape.
#[derive(Debug, Clone, Copy)]
pub struct SketchParams {
    /// Sketch id.
    pub id: u8,
    /// Sum or max.
    pub op: SketchOp,
    /// Counters per column, 1..=255.
    pub rows: u8,
    /// Columns per round.
    pub columns: u16,
    /// Reporters interleaved.
    pub reporters: u16,
}

/// Generates a workload's reports, with their seqnums.
#[derive(Debug, Clone)]
pub struct Generator {
    p: Params,
    rng: SplitMix64,
    index: u64,
    seq: [u8; 7],
    flow: (u32, [u32; HOPS]),
}

impl Generator {
    /// A generator at frame 0.
    pub fn new(p: Params) -> Self {
        Generator {
            rng: SplitMix64::new(p.seed),
            p,
            index: 0,
            seq: [0; 7],
            flow: (0, [0; HOPS]),
        }
    }

    /// Frames generated so far.
    pub fn index(&self) -> u64 {
        self.index
    }

    /// The next report and its seqnum.
    pub fn next_report(&mut self) -> (Report, u8) {
        let kind = match self.p.kind {
            Kind::Mix => match self.rng.below(3) {
                0 => Kind::Keywrite,
                1 => Kind::Keyincrement,
                _ => Kind::Append,
            },
            k => k,
        };
        let r = self.report(kind);
        self.index += 1;
        let s = &mut self.seq[usize::from(r.opcode().code())];
        let seq = *s;
        *s = s.wrapping_add(1);
        (r, seq)
    }

    fn report(&mut self, kind: Kind) -> Report {
        let i = self.index;
        match kind {
            Kind::Keywrite => {
                let key = self.p.keys.sample(&mut self.rng);
                let path = self.p.tree.path(&mut self.rng);
                let mut data = vec![0u8; self.p.keywrite_data_len];
                for (chunk, id) in data.chunks_exact_mut(4).zip(path) {
                    chunk.copy_from_slice(&id.to_be_bytes());
                }
                Report::KeyWrite {
                    redundancy: self.p.redundancy,
                    key,
                    data,
                }
            }
            Kind::Keyincrement => Report::KeyIncrement {
                redundancy: self.p.redundancy,
                key: self.p.keys.sample(&mut self.rng),
                counter: self.p.counter,
            },
            Kind::Append => {
                let list_id = self.p.keys.sample(&mut self.rng);
                let e = self.p.append_entry_len;
                let be = i.to_be_bytes();
                let mut data = vec![0u8; e];
                let n = e.min(be.len());
                data[e - n..].copy_from_slice(&be[be.len() - n..]);
                Report::Append { list_id, data }
            }
            Kind::Postcard => {
                let hop = (i % HOPS as u64) as usize;
                if hop == 0 {
                    let key = self.p.keys.sample(&mut self.rng);
                    self.flow = (key, self.p.tree.path(&mut self.rng));
                }
                Report::Postcard {
                    key: self.flow.0,
                    hop: hop as u8 + 1,
                    data: self.flow.1[hop],
                }
            }
            Kind::Sketch => {
                let s = self.p.sketch;
                let reporters = u64::from(s.reporters.max(1));
                let counters = (0..s.rows.max(1))
                    .map(|_| self.rng.below(1024) as u32)
                    .collect();
                Report::Sketch {
                    sketch_id: s.id,
                    op: s.op,
                    reporter_id: (i % reporters) as u16,
                    column: ((i / reporters) % u64::from(s.columns.max(1))) as u16,
                    counters,
                }
            }
            Kind::Mix => unreachable_mix(),
        }
    }
}

/// `report` is only called with a concrete kind; a mix resolves to one first. Falling back to an empty
/// Key-Increment would hide a bug, so this is a debug assertion with a harmless release fallback.
fn unreachable_mix() -> Report {
    debug_assert!(false, "mix must be resolved before building a report");
    Report::KeyIncrement {
        redundancy: 1,
        key: 0,
        counter: 0,
    }
}

/// The opcodes a workload sends.
pub fn opcodes(kind: Kind) -> &'static [Opcode] {
    match kind {
        Kind::Keywrite => &[Opcode::KeyWrite],
        Kind::Keyincrement => &[Opcode::KeyIncrement],
        Kind::Append => &[Opcode::Append],
        Kind::Postcard => &[Opcode::Postcard],
        Kind::Sketch => &[Opcode::SketchMerge],
        Kind::Mix => &[Opcode::KeyWrite, Opcode::KeyIncrement, Opcode::Append],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(kind: Kind) -> Params {
        Params {
            kind,
            keys: KeyDist::uniform(0, 1000),
            redundancy: 2,
            keywrite_data_len: 28,
            append_entry_len: 4,
            tree: FatTree::new(4).unwrap(),
            counter: 1,
            sketch: SketchParams {
                id: 0,
                op: SketchOp::Sum,
                rows: 3,
                columns: 2,
                reporters: 2,
            },
            seed: 42,
        }
    }

    #[test]
    fn postcards_come_in_paths_of_five() {
        let mut g = Generator::new(params(Kind::Postcard));
        let flow: Vec<_> = (0..5).map(|_| g.next_report()).collect();
        let mut keys = Vec::new();
        for (j, (r, seq)) in flow.iter().enumerate() {
            assert_eq!(*seq, j as u8);
            match r {
                Report::Postcard { key, hop, .. } => {
                    assert_eq!(*hop, j as u8 + 1);
                    keys.push(*key);
                }
                other => panic!("{other:?}"),
            }
        }
        assert!(keys.iter().all(|k| *k == keys[0]));
    }

    #[test]
    fn keywrite_carries_the_path_and_sketch_interleaves() {
        let mut g = Generator::new(params(Kind::Keywrite));
        let (r, _) = g.next_report();
        let Report::KeyWrite { data, .. } = r else {
            panic!("{r:?}")
        };
        assert_eq!(data.len(), 28);
        assert_eq!(&data[20..], &[0; 8]);
        let edge = u32::from_be_bytes([data[0], data[1], data[2], data[3]]);
        assert!((13..=20).contains(&edge));

        let mut g = Generator::new(params(Kind::Sketch));
        let got: Vec<(u16, u16)> = (0..5)
            .map(|_| match g.next_report().0 {
                Report::Sketch {
                    reporter_id,
                    column,
                    counters,
                    ..
                } => {
                    assert_eq!(counters.len(), 3);
                    (reporter_id, column)
                }
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(got, [(0, 0), (1, 0), (0, 1), (1, 1), (0, 0)]);
    }

    #[test]
    fn mix_numbers_each_opcode_separately() {
        let mut g = Generator::new(params(Kind::Mix));
        let mut next = [0u8; 7];
        for _ in 0..300 {
            let (r, seq) = g.next_report();
            let op = usize::from(r.opcode().code());
            assert_eq!(seq, next[op]);
            next[op] = next[op].wrapping_add(1);
        }
        assert!(next[1] > 50 && next[2] > 50 && next[3] > 50, "{next:?}");
    }
}
