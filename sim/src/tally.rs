//! Counting query outcomes, and the binomial standard error the statistical tests derive tolerances from.

/// Outcomes of the queries made at one age.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tally {
    /// Distinct keys written after each queried key.
    pub age: u64,
    /// `age` divided by the slot (or chunk) count: the paper's α.
    pub alpha: f64,
    /// Queries made.
    pub queries: u64,
    /// Right answers.
    pub found: u64,
    /// No answer: nothing matched, or matching copies disagreed (the paper's "empty return").
    pub empty: u64,
    /// An answer other than the value written (the paper's "return error").
    pub wrong: u64,
}

impl Tally {
    /// An empty tally for queries at `age` among `slots`.
    pub fn new(age: u64, slots: u64) -> Self {
        Tally {
            age,
            alpha: age as f64 / slots as f64,
            ..Tally::default()
        }
    }

    /// Fraction of queries that returned nothing.
    pub fn empty_rate(&self) -> f64 {
        self.empty as f64 / self.queries.max(1) as f64
    }

    /// Fraction of queries that returned a wrong value.
    pub fn wrong_rate(&self) -> f64 {
        self.wrong as f64 / self.queries.max(1) as f64
    }

    /// Fraction of queries answered correctly.
    pub fn success_rate(&self) -> f64 {
        self.found as f64 / self.queries.max(1) as f64
    }
}

/// Standard error of a binomial proportion with true probability `p` over `n` trials: sqrt(p(1-p)/n).
/// Tests use the predicted p (not the measured one), so a zero count cannot shrink its own tolerance.
pub fn binomial_se(p: f64, n: u64) -> f64 {
    (p * (1.0 - p) / n as f64).sqrt()
}
