use super::*;
use dta_protocol::int::inner::FlowKey;
use dta_protocol::int::mapping::flow_key;
use std::net::{IpAddr, Ipv4Addr};

/// The flows of the bench's INT ring and of a host pair's ports: each worker of 2, 3 and 4 owns its
/// share within 5 %.
#[test]
fn flows_spread_evenly_over_workers() {
    let bench = (0..20_000u32).map(|flow| {
        let f = flow.to_be_bytes();
        FlowKey {
            src: IpAddr::V4(Ipv4Addr::new(10, f[1], f[2], f[3])),
            dst: IpAddr::V4(Ipv4Addr::new(10, 200, 0, 1)),
            protocol: 17,
            src_port: 10_000 + (flow % 50_000) as u16,
            dst_port: 80,
        }
    });
    let ports = (0..20_000u32).map(|p| FlowKey {
        src: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
        dst: IpAddr::V4(Ipv4Addr::new(10, 0, 1, 2)),
        protocol: 6,
        src_port: 1024 + p as u16,
        dst_port: 443,
    });
    for (name, flows) in [
        ("bench", bench.collect::<Vec<_>>()),
        ("ports", ports.collect()),
    ] {
        for count in 2..=4 {
            let mut per = vec![0usize; count];
            for f in &flows {
                per[Shard { index: 0, count }.owner(flow_key(f))] += 1;
            }
            let fair = flows.len() / count;
            for (w, n) in per.iter().enumerate() {
                assert!(
                    n.abs_diff(fair) * 20 <= fair,
                    "{name}: worker {w} of {count} owns {n} of {} flows",
                    flows.len()
                );
            }
        }
    }
}
