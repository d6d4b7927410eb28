//! The bytes of a WRITE: inline when short, else a buffer from a per-thread pool.

use std::cell::RefCell;
use std::fmt;
use std::ops::{Deref, DerefMut};

use smallvec::SmallVec;

/// Payload bytes a [`Payload`] holds without a heap buffer: the largest Key-Write entry (32 bytes), a
/// Postcarding chunk (`CHUNK_STRIDE`, 32) and the Append head word (8).
pub const INLINE_PAYLOAD: usize = 32;

/// Heap buffers kept for reuse per thread (each at most a path MTU, so at most 1 MiB at 4 KiB).
const POOL_MAX: usize = 256;
/// Least capacity of a pooled buffer, so buffers of different batch sizes mostly fit each other.
const POOL_MIN_CAPACITY: usize = 256;

thread_local! {
    /// Buffers of dropped large payloads (Append and Sketch-Merge batches), reused by the next ones: the
    /// work request is dropped deep in the requester when its ACK retires it, so the buffer comes back
    /// here, not to the primitive that filled it.
    static POOL: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// The bytes of a WRITE. Up to [`INLINE_PAYLOAD`] bytes (Key-Write entries, Postcarding chunks, Append
/// head words) live inline in the work request; longer ones (Append and Sketch-Merge batches, at most a
/// path MTU) take a heap buffer from a per-thread pool and give it back when dropped, so the steady state
/// allocates nothing per report either way.
pub struct Payload(pub(super) SmallVec<[u8; INLINE_PAYLOAD]>);

impl Payload {
    /// An empty payload with room for `n` bytes.
    pub fn with_capacity(n: usize) -> Self {
        if n <= INLINE_PAYLOAD {
            return Payload(SmallVec::new());
        }
        let mut v = POOL
            .try_with(|p| p.borrow_mut().pop())
            .ok()
            .flatten()
            .unwrap_or_default();
        v.clear();
        v.reserve(n.max(POOL_MIN_CAPACITY));
        // The capacity is above the inline capacity, so this keeps `v`'s buffer.
        Payload(SmallVec::from_vec(v))
    }

    /// A payload of `n` bytes written by `fill` (given them zeroed): one memset and the caller's stores,
    /// instead of an append per field (measurably slower for a sketch column's many 4-byte counters).
    pub fn filled(n: usize, fill: impl FnOnce(&mut [u8])) -> Self {
        let mut p = Self::with_capacity(n);
        if p.0.spilled() {
            // The pooled Vec behind the SmallVec: resize is a memset there.
            let mut v = std::mem::take(&mut p.0).into_vec();
            v.resize(n, 0);
            p.0 = SmallVec::from_vec(v);
        } else {
            p.0.extend_from_slice(&[0u8; INLINE_PAYLOAD][..n]);
        }
        fill(&mut p.0);
        p
    }

    /// A payload holding a copy of `bytes`.
    pub fn from_slice(bytes: &[u8]) -> Self {
        if bytes.len() <= INLINE_PAYLOAD {
            return Payload(SmallVec::from_slice(bytes));
        }
        let mut p = Self::with_capacity(bytes.len());
        p.0.extend_from_slice(bytes);
        p
    }

    /// The first `len` bytes of `buf` (at most [`INLINE_PAYLOAD`]), moved in as the inline buffer: no copy
    /// loop, for a payload assembled on the stack (a Key-Write entry). `None` if `len` is too long.
    #[inline]
    pub fn from_array(buf: [u8; INLINE_PAYLOAD], len: usize) -> Option<Self> {
        (len <= INLINE_PAYLOAD).then(|| Payload(SmallVec::from_buf_and_len(buf, len)))
    }

    /// Appends `bytes` (within the capacity asked for, this does not allocate).
    pub fn extend_from_slice(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }
}

impl Drop for Payload {
    // Inline: the check for an inline payload (every Key-Write and Key-Increment one) is a compare, cheaper
    // than the call a retired window of work requests made per entry.
    #[inline]
    fn drop(&mut self) {
        if !self.0.spilled() {
            return;
        }
        let v = std::mem::take(&mut self.0).into_vec();
        let _ = POOL.try_with(|p| {
            if let Ok(mut p) = p.try_borrow_mut() {
                if p.len() < POOL_MAX {
                    p.push(v);
                }
            }
        });
    }
}

impl Payload {
    /// The payload's bytes when they are exactly `N` and inline (not on the heap): one test of the
    /// inline length, for the burst builders of short WRITEs, whose heap count then stays as it is.
    #[inline(always)]
    pub(crate) fn inline_array<const N: usize>(&self) -> Option<[u8; N]> {
        if self.0.spilled() {
            return None;
        }
        <[u8; N]>::try_from(self.0.as_slice()).ok()
    }
}

impl Deref for Payload {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl DerefMut for Payload {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.0
    }
}

impl Clone for Payload {
    fn clone(&self) -> Self {
        Payload::from_slice(self)
    }
}

impl PartialEq for Payload {
    fn eq(&self, other: &Self) -> bool {
        self[..] == other[..]
    }
}

impl Eq for Payload {}

impl fmt::Debug for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self[..], f)
    }
}

impl From<&[u8]> for Payload {
    fn from(bytes: &[u8]) -> Self {
        Payload::from_slice(bytes)
    }
}
