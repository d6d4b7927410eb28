//! The DTA primitives: each turns reports into work requests on the collector's QP, per DESIGN.md
//! section 3. Stateful primitives (Key-Increment coalescing, Append, Postcarding, Sketch-Merge) also
//! flush on timers.
//!
//! Every primitive implements [`Primitive`] (find a report's region, bound its work requests, handle it)
//! and [`Timed`] (deadline and flush), and one collector's set of them is a [`Primitives`]: the engine
//! routes a report to a collector and hands it to the primitive of its opcode, and loops over
//! [`Primitives::timed`] for timers. Reports are dispatched statically (a generic call per report
//! kind); only the timer loop goes through `dyn Timed`, once per primitive per timer run, not per report.

pub mod append;
pub mod keyincrement;
pub mod keywrite;
pub mod postcard;
pub mod sketch;

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use dta_protocol::dta::Opcode;
use dta_protocol::layout::Region;

use crate::collector::Regions;
use crate::config::Config;
use crate::counters::{primitive_tag, Counters, DropReason};
use crate::time::Earliest;
use crate::time::Instant;
use dta_rc::frames::Payload;
use dta_rc::requester::Requester;

use append::AppendLists;
use keyincrement::Coalescer;
use keywrite::KeyWrite;
use postcard::PostcardCache;
use sketch::SketchMerger;

/// How much a flush writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushMode {
    /// Only what timed out by `now` (a timer run).
    Due,
    /// Everything batched or cached (end of an offline capture, shutdown).
    All,
}

/// What a report came to when it was not refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Taken: written, batched or cached.
    Accepted,
    /// Already seen (Sketch-Merge: a column this reporter already sent in this round); count a drop.
    Duplicate,
    /// The reporter skipped ahead: drop it and NACK with `last_in_order`, the low byte of the last
    /// report taken in order from this reporter.
    Gap {
        /// Seqnum (or column) for the NACK.
        last_in_order: u8,
    },
}

/// Where a primitive's work goes: one collector's QP and path MTU, and the engine's counters.
pub struct Sink<'a> {
    /// The collector's QP.
    pub qp: &'a mut Requester,
    /// The collector's path MTU (payload bytes a WRITE may carry).
    pub mtu: usize,
    /// The engine's counters.
    pub counters: &'a mut Counters,
}

/// The timers of a primitive (object safe, so one collector's primitives can be looped over).
pub trait Timed {
    /// The next instant [`flush`](Self::flush) has work at, if any.
    fn poll_timeout(&self) -> Option<Instant>;

    /// Writes what is due at `now` (or everything held, with [`FlushMode::All`]).
    fn flush(&mut self, now: Instant, mode: FlushMode, regions: &Regions, out: &mut Sink<'_>);

    /// Reports taken and not yet handed to a work request (lost if the state is dropped).
    fn held_reports(&self) -> u64;
}

/// A DTA primitive: reports of one kind in, work requests out.
pub trait Primitive: Timed {
    /// The parsed report it takes.
    type Report<'r>;

    /// The collector region the report goes to, if this collector has it.
    fn region<'g>(&self, regions: &'g Regions, r: &Self::Report<'_>) -> Option<&'g Region>;

    /// Work requests the report may add at most (the engine refuses it unless the queue has room).
    fn max_wrs(&self, r: &Self::Report<'_>) -> usize;

    /// Handles a report whose region is `region`.
    fn handle(
        &mut self,
        now: Instant,
        r: &Self::Report<'_>,
        region: &Region,
        out: &mut Sink<'_>,
    ) -> Result<Outcome, DropReason>;
}

/// [`Primitives`] and its loops over every primitive, from one list (below): a primitive added to the
/// struct is in the timer loop, the deadline and the held count by construction, not by remembering three
/// more places (the struct's constructor, [`Primitives::new`], is the one written by hand, and the
/// compiler requires its new field there).
macro_rules! primitive_set {
    ($($(#[$doc:meta])* $field:ident: $ty:ty,)*) => {
        /// Every primitive of one collector.
        pub struct Primitives {
            $($(#[$doc])* pub $field: $ty,)*
        }

        impl Primitives {
            /// Reports taken and not yet handed to a work request (batched, cached, coalesced, merged):
            /// what is lost with this state when it is dropped.
            pub fn held_reports(&self) -> u64 {
                0 $(+ self.$field.held_reports())*
            }

            /// Every primitive, for the timer loop (in the list's order, as the engine always flushed
            /// them).
            pub fn timed(&mut self) -> [&mut dyn Timed; [$(stringify!($field)),*].len()] {
                [$(&mut self.$field,)*]
            }

            /// [`poll_timeout`](Self::poll_timeout) folded into `t` (see [`Earliest`]).
            #[inline]
            pub(crate) fn add_timeouts(&self, t: &mut Earliest) {
                $(t.add(self.$field.poll_timeout());)*
            }
        }
    };
}

primitive_set! {
    /// Key-Write (stateless).
    key_write: KeyWrite,
    /// Key-Increment coalescing.
    key_increment: Coalescer,
    /// Append batches.
    append: AppendLists,
    /// Postcarding flow cache.
    postcard: PostcardCache,
    /// Sketch-Merge merges.
    sketch: SketchMerger,
}

impl Primitives {
    /// Fresh state for one collector.
    pub fn new(cfg: &Config) -> Self {
        Primitives {
            key_write: KeyWrite,
            key_increment: Coalescer::new(
                cfg.key_increment.coalesce(),
                cfg.key_increment.coalesce_capacity,
            ),
            append: AppendLists::new(cfg.append.idle_flush(), cfg.append.head_every_batches),
            postcard: PostcardCache::new(
                cfg.postcard.cache_size,
                cfg.postcard.idle_timeout(),
                cfg.postcard.redundancy,
            ),
            sketch: SketchMerger::new(
                cfg.sketch.reporters,
                cfg.sketch.column_batch,
                cfg.sketch.idle_flush(),
            ),
        }
    }

    /// The earliest deadline of any primitive.
    ///
    /// Called directly, not through `dyn Timed` as [`timed`](Self::timed) does: the engine asks once
    /// per burst, and the five virtual calls cost more than the answers (Key-Write's is a constant
    /// `None`, Key-Increment's and Postcarding's a queue's front). The same minimum as
    /// `filter_map(poll_timeout).min()` over them (a test checks).
    #[inline]
    pub fn poll_timeout(&self) -> Option<Instant> {
        let mut t = Earliest::NONE;
        self.add_timeouts(&mut t);
        t.get()
    }
}

#[cfg(test)]
mod poll_timeout_tests {
    use super::*;

    /// [`Primitives::poll_timeout`]'s former form: through `dyn Timed`, `filter_map` and `min`.
    fn dyn_min(p: &mut Primitives) -> Option<Instant> {
        p.timed().iter().filter_map(|t| t.poll_timeout()).min()
    }

    #[test]
    fn fresh_primitives_have_no_deadline() {
        let mut p = Primitives::new(&Config::default());
        assert_eq!(p.poll_timeout(), None);
        assert_eq!(p.poll_timeout(), dyn_min(&mut p));
    }

    /// The fold of [`Earliest`] the direct form takes equals `filter_map(..).min()` of the five answers
    /// (and `earliest`'s fold),
    /// for every five drawn from `None`, ties, and the largest instant.
    #[test]
    fn earliest_fold_equals_filter_min() {
        let vals = [None, Some(0), Some(1), Some(7), Some(u64::MAX)].map(|t| t.map(Instant));
        let n = vals.len();
        for code in 0..n.pow(5) {
            let v: [Option<Instant>; 5] = std::array::from_fn(|k| vals[code / n.pow(k as u32) % n]);
            let mut t = Earliest::NONE;
            for x in v {
                t.add(x);
            }
            let folded = v[1..]
                .iter()
                .fold(v[0], |t, &x| crate::time::earliest(t, x));
            assert_eq!(t.get(), v.iter().filter_map(|&t| t).min(), "{v:?}");
            assert_eq!(t.get(), folded, "{v:?}");
        }
    }
}

/// The hasher of the maps keyed by a configured id (Append lists, sketches). Their entries exist only for
/// regions the collector advertised (a report naming another id is refused before anything is inserted), so
/// no sender can grow them, and SipHash's flooding resistance buys nothing there while callgrind put it at
/// ~100 instructions a report. (Key-Increment's coalescing map is keyed by report-chosen addresses and keeps
/// SipHash.)
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

impl IdHasher {
    /// FxHash's step: a rotate, an xor and a multiply by an odd constant, which spreads the id into the
    /// high bits the table's control bytes come from.
    #[inline]
    fn add(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Hasher for IdHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.add(u64::from(b));
        }
    }
    #[inline]
    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }
}

/// A map keyed by a configured id, hashed with [`IdHasher`].
pub(crate) type IdMap<V> = HashMap<u32, V, BuildHasherDefault<IdHasher>>;

/// Queues a WRITE of `payload` at `va`, written into its ring slot in place (`Requester::push_write`,
/// which queues what `push` of the same work request does).
#[inline]
pub(crate) fn write(qp: &mut Requester, primitive: Opcode, va: u64, rkey: u32, payload: Payload) {
    qp.push_write(primitive_tag(primitive), va, rkey, payload);
}
