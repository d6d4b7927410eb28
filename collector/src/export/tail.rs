//! Tailing one Append list from its head word (DESIGN.md section 3: a 64-byte header whose u64 LE word
//! at offset 0 counts the entries ever written, then a ring of E entries). Every entry is handed out once,
//! with its absolute index; entries the ring overwrote before they were read are counted, never skipped
//! silently.
//!
//! The same rules as the Append query (`query::append_read`), on raw bytes: the exporter copies millions
//! of entries, and the query's hex strings would cost more than the copy itself.

use dta_protocol::layout::AppendGeometry;

use crate::error::{Error, Result};

/// Entries read from a list in one go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TailRead {
    /// Absolute index of the first entry.
    pub first: u64,
    /// The entries' bytes, `entry_size` each, oldest first.
    pub bytes: Vec<u8>,
    /// Entries between the previous read and `first` that the ring overwrote before this read.
    pub overrun: u64,
    /// The head word when the read started.
    pub head: u64,
}

impl TailRead {
    /// How many entries it holds.
    pub fn count(&self, entry_size: usize) -> u64 {
        (self.bytes.len() / entry_size.max(1)) as u64
    }
}

/// Where the next read of one list starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListTail {
    /// The list's id.
    pub list: u32,
    /// The absolute index of the next entry to hand out.
    pub next: u64,
}

impl ListTail {
    /// A tail at the start of list `list`: everything its ring still holds is exported.
    pub fn new(list: u32) -> Self {
        ListTail { list, next: 0 }
    }

    /// Reads at most `max` entries from the list region `mem`, and moves past them.
    pub fn read(&mut self, mem: &[u8], g: &AppendGeometry, max: usize) -> Result<TailRead> {
        let head = head_of(mem, self.list)?;
        if head < self.next {
            // The head went backwards: the list's writer started over (a new translator, a region
            // reset). Its entries from 0 are new ones; read them again rather than wait for the head
            // to pass an index it may never reach.
            log::warn!(
                "export: list {} head went back from {} to {head}: reading it again from the start",
                self.list,
                self.next
            );
            self.next = 0;
        }
        let oldest = head.saturating_sub(g.entries());
        let mut first = self.next.max(oldest);
        let end = head.min(first.saturating_add(max as u64));
        let size = g.entry_size() as usize;
        let mut bytes = Vec::with_capacity((end - first) as usize * size);
        for i in first..end {
            let at = usize::try_from(g.entry_offset(i)).unwrap_or(usize::MAX);
            let entry = at
                .checked_add(size)
                .and_then(|stop| mem.get(at..stop))
                .ok_or_else(|| short(self.list))?;
            bytes.extend_from_slice(entry);
        }
        // A writer may have moved on while we copied: every entry below the new oldest index may have
        // been overwritten mid-copy, so those are dropped and counted as lost too.
        let oldest_after = head_of(mem, self.list)?.saturating_sub(g.entries());
        if oldest_after > first {
            let copied = (end - first) as usize;
            let lost = ((oldest_after - first) as usize).min(copied);
            bytes.drain(..lost * size);
            first += lost as u64;
        }
        let read = TailRead {
            first,
            overrun: first - self.next,
            head,
            bytes,
        };
        self.next = first + read.count(size);
        Ok(read)
    }
}

fn head_of(mem: &[u8], list: u32) -> Result<u64> {
    AppendGeometry::decode_head(mem).ok_or_else(|| short(list))
}

fn short(list: u32) -> Error {
    Error::BadQuery(format!("list {list}: region shorter than its geometry"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const E: u64 = 8;

    /// A list of 8 four-byte entries where entry i holds i (little-endian), with head `head`.
    fn ring(head: u64) -> Vec<u8> {
        let mut mem = vec![0u8; 64 + E as usize * 4];
        write(&mut mem, 0, head);
        mem
    }

    /// Writes entries `from..to` the way the translator does (entry first, then the head word).
    fn write(mem: &mut [u8], from: u64, to: u64) {
        for i in from..to {
            let at = 64 + (i % E) as usize * 4;
            mem[at..at + 4].copy_from_slice(&(i as u32).to_le_bytes());
        }
        mem[..8].copy_from_slice(&to.to_le_bytes());
    }

    fn indices(r: &TailRead) -> Vec<u32> {
        r.bytes
            .chunks(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    }

    fn g() -> AppendGeometry {
        AppendGeometry::new(E, 4, 4).unwrap()
    }

    #[test]
    fn each_entry_once_in_order_across_reads() {
        let mut mem = ring(0);
        let mut t = ListTail::new(1);
        let mut seen = Vec::new();
        // Writes of 0..5 entries between reads, and reads of at most 3: never more than the ring holds
        // between two reads, so nothing is lost.
        let mut head = 0;
        for step in 0..40u64 {
            let n = step % 6;
            write(&mut mem, head, head + n.min(E - (head - t.next)));
            head = AppendGeometry::decode_head(&mem).unwrap();
            let r = t.read(&mem, &g(), 3).unwrap();
            assert_eq!(r.overrun, 0);
            assert_eq!(r.first, seen.len() as u64);
            seen.extend(indices(&r));
        }
        loop {
            let r = t.read(&mem, &g(), 3).unwrap();
            if r.bytes.is_empty() {
                break;
            }
            seen.extend(indices(&r));
        }
        assert_eq!(seen, (0..head as u32).collect::<Vec<_>>());
        assert_eq!(t.next, head);
    }

    #[test]
    fn an_overrun_between_reads_is_counted_exactly() {
        let mut mem = ring(0);
        let mut t = ListTail::new(1);
        write(&mut mem, 0, 3);
        assert_eq!(indices(&t.read(&mem, &g(), 100).unwrap()), [0, 1, 2]);
        // 13 more entries into a ring of 8 before the next read: 3..8 (5 entries) were overwritten.
        write(&mut mem, 3, 16);
        let r = t.read(&mem, &g(), 100).unwrap();
        assert_eq!((r.overrun, r.first, r.head), (5, 8, 16));
        assert_eq!(indices(&r), (8..16).collect::<Vec<_>>());
        // Nothing new: nothing read, nothing lost.
        let r = t.read(&mem, &g(), 100).unwrap();
        assert_eq!((r.overrun, r.bytes.len(), t.next), (0, 0, 16));
    }

    #[test]
    fn a_small_read_of_a_full_ring_counts_what_wraps_under_it() {
        let mut mem = ring(0);
        let mut t = ListTail::new(1);
        write(&mut mem, 0, 20);
        // Oldest held is 12; read 2 of them, then 30 more written: 14..22 overwritten before read.
        let r = t.read(&mem, &g(), 2).unwrap();
        assert_eq!((r.overrun, indices(&r)), (12, vec![12, 13]));
        write(&mut mem, 20, 50);
        let r = t.read(&mem, &g(), 100).unwrap();
        assert_eq!((r.overrun, r.first), (42 - 14, 42));
        assert_eq!(indices(&r), (42..50).collect::<Vec<_>>());
    }

    #[test]
    fn a_head_that_goes_back_starts_over() {
        let mut mem = ring(0);
        let mut t = ListTail::new(1);
        write(&mut mem, 0, 5);
        t.read(&mem, &g(), 100).unwrap();
        write(&mut mem, 0, 2);
        let r = t.read(&mem, &g(), 100).unwrap();
        assert_eq!((r.first, r.overrun, indices(&r)), (0, 0, vec![0, 1]));
    }

    #[test]
    fn a_short_region_is_an_error_not_a_panic() {
        let mut t = ListTail::new(1);
        assert!(t.read(&[0u8; 4], &g(), 1).is_err());
        let mut mem = ring(0);
        write(&mut mem, 0, 3);
        assert!(t.read(&mem[..70], &g(), 10).is_err());
    }
}
