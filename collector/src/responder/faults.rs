//! Seeded fault injection in front of the responder: drop, reorder and corrupt frames, so that tests (and
//! a lab collector) exercise the translator's retransmission without `netem`, which this kernel lacks.

use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use serde::Deserialize;

/// Fault rates, each a probability in 0..=1 per frame.
#[derive(Debug, Clone, Copy, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FaultConfig {
    /// Probability of dropping a frame.
    pub drop: f64,
    /// Probability of holding a frame back and delivering it after the next one.
    pub reorder: f64,
    /// Probability of flipping one bit after the Ethernet header.
    pub corrupt: f64,
    /// Seed of the random stream, so a failing run can be replayed.
    pub seed: u64,
}

impl FaultConfig {
    /// Whether any fault is enabled.
    pub fn is_active(&self) -> bool {
        self.drop > 0.0 || self.reorder > 0.0 || self.corrupt > 0.0
    }

    /// Checks that every rate is a probability.
    pub fn validate(&self) -> Result<(), String> {
        for (name, v) in [
            ("drop", self.drop),
            ("reorder", self.reorder),
            ("corrupt", self.corrupt),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(format!("fault rate {name} = {v} is not in 0..=1"));
            }
        }
        Ok(())
    }
}

/// Counts of what the injector did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FaultCounts {
    /// Frames dropped.
    pub dropped: u64,
    /// Frames delivered late.
    pub reordered: u64,
    /// Frames with a flipped bit.
    pub corrupted: u64,
}

/// Applies [`FaultConfig`] to a stream of frames.
#[derive(Debug)]
pub struct FaultInjector {
    config: FaultConfig,
    rng: ChaCha8Rng,
    held: Option<Vec<u8>>,
    counts: FaultCounts,
}

/// Bytes of the Ethernet header, left intact so a corrupted frame still reaches the responder's checks.
const ETH_LEN: usize = 14;

impl FaultInjector {
    /// An injector seeded from `config.seed`.
    pub fn new(config: FaultConfig) -> Self {
        FaultInjector {
            rng: ChaCha8Rng::seed_from_u64(config.seed),
            config,
            held: None,
            counts: FaultCounts::default(),
        }
    }

    /// What the injector has done so far.
    pub fn counts(&self) -> FaultCounts {
        self.counts
    }

    fn chance(&mut self, p: f64) -> bool {
        // 53 random bits give a uniform float in [0, 1).
        p > 0.0 && ((self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < p
    }

    /// Feeds one frame; pushes the frames to deliver now (zero, one or two) onto `deliver`.
    pub fn push(&mut self, frame: &[u8], deliver: &mut Vec<Vec<u8>>) {
        if self.chance(self.config.drop) {
            self.counts.dropped += 1;
            return;
        }
        let mut f = frame.to_vec();
        if f.len() > ETH_LEN && self.chance(self.config.corrupt) {
            let bit = self.rng.next_u64() as usize % ((f.len() - ETH_LEN) * 8);
            f[ETH_LEN + bit / 8] ^= 1 << (bit % 8);
            self.counts.corrupted += 1;
        }
        if self.held.is_none() && self.chance(self.config.reorder) {
            self.counts.reordered += 1;
            self.held = Some(f);
            return;
        }
        deliver.push(f);
        if let Some(h) = self.held.take() {
            deliver.push(h);
        }
    }

    /// Releases a held frame (call when the input idles, so reordering never turns into loss).
    pub fn flush(&mut self, deliver: &mut Vec<Vec<u8>>) {
        if let Some(h) = self.held.take() {
            deliver.push(h);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(config: FaultConfig, n: u8) -> (Vec<Vec<u8>>, FaultCounts) {
        let mut inj = FaultInjector::new(config);
        let mut out = Vec::new();
        for i in 0..n {
            inj.push(&[i; 40], &mut out);
        }
        inj.flush(&mut out);
        (out, inj.counts())
    }

    #[test]
    fn no_faults_is_identity() {
        let (out, c) = run(FaultConfig::default(), 10);
        assert_eq!(out.len(), 10);
        assert!(out.iter().enumerate().all(|(i, f)| f == &vec![i as u8; 40]));
        assert_eq!(c, FaultCounts::default());
    }

    #[test]
    fn drop_everything_and_reorder_everything() {
        let all_drop = FaultConfig {
            drop: 1.0,
            ..Default::default()
        };
        let (out, c) = run(all_drop, 10);
        assert!(out.is_empty());
        assert_eq!(c.dropped, 10);
        let all_reorder = FaultConfig {
            reorder: 1.0,
            ..Default::default()
        };
        let (out, c) = run(all_reorder, 4);
        let firsts: Vec<u8> = out.iter().map(|f| f[0]).collect();
        assert_eq!(firsts, [1, 0, 3, 2]);
        assert_eq!(c.reordered, 2);
    }

    #[test]
    fn corruption_flips_exactly_one_bit_past_ethernet_and_is_seeded() {
        let cfg = FaultConfig {
            corrupt: 1.0,
            seed: 7,
            ..Default::default()
        };
        let (a, c) = run(cfg, 20);
        let (b, _) = run(cfg, 20);
        assert_eq!(a, b, "same seed, same faults");
        assert_eq!(c.corrupted, 20);
        for (i, f) in a.iter().enumerate() {
            let flipped: u32 = f.iter().map(|&x| (x ^ i as u8).count_ones()).sum();
            assert_eq!(flipped, 1);
            assert_eq!(&f[..14], &[i as u8; 14]);
        }
        let rates = FaultConfig {
            drop: 0.3,
            seed: 1,
            ..Default::default()
        };
        let (out, c) = run(rates, 200);
        assert_eq!(out.len() as u64 + c.dropped, 200);
        assert!(
            (30..90).contains(&c.dropped),
            "about 30% of 200: {}",
            c.dropped
        );
        assert!(FaultConfig {
            drop: 1.5,
            ..Default::default()
        }
        .validate()
        .is_err());
    }
}
