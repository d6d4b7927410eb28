//! Report loss from sequence numbers. Each (node, hardware id) numbers its reports (32 bits in v0.5,
//! 22 bits in v2.0); a jump forward of k means k - 1 reports were lost on the way. INT has no NACK, so
//! loss is only counted, as DTA gaps are.

use std::collections::HashMap;

/// What a sequence number says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeqVerdict {
    /// The source's first report, or the next one in order after `lost` missing ones.
    InOrder {
        /// Reports missing between the previous one and this one.
        lost: u64,
    },
    /// At or behind the last one seen (reordered or repeated).
    Late,
    /// The table is full: this source is not tracked.
    Untracked,
}

/// The last sequence number per (node, hardware id).
#[derive(Debug)]
pub struct SequenceGaps {
    last: HashMap<(u32, u8), u32>,
    cap: usize,
}

impl SequenceGaps {
    /// Tracks at most `cap` sources.
    pub fn new(cap: usize) -> Self {
        SequenceGaps {
            last: HashMap::new(),
            cap,
        }
    }

    /// Checks `seq`, a `bits`-bit sequence number of (`node`, `hw_id`).
    pub fn check(&mut self, node: u32, hw_id: u8, seq: u32, bits: u32) -> SeqVerdict {
        let mask = if bits >= 32 {
            u32::MAX
        } else {
            (1 << bits) - 1
        };
        let seq = seq & mask;
        let full = self.last.len() >= self.cap;
        match self.last.get_mut(&(node, hw_id)) {
            None if full => SeqVerdict::Untracked,
            None => {
                self.last.insert((node, hw_id), seq);
                SeqVerdict::InOrder { lost: 0 }
            }
            Some(last) => {
                // Serial-number arithmetic: ahead by less than half the space is forward.
                let ahead = seq.wrapping_sub(*last) & mask;
                if ahead == 0 || ahead > mask / 2 {
                    return SeqVerdict::Late;
                }
                *last = seq;
                SeqVerdict::InOrder {
                    lost: u64::from(ahead - 1),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_wraps_and_late_reports() {
        let mut s = SequenceGaps::new(2);
        assert_eq!(s.check(1, 0, 10, 32), SeqVerdict::InOrder { lost: 0 });
        assert_eq!(s.check(1, 0, 11, 32), SeqVerdict::InOrder { lost: 0 });
        assert_eq!(s.check(1, 0, 15, 32), SeqVerdict::InOrder { lost: 3 });
        assert_eq!(s.check(1, 0, 13, 32), SeqVerdict::Late);
        assert_eq!(s.check(1, 0, 15, 32), SeqVerdict::Late);
        // A second hardware id of the same node is its own sequence.
        assert_eq!(
            s.check(1, 1, 0x3F_FFFE, 22),
            SeqVerdict::InOrder { lost: 0 }
        );
        // 22-bit wrap: 0x3FFFFE -> 1 skips 0x3FFFFF and 0.
        assert_eq!(s.check(1, 1, 1, 22), SeqVerdict::InOrder { lost: 2 });
        assert_eq!(s.check(2, 0, 0, 32), SeqVerdict::Untracked);
        // 32-bit wrap.
        let mut s = SequenceGaps::new(1);
        s.check(9, 0, u32::MAX, 32);
        assert_eq!(s.check(9, 0, 0, 32), SeqVerdict::InOrder { lost: 0 });
    }
}
