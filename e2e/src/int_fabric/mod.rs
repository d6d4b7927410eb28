//! A leaf-spine fabric's INT reports end to end (issue 27, item 7): fabric-tna v0.5 switch-local reports
//! of a two-tier fabric, built by the independent encoder [`int_spec`](crate::int_spec), sent to a
//! translator with `[int] hop_mode = "topology"` and the fabric's `[[int.switches]]`; every flow's path
//! and every hop record read back through the collector's `int-path` and `int-flow` queries.
//!
//! The fabric, numbered as Tofino device ports (9 bits, the pipe in the top two): leaves 1 and 2 with
//! hosts on ports 1..=8 and uplinks 132 (spine 21) and 140 (spine 22); leaves 3 and 4 with hosts on
//! ports 260..=267 and uplinks 1 and 2 (so a port that faces a host on one leaf faces a spine on
//! another: only the per-switch lists tell them apart); spines 21 and 22 reach leaf L on their port L.
//! A report's hardware id is its ingress pipe, as fabric-tna's. Four hosts hang off each leaf, two subnets of two hosts per leaf; most
//! send with initial TTL 64, one with 32, one with 128, and one sits behind routers outside the fabric
//! (TTL 58 when it enters).
//!
//! What each switch's report carries is what fabric-tna's `next.p4` leaves in the mirrored packet:
//!
//! * between leaves (routed over MPLS): the first leaf and the spine report the host's TTL untouched,
//!   the last leaf (which pops the label and routes) one less: 64, 64, 63 for most hosts;
//! * on one leaf: bridged within a subnet, the TTL untouched; routed between its subnets, one less.
//!
//! The reports come as a fabric sends them: a flow's switches report in any order (last hop first,
//! spine first, ...) and flows interleave; each (switch, hardware id) numbers its own reports (one
//! switch's numbers wrap) and some leave after their switch's next one (late, never lost); some flows are reported again later with
//! new latencies (the newer record wins); some flows lose one switch's report for good (never sent, no
//! sequence number taken): the last hop, the spine, or the first hop. Timestamps are a 32-bit clock
//! that wraps during the run. Reports the fabric cannot place: a leaf's report between its two uplinks
//! (on leaves 3 and 4 those are ports 1 and 2, host ports on leaves 1 and 2), and a switch outside the
//! fabric (node 40, inside the collector's node universe, so a wrong placement would decode).
//!
//! The expected answers come from the route of each flow (which switches, which ports, in which hop)
//! and from what each report said, replayed in send order: nothing here computes a key, a checksum or
//! a placement with the code under test. A flow with every switch of its route reported has that path;
//! any other flow has none (`int-path` empty, never a shorter path), and its reported hops' records are
//! still found by `int-flow`. The workload is small (under 2,000 hop records in 2^20 Key-Write slots,
//! under 500 paths in 2^18 chunks with 4 copies) and deterministic: a key whose every copy another key
//! overwrote would fail every run, not some.
//!
//! One job a file: `topology` (switches, hosts, wiring, routes, the translator's sections), `expect`
//! (what must be answered), `reports` (the reports and their expectation) and `check` (the answers
//! read back).

mod check;
mod expect;
mod reports;
mod topology;

pub use check::wait_partial_written;
pub use expect::FabricExpected;
pub use reports::fabric_with_expected;
pub use topology::{translator_sections, LEAVES, OUTSIDE, SPINES};

#[cfg(test)]
mod tests;
