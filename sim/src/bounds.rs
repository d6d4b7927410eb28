//! The paper's analytical figures (section 4, equations 1-8; appendix A.5-A.6), which the real engine is
//! tested against, and, as a labelled comparison only, the loss under the reference placement (one CRC
//! polynomial shared by all copies), which documents why that placement loses data.
//!
//! Notation as in the paper: α = distinct keys (or flows) written after the queried one divided by the slot
//! (or chunk) count, N = copies per key, b = checksum bits, |V| = value universe, B = hops per chunk.

/// Probability that one given slot was overwritten by αM later keys writing N copies each (Poisson
/// approximation of (1 - 1/M)^{αMN}).
pub fn overwritten(alpha: f64, n: u32) -> f64 {
    1.0 - (-alpha * f64::from(n)).exp()
}

fn binomial(n: u32, k: u32) -> f64 {
    (0..k).fold(1.0, |acc, i| acc * f64::from(n - i) / f64::from(i + 1))
}

/// The three empty-return terms (1), (2), (3) and the wrong-answer bound (4) for Key-Write.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KeyWriteBounds {
    /// (1): all N copies overwritten and none carries the queried checksum.
    pub eq1: f64,
    /// (2): all overwritten and two or more carry the checksum (with different values).
    pub eq2: f64,
    /// (3): some copy survives but an overwritten one carries the checksum (assumed to disagree).
    pub eq3: f64,
    /// (4): all overwritten and a colliding key's value is returned; an upper bound.
    pub eq4: f64,
    /// Appendix A.5's lower bound on the wrong-answer probability: o^N · N·2^-b·(1 - 2^-b)^(N-1).
    pub wrong_lower: f64,
}

impl KeyWriteBounds {
    /// Evaluates the paper's Key-Write formulas.
    pub fn new(alpha: f64, n: u32, b: u32) -> Self {
        let o = overwritten(alpha, n);
        let on = o.powi(n as i32);
        let p = 2f64.powi(-(b as i32));
        let q = 1.0 - p;
        let nf = f64::from(n);
        let eq3 = (1..n)
            .map(|j| {
                binomial(n, j)
                    * o.powi(j as i32)
                    * (-alpha * nf * f64::from(n - j)).exp()
                    * (1.0 - q.powi(j as i32))
            })
            .sum();
        KeyWriteBounds {
            eq1: on * q.powi(n as i32),
            eq2: on * (1.0 - q.powi(n as i32) - nf * p * q.powi(n as i32 - 1)),
            eq3,
            eq4: on * nf * p,
            wrong_lower: on * nf * p * q.powi(n as i32 - 1),
        }
    }

    /// (1) + (2) + (3): the bound on the empty-return probability.
    pub fn empty(&self) -> f64 {
        self.eq1 + self.eq2 + self.eq3
    }

    /// Appendix A.5's lower bound on empty returns: (1) + (3) (the sum is a lower bound, (2) adds to it).
    pub fn empty_lower(&self) -> f64 {
        self.eq1 + self.eq3
    }
}

/// Postcarding's failure terms (5), (6), (7) and wrong-output bound (8).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PostcardBounds {
    /// (5), the leading term: all N chunks overwritten and none decodes.
    pub eq5: f64,
    /// (6) as appendix (10) writes it (the N·P·(1-P)^(N-1) term inside the o^N factor; section 4's
    /// typesetting moves it outside, which can make the term negative).
    pub eq6: f64,
    /// (7): some chunk survives but an overwritten one decodes.
    pub eq7: f64,
    /// (8): all overwritten and the valid chunks agree on a wrong path.
    pub eq8: f64,
}

impl PostcardBounds {
    /// Evaluates the paper's Postcarding formulas for universe size `v`, `hops` = B.
    pub fn new(alpha: f64, n: u32, b: u32, v: f64, hops: u32) -> Self {
        let o = overwritten(alpha, n);
        let on = o.powi(n as i32);
        // P: probability that an overwritten chunk decodes as valid for the queried flow.
        let p = ((v + 1.0) * 2f64.powi(-(b as i32))).powi(hops as i32);
        let q = 1.0 - p;
        let nf = f64::from(n);
        let eq7 = (1..n)
            .map(|j| {
                binomial(n, j)
                    * o.powi(j as i32)
                    * (-alpha * nf * f64::from(n - j)).exp()
                    * (1.0 - q.powi(j as i32))
            })
            .sum();
        PostcardBounds {
            eq5: on * q.powi(n as i32),
            eq6: on * (1.0 - q.powi(n as i32) - nf * p * q.powi(n as i32 - 1)),
            eq7,
            eq8: on * nf * p,
        }
    }

    /// (5) + (6) + (7).
    pub fn failure(&self) -> f64 {
        self.eq5 + self.eq6 + self.eq7
    }
}

/// Reference placement (one shared polynomial), for comparison only: the probability that all N copies are
/// overwritten under the reference's `crc32(key_le ‖ n) & (M - 1)` ([`crate::placement::reference_slot`]).
/// This project no longer places so (each copy has its own polynomial, and the real engine is tested
/// against the paper's independent-copies formulas); the tables and figures print this beside them to
/// show what the shared polynomial costs.
///
/// CRC is affine over GF(2): for messages of one length, crc(x ⊕ y) = crc(x) ⊕ crc(y) ⊕ crc(0). So
/// `slot(k, n) = slot(k, 0) ⊕ d_n` with offsets d_n that do not depend on the key, and d_3 = d_1 ⊕ d_2. The
/// copies of every key therefore lie in one coset of the group G = span{d_n}; two keys' copy sets are either
/// disjoint or overlap heavily. (See [`crate::placement`] for the rank check of both placements.)
///
/// * N = 1, 2, 4 (and 8): the copies *are* a coset of G (|G| = N), and a later key either misses it or
///   covers all of it, so all copies go at once: 1 - e^{-αN}, not the paper's (1 - e^{-αN})^N.
/// * N = 3: the copies are 3 of the 4 elements of a coset of span{d_1, d_2}; each later key that lands in
///   the coset (rate α per "missing element" pattern) covers 3 of its 4 elements. The queried key keeps a
///   copy unless the pattern equal to its own shows up, or two different other patterns do:
///   1 - e^{-α}·(e^{-3α} + 3(1 - e^{-α})e^{-2α}).
///
/// Returns `None` for other N (the offsets of N > 4 depend on which combinations the mask keeps).
pub fn crc_all_overwritten(alpha: f64, n: u32) -> Option<f64> {
    let e = |x: f64| (-x).exp();
    match n {
        1 | 2 | 4 | 8 => Some(1.0 - e(alpha * f64::from(n))),
        3 => Some(1.0 - e(alpha) * (e(3.0 * alpha) + 3.0 * (1.0 - e(alpha)) * e(2.0 * alpha))),
        _ => None,
    }
}

/// The count-min bound for Key-Increment with N counters per key in one shared array of M counters
/// (Cormode and Muthukrishnan's argument): each copy's excess has mean at most N·(total - own)/M, so by
/// Markov and independent copies, P(excess of the minimum ≥ e·N·(total - own)/M) ≤ e^{-N}.
/// Returns (threshold factor e·N/M, probability bound e^{-N}).
pub fn count_min(n: u32, m: u64) -> (f64, f64) {
    (
        std::f64::consts::E * f64::from(n) / m as f64,
        (-f64::from(n)).exp(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_papers_worked_examples() {
        // Section 4: N = 2, b = 32, α = 0.1: empty < 3.3 %, wrong ≤ 1.6e-11; N = 1: 9.5 %; N = 4: 1.2 %.
        let k2 = KeyWriteBounds::new(0.1, 2, 32);
        assert!((k2.empty() - 0.0329).abs() < 0.0001, "{}", k2.empty());
        assert!((k2.eq4 - 1.53e-11).abs() < 0.01e-11, "{}", k2.eq4);
        assert!((KeyWriteBounds::new(0.1, 1, 32).empty() - 0.0952).abs() < 0.0001);
        assert!((KeyWriteBounds::new(0.1, 4, 32).empty() - 0.0118).abs() < 0.0001);
        // Postcarding: |V| = 2^18, B = 5, N = 2, b = 32, α = 0.1: failure ≤ 3.3 %, wrong < 1e-22.
        let p = PostcardBounds::new(0.1, 2, 32, 262_144.0, 5);
        assert!((p.failure() - 0.0329).abs() < 0.0001);
        assert!(p.eq8 < 1e-22 && p.eq8 > 1e-24, "{}", p.eq8);
    }

    #[test]
    fn crc_placement_formulas() {
        assert!((crc_all_overwritten(0.1, 1).unwrap() - 0.0952).abs() < 1e-4);
        assert!((crc_all_overwritten(0.1, 2).unwrap() - 0.1813).abs() < 1e-4);
        assert!((crc_all_overwritten(0.1, 4).unwrap() - 0.3297).abs() < 1e-4);
        // N = 3 lies between N = 1's and the independent-copies value's extremes and tends to 0 and 1.
        let n3 = crc_all_overwritten(0.1, 3).unwrap();
        assert!((n3 - 0.1182).abs() < 1e-3, "{n3}");
        assert!(crc_all_overwritten(0.0, 3).unwrap().abs() < 1e-12);
        assert!(crc_all_overwritten(20.0, 3).unwrap() > 0.999_999);
    }
}
