//! Report loss from sequence numbers. Each (node, hardware id) numbers its reports (32 bits in v0.5,
//! 22 bits in v2.0); a jump forward of k means k - 1 reports were lost on the way. INT has no NACK, so
//! loss is only counted, as DTA gaps are.
//!
//! A jump is counted as loss at once, so the count is current; a report of the gap that arrives later
//! (reordered on the way) then says it was late, not lost, and the count moves back
//! ([`SeqVerdict::Late`]'s `filled_gap`). Which numbers of a gap have arrived is kept for the last
//! [`WINDOW`] numbers of each source: a report later than that, or a repeat, is late without changing
//! the loss count.

use std::collections::HashMap;

/// Sequence numbers behind the newest one whose arrival is remembered per source.
pub const WINDOW: u32 = 64;

/// What a sequence number says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeqVerdict {
    /// The source's first report, or the next one in order after `lost` missing ones.
    InOrder {
        /// Reports missing between the previous one and this one.
        lost: u64,
    },
    /// At or behind the last one seen (reordered or repeated).
    Late {
        /// It is one of a gap already counted as lost, seen for the first time: one report fewer was
        /// lost.
        filled_gap: bool,
    },
    /// The table is full: this source is not tracked.
    Untracked,
}

/// One source's newest number and which of the [`WINDOW`] before it arrived.
#[derive(Debug, Clone, Copy)]
struct Source {
    last: u32,
    /// Bit i: number `last - 1 - i` arrived (or was never counted lost: before the first report).
    seen: u64,
}

/// The last sequence number per (node, hardware id).
#[derive(Debug)]
pub struct SequenceGaps {
    last: HashMap<(u32, u8), Source>,
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
                // Nothing before the first report was counted lost.
                self.last.insert(
                    (node, hw_id),
                    Source {
                        last: seq,
                        seen: u64::MAX,
                    },
                );
                SeqVerdict::InOrder { lost: 0 }
            }
            Some(src) => {
                // Serial-number arithmetic: ahead by less than half the space is forward.
                let ahead = seq.wrapping_sub(src.last) & mask;
                if ahead == 0 || ahead > mask / 2 {
                    let behind = src.last.wrapping_sub(seq) & mask;
                    return SeqVerdict::Late {
                        filled_gap: src.fill(behind),
                    };
                }
                src.advance(ahead);
                src.last = seq;
                SeqVerdict::InOrder {
                    lost: u64::from(ahead - 1),
                }
            }
        }
    }
}

impl Source {
    /// The newest number moves `ahead` (>= 1) forward: the old newest arrived, the `ahead - 1` between
    /// did not (yet).
    fn advance(&mut self, ahead: u32) {
        let shifted = self.seen.checked_shl(ahead).unwrap_or(0);
        let old_last = 1u64.checked_shl(ahead - 1).unwrap_or(0);
        self.seen = shifted | old_last;
    }

    /// The number `behind` (>= 0) before the newest arrived; whether it was a gap's, not seen before.
    fn fill(&mut self, behind: u32) -> bool {
        if behind == 0 || behind > WINDOW {
            return false;
        }
        let bit = 1u64 << (behind - 1);
        let gap = self.seen & bit == 0;
        self.seen |= bit;
        gap
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LATE: SeqVerdict = SeqVerdict::Late { filled_gap: false };
    const FILLED: SeqVerdict = SeqVerdict::Late { filled_gap: true };

    #[test]
    fn gaps_wraps_and_late_reports() {
        let mut s = SequenceGaps::new(2);
        assert_eq!(s.check(1, 0, 10, 32), SeqVerdict::InOrder { lost: 0 });
        assert_eq!(s.check(1, 0, 11, 32), SeqVerdict::InOrder { lost: 0 });
        assert_eq!(s.check(1, 0, 15, 32), SeqVerdict::InOrder { lost: 3 });
        // 13 was one of the 3: late, not lost; again, a repeat.
        assert_eq!(s.check(1, 0, 13, 32), FILLED);
        assert_eq!(s.check(1, 0, 13, 32), LATE);
        assert_eq!(s.check(1, 0, 15, 32), LATE);
        assert_eq!(s.check(1, 0, 11, 32), LATE);
        // Before the first report: never counted lost.
        assert_eq!(s.check(1, 0, 9, 32), LATE);
        // A second hardware id of the same node is its own sequence.
        assert_eq!(
            s.check(1, 1, 0x3F_FFFE, 22),
            SeqVerdict::InOrder { lost: 0 }
        );
        // 22-bit wrap: 0x3FFFFE -> 1 skips 0x3FFFFF and 0, and 0x3FFFFF then fills its gap.
        assert_eq!(s.check(1, 1, 1, 22), SeqVerdict::InOrder { lost: 2 });
        assert_eq!(s.check(1, 1, 0x3F_FFFF, 22), FILLED);
        assert_eq!(s.check(2, 0, 0, 32), SeqVerdict::Untracked);
        // 32-bit wrap.
        let mut s = SequenceGaps::new(1);
        s.check(9, 0, u32::MAX, 32);
        assert_eq!(s.check(9, 0, 0, 32), SeqVerdict::InOrder { lost: 0 });
    }

    /// The gaps' numbers are remembered for `WINDOW` numbers behind the newest, through long jumps.
    #[test]
    fn the_window_remembers_gaps_and_forgets_beyond_it() {
        let mut s = SequenceGaps::new(1);
        s.check(1, 0, 100, 32);
        // A jump longer than the window: 200 lost.
        assert_eq!(s.check(1, 0, 301, 32), SeqVerdict::InOrder { lost: 200 });
        assert_eq!(s.check(1, 0, 301 - WINDOW, 32), FILLED);
        assert_eq!(s.check(1, 0, 300 - WINDOW, 32), LATE);
        assert_eq!(s.check(1, 0, 100, 32), LATE);
        // The newest's predecessor (in order) is remembered as arrived across a jump of one.
        assert_eq!(s.check(1, 0, 302, 32), SeqVerdict::InOrder { lost: 0 });
        assert_eq!(s.check(1, 0, 301, 32), LATE);
        assert_eq!(s.check(1, 0, 300, 32), FILLED);
        // A jump of exactly the window: the old newest is the window's last bit.
        assert_eq!(
            s.check(1, 0, 302 + WINDOW, 32),
            SeqVerdict::InOrder {
                lost: u64::from(WINDOW - 1)
            }
        );
        assert_eq!(s.check(1, 0, 302, 32), LATE);
        assert_eq!(s.check(1, 0, 303, 32), FILLED);
    }
}
