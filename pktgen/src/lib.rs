//! `dta-pktgen`: seeded DTA report workloads modelled on the DTA paper's experiments, as Ethernet frames.
//!
//! * [`rng`]: SplitMix64, chosen because it is five lines in any language: the TRex profiles in
//!   `pktgen/trex/` reimplement it in Python to build the very same first frame.
//! * [`keys`]: uniform and Zipf key (or list) distributions.
//! * [`fattree`]: 5-hop paths through a k-ary fat tree, as switch IDs.
//! * [`workload`]: the workloads (Key-Write path tracing, Key-Increment, Append, Postcarding, Sketch-Merge,
//!   mix), each a deterministic sequence of reports.
//! * [`frame`]: reports into Ethernet/IPv4/UDP frames.
//! * [`fast`]: the same frames from per-type templates patched in place, for line-rate output.
//! * [`int`]: INT workloads (fabric-tna v0.5 hop by hop, v2.0 sink reports) for the translator's INT port.
//! * [`source`]: what the outputs take: any of the generators.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod divisor;
pub mod fast;
pub mod fattree;
pub mod frame;
pub mod int;
pub mod keys;
pub mod rng;
pub mod source;
pub mod workload;
