//! Taking work in: pushes into the ring's queue (in place, as the hot paths need), and the reports
//! the queued and unacknowledged work completes.

use super::ring;
use super::state::Requester;
use super::work::WorkRequest;
use crate::frames::{Op, Payload};
use crate::stats::Tag;

impl Requester {
    /// Queues a work request. The caller checks [`queue_room`](Self::queue_room) for reports; internal
    /// flushes (timers) may go past it by a few entries rather than lose data already accepted.
    #[inline]
    pub fn push(&mut self, wr: WorkRequest) {
        // Its `psn`, `sent_at` and flags are set when it enters the window.
        self.ring.push_back(wr);
    }

    /// Queues a WRITE of `payload` at `va`, tagged `tag`: what [`push`](Self::push) of that work request
    /// queues, with the work request written field by field into its ring slot. `push` builds the whole
    /// work request first and copies it in after the ring's growth check (a call the work request must
    /// outlive, so it sat on the stack): callgrind counted ~20 instructions a Key-Write copy for that.
    #[inline(always)]
    pub fn push_write(&mut self, tag: Tag, va: u64, rkey: u32, payload: Payload) {
        // Its `psn`, `sent_at` and flags are set when it enters the window.
        let Some(wr) = self.ring.push_back_in_place() else {
            return;
        };
        wr.tag = tag;
        // A caller whose write completes reports says so next ([`add_reports`](Self::add_reports)).
        wr.reports = 0;
        ring::overwrite(&mut wr.op, Op::Write { va, rkey, payload });
    }

    /// Adds `n` reports to the work request pushed last: it completes them (see
    /// [`WorkRequest::reports`]). Called right after the push, so that one is in the queue.
    #[inline]
    pub fn add_reports(&mut self, n: u32) {
        if let Some(last) = self.ring.len().checked_sub(1) {
            if let Some(f) = self.ring.get_mut(last) {
                f.wr.reports = f.wr.reports.saturating_add(n);
            }
        }
    }

    /// Reports that the work queued or unacknowledged completes: what is lost if the QP's work is dropped.
    pub fn held_reports(&self) -> u64 {
        (0..self.ring.len())
            .filter_map(|i| self.ring.get(i))
            .map(|f| u64::from(f.wr.reports))
            .sum()
    }

    /// Queues `n` work requests tagged `tag`, the `k`th's operation `op(k)` (`k` in `0..n`): what `n`
    /// [`push`](Self::push)es of them queue, with the ring's growth checked and its length moved once
    /// for all `n` and each operation built in its slot (Key-Write's and Key-Increment's N copies a
    /// report).
    #[inline(always)]
    pub fn push_n_with(&mut self, tag: Tag, n: u8, mut op: impl FnMut(u8) -> Op) {
        // Their `psn`, `sent_at` and flags are set when they enter the window.
        let (slots, first, mask) = self.ring.push_back_n_in_place(usize::from(n));
        for k in 0..n {
            // Always there: `mask` wraps an index into the slots (a power of two of them).
            let Some(slot) = slots.get_mut((first + usize::from(k)) & mask) else {
                continue;
            };
            let wr = &mut slot.wr;
            wr.tag = tag;
            // The report's last copy carries it (written once all its copies are).
            wr.reports = u32::from(k + 1 == n);
            ring::overwrite(&mut wr.op, op(k));
        }
    }
}
