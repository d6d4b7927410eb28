//! Issue 17's measurement: paths recovered when a flow's per-hop reports are spread over 0.1-10 ms, for
//! DTA postcards (opcode 0x04) and fabric-tna v0.5 per-hop INT reports alike.
//!
//! Each flow has B hops whose reports arrive at their own times within a window of `spread` ([`schedule`]);
//! flows start as a Poisson stream, so many overlap in the translator's direct-mapped postcard cache. The
//! real engine takes the reports in virtual time, its idle timers firing at their own instants, and the real
//! responder applies its writes ([`drive`]); the collector's `PostcardDecoder` then reads every flow's path.
//! [`rule`] says what the translator's composition rule (an entry holding hop 1 writes the whole chunk, a
//! continuation only its cells) predicts from the arrival times alone; [`table`] sweeps spread, arrival
//! order, idle timeout and report kind. `POSTCARD_SPREAD.md` in the crate has the measured table.

pub mod drive;
pub mod int_report;
pub mod rule;
pub mod schedule;
pub mod table;

/// How a flow's hop reports are ordered in time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Order {
    /// Each hop's report at an independent uniform time in the window: any order.
    Random,
    /// Hop h's report in the middle of the h-th of B equal slices of the window, moved by a uniform jitter
    /// of ± `jitter` slices: 0.5 keeps path order, 1.0 lets neighbours swap (and widens the window by one
    /// slice).
    Path {
        /// Jitter in slices (spread / B).
        jitter: f64,
    },
}

impl std::fmt::Display for Order {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Order::Random => write!(f, "random"),
            Order::Path { jitter } => write!(f, "path ±{jitter} slice"),
        }
    }
}

/// Which reports carry the postcards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// DTA Postcarding reports (opcode 0x04) on the DTA port.
    Dta,
    /// fabric-tna v0.5 switch-local reports on the INT port, hop from the inner TTL.
    Int,
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Kind::Dta => "DTA 0x04",
            Kind::Int => "INT v0.5",
        })
    }
}

/// One run.
#[derive(Debug, Clone)]
pub struct SpreadParams {
    /// Flows F.
    pub flows: u32,
    /// Hops B per path (1..=8); every flow reports all B.
    pub hops: u8,
    /// Window over which one flow's reports arrive, in nanoseconds.
    pub spread_ns: u64,
    /// Arrival order within the window.
    pub order: Order,
    /// Mean flow starts per millisecond (Poisson).
    pub flows_per_ms: f64,
    /// The translator's postcard idle timeout (`postcard.idle_timeout_us`).
    pub idle_us: u64,
    /// The translator's postcard cache size (`postcard.cache_size`).
    pub cache: usize,
    /// Chunks C of the Postcarding region (a power of two).
    pub chunks: u64,
    /// Chunk copies N.
    pub n: u8,
    /// Hop values (switch ids) are 1..=universe.
    pub universe: u32,
    /// Seed of flows, paths and times.
    pub seed: u64,
}

/// How one flow's path read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// Exactly the path the flow took.
    Exact,
    /// A strict prefix of it: blanks written by the entry holding hop 1 cover later hops written earlier.
    Prefix,
    /// No chunk copy decodes.
    Empty,
    /// Copies decode to different paths.
    Conflict,
    /// Any other path.
    Wrong,
}

/// Counts of each [`Verdict`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Verdicts {
    /// [`Verdict::Exact`].
    pub exact: u64,
    /// [`Verdict::Prefix`].
    pub prefix: u64,
    /// [`Verdict::Empty`].
    pub empty: u64,
    /// [`Verdict::Conflict`].
    pub conflict: u64,
    /// [`Verdict::Wrong`].
    pub wrong: u64,
}

impl Verdicts {
    /// Counts `v`.
    pub fn of(v: &[Verdict]) -> Self {
        let mut c = Verdicts::default();
        for x in v {
            *match x {
                Verdict::Exact => &mut c.exact,
                Verdict::Prefix => &mut c.prefix,
                Verdict::Empty => &mut c.empty,
                Verdict::Conflict => &mut c.conflict,
                Verdict::Wrong => &mut c.wrong,
            } += 1;
        }
        c
    }

    /// Flows counted.
    pub fn total(&self) -> u64 {
        self.exact + self.prefix + self.empty + self.conflict + self.wrong
    }
}
