//! Which keys one collector of several holds, so that a many-key query can be split among them.

use std::fmt;

use dta_protocol::hash::key_checksum;

use crate::error::{Error, Result};

/// The keys one collector of several holds: those with `key_checksum(key) mod count == index`, the
/// translator's key-hash routing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// This collector's position in the translator's `[[collectors]]` order.
    pub index: u32,
    /// How many collectors there are.
    pub count: u32,
}

impl Shard {
    /// One collector holding every key.
    pub const ALL: Shard = Shard { index: 0, count: 1 };

    /// Parses `I/N` with I < N.
    pub fn parse(s: &str) -> Result<Self> {
        let parsed = s
            .split_once('/')
            .and_then(|(i, n)| Some((i.trim().parse().ok()?, n.trim().parse().ok()?)));
        match parsed {
            Some((index, count)) if index < count => Ok(Shard { index, count }),
            _ => Err(Error::BadQuery(format!(
                "shard {s:?} is not I/N with I < N (this collector's index among N)"
            ))),
        }
    }

    /// Whether this collector holds `key`.
    pub fn owns(&self, key: u32) -> bool {
        key_checksum(key) % self.count == self.index
    }
}

impl Default for Shard {
    fn default() -> Self {
        Shard::ALL
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_own_by_key_hash() {
        assert_eq!(Shard::parse("1/3").unwrap(), Shard { index: 1, count: 3 });
        assert_eq!(Shard::parse("0/1").unwrap(), Shard::ALL);
        for bad in ["3/3", "1", "a/2", "1/0", "-1/2", ""] {
            let e = Shard::parse(bad).unwrap_err().to_string();
            assert!(e.contains("is not I/N with I < N"), "{bad:?}: {e}");
        }
        assert_eq!(Shard { index: 2, count: 5 }.to_string(), "2/5");
        // key_checksum(1) = 0x99f8b879 (DESIGN.md section 3) = 2583214201, which is 1 mod 2 and 1 mod 3.
        assert!(Shard { index: 1, count: 2 }.owns(1));
        assert!(!Shard { index: 0, count: 2 }.owns(1));
        assert!(Shard { index: 1, count: 3 }.owns(1));
        assert!(Shard::ALL.owns(1));
    }
}
