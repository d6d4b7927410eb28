//! One description of the work a report asks for, and one way to route it to a collector's primitive.
//!
//! A DTA report's body and an INT report's actions both lower into [`Work`]; [`Engine::submit`] picks
//! the collector (by key, by list or by sketch, as the configuration routes each kind), checks what the
//! kind needs there (Key-Increment needs atomics), and hands it to the primitive. Adding a kind of work
//! means one arm here. Key-Write reports of a DTA burst take the `key_write_run` fast path before any of
//! this; an INT hop record, which is a Key-Write too, comes through here.

use dta_protocol::dta::{AppendRepr, KeyIncrementRepr, SketchRepr};

use super::state::Engine;
use crate::counters::DropReason;
use crate::primitives::keywrite::KeyWriteReport;
use crate::primitives::postcard::Postcard;
use crate::primitives::Outcome;
use crate::time::Instant;

/// What one report asks a collector's memory for, whoever sent it.
pub(super) enum Work<'a> {
    /// A Key-Write of its key's checksum and data (routed by the checksum).
    KeyWrite(KeyWriteReport<'a>),
    /// A counter increment (routed by key; needs a collector that takes atomics).
    KeyIncrement(KeyIncrementRepr),
    /// An entry for an Append list (routed by list).
    Append(AppendRepr<'a>),
    /// One hop of a flow's path (routed by the flow's key).
    Postcard(Postcard),
    /// Sketch columns to merge (routed by sketch).
    SketchMerge(SketchRepr<'a>),
}

impl Engine {
    /// Routes `work` to its collector and hands it to the primitive there; `dst` is the report's
    /// destination address (the collector, where routing is by destination).
    // Inlined into its two callers (DTA dispatch, INT actions): each then matches only on what it makes.
    #[inline(always)]
    pub(super) fn submit(
        &mut self,
        now: Instant,
        dst: [u8; 4],
        work: Work<'_>,
    ) -> Result<Outcome, DropReason> {
        match work {
            Work::KeyWrite(kw) => {
                let i = self
                    .route(|| kw.checksum, dst)
                    .ok_or(DropReason::NoRegion)?;
                self.collectors[i].offer(now, |p| &mut p.key_write, &kw, &mut self.counters)
            }
            Work::KeyIncrement(ki) => {
                let i = self.route_key(ki.key, dst).ok_or(DropReason::NoRegion)?;
                let col = &mut self.collectors[i];
                if !col.can_atomic {
                    return Err(DropReason::NoRegion);
                }
                col.offer(now, |p| &mut p.key_increment, &ki, &mut self.counters)
            }
            Work::Append(a) => {
                let (i, k) = self.route_list(a.list_id).ok_or(DropReason::NoRegion)?;
                self.collectors[i].append(now, k, &a, &mut self.counters)
            }
            Work::Postcard(p) => {
                let i = self.route_key(p.key, dst).ok_or(DropReason::NoRegion)?;
                self.collectors[i].offer(now, |p| &mut p.postcard, &p, &mut self.counters)
            }
            Work::SketchMerge(s) => {
                let (i, k) = self
                    .sketch_routes
                    .get(usize::from(s.sketch_id))
                    .copied()
                    .flatten()
                    .ok_or(DropReason::NoRegion)?;
                self.collectors[i].sketch(now, k, &s, &mut self.counters)
            }
        }
    }
}
