//! 5-hop paths through a k-ary fat tree (k even): edge, aggregation, core, aggregation, edge, between two
//! different pods, as the paper's postcarding and path-tracing workloads assume (B = 5).
//!
//! Switch IDs are 1-based (0 often means "no switch" in INT tooling): cores first, `(k/2)^2` of them, then
//! the `k/2` aggregation switches of each pod, then the `k/2` edge switches of each pod.

use crate::divisor::Divisor;
use crate::rng::SplitMix64;

/// Hops on an inter-pod path.
pub const HOPS: usize = 5;

/// `k`, `k - 1` and `k / 2` prepared as [`Divisor`]s.
#[derive(Debug, Clone, Copy)]
pub struct PathDivisors {
    k: Divisor,
    k_less_1: Divisor,
    half: Divisor,
}

/// A fat tree of parameter k.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FatTree {
    k: u32,
}

impl FatTree {
    /// A fat tree with `k` ports per switch; `k` must be even and at least 2.
    pub fn new(k: u32) -> Option<Self> {
        (k >= 2 && k % 2 == 0).then_some(FatTree { k })
    }

    fn half(&self) -> u32 {
        self.k / 2
    }

    /// Number of core switches.
    pub fn cores(&self) -> u32 {
        self.half() * self.half()
    }

    /// ID of core switch `c`.
    pub fn core(&self, c: u32) -> u32 {
        1 + c
    }

    /// ID of aggregation switch `a` of pod `p`.
    pub fn agg(&self, p: u32, a: u32) -> u32 {
        1 + self.cores() + p * self.half() + a
    }

    /// ID of edge switch `e` of pod `p`.
    pub fn edge(&self, p: u32, e: u32) -> u32 {
        1 + self.cores() + self.k * self.half() + p * self.half() + e
    }

    /// The divisors [`path`](Self::path) draws with, prepared for the fast generator.
    pub fn divisors(&self) -> PathDivisors {
        PathDivisors {
            k: Divisor::new(self.k.into()),
            k_less_1: Divisor::new(u64::from(self.k) - 1),
            half: Divisor::new(self.half().into()),
        }
    }

    /// [`path`](Self::path) with prepared divisors (`d` from [`divisors`](Self::divisors)): the same path
    /// from the same draws.
    #[inline]
    pub fn path_by(&self, rng: &mut SplitMix64, d: &PathDivisors) -> [u32; HOPS] {
        let ps = rng.below_by(&d.k) as u32;
        let pd = d.k.rem(u64::from(ps) + 1 + rng.below_by(&d.k_less_1)) as u32;
        let es = rng.below_by(&d.half) as u32;
        let ed = rng.below_by(&d.half) as u32;
        let a = rng.below_by(&d.half) as u32;
        let j = rng.below_by(&d.half) as u32;
        let core = self.core(a * self.half() + j);
        [
            self.edge(ps, es),
            self.agg(ps, a),
            core,
            self.agg(pd, a),
            self.edge(pd, ed),
        ]
    }

    /// [`first_hop`](Self::first_hop) with prepared divisors.
    #[inline]
    pub fn first_hop_by(&self, rng: &mut SplitMix64, d: &PathDivisors) -> u32 {
        let ps = rng.below_by(&d.k) as u32;
        rng.skip(1);
        let es = rng.below_by(&d.half) as u32;
        rng.skip(3);
        self.edge(ps, es)
    }

    /// The first hop of [`path`](Self::path) (the source edge switch), leaving `rng` where `path` leaves it:
    /// the same six draws, of which only the two this hop needs are computed (for Key-Write with D = 4,
    /// which carries only that hop).
    pub fn first_hop(&self, rng: &mut SplitMix64) -> u32 {
        let (k, h) = (u64::from(self.k), u64::from(self.half()));
        let ps = rng.below(k) as u32;
        rng.skip(1);
        let es = rng.below(h) as u32;
        rng.skip(3);
        self.edge(ps, es)
    }

    /// A random inter-pod path. Six draws, in this order: source pod, destination pod offset, source edge,
    /// destination edge, aggregation index, core within that aggregation index's group.
    pub fn path(&self, rng: &mut SplitMix64) -> [u32; HOPS] {
        let (k, h) = (u64::from(self.k), u64::from(self.half()));
        let ps = rng.below(k) as u32;
        let pd = ((u64::from(ps) + 1 + rng.below(k - 1)) % k) as u32;
        let es = rng.below(h) as u32;
        let ed = rng.below(h) as u32;
        let a = rng.below(h) as u32;
        let j = rng.below(h) as u32;
        // Core a*(k/2)+j connects to aggregation switch a of every pod.
        let core = self.core(a * self.half() + j);
        [
            self.edge(ps, es),
            self.agg(ps, a),
            core,
            self.agg(pd, a),
            self.edge(pd, ed),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_paths() {
        assert!(FatTree::new(3).is_none());
        let t = FatTree::new(4).unwrap();
        // k = 4: cores 1..=4, aggregation 5..=12, edge 13..=20.
        assert_eq!((t.core(0), t.core(3)), (1, 4));
        assert_eq!((t.agg(0, 0), t.agg(3, 1)), (5, 12));
        assert_eq!((t.edge(0, 0), t.edge(3, 1)), (13, 20));
        let mut r = SplitMix64::new(3);
        for _ in 0..1000 {
            let p = t.path(&mut r);
            assert!((13..=20).contains(&p[0]) && (13..=20).contains(&p[4]));
            assert!((5..=12).contains(&p[1]) && (5..=12).contains(&p[3]));
            assert!((1..=4).contains(&p[2]));
            // Different pods, same aggregation index, and the core is in that index's group.
            let pod = |agg: u32| (agg - 5) / 2;
            assert_ne!(pod(p[1]), pod(p[3]));
            assert_eq!((p[1] - 5) % 2, (p[3] - 5) % 2);
            assert_eq!((p[2] - 1) / 2, (p[1] - 5) % 2);
        }
    }

    #[test]
    fn first_hop_is_the_paths_first_hop_and_draws_as_many() {
        for k in [2, 4, 8, 48] {
            let t = FatTree::new(k).unwrap();
            let (mut a, mut b) = (SplitMix64::new(k.into()), SplitMix64::new(k.into()));
            for _ in 0..1000 {
                assert_eq!(t.first_hop(&mut a), t.path(&mut b)[0]);
            }
            assert_eq!(a.next_u64(), b.next_u64());
        }
    }

    #[test]
    fn prepared_divisors_draw_the_same_paths() {
        for k in [2, 4, 6, 8, 48] {
            let t = FatTree::new(k).unwrap();
            let d = t.divisors();
            let (mut a, mut b, mut c) = (
                SplitMix64::new(k.into()),
                SplitMix64::new(k.into()),
                SplitMix64::new(k.into()),
            );
            for _ in 0..1000 {
                let p = t.path(&mut a);
                assert_eq!(t.path_by(&mut b, &d), p);
                assert_eq!(t.first_hop_by(&mut c, &d), p[0]);
            }
            let next = [a.next_u64(), b.next_u64(), c.next_u64()];
            assert_eq!([next[0], next[0]], [next[1], next[2]]);
        }
    }
}
