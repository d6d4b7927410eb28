//! Append reading (paper appendix A.3): consume entries `[tail, head)` of a list, where `head` is the
//! translator's `total_entries_written` word. Entries older than `head - capacity` were overwritten by the
//! ring: the reader skips them and reports how many it lost.

use dta_protocol::layout::AppendGeometry;
use serde::Serialize;

use super::{bytes, to_hex};
use crate::error::{Error, Result};

/// Entries read from a list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AppendRead {
    /// The head word when the read started.
    pub head: u64,
    /// Absolute index of the first entry returned.
    pub first: u64,
    /// The entries, hex, oldest first.
    pub entries: Vec<String>,
    /// Entries between the requested tail and `first` that the ring had already overwritten.
    pub overrun: u64,
    /// Where the next read should start.
    pub next_tail: u64,
}

/// Reads at most `max` entries from `tail` in the Append list region `mem`.
pub fn append_read(mem: &[u8], g: &AppendGeometry, tail: u64, max: usize) -> Result<AppendRead> {
    let head = AppendGeometry::decode_head(mem)
        .ok_or_else(|| Error::BadQuery("list region shorter than its header".into()))?;
    if tail > head {
        return Err(Error::BadQuery(format!(
            "tail {tail} is ahead of the head {head}: no such entries written yet"
        )));
    }
    let oldest = head.saturating_sub(g.entries());
    let mut first = tail.max(oldest);
    let end = head.min(first.saturating_add(max as u64));
    let size = g.entry_size() as usize;
    let mut entries = Vec::with_capacity((end - first) as usize);
    for i in first..end {
        entries.push(to_hex(bytes(mem, g.entry_offset(i), size)?));
    }
    // A writer (the NIC) may have moved on while we copied: any entry below the new oldest index may have
    // been overwritten mid-read, so drop those and count them as lost too.
    let head_after = AppendGeometry::decode_head(mem).unwrap_or(head);
    let oldest_after = head_after.saturating_sub(g.entries());
    if oldest_after > first {
        let lost = (oldest_after - first).min(entries.len() as u64);
        entries.drain(..lost as usize);
        first += lost;
    }
    Ok(AppendRead {
        head,
        first,
        overrun: first - tail,
        next_tail: first + entries.len() as u64,
        entries,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(head: u64, entries: &[(u64, [u8; 4])]) -> Vec<u8> {
        // 64-byte header (head word little-endian at 0), then 8 entries of 4 bytes.
        let mut mem = vec![0u8; 64 + 8 * 4];
        mem[..8].copy_from_slice(&head.to_le_bytes());
        for &(slot, e) in entries {
            let at = 64 + slot as usize * 4;
            mem[at..at + 4].copy_from_slice(&e);
        }
        mem
    }

    fn geometry() -> AppendGeometry {
        AppendGeometry::new(8, 4, 4).unwrap()
    }

    #[test]
    fn reads_from_the_tail_to_the_head() {
        let mem = list(
            3,
            &[(0, [1, 0, 0, 0]), (1, [2, 0, 0, 0]), (2, [3, 0, 0, 0])],
        );
        let r = append_read(&mem, &geometry(), 0, 100).unwrap();
        assert_eq!(r.entries, ["01000000", "02000000", "03000000"]);
        assert_eq!((r.head, r.first, r.overrun, r.next_tail), (3, 0, 0, 3));
        let r = append_read(&mem, &geometry(), 1, 1).unwrap();
        assert_eq!(r.entries, ["02000000"]);
        assert_eq!(r.next_tail, 2);
        let r = append_read(&mem, &geometry(), 3, 100).unwrap();
        assert!(r.entries.is_empty());
        assert!(append_read(&mem, &geometry(), 4, 1).is_err());
    }

    #[test]
    fn detects_overruns_after_a_wrap() {
        // 11 entries written into a ring of 8: indices 0..3 are gone, 3..11 remain; index 8 sits in slot 0.
        let entries: Vec<(u64, [u8; 4])> =
            (3u64..11).map(|i| (i % 8, [i as u8, 0, 0, 0])).collect();
        let mem = list(11, &entries);
        let r = append_read(&mem, &geometry(), 1, 100).unwrap();
        assert_eq!(r.overrun, 2);
        assert_eq!(r.first, 3);
        assert_eq!(r.entries.len(), 8);
        assert_eq!(r.entries[0], "03000000");
        assert_eq!(r.entries[7], "0a000000");
        assert_eq!(r.next_tail, 11);
    }
}
