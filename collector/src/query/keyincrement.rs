//! Key-Increment lookup (paper appendix A.4, Algorithm 6): the minimum of the key's N counters, a count-min
//! estimate that never undercounts.

use dta_protocol::layout::{KeyIncrementGeometry, COUNTER_LEN};
use serde::Serialize;

use super::{bytes, check_n};
use crate::error::Result;

/// The estimate and the counters it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeyIncrementAnswer {
    /// Minimum over the counters.
    pub estimate: u64,
    /// The N counters in copy order.
    pub counters: Vec<u64>,
}

/// Reads the N counters of `key` (native byte order, as the FETCH_ADDs left them) and takes the minimum.
pub fn key_increment(
    mem: &[u8],
    g: &KeyIncrementGeometry,
    key: u32,
    n: u8,
) -> Result<KeyIncrementAnswer> {
    check_n(n, g.n_max())?;
    let counters = (0..n)
        .map(|i| {
            let b = bytes(mem, g.offset(key, i), COUNTER_LEN as usize)?;
            let mut w = [0u8; 8];
            w.copy_from_slice(b);
            Ok(u64::from_ne_bytes(w))
        })
        .collect::<Result<Vec<u64>>>()?;
    let estimate = counters.iter().copied().min().unwrap_or(0);
    Ok(KeyIncrementAnswer { estimate, counters })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimum_over_the_design_vector_slots() {
        // Key 1's slots for S = 256 are 173, 100, 212, 95; counters are 8 bytes each.
        let g = KeyIncrementGeometry::new(256, 4).unwrap();
        let mut mem = vec![0u8; 2048];
        for (slot, v) in [(173usize, 40u64), (100, 17), (212, 25), (95, 99)] {
            mem[slot * 8..slot * 8 + 8].copy_from_slice(&v.to_ne_bytes());
        }
        let a = key_increment(&mem, &g, 1, 4).unwrap();
        assert_eq!(a.counters, [40, 17, 25, 99]);
        assert_eq!(a.estimate, 17);
        assert_eq!(key_increment(&mem, &g, 1, 1).unwrap().estimate, 40);
        assert_eq!(key_increment(&mem, &g, 0, 4).unwrap().estimate, 0);
        assert!(key_increment(&mem, &g, 1, 0).is_err());
    }
}
