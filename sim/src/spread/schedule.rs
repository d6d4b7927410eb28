//! Flows, their paths and the arrival time of every hop report, all fixed by the seed.

use anyhow::{bail, Result};
use dta_protocol::int::inner::FlowKey;
use dta_protocol::int::mapping::flow_key;
use std::net::{IpAddr, Ipv4Addr};

use super::{Order, SpreadParams};
use crate::rng::{mix64, Rng};

/// The flow's 5-tuple (UDP, IPv4): what a switch's mirrored copy carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tuple {
    /// Source address.
    pub src: [u8; 4],
    /// Destination address.
    pub dst: [u8; 4],
    /// UDP source port.
    pub src_port: u16,
    /// UDP destination port.
    pub dst_port: u16,
}

impl Tuple {
    /// The flow key the INT front end derives, used for the DTA reports too so both kinds place alike.
    pub fn key(&self) -> u32 {
        flow_key(&FlowKey {
            src: IpAddr::V4(Ipv4Addr::from(self.src)),
            dst: IpAddr::V4(Ipv4Addr::from(self.dst)),
            protocol: 17,
            src_port: self.src_port,
            dst_port: self.dst_port,
        })
    }
}

/// One flow of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Flow {
    /// Its 5-tuple.
    pub tuple: Tuple,
    /// Its key.
    pub key: u32,
    /// The switch id at each hop.
    pub path: Vec<u32>,
    /// When each hop's report reaches the translator, virtual nanoseconds.
    pub at: Vec<u64>,
}

/// Uniform in [0, 1).
fn unit(r: &mut Rng) -> f64 {
    (r.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// The flows of `p`: flow i comes from 10.x.y.z (z, y, x the bytes of i) to an address the seed picks.
/// Flows start as a Poisson stream of `flows_per_ms`, the first after one spread (so a
/// jittered first hop is never before time 0); times are whole nanoseconds.
pub fn schedule(p: &SpreadParams) -> Result<Vec<Flow>> {
    if p.flows == 0 || p.flows >= 1 << 24 {
        bail!("flows must be 1..2^24 (one source address each)");
    }
    if !(1..=8).contains(&p.hops) || p.universe == 0 || p.spread_ns == 0 {
        bail!("hops must be 1..=8, the universe and the spread above zero");
    }
    if !(p.flows_per_ms > 0.0 && p.flows_per_ms.is_finite()) {
        bail!("flows_per_ms must be a positive number");
    }
    if let Order::Path { jitter } = p.order {
        if !(0.0..=f64::from(p.hops)).contains(&jitter) {
            bail!("jitter must be 0..=B slices");
        }
    }
    let mut starts = Rng::new(mix64(p.seed ^ 0x5354_4152_5453));
    let mean_gap_ns = 1e6 / p.flows_per_ms;
    let mut t0 = p.spread_ns as f64;
    // The destination comes from the seed, so each seed has its own flow keys (and chunk placements).
    let [_, d1, d2, d3] = (mix64(p.seed) as u32).to_be_bytes();
    let mut out = Vec::with_capacity(p.flows as usize);
    for i in 0..p.flows {
        let mut r = Rng::new(mix64(
            p.seed ^ u64::from(i).wrapping_mul(0x9E37_79B9_7F4A_7C15),
        ));
        let [_, a, b, c] = i.to_be_bytes();
        let tuple = Tuple {
            src: [10, a, b, c],
            dst: [10, d1, d2, d3],
            src_port: 1024 + (i % 50_000) as u16,
            dst_port: 80,
        };
        let path = (0..p.hops)
            .map(|_| 1 + r.below(u64::from(p.universe)) as u32)
            .collect();
        let slice = p.spread_ns as f64 / f64::from(p.hops);
        let at = (0..p.hops)
            .map(|h| match p.order {
                Order::Random => t0 as u64 + r.below(p.spread_ns),
                Order::Path { jitter } => {
                    let mid = (f64::from(h) + 0.5) * slice;
                    (t0 + mid + (2.0 * unit(&mut r) - 1.0) * jitter * slice) as u64
                }
            })
            .collect();
        out.push(Flow {
            key: tuple.key(),
            tuple,
            path,
            at,
        });
        t0 += -(1.0 - unit(&mut starts)).ln() * mean_gap_ns;
    }
    let mut keys: Vec<u32> = out.iter().map(|f| f.key).collect();
    keys.sort_unstable();
    if keys.windows(2).any(|w| w[0] == w[1]) {
        bail!("two flows share a key: choose another seed");
    }
    Ok(out)
}
