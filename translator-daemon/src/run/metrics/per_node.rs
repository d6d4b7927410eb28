//! The INT front end's per switch and per reporter families, summed over workers with a bounded number of
//! series: each worker's engine keeps its first [`LABELLED`] switches (and reporters) apart and adds the
//! rest to an `other` bucket; this sum does the same across workers, and remembers which keys it gave a
//! label for the daemon's lifetime, so a key's series never moves to `other` (or back) between scrapes
//! and every counter stays monotonic. At most `LABELLED + 1` series per family, whatever the network
//! sends: never one per flow.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Mutex;

use dta_httpd::openmetrics::{counters, gauges};
use dta_translator::int::{NodeCounts, LABELLED};
use prometheus_client::encoding::DescriptorEncoder;

use super::super::worker::Snapshot;

/// The label value of every key beyond the first [`LABELLED`].
const OTHER: &str = "other";

/// The keys given a label of their own so far (never forgotten: see the module's comment).
#[derive(Debug, Default)]
pub(super) struct Labelled {
    nodes: BTreeSet<u32>,
    reporters: BTreeSet<(u32, u8)>,
}

/// Whether `key` has (or now gets) a label of its own.
fn labelled<K: Ord + Copy>(set: &mut BTreeSet<K>, key: K) -> bool {
    set.contains(&key) || (set.len() < LABELLED && set.insert(key))
}

/// Per switch counts and per reporter losses of every worker, by label.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Sums {
    pub(super) nodes: BTreeMap<u32, NodeCounts>,
    pub(super) nodes_other: NodeCounts,
    pub(super) lost: BTreeMap<(u32, u8), u64>,
    pub(super) lost_other: u64,
}

impl Labelled {
    /// Sums the workers' tables under this daemon's labels.
    pub(super) fn sum(&mut self, snaps: &[Snapshot]) -> Sums {
        let mut s = Sums::default();
        for snap in snaps {
            let int = &snap.counters.int;
            for &(node, c) in int.nodes.entries() {
                if labelled(&mut self.nodes, node) {
                    *s.nodes.entry(node).or_default() += c;
                } else {
                    s.nodes_other += c;
                }
            }
            s.nodes_other += int.nodes.other;
            for &(reporter, n) in int.reporters_lost.entries() {
                if labelled(&mut self.reporters, reporter) {
                    *s.lost.entry(reporter).or_default() += n;
                } else {
                    s.lost_other += n;
                }
            }
            s.lost_other += int.reporters_lost.other;
        }
        // The labelled keys that have counted nothing yet in this snapshot still get their series.
        for &node in &self.nodes {
            s.nodes.entry(node).or_default();
        }
        for &r in &self.reporters {
            s.lost.entry(r).or_default();
        }
        s
    }
}

/// Encodes the three families (the `other` series always, at 0 while every key has a label).
pub(super) fn encode(
    enc: &mut DescriptorEncoder,
    labelled: &Mutex<Labelled>,
    snaps: &[Snapshot],
) -> fmt::Result {
    // A poisoned lock only means a scrape panicked mid-sum; the label set is still valid.
    let s = labelled
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .sum(snaps);
    let node = |f: fn(&NodeCounts) -> u64| {
        s.nodes
            .iter()
            .map(move |(n, c)| ([("node", n.to_string())], f(c)))
            .chain([([("node", OTHER.to_string())], f(&s.nodes_other))])
    };
    counters(
        enc,
        "int_node_drops",
        "Packet drops INT reports told of, per switch (node id), any reason. Bounded: the first 256 switches seen have a series each, all later ones add up in node=\"other\".",
        node(|c| c.drops),
    )?;
    counters(
        enc,
        "int_node_congested",
        "INT reports flagging a congested queue (Q flag), per switch (node id). Bounded: the first 256 switches seen have a series each, all later ones add up in node=\"other\".",
        node(|c| c.congested),
    )?;
    // A gauge, as int_reports_lost: a late report that fills a gap takes its count back.
    gauges(
        enc,
        "int_reporter_reports_lost",
        "INT reports lost before the translator now, per reporter (node id, hardware id): sequence gaps not filled by a late report. Bounded: the first 256 reporters seen have a series each, all later ones add up in node=\"other\",hw_id=\"other\".",
        s.lost
            .iter()
            .map(|((node, hw), n)| ([("node", node.to_string()), ("hw_id", hw.to_string())], *n))
            .chain([(
                [("node", OTHER.to_string()), ("hw_id", OTHER.to_string())],
                s.lost_other,
            )]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn worker(nodes: impl IntoIterator<Item = u32>, drops: u64) -> Snapshot {
        let mut s = Snapshot::default();
        for n in nodes {
            s.counters.int.nodes.get_mut(n).drops += drops;
            *s.counters.int.reporters_lost.get_mut((n, 1)) += 1;
        }
        s
    }

    /// Two workers' tables add up per switch; past 256 switches in all, the rest go to `other`; a switch
    /// labelled once keeps its label (its counter stays monotonic) even when a later scrape would have
    /// filled the labels in another order.
    #[test]
    fn workers_add_up_under_bounded_lasting_labels() {
        let labelled = Mutex::new(Labelled::default());
        let n = LABELLED as u32;
        // Worker 0 saw switches 0..200, worker 1 switches 100..300: 300 in all.
        let snaps = [worker(0..200, 2), worker(100..300, 3)];
        let s = labelled.lock().unwrap().sum(&snaps);
        assert_eq!(s.nodes.len(), LABELLED);
        assert_eq!(s.nodes[&0].drops, 2);
        assert_eq!(s.nodes[&150].drops, 5);
        // Switches n..300 (worker 1's last 44) are `other`.
        assert_eq!(s.nodes_other.drops, 3 * u64::from(300 - n));
        let total: u64 = s.nodes.values().map(|c| c.drops).sum::<u64>() + s.nodes_other.drops;
        assert_eq!(total, 200 * 2 + 200 * 3);
        assert_eq!(s.lost.len(), LABELLED);
        assert_eq!(s.lost_other, u64::from(300 - n));

        // A scrape where worker 1 comes first: the labels stay those given first.
        let again = labelled
            .lock()
            .unwrap()
            .sum(&[worker(250..300, 1), worker(0..10, 1)]);
        assert_eq!(again.nodes.len(), LABELLED);
        assert!(!again.nodes.contains_key(&(n + 1)));
        assert_eq!(again.nodes_other.drops, u64::from(300 - n));
        assert_eq!(again.nodes[&0].drops, 1);
    }

    /// The exposition: one series per labelled switch and reporter, and `other`.
    #[test]
    fn renders_node_and_reporter_labels() {
        let mut s = worker([7, 9], 4);
        s.counters.int.nodes.get_mut(9).congested = 2;
        let src = super::super::Sources {
            workers: std::sync::Arc::new(Mutex::new(vec![s])),
            ports: Default::default(),
            control: Vec::new(),
        };
        let text = dta_httpd::openmetrics::exposition(
            &src.registry(),
            &dta_httpd::HttpStats::default(),
            "dta_translator",
        );
        for line in [
            "dta_translator_int_node_drops_total{node=\"7\"} 4\n",
            "dta_translator_int_node_drops_total{node=\"other\"} 0\n",
            "dta_translator_int_node_congested_total{node=\"9\"} 2\n",
            "dta_translator_int_reporter_reports_lost{node=\"9\",hw_id=\"1\"} 1\n",
            "dta_translator_int_reporter_reports_lost{node=\"other\",hw_id=\"other\"} 0\n",
        ] {
            assert!(text.contains(line), "{line} in\n{text}");
        }
    }
}
