//! Fuzzes the translator's INT front end (`dta_translator::int::IntFrontEnd::translate`): arbitrary UDP
//! payloads on the INT port, with the first bytes choosing the configuration. Checked on every input:
//! * no panic;
//! * one packet counted, and each report either translated or dropped for one reason: a v0.5 payload
//!   (one report) is counted exactly once, a v2.0 group at most once per 4 bytes;
//! * every action names a hop in 1..=path length, a path length within the configured hops, and only
//!   the kinds the configuration enables (no drop events without a drop list, no queue events without a
//!   queue list, no postcards or hop records when paths or per-hop state are off);
//! * a sink report writes one postcard per hop of one path (hops 1..=len, each once).
#![no_main]

use dta_translator::config::IntConfig;
use dta_translator::int::{Action, Actions, IntCounters, IntFrontEnd};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let Some((&hops, payload)) = rest.split_first() else {
        return;
    };
    let hops = 1 + hops % 8;
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
        drop_list: (flags & 32 != 0).then_some(7),
        queue_list: (flags & 64 != 0).then_some(8),
        max_sequences: 4,
        ..IntConfig::default()
    };
    let mut front = IntFrontEnd::new(&cfg, hops);
    let mut c = IntCounters::default();
    let mut out = Actions::new();
    front.translate(payload, &mut c, &mut out);
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
                // TTL placement here: only a sink report knows its path's length.
                if length_known {
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
            Action::DropEvent(_) => assert!(cfg.drop_list.is_some()),
            Action::QueueEvent(_) => assert!(cfg.queue_list.is_some()),
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
