//! The workload's flows: their 5-tuples, as the INT queries name them, and their keys.

use std::net::{IpAddr, Ipv4Addr};

use dta_protocol::int::inner::FlowKey;
use dta_protocol::int::mapping::flow_key;

use crate::int_spec::Flow;

pub(super) fn spec_flow(f: u32) -> Flow {
    let b = f.to_be_bytes();
    Flow {
        src: [10, 1, b[2], b[3]],
        dst: [10, 2, 0, 1 + (f % 200) as u8],
        sport: 20_000 + (f % 30_000) as u16,
        dport: 443,
    }
}

/// The first per-hop flow of [`int`](super::int), as the INT queries name it (for the demo's example
/// query).
pub fn example_flow() -> String {
    flow_text(&spec_flow(0))
}

pub(super) fn flow_text(f: &Flow) -> String {
    let ip = |a: [u8; 4]| Ipv4Addr::from(a).to_string();
    format!("{},{},17,{},{}", ip(f.src), ip(f.dst), f.sport, f.dport)
}

pub(super) fn key_of(f: &Flow) -> u32 {
    flow_key(&FlowKey {
        src: IpAddr::V4(Ipv4Addr::from(f.src)),
        dst: IpAddr::V4(Ipv4Addr::from(f.dst)),
        protocol: 17,
        src_port: f.sport,
        dst_port: f.dport,
    })
}
