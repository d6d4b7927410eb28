//! The INT workloads through the translator's INT front end: every frame is taken (no report dropped for
//! any reason), and the paths it yields are the fat-tree paths the generator's documented draws give,
//! recomputed here from the seed.

use dta_pktgen::fattree::{FatTree, HOPS};
use dta_pktgen::int::{flow_tuple, IntGenerator, IntKind, IntParams};
use dta_pktgen::keys::KeyDist;
use dta_pktgen::rng::SplitMix64;
use dta_protocol::int::inner::FlowKey;
use dta_protocol::int::mapping::flow_key;
use dta_protocol::udp::{UdpEndpoints, UdpFrame};
use dta_translator::config::{EventLists, IntConfig};
use dta_translator::int::{Action, Actions, IntCounters, IntFrontEnd, Translated};

fn generator(kind: IntKind, drop_per_mille: u32) -> IntGenerator {
    let p = IntParams {
        kind,
        flows: KeyDist::uniform(0, 100_000),
        tree: FatTree::new(8).unwrap(),
        drop_per_mille,
        seed: 7,
    };
    let ep = UdpEndpoints::new(
        [2, 0, 0, 0, 0, 9],
        [2, 0, 0, 0, 0, 1],
        [10, 0, 0, 9],
        [198, 18, 0, 2],
        40041,
        40040,
    );
    IntGenerator::new(p, ep)
}

fn front() -> IntFrontEnd {
    let cfg = IntConfig {
        enabled: true,
        md_udp_port: Some(5000),
        drop_list: EventLists::one(10),
        queue_list: EventLists::one(11),
        ..IntConfig::default()
    };
    IntFrontEnd::new(&cfg, 5)
}

fn key(flow: u32) -> u32 {
    let (src, dst, sport, dport) = flow_tuple(flow);
    flow_key(&FlowKey {
        src: src.into(),
        dst: dst.into(),
        protocol: 17,
        src_port: sport,
        dst_port: dport,
    })
}

/// (flow key, hop, node) of every postcard action.
fn postcards(a: &Actions) -> Vec<(u32, u8, u32, bool)> {
    a.iter()
        .filter_map(|a| match *a {
            Action::Postcard {
                flow,
                hop,
                node,
                length_known,
                ..
            } => Some((flow, hop, node, length_known)),
            _ => None,
        })
        .collect()
}

#[test]
fn v05_hop_by_hop_paths_as_drawn() {
    let mut g = generator(IntKind::V05, 0);
    let mut f = front();
    let (mut c, mut out) = (IntCounters::default(), Translated::default());
    let mut buf = [0u8; IntGenerator::MAX_FRAME_LEN];
    let mut got = Vec::new();
    for _ in 0..500 {
        let n = g.next_frame(&mut buf).unwrap();
        let udp = UdpFrame::parse(&buf[..n]).unwrap();
        assert_eq!(udp.endpoints.dst_port, 32766);
        out.clear();
        f.translate(udp.payload, &mut c, &mut out);
        let actions = &out.actions;
        got.extend(postcards(actions));
    }
    assert_eq!((c.reports, c.lost, c.late), (500, 0, 0));
    assert_eq!(c.drops.iter().sum::<u64>(), 0);
    // The draws: flow, path (6), then per hop occupancy and the drop draw.
    let mut rng = SplitMix64::new(7);
    let (dist, tree) = (KeyDist::uniform(0, 100_000), FatTree::new(8).unwrap());
    let mut want = Vec::new();
    for _ in 0..100 {
        let flow = dist.sample(&mut rng);
        let path = tree.path(&mut rng);
        for (h, &node) in path.iter().enumerate() {
            rng.next_u64();
            rng.next_u64();
            want.push((key(flow), h as u8 + 1, node, false));
        }
    }
    assert_eq!(got, want);
}

#[test]
fn v05_drops_end_a_flow_and_are_counted() {
    let mut g = generator(IntKind::V05, 100);
    let mut f = front();
    let (mut c, mut out) = (IntCounters::default(), Translated::default());
    let mut buf = [0u8; IntGenerator::MAX_FRAME_LEN];
    let mut drop_counts = 0;
    for _ in 0..2000 {
        let n = g.next_frame(&mut buf).unwrap();
        let udp = UdpFrame::parse(&buf[..n]).unwrap();
        out.clear();
        f.translate(udp.payload, &mut c, &mut out);
        let actions = &out.actions;
        drop_counts += actions
            .iter()
            .filter(|a| matches!(a, Action::DropCount { .. }))
            .count() as u64;
    }
    assert_eq!(c.reports, 2000);
    assert_eq!(c.drops.iter().sum::<u64>(), 0);
    assert_eq!(drop_counts, g.drops());
    // About one hop in ten drops (binomial, 2000 hops: 3 sigma is about 40).
    assert!((160..=240).contains(&g.drops()), "{}", g.drops());
}

#[test]
fn v2_sink_reports_carry_the_whole_path() {
    let mut g = generator(IntKind::V2, 0);
    let mut f = front();
    let (mut c, mut out) = (IntCounters::default(), Translated::default());
    let mut buf = [0u8; IntGenerator::MAX_FRAME_LEN];
    let mut rng = SplitMix64::new(7);
    let (dist, tree) = (KeyDist::uniform(0, 100_000), FatTree::new(8).unwrap());
    for _ in 0..200 {
        let n = g.next_frame(&mut buf).unwrap();
        let udp = UdpFrame::parse(&buf[..n]).unwrap();
        out.clear();
        f.translate(udp.payload, &mut c, &mut out);
        let actions = &out.actions;
        let flow = dist.sample(&mut rng);
        let path = tree.path(&mut rng);
        for _ in 0..HOPS {
            rng.next_u64();
        }
        let want: Vec<_> = path
            .iter()
            .enumerate()
            .map(|(h, &n)| (key(flow), h as u8 + 1, n, true))
            .collect();
        assert_eq!(postcards(actions), want);
    }
    assert_eq!((c.reports, c.whole_paths, c.lost), (200, 200, 0));
    assert_eq!(c.drops.iter().sum::<u64>(), 0);
}
