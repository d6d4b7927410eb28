//! Key-Write lookup (paper appendix A.1, Algorithm 2): read the N slots of a key, keep those whose checksum
//! matches, and return the value a plurality of them holds if at least T agree.

use dta_protocol::hash::key_checksum;
use dta_protocol::layout::KeyWriteGeometry;
use serde::Serialize;

use super::{bytes, check_n, to_hex};
use crate::error::Result;

/// One distinct value among the matching slots and how many slots hold it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Candidate {
    /// The data bytes, hex.
    pub data: String,
    /// Slots holding it.
    pub votes: u32,
}

/// The outcome of a Key-Write query.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum KeyWriteAnswer {
    /// One value has a strict plurality and at least T votes.
    Found {
        /// The value, hex.
        data: String,
        /// Its votes.
        votes: u32,
        /// Distinct slots read (fewer than N when copies of the key collide).
        slots_read: u32,
    },
    /// No slot matches, or the only matching value has fewer than T votes.
    Empty {
        /// Slots whose checksum matched.
        matching: u32,
    },
    /// Matching slots disagree and no value wins: a tie at the top, or a winner below T.
    Conflict {
        /// Every distinct matching value, most votes first.
        candidates: Vec<Candidate>,
    },
}

/// Looks `key` up with redundancy `n` and consensus threshold `threshold` in a Key-Write region `mem`.
pub fn key_write(
    mem: &[u8],
    g: &KeyWriteGeometry,
    key: u32,
    n: u8,
    threshold: u32,
) -> Result<KeyWriteAnswer> {
    check_n(n, g.n_max())?;
    let checksum = key_checksum(key);
    // Two copies of a key can hash to one slot; that slot was written once per copy but holds one value,
    // so it is read (and votes) once.
    let mut slots: Vec<u64> = (0..n).map(|i| g.slot(key, i)).collect();
    slots.sort_unstable();
    slots.dedup();
    let mut tally: Vec<(Vec<u8>, u32)> = Vec::new();
    let mut matching = 0;
    for &slot in &slots {
        let entry = bytes(
            mem,
            slot * u64::from(g.entry_size()),
            g.entry_size() as usize,
        )?;
        let Some((sum, data)) = g.decode_entry(entry) else {
            continue;
        };
        if sum != checksum {
            continue;
        }
        matching += 1;
        match tally.iter_mut().find(|(d, _)| d == data) {
            Some((_, v)) => *v += 1,
            None => tally.push((data.to_vec(), 1)),
        }
    }
    // Most votes first; equal votes keep the order of first appearance (slot order), for stable output.
    tally.sort_by_key(|t| std::cmp::Reverse(t.1));
    let answer = match tally.as_slice() {
        [] => KeyWriteAnswer::Empty { matching },
        [(data, votes), rest @ ..] => {
            let strict = rest.first().map_or(true, |(_, v)| v < votes);
            if strict && *votes >= threshold.max(1) {
                KeyWriteAnswer::Found {
                    data: to_hex(data),
                    votes: *votes,
                    slots_read: slots.len() as u32,
                }
            } else if rest.is_empty() {
                KeyWriteAnswer::Empty { matching }
            } else {
                KeyWriteAnswer::Conflict {
                    candidates: tally
                        .iter()
                        .map(|(d, v)| Candidate {
                            data: to_hex(d),
                            votes: *v,
                        })
                        .collect(),
                }
            }
        }
    };
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Key 1 has checksum 0x99f8b879 (DESIGN.md section 3) and slots 173, 100, 212, 95 for S = 256 with
    // the per-copy placement polynomials (dta-protocol hash.rs).
    const KEY1_SLOTS: [usize; 4] = [173, 100, 212, 95];
    const KEY1_SUM_LE: [u8; 4] = [0x79, 0xb8, 0xf8, 0x99];

    fn put(mem: &mut [u8], slot: usize, sum: [u8; 4], data: [u8; 4]) {
        mem[slot * 8..slot * 8 + 4].copy_from_slice(&sum);
        mem[slot * 8 + 4..slot * 8 + 8].copy_from_slice(&data);
    }

    fn geometry() -> KeyWriteGeometry {
        KeyWriteGeometry::new(256, 8, 4).unwrap()
    }

    #[test]
    fn finds_the_value_written_to_all_four_slots() {
        let mut mem = vec![0u8; 2048];
        for s in KEY1_SLOTS {
            put(&mut mem, s, KEY1_SUM_LE, [0xde, 0xad, 0xbe, 0xef]);
        }
        let a = key_write(&mem, &geometry(), 1, 4, 1).unwrap();
        assert_eq!(
            a,
            KeyWriteAnswer::Found {
                data: "deadbeef".into(),
                votes: 4,
                slots_read: 4
            }
        );
        // With N = 2 only slots 173 and 100 are read.
        let a = key_write(&mem, &geometry(), 1, 2, 2).unwrap();
        assert!(matches!(a, KeyWriteAnswer::Found { votes: 2, .. }));
        assert!(key_write(&mem, &geometry(), 1, 5, 1).is_err());
    }

    #[test]
    fn overwritten_slots_and_plurality() {
        let mut mem = vec![0u8; 2048];
        put(&mut mem, 173, KEY1_SUM_LE, [1, 1, 1, 1]);
        put(&mut mem, 100, KEY1_SUM_LE, [2, 2, 2, 2]);
        put(&mut mem, 212, KEY1_SUM_LE, [1, 1, 1, 1]);
        // Slot 95 now holds key 0's entry (checksum 0x2144df1c): ignored.
        put(&mut mem, 95, [0x1c, 0xdf, 0x44, 0x21], [9, 9, 9, 9]);
        let a = key_write(&mem, &geometry(), 1, 4, 1).unwrap();
        assert_eq!(
            a,
            KeyWriteAnswer::Found {
                data: "01010101".into(),
                votes: 2,
                slots_read: 4
            }
        );
        // Threshold 3: the winner has only 2 votes and there is disagreement.
        let a = key_write(&mem, &geometry(), 1, 4, 3).unwrap();
        assert_eq!(
            a,
            KeyWriteAnswer::Conflict {
                candidates: vec![
                    Candidate {
                        data: "01010101".into(),
                        votes: 2
                    },
                    Candidate {
                        data: "02020202".into(),
                        votes: 1
                    },
                ]
            }
        );
    }

    #[test]
    fn ties_conflict_and_nothing_is_empty() {
        let mut mem = vec![0u8; 2048];
        put(&mut mem, 173, KEY1_SUM_LE, [1, 0, 0, 0]);
        put(&mut mem, 100, KEY1_SUM_LE, [2, 0, 0, 0]);
        let a = key_write(&mem, &geometry(), 1, 4, 1).unwrap();
        assert!(matches!(a, KeyWriteAnswer::Conflict { ref candidates } if candidates.len() == 2));
        assert_eq!(
            key_write(&mem, &geometry(), 123, 4, 1).unwrap(),
            KeyWriteAnswer::Empty { matching: 0 }
        );
        // One matching slot below a threshold of 2 is empty, not a conflict.
        let mut mem = vec![0u8; 2048];
        put(&mut mem, 212, KEY1_SUM_LE, [7, 0, 0, 0]);
        assert_eq!(
            key_write(&mem, &geometry(), 1, 4, 2).unwrap(),
            KeyWriteAnswer::Empty { matching: 1 }
        );
        assert_eq!(
            serde_json::to_string(&key_write(&mem, &geometry(), 1, 4, 1).unwrap()).unwrap(),
            r#"{"outcome":"found","data":"07000000","votes":1,"slots_read":4}"#
        );
    }
}
