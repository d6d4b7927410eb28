//! Fuzzes the translator's INT front end (`dta_translator::int::IntFrontEnd::translate`): arbitrary UDP
//! payloads on the INT port, with the first bytes choosing the configuration. Checked on every input:
//! * no panic;
//! * one packet counted, and each report either translated or dropped for one reason: a v0.5 payload
//!   (one report) is counted exactly once, a v2.0 group at most once per 4 bytes;
//! * every action names a hop in 1..=path length, a path length within the configured hops, and only
//!   the kinds the configuration enables (no drop events without a drop list, no queue events without a
//!   queue list, no postcards or hop records when paths or per-hop state are off);
//! * a sink report writes one postcard per hop of one path (hops 1..=len, each once);
//! * with `hop_mode = "topology"` (bit 7 of the hops byte; a leaf-spine fabric of leaves 1..=4, host
//!   ports 1..=8, and spines 5 and 6), every postcard knows its path's length.
#![no_main]

use dta_translator::config::{EventLists, FabricSwitch, HopMode, IntConfig, SwitchRole};
use dta_translator::int::{Action, IntCounters, IntFrontEnd, Translated};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let Some((&hops, payload)) = rest.split_first() else {
        return;
    };
    let topology = hops & 0x80 != 0;
    let hops = 1 + hops % 8;
    let switch = |node, role, host_ports: &[u16]| FabricSwitch {
        node,
        role,
        host_ports: host_ports.to_vec(),
    };
    let fabric = (1..=4)
        .map(|n| switch(n, SwitchRole::Leaf, &[1, 2, 3, 4, 5, 6, 7, 8]))
        .chain((5..=6).map(|n| switch(n, SwitchRole::Spine, &[])))
        .collect();
    let cfg = IntConfig {
        enabled: true,
        initial_ttls: vec![64, 128, 255],
        hop_offset: flags >> 7,
        md_udp_port: (flags & 1 != 0).then_some(5000),
        md_dscp: (flags & 2 != 0).then_some(0x01),
        md_dscp_mask: 0x01,
        path: flags & 4 == 0,
        flow_state: flags & 8 == 0,
        drop_counts: flags & 16 == 0,
        drop_list: if flags & 32 != 0 {
            EventLists::one(7)
        } else {
            EventLists::default()
        },
        queue_list: if flags & 64 != 0 {
            EventLists::one(8)
        } else {
            EventLists::default()
        },
        max_sequences: 4,
        hop_mode: if topology {
            HopMode::Topology
        } else {
            HopMode::Ttl
        },
        switches: if topology { fabric } else { Vec::new() },
        ..IntConfig::default()
    };
    let mut front = IntFrontEnd::new(&cfg, hops);
    let mut c = IntCounters::default();
    let mut t = Translated::default();
    front.translate(payload, &mut c, &mut t);
    // One worker: nothing is left to another.
    assert!(t.handed.is_empty());
    let out = t.actions;
    assert_eq!(c.packets, 1);
    let dropped: u64 = c.drops.iter().sum();
    let outcomes = c.reports + dropped;
    match payload.first().map(|b| b >> 4) {
        Some(2) => assert!(outcomes as usize <= 1 + payload.len() / 4),
        _ => assert_eq!(outcomes, 1),
    }
    let mut whole: Vec<(u32, u8, u8)> = Vec::new();
    for a in &out {
        match *a {
            Action::Postcard {
                flow,
                hop,
                path_len,
                length_known,
                ..
            } => {
                assert!(cfg.path);
                assert!((1..=path_len).contains(&hop) && path_len <= hops);
                if topology {
                    // Placed by the fabric (a per-hop report's path is 1 or 3 hops) or a sink's stack.
                    assert!(length_known);
                } else if length_known {
                    // Placed by TTL: only a sink report knows its path's length.
                    whole.push((flow, hop, path_len));
                } else {
                    assert_eq!(path_len, hops);
                }
            }
            Action::Hop { hop, .. } => {
                assert!(cfg.flow_state);
                assert!((1..=hops).contains(&hop));
            }
            Action::DropCount { .. } => assert!(cfg.drop_counts),
            Action::DropEvent(_) => assert!(!cfg.drop_list.is_empty()),
            Action::QueueEvent(_) => assert!(!cfg.queue_list.is_empty()),
        }
    }
    // Sink reports: hops 1..=len in order, one path after another.
    let mut i = 0;
    while i < whole.len() {
        let (flow, _, len) = whole[i];
        for h in 1..=len {
            assert_eq!(whole.get(i), Some(&(flow, h, len)), "sink path at {i}");
            i += 1;
        }
    }
});
