//! One Key-Write report to its collector, its fields in registers: the write that the report path (one
//! report, out of line) and the run loop of `key_write_run` (inlined there) both make.

use dta_protocol::dta::KeyWriteRepr;
use dta_protocol::hash::key_checksum;

use super::state::Engine;
use crate::counters::DropReason;

impl Engine {
    /// A Key-Write report to its collector, through `Collector::key_write_unrolled`. Its two callers are
    /// [`key_write_parts`](Self::key_write_parts) (one report, out of line) and the run loop of
    /// [`key_write_run`](Self::key_write_run) (inlined there). A Key-Write that reaches
    /// [`dispatch`](Self::dispatch) (only off the hot path: `handle_report` takes them first) and an INT
    /// hop record go through `submit` and the primitive's `offer` instead, the path every primitive shares.
    #[inline(always)]
    pub(super) fn key_write(&mut self, kw: &KeyWriteRepr, dst: [u8; 4]) -> Result<(), DropReason> {
        // Once per report: the entries store it and key-hash routing uses it.
        let checksum = key_checksum(kw.key);
        let i = self.route(|| checksum, dst).ok_or(DropReason::NoRegion)?;
        // Key-Write is written at once: its one outcome is `Accepted`.
        self.collectors[i].key_write_unrolled(kw, checksum)
    }

    /// [`key_write`](Self::key_write) of the report `redundancy`, `key`, `data`, its fields in registers:
    /// the general path's, for a Key-Write report that [`key_write_run`](Self::key_write_run) leaves to it
    /// (a tracked one, or one [`handle_frame`](Self::handle_frame) is given).
    ///
    /// Out of the receive loop: inlined there, its values took registers from the loop around every other
    /// report's path (Sketch-Merge's lost ~6 instructions a report to spills); out of line they have the
    /// whole register file for one call's cost.
    #[inline(never)]
    pub(super) fn key_write_parts(
        &mut self,
        redundancy: u8,
        key: u32,
        data: &[u8],
        dst: [u8; 4],
    ) -> Result<(), DropReason> {
        let kw = KeyWriteRepr {
            redundancy,
            key,
            data,
        };
        self.key_write(&kw, dst)
    }
}
