//! Per switch and per reporter counters of the INT front end, bounded: what an operator alerts on (a
//! switch's drop rate, its congested queues, the reports a switch's pipe lost on the way) without one
//! series per flow. The first [`LABELLED`] keys an engine sees get their own entry; every later one is
//! added to [`Bounded::other`], so memory and the number of metric series stay bounded whatever the
//! network sends (node ids come off the wire).

use std::ops::AddAssign;

/// Keys with an entry of their own per table; the rest share [`Bounded::other`].
pub const LABELLED: usize = 256;

/// A switch's counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeCounts {
    /// Drops its reports told of (v0.5 drop reports, v2.0 drop metadata or D flag), translated or not
    /// into a drop counter (`int.drop_counts`).
    pub drops: u64,
    /// Its reports that flagged a congested queue (Q flag) and were translated, whether or not a queue
    /// list takes their events.
    pub congested: u64,
}

impl AddAssign for NodeCounts {
    fn add_assign(&mut self, o: NodeCounts) {
        self.drops += o.drops;
        self.congested += o.congested;
    }
}

/// A map from at most [`LABELLED`] keys (the first seen) to counts, and one bucket for every other key.
/// Kept sorted by key (a binary search per update, and a cheap clone for the workers' snapshots).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bounded<K, V> {
    entries: Vec<(K, V)>,
    /// Counts of the keys beyond the first [`LABELLED`].
    pub other: V,
}

impl<K, V: Default> Default for Bounded<K, V> {
    fn default() -> Self {
        Bounded {
            entries: Vec::new(),
            other: V::default(),
        }
    }
}

impl<K: Ord + Copy, V: Default + Copy> Bounded<K, V> {
    /// `key`'s counts: its own entry (made if there is room), else the shared [`other`](Self::other).
    pub fn get_mut(&mut self, key: K) -> &mut V {
        match self.entries.binary_search_by(|(k, _)| k.cmp(&key)) {
            Ok(i) => &mut self.entries[i].1,
            Err(i) if self.entries.len() < LABELLED => {
                self.entries.insert(i, (key, V::default()));
                &mut self.entries[i].1
            }
            Err(_) => &mut self.other,
        }
    }

    /// The keys with an entry of their own, in key order, with their counts.
    pub fn entries(&self) -> &[(K, V)] {
        &self.entries
    }
}

/// Tables add up (workers' counters into a daemon's): each key into its own entry where there is room,
/// else into `other`.
impl<K: Ord + Copy, V: Default + Copy + AddAssign> AddAssign<&Bounded<K, V>> for Bounded<K, V> {
    fn add_assign(&mut self, o: &Bounded<K, V>) {
        for &(k, v) in &o.entries {
            *self.get_mut(k) += v;
        }
        self.other += o.other;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_keys_get_entries_and_the_rest_share_other() {
        let mut t: Bounded<u32, u64> = Bounded::default();
        // Keys from the wire, in any order: the first LABELLED distinct ones are kept.
        for k in (0..LABELLED as u32 + 10).rev() {
            *t.get_mut(k) += 1;
        }
        *t.get_mut(LABELLED as u32 + 9) += 1;
        *t.get_mut(0) += 5;
        assert_eq!(t.entries().len(), LABELLED);
        assert_eq!(t.other, 10 + 5);
        assert_eq!(t.entries()[0], (10, 1));
        assert!(t.entries().windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(*t.get_mut(LABELLED as u32 + 9), 2);

        // Sums: a key the sum has room for keeps its entry; the others go to `other`.
        let mut a: Bounded<u32, u64> = Bounded::default();
        *a.get_mut(7) += 3;
        a += &t;
        assert_eq!(a.entries().len(), LABELLED);
        assert_eq!(a.entries()[0], (7, 3));
        let total = |b: &Bounded<u32, u64>| b.entries().iter().map(|e| e.1).sum::<u64>() + b.other;
        assert_eq!(total(&a), 3 + total(&t));
    }
}
