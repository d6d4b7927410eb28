//! What the translator's composition rule predicts from arrival times alone, and which flows share a chunk
//! with another flow (where the rule says nothing).
//!
//! A flow has at most one cache entry at a time (one slot per key), so its entries follow each other: an
//! entry opens at the report that finds no entry and holds every report until it is written, by its idle
//! timeout (open + idle; a timer due at a report's instant fires first), by completing the path, or by an
//! eviction (not modelled: the runs count evictions and keep them rare). Entries are written in the order
//! they open. Where the path's length is known (DTA postcards), every entry writes only its own cells (and
//! blanks after the path's end): every hop survives. Where it is not (INT per-hop reports), the entry
//! holding hop 1 writes the whole chunk, blanks for every hop it lacks, and every other entry only its own
//! cells. So a hop survives iff its entry is written no earlier than hop 1's: the path reads back whole
//! iff hop 1 is in the flow's first entry.

use std::collections::HashMap;

use dta_protocol::layout::PostcardGeometry;

use super::schedule::Flow;
use super::Verdict;

/// Entry number (1-based, in opening order) of each hop's report, for an idle timeout of `idle_ns`.
pub fn entries(at: &[u64], idle_ns: u64) -> Vec<u32> {
    let mut order: Vec<usize> = (0..at.len()).collect();
    // Equal times go in hop order, as the driver sends them.
    order.sort_by_key(|&h| (at[h], h));
    let mut entry = vec![0; at.len()];
    let (mut k, mut open) = (0, None);
    for h in order {
        let expired = match open {
            None => true,
            Some(o) => at[h] >= o + idle_ns,
        };
        if expired {
            k += 1;
            open = Some(at[h]);
        }
        entry[h] = k;
    }
    entry
}

/// The verdict the rule predicts for a flow whose hop reports arrive at `at` (hop 1 first in the slice),
/// with the path's length known to the translator (`length_known`) or not.
pub fn predict(at: &[u64], idle_ns: u64, length_known: bool) -> Verdict {
    let entry = entries(at, idle_ns);
    let Some(&hop1) = entry.first() else {
        return Verdict::Empty;
    };
    read_back(entry.iter().map(|&e| length_known || e >= hop1))
}

/// The verdict under the rule before composition (translator before commit 066c644): every write was the
/// whole chunk, so the flow's last entry alone decides what reads back. A model only, for comparison.
pub fn predict_whole_chunk_rewrite(at: &[u64], idle_ns: u64) -> Verdict {
    let entry = entries(at, idle_ns);
    let last = entry.iter().copied().max().unwrap_or(0);
    read_back(entry.iter().map(|&e| e == last))
}

/// What a chunk whose hop h cell holds the flow's value iff `kept[h]` (blank otherwise) reads as.
fn read_back(kept: impl Iterator<Item = bool>) -> Verdict {
    let kept: Vec<bool> = kept.collect();
    if !kept.is_empty() && kept.iter().all(|&k| k) {
        return Verdict::Exact;
    }
    // Blanks only after the kept hops read as a shorter path; a blank before a kept hop as no path.
    let kept_prefix = kept.iter().take_while(|&&k| k).count();
    if kept_prefix > 0 && kept[kept_prefix..].iter().all(|&k| !k) {
        Verdict::Prefix
    } else {
        Verdict::Empty
    }
}

/// The fraction of flows lost in random order with no evictions: hop 1 comes at least one idle timeout
/// after the first report. With B uniform arrival times over a window s and r = idle / s ≤ 1, that is
/// ∫ over hop 1's time x ∈ [idle, s] of P(another hop before x - idle) = (1 - r) - (1 - r^B) / B.
pub fn random_order_loss(idle_ns: u64, spread_ns: u64, hops: u8) -> f64 {
    let r = (idle_ns as f64 / spread_ns as f64).min(1.0);
    let b = f64::from(hops);
    (1.0 - r) - (1.0 - r.powf(b)) / b
}

/// Flows one of whose N chunk copies another flow's copy also occupies.
pub fn sharing_chunks(flows: &[Flow], g: &PostcardGeometry, n: u8) -> usize {
    let mut owners: HashMap<u64, u32> = HashMap::new();
    for f in flows {
        for c in 0..n {
            *owners.entry(g.offset(f.key, c)).or_default() += 1;
        }
    }
    flows
        .iter()
        .filter(|f| (0..n).any(|c| owners.get(&g.offset(f.key, c)).is_some_and(|&k| k > 1)))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_and_predictions() {
        const MS: u64 = 1_000_000;
        // In path order, 2 ms apart: five entries, hop 1 first, every hop kept.
        let at = [0, 2 * MS, 4 * MS, 6 * MS, 8 * MS];
        assert_eq!(entries(&at, MS), vec![1, 2, 3, 4, 5]);
        assert_eq!(predict(&at, MS, false), Verdict::Exact);
        // Hops 4 and 5 first, hop 1 more than the idle timeout later: the whole chunk blanks them.
        let at = [2 * MS, 2 * MS + 1, 2 * MS + 2, 0, 10];
        assert_eq!(entries(&at, MS), vec![2, 2, 2, 1, 1]);
        assert_eq!(predict(&at, MS, false), Verdict::Prefix);
        // Hop 3 first: a blank before kept hops 4 and 5 reads as no path.
        let at = [2 * MS, 2 * MS + 1, 0, 2 * MS + 3, 2 * MS + 4];
        assert_eq!(predict(&at, MS, false), Verdict::Empty);
        // Hop 1 exactly one idle timeout after the first report: the timer fires first, a new entry whose
        // blanks cover hops 2-5, read as a one-hop path.
        let at = [MS, 0, 1, 2, 3];
        assert_eq!(entries(&at, MS), vec![2, 1, 1, 1, 1]);
        assert_eq!(predict(&at, MS, false), Verdict::Prefix);
        assert_eq!(predict(&[MS - 1, 0, 1, 2, 3], MS, false), Verdict::Exact);
        // With the length known, no entry writes a blank inside the path: every order reads whole.
        assert_eq!(predict(&[MS, 0, 1, 2, 3], MS, true), Verdict::Exact);
        assert_eq!(
            predict(&[2 * MS, 2 * MS + 1, 0, 2 * MS + 3, 2 * MS + 4], MS, true),
            Verdict::Exact
        );
    }

    #[test]
    fn whole_chunk_rewrite_keeps_only_the_last_entry() {
        const MS: u64 = 1_000_000;
        // In path order over 8 ms: the last entry holds hop 5 alone, after four blanks: no path.
        let at = [0, 2 * MS, 4 * MS, 6 * MS, 8 * MS];
        assert_eq!(predict_whole_chunk_rewrite(&at, MS), Verdict::Empty);
        // Hops 4 and 5 first: the last entry holds hops 1-3, a shorter path, as with composition.
        let at = [2 * MS, 2 * MS + 1, 2 * MS + 2, 0, 10];
        assert_eq!(predict_whole_chunk_rewrite(&at, MS), Verdict::Prefix);
        assert_eq!(
            predict_whole_chunk_rewrite(&[0, 1, 2, 3, 4], MS),
            Verdict::Exact
        );
    }

    #[test]
    fn random_order_loss_closed_form() {
        // Spread within the timeout: nothing lost. Timeout negligible: lost unless hop 1 is first (1/B).
        assert_eq!(random_order_loss(1_000, 1_000, 5), 0.0);
        assert_eq!(random_order_loss(2_000, 1_000, 5), 0.0);
        assert!((random_order_loss(1, 1 << 40, 5) - 0.8).abs() < 1e-9);
        // r = 1/3: 2/3 - (1 - 3^-5)/5.
        let want = 2.0 / 3.0 - (1.0 - 1.0 / 243.0) / 5.0;
        assert!((random_order_loss(1_000, 3_000, 5) - want).abs() < 1e-12);
    }
}
