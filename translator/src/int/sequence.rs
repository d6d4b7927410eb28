//! Report loss from sequence numbers. Each (node, hardware id) numbers its reports (32 bits in v0.5,
//! 22 bits in v2.0); a jump forward of k means k - 1 reports were lost on the way. INT has no NACK, so
//! loss is only counted, as DTA gaps are.
//!
//! A jump is counted as loss at once, so the count is current; a report of the gap that arrives later
//! (reordered on the way) then says it was late, not lost, and the count moves back
//! ([`SeqVerdict::Late`]'s `filled_gap`). Which numbers of a gap have arrived is kept for the last
//! [`WINDOW`] numbers of each source: a report later than that, or a repeat, is late without changing
//! the loss count.
//!
//! A number may move at most [`MAX_JUMP`] from the newest, forward (a gap) or back (a late report).
//! Further is no loss a network makes but a reporter that restarted (or a forged or corrupted number):
//! it is counted as a reset ([`SeqVerdict::Reset`]) and tracking starts again from it, so one wild
//! number neither adds billions to the loss count nor makes the reports after it all "late".

use std::collections::HashMap;

use ahash::RandomState;

/// Sequence numbers behind the newest one whose arrival is remembered per source.
pub const WINDOW: u32 = 64;

/// The farthest a source's number may move from its newest, forward or back, and still be read as the
/// same sequence: 65,536 reports missing in a row (tens of milliseconds of a switch's reports at line
/// rate). A larger move is a reset.
pub const MAX_JUMP: u32 = 1 << 16;

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
    /// Farther than [`MAX_JUMP`] from the newest, either way: the source restarted its numbering (or the
    /// number is wild). Nothing is counted lost or late; tracking starts again from this number.
    Reset,
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
    last: HashMap<(u32, u8), Source, RandomState>,
    cap: usize,
}

impl SequenceGaps {
    /// Tracks at most `cap` sources.
    pub fn new(cap: usize) -> Self {
        SequenceGaps {
            last: HashMap::with_hasher(RandomState::new()),
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
                    if behind > MAX_JUMP {
                        return src.reset(seq);
                    }
                    return SeqVerdict::Late {
                        filled_gap: src.fill(behind),
                    };
                }
                if ahead > MAX_JUMP {
                    return src.reset(seq);
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
    /// Tracking starts again from `seq`, as from a first report.
    fn reset(&mut self, seq: u32) -> SeqVerdict {
        *self = Source {
            last: seq,
            seen: u64::MAX,
        };
        SeqVerdict::Reset
    }

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

    /// Issue 26, item 11: one v0.5 number that jumps 2^31 - 1 ahead used to add 2,147,483,646 to the
    /// loss count and make every genuine report after it late. Now it is a reset, and so is the genuine
    /// sequence taking over again; nothing is lost or late, and the genuine reports count gaps as before.
    #[test]
    fn a_wild_jump_is_a_reset_not_a_loss() {
        let mut s = SequenceGaps::new(4);
        for seq in 100..=110 {
            assert_eq!(s.check(1, 0, seq, 32), SeqVerdict::InOrder { lost: 0 });
        }
        assert_eq!(s.check(1, 0, 110 + (1 << 31) - 1, 32), SeqVerdict::Reset);
        assert_eq!(s.check(1, 0, 111, 32), SeqVerdict::Reset);
        assert_eq!(s.check(1, 0, 112, 32), SeqVerdict::InOrder { lost: 0 });
        assert_eq!(s.check(1, 0, 115, 32), SeqVerdict::InOrder { lost: 2 });
        assert_eq!(s.check(1, 0, 113, 32), FILLED);
        // The bound, both ways: MAX_JUMP ahead is a gap, one more a reset; likewise behind.
        assert_eq!(
            s.check(1, 0, 115 + MAX_JUMP, 32),
            SeqVerdict::InOrder {
                lost: u64::from(MAX_JUMP - 1)
            }
        );
        assert_eq!(s.check(1, 0, 115, 32), LATE);
        assert_eq!(s.check(1, 0, 114, 32), SeqVerdict::Reset);
        assert_eq!(s.check(1, 0, 115 + MAX_JUMP + 1, 32), SeqVerdict::Reset);
        // A reporter that restarts its numbering at 0 (22 bits, v2.0) is a reset, then in order.
        assert_eq!(
            s.check(2, 0, 3_000_000, 22),
            SeqVerdict::InOrder { lost: 0 }
        );
        assert_eq!(s.check(2, 0, 0, 22), SeqVerdict::Reset);
        assert_eq!(s.check(2, 0, 1, 22), SeqVerdict::InOrder { lost: 0 });
        // Across the 22-bit wrap within the bound: a gap, not a reset.
        assert_eq!(
            s.check(3, 0, 0x3F_FFF0, 22),
            SeqVerdict::InOrder { lost: 0 }
        );
        assert_eq!(s.check(3, 0, 0x10, 22), SeqVerdict::InOrder { lost: 0x1F });
    }
}
