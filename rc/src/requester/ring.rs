//! The ring of work requests behind the window and the queue.

use std::mem;

use super::work::{InFlight, WorkRequest};
use crate::frames::{Op, Payload};
use crate::stats::Tag;
use crate::time::Instant;

/// Slots the first push makes room for.
const INITIAL: usize = 64;

/// A double-ended queue of work requests whose slots stay initialised: a slot that leaves the front
/// keeps its (retired) work request until a push overwrites it, so retiring `n` work requests moves
/// the head by `n` ([`advance`](Self::advance)) when none has a heap buffer (the requester counts
/// those in its window), and otherwise ([`pop_front`](Self::pop_front)) gives each heap buffer back
/// to the payload pool at once, as its drop did. A `VecDeque` dropped each retired work request
/// through its drain (~29 instructions a Key-Write frame under callgrind) and wrapped every index
/// with a compare; here the capacity is a power of two and an index is a mask. (Counting heap payloads
/// at push cost more: the larger push was no longer inlined into its callers.)
pub(super) struct Ring {
    /// Capacity a power of two (or 0 before the first push).
    slots: Box<[InFlight]>,
    /// The slot of element 0.
    head: usize,
    len: usize,
}

/// What a slot out of use holds: a payload-less work request, nothing to drop.
fn vacant() -> InFlight {
    InFlight {
        wr: WorkRequest {
            op: Op::FetchAdd {
                va: 0,
                rkey: 0,
                add: 0,
            },
            tag: Tag(0),
            reports: 0,
        },
        sent_at: Instant(0),
        psn: 0,
        answered: false,
        resent: false,
    }
}

/// Whether `p` keeps its bytes inside itself (no heap buffer): an inline payload's data lies within
/// the payload's own bytes, a heap buffer never does. Wherever `p` is (a test checks both kinds).
#[inline]
pub(super) fn is_inline(p: &Payload) -> bool {
    let at = p as *const Payload as usize;
    (p.as_ptr() as usize).wrapping_sub(at) < mem::size_of::<Payload>()
}

/// [`is_inline`] of `p`, whose bytes (its deref) are `data`.
#[inline(always)]
pub(super) fn is_inline_data(p: &Payload, data: &[u8]) -> bool {
    let at = p as *const Payload as usize;
    (data.as_ptr() as usize).wrapping_sub(at) < mem::size_of::<Payload>()
}

/// Whether `op` holds a heap buffer.
#[inline]
pub(super) fn on_heap(op: &Op) -> bool {
    match op {
        Op::Write { payload, .. } => !is_inline(payload),
        Op::FetchAdd { .. } => false,
    }
}

/// Writes `new` over `old`, a part of a slot out of use (a slot just taken by a push): it holds a
/// retired work request without a heap buffer (`release` took it, or `vacant` never had one), so
/// there is nothing to drop, and skipping the drop glue saved ~20 instructions a push. Forgetting
/// it could at worst keep a buffer, never free one twice.
#[inline(always)]
pub(super) fn overwrite<T>(old: &mut T, new: T) {
    mem::forget(mem::replace(old, new));
}

/// Gives a retired work request's heap buffer back (to the payload pool, through its drop); whether
/// it had one.
#[inline]
fn release(f: &mut InFlight) -> bool {
    if let Op::Write { payload, .. } = &mut f.wr.op {
        if !is_inline(payload) {
            *payload = Payload::with_capacity(0);
            return true;
        }
    }
    false
}

impl Ring {
    /// An empty ring (no allocation until the first push).
    pub(super) fn new() -> Self {
        Ring {
            slots: Box::new([]),
            head: 0,
            len: 0,
        }
    }

    /// The slot of element `i` (meaningful for `i < len`, or `i == len` below the capacity).
    #[inline]
    fn slot(&self, i: usize) -> usize {
        (self.head + i) & (self.slots.len().wrapping_sub(1))
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Slots out of use whose payload still has a heap buffer (none should).
    #[cfg(test)]
    pub(super) fn heap_out_of_use(&self) -> usize {
        (self.len..self.slots.len())
            .filter(|&i| match &self.slots[self.slot(i)].wr.op {
                Op::Write { payload, .. } => !is_inline(payload),
                Op::FetchAdd { .. } => false,
            })
            .count()
    }

    /// The slot of element `i`, if there are more than `i`.
    #[inline]
    pub(super) fn slot_of(&self, i: usize) -> Option<usize> {
        (i < self.len).then(|| self.slot(i))
    }

    /// The element in `slot` (from [`slot_of`](Self::slot_of)).
    #[inline]
    pub(super) fn at(&self, slot: usize) -> Option<&InFlight> {
        self.slots.get(slot)
    }

    /// The element in `slot` (from [`slot_of`](Self::slot_of)).
    #[inline]
    pub(super) fn at_mut(&mut self, slot: usize) -> Option<&mut InFlight> {
        self.slots.get_mut(slot)
    }

    /// The slots, the slot of element 0 and the mask that wraps a slot index: for a loop over many
    /// elements that keeps them in registers (element `i` is in slot `(head + i) & mask`, for `i`
    /// below [`len`](Self::len)).
    #[inline]
    pub(super) fn slots_mut(&mut self) -> (&mut [InFlight], usize, usize) {
        let mask = self.slots.len().wrapping_sub(1);
        (&mut self.slots, self.head, mask)
    }

    /// Element `i + 1`, given the slot of element `i`, if there are more than `i + 1`.
    #[inline]
    pub(super) fn next_of(&self, i: usize, slot: usize) -> Option<&InFlight> {
        if i + 1 >= self.len {
            return None;
        }
        self.slots
            .get((slot + 1) & (self.slots.len().wrapping_sub(1)))
    }

    /// Element `i`, if there are more than `i`.
    #[inline]
    pub(super) fn get(&self, i: usize) -> Option<&InFlight> {
        if i >= self.len {
            return None;
        }
        self.slots.get(self.slot(i))
    }

    /// Element 0's slot, if the ring has slots (element 0 if it is not empty).
    #[inline]
    pub(super) fn front_mut(&mut self) -> Option<&mut InFlight> {
        // `head` is a slot (masked, or 0 before the first push).
        self.slots.get_mut(self.head)
    }

    /// Element `i`, if there are more than `i`.
    #[inline]
    pub(super) fn get_mut(&mut self, i: usize) -> Option<&mut InFlight> {
        if i >= self.len {
            return None;
        }
        let s = self.slot(i);
        self.slots.get_mut(s)
    }

    /// Appends `wr` (growing the ring when full). Only the work request is written: the slot's
    /// other fields are set when it enters the window.
    #[inline]
    pub(super) fn push_back(&mut self, wr: WorkRequest) {
        if let Some(slot) = self.push_back_in_place() {
            overwrite(slot, wr);
        }
    }

    /// Appends an element whose work request the caller then writes in place (growing the ring
    /// when full): the slot's work request is a retired one without a heap buffer (see
    /// [`push_back`](Self::push_back)), which the caller overwrites; its other fields are set when it
    /// enters the window. `None` never happens (the ring has room after `grow`).
    #[inline(always)]
    pub(super) fn push_back_in_place(&mut self) -> Option<&mut WorkRequest> {
        if self.len == self.slots.len() {
            self.grow();
        }
        let s = self.slot(self.len);
        let slot = self.slots.get_mut(s)?;
        self.len += 1;
        Some(&mut slot.wr)
    }

    /// Appends `n` elements whose work requests the caller then writes in place, as `n`
    /// [`push_back_in_place`](Self::push_back_in_place)es (growing the ring until they fit): the
    /// slots, the slot of the first new element and the mask that wraps a slot index (element
    /// `len + k` before the call is in slot `(first + k) & mask`). One growth check and one length
    /// update for all `n`.
    #[inline(always)]
    pub(super) fn push_back_n_in_place(&mut self, n: usize) -> (&mut [InFlight], usize, usize) {
        while self.len + n > self.slots.len() {
            self.grow();
        }
        let first = self.slot(self.len);
        self.len += n;
        let mask = self.slots.len().wrapping_sub(1);
        (&mut self.slots, first, mask)
    }

    /// Twice the slots (at least `INITIAL`), the elements moved to the front in order.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let cap = (self.slots.len() * 2).max(INITIAL);
        let mut slots: Box<[InFlight]> = (0..cap).map(|_| vacant()).collect();
        for (i, to) in slots.iter_mut().enumerate().take(self.len) {
            let s = self.slot(i);
            *to = mem::replace(&mut self.slots[s], vacant());
        }
        self.slots = slots;
        self.head = 0;
    }

    /// Retires the first `n` elements (all of them, if fewer), giving their heap buffers back: how
    /// many there were.
    #[inline]
    pub(super) fn pop_front(&mut self, n: usize) -> usize {
        let n = n.min(self.len);
        let released = self.release_front(n);
        self.advance(n);
        released
    }

    /// [`advance(1)`](Self::advance).
    #[inline]
    pub(super) fn advance_one(&mut self) {
        if self.len > 0 {
            self.head = self.slot(1);
            self.len -= 1;
        }
    }

    /// Retires the first `n` elements (all of them, if fewer), which hold no heap buffer: moving
    /// the head is all.
    #[inline]
    pub(super) fn advance(&mut self, n: usize) {
        let n = n.min(self.len);
        if n > 0 {
            self.head = self.slot(n);
            self.len -= n;
        }
    }

    /// Gives back the heap buffers of the first `n` elements (`n <= len`), over the ring's two
    /// contiguous runs (no masked index per element); how many there were.
    fn release_front(&mut self, n: usize) -> usize {
        let (wrapped, from_head) = self.slots.split_at_mut(self.head.min(self.slots.len()));
        let first = from_head.len().min(n);
        let mut released = 0;
        for f in from_head.iter_mut().take(first) {
            released += usize::from(release(f));
        }
        for f in wrapped.iter_mut().take(n - first) {
            released += usize::from(release(f));
        }
        released
    }

    /// Removes element `i`, keeping the order of the others (rare: a frame that cannot be built).
    pub(super) fn remove(&mut self, i: usize) {
        if i >= self.len {
            return;
        }
        for j in i..self.len - 1 {
            let (a, b) = (self.slot(j), self.slot(j + 1));
            self.slots.swap(a, b);
        }
        self.len -= 1;
        let s = self.slot(self.len);
        let _ = release(&mut self.slots[s]);
    }

    /// Keeps the elements `keep(index, element)` accepts, in order (rare: a QP re-established).
    pub(super) fn retain(&mut self, mut keep: impl FnMut(usize, &InFlight) -> bool) {
        let mut kept = 0;
        for i in 0..self.len {
            let s = self.slot(i);
            if keep(i, &self.slots[s]) {
                let to = self.slot(kept);
                self.slots.swap(s, to);
                kept += 1;
            }
        }
        for i in kept..self.len {
            let s = self.slot(i);
            let _ = release(&mut self.slots[s]);
        }
        self.len = kept;
    }
}
