//! The `*_us` keys as [`Duration`]s. The keys stay microseconds in TOML (config files and docs name
//! them); the engine takes intervals as `Duration`s through these, converted once where it is built.

use std::time::Duration;

use super::{AppendConfig, KeyIncrementConfig, PostcardConfig, SequenceConfig, SketchConfig};

impl SequenceConfig {
    /// `nack_holdoff_us`.
    pub fn nack_holdoff(&self) -> Duration {
        Duration::from_micros(self.nack_holdoff_us)
    }
}

impl KeyIncrementConfig {
    /// `coalesce_us` (zero: off).
    pub fn coalesce(&self) -> Duration {
        Duration::from_micros(self.coalesce_us)
    }
}

impl AppendConfig {
    /// `idle_flush_us`.
    pub fn idle_flush(&self) -> Duration {
        Duration::from_micros(self.idle_flush_us)
    }
}

impl PostcardConfig {
    /// `idle_timeout_us`.
    pub fn idle_timeout(&self) -> Duration {
        Duration::from_micros(self.idle_timeout_us)
    }
}

impl SketchConfig {
    /// `idle_flush_us`.
    pub fn idle_flush(&self) -> Duration {
        Duration::from_micros(self.idle_flush_us)
    }
}
