//! Hops from the fabric's topology (issue 27, item 7): a leaf-spine fabric of fabric-tna-shaped v0.5
//! switch-local reports (the independent encoder `dta_e2e::int_spec`), whose inner TTLs are what
//! fabric-tna mirrors (64 at the first leaf and the spine, 63 at the last leaf; nothing decremented when
//! bridging; another initial TTL for some hosts), placed by `hop_mode = "topology"` and read back with the
//! collector's queries.

mod int_harness;

use dta_translator::config::{FabricSwitch, HopMode, SwitchRole};
use int_harness::*;

const INT_PORT: u16 = 32766;
/// Leaves 1, 2, 3 (hosts on ports 1..=4, spines on 33 and 34), spines 11 and 12.
const LEAVES: [u32; 3] = [1, 2, 3];
const SPINES: [u32; 2] = [11, 12];
const UPLINK: u16 = 33;

fn fabric() -> Vec<FabricSwitch> {
    let leaves = LEAVES.iter().map(|&node| FabricSwitch {
        node,
        role: SwitchRole::Leaf,
        host_ports: vec![1, 2, 3, 4],
    });
    let spines = SPINES.iter().map(|&node| FabricSwitch {
        node,
        role: SwitchRole::Spine,
        host_ports: vec![],
    });
    leaves.chain(spines).collect()
}

fn topology_engine() -> Engine {
    engine_with(|c| {
        c.int.hop_mode = HopMode::Topology;
        c.int.switches = fabric();
    })
}

/// fabric-tna's switch-local report by `switch` of flow `sport`'s packet, in on `ig_port` and out on
/// `eg_port`, with inner TTL `ttl`.
fn report(switch: u32, seq: u32, ports: (u16, u16), sport: u16, ttl: u8) -> Vec<u8> {
    let l = spec::Local {
        switch,
        hw_id: 1,
        seq,
        congested: false,
        ig_ts: 1_000,
        eg_ts: 1_000 + 10 * switch,
        queue: (1, switch),
        ig_port: ports.0,
        eg_port: ports.1,
    };
    spec::v05_local(&l, &inner(sport, ttl))
}

fn universe() -> Vec<u32> {
    (1..=20).collect()
}

/// A leaf-spine fabric: routed paths across it, a bridged flow, a host with initial TTL 32, reports in
/// any order, a lost last hop, and reports the fabric cannot place.
#[test]
fn a_leaf_spine_fabric_is_placed_without_ttl() {
    let mut e = topology_engine();
    let mut mem = Memory::new();
    let mut seqs = std::collections::HashMap::new();
    let mut send = |e: &mut Engine, switch: u32, ports: (u16, u16), sport: u16, ttl: u8| {
        let seq = seqs.entry(switch).or_insert(0);
        *seq += 1;
        e.handle_frame(
            Instant(0),
            &frame(&report(switch, *seq, ports, sport, ttl), INT_PORT),
        );
    };
    // 5001: host on leaf 1 to host on leaf 2 through spine 11; fabric-tna's TTLs 64, 64, 63.
    send(&mut e, 1, (1, UPLINK), 5001, 64);
    send(&mut e, 11, (5, 6), 5001, 64);
    send(&mut e, 2, (UPLINK, 2), 5001, 63);
    // 5002: bridged on leaf 3 (port 1 to port 2), TTL untouched.
    send(&mut e, 3, (1, 2), 5002, 64);
    // 5003: a host whose initial TTL is 32, leaf 2 to leaf 1 through spine 12.
    send(&mut e, 2, (3, UPLINK + 1), 5003, 32);
    send(&mut e, 12, (2, 1), 5003, 32);
    send(&mut e, 1, (UPLINK + 1, 4), 5003, 31);
    // 5004: leaf 3 to leaf 1 through spine 11, last hop first, each written before the next arrives.
    send(&mut e, 1, (UPLINK, 3), 5004, 63);
    mem.sync(&mut e, Instant(1));
    send(&mut e, 11, (3, 5), 5004, 64);
    mem.sync(&mut e, Instant(2));
    send(&mut e, 3, (2, UPLINK), 5004, 64);
    // 5005: leaf 1 and spine 12 reported; leaf 3's report was lost.
    send(&mut e, 1, (2, UPLINK + 1), 5005, 64);
    send(&mut e, 12, (1, 3), 5005, 64);
    // Not placed: a leaf between two fabric ports, and a switch outside the fabric.
    send(&mut e, 2, (UPLINK, UPLINK + 1), 5006, 64);
    send(&mut e, 99, (1, 2), 5007, 63);
    mem.sync(&mut e, Instant(3));

    let c = &e.counters().int;
    assert_eq!((c.packets, c.reports, c.lost), (14, 12, 0));
    assert_eq!(c.dropped(IntDrop::NoHop), 2);
    let found = |path: &[u32]| PathAnswer::Found {
        path: path.to_vec(),
        chunks: 2,
    };
    assert_eq!(mem.path(flow(5001), &universe()), found(&[1, 11, 2]));
    assert_eq!(mem.path(flow(5002), &universe()), found(&[3]));
    assert_eq!(mem.path(flow(5003), &universe()), found(&[2, 12, 1]));
    assert_eq!(mem.path(flow(5004), &universe()), found(&[3, 11, 1]));
    // The lost last hop leaves no path, never the two-hop [1, 12].
    assert_eq!(mem.path(flow(5005), &universe()), PathAnswer::Empty);
    for (sport, path) in [
        (5001, &[1, 11, 2][..]),
        (5002, &[3]),
        (5003, &[2, 12, 1]),
        (5004, &[3, 11, 1]),
    ] {
        for (i, &node) in path.iter().enumerate() {
            let r = mem.hop(flow(sport), i as u8 + 1).expect("a hop record");
            assert_eq!(
                (r.node, r.hop_latency, r.queue_occupancy),
                (node, 10 * node, node)
            );
        }
        assert_eq!(mem.hop(flow(sport), path.len() as u8 + 1), None);
    }
    // The flow whose last hop was lost keeps the hop records that came.
    assert_eq!(mem.hop(flow(5005), 2).map(|r| r.node), Some(12));
    assert_eq!(mem.hop(flow(5005), 3), None);
    assert_eq!(mem.path(flow(5006), &universe()), PathAnswer::Empty);
}

/// The same reports placed by TTL (today's default) land wrong: this is what topology mode is for.
#[test]
fn the_same_fabric_placed_by_ttl_reads_wrong() {
    let mut e = engine();
    let mut mem = Memory::new();
    for (i, (switch, ports, ttl)) in [(1, (1, UPLINK), 64), (11, (5, 6), 64), (2, (UPLINK, 2), 63)]
        .into_iter()
        .enumerate()
    {
        let r = report(switch, i as u32 + 1, ports, 5001, ttl);
        e.handle_frame(Instant(0), &frame(&r, INT_PORT));
    }
    mem.sync(&mut e, Instant(1));
    // TTL 64 is no hop; 63 is hop 1, written by the last leaf alone.
    assert_eq!(e.counters().int.dropped(IntDrop::NoHop), 2);
    assert_eq!(
        mem.path(flow(5001), &universe()),
        PathAnswer::Found {
            path: vec![2],
            chunks: 2
        }
    );
}

/// The documented configuration parses, and a fabric the mode cannot use is refused.
#[test]
fn topology_configuration() {
    let base = "[report]\nkeywrite_data_len = 12\n[int]\nenabled = true\n";
    let text = format!(
        "{base}hop_mode = \"topology\"\n\
         [[int.switches]]\nnode = 1\nrole = \"leaf\"\nhost_ports = [1, 2, 3, 4]\n\
         [[int.switches]]\nnode = 11\nrole = \"spine\"\n"
    );
    let c = Config::from_toml(&text).unwrap();
    assert_eq!(c.int.hop_mode, HopMode::Topology);
    assert_eq!(
        c.int.switches,
        vec![
            FabricSwitch {
                node: 1,
                role: SwitchRole::Leaf,
                host_ports: vec![1, 2, 3, 4]
            },
            FabricSwitch {
                node: 11,
                role: SwitchRole::Spine,
                host_ports: vec![]
            },
        ]
    );
    let refused = [
        // No leaf.
        format!("{base}hop_mode = \"topology\"\n[[int.switches]]\nnode = 11\nrole = \"spine\"\n"),
        // A spine with host ports.
        format!(
            "{base}hop_mode = \"topology\"\n[[int.switches]]\nnode = 1\nrole = \"leaf\"\n\
             [[int.switches]]\nnode = 11\nrole = \"spine\"\nhost_ports = [1]\n"
        ),
        // A node twice.
        format!(
            "{base}hop_mode = \"topology\"\n[[int.switches]]\nnode = 1\nrole = \"leaf\"\n\
             [[int.switches]]\nnode = 1\nrole = \"spine\"\n"
        ),
        // An unknown mode.
        format!("{base}hop_mode = \"guess\"\n"),
    ];
    for t in &refused {
        let err = Config::from_toml(t).unwrap_err().to_string();
        assert!(
            err.contains("int.switches") || err.contains("hop_mode"),
            "{t}: {err}"
        );
    }
    // The default is TTL, and needs no fabric.
    let c = Config::from_toml(base).unwrap();
    assert_eq!((c.int.hop_mode, c.int.switches.len()), (HopMode::Ttl, 0));
}

/// `fuzz/corpus/int_translate/` holds fabric-tna reports of a leaf-spine-leaf path in the fuzz target's
/// fabric (leaves 1..=4 with host ports 1..=8, spines 5 and 6), behind the two configuration bytes that
/// select it: INT-MD over UDP port 5000, both event lists, 6 hops, topology mode. `DTA_BLESS_SEEDS=1`
/// writes them.
#[test]
fn fuzz_corpus_holds_a_leaf_spine_path() {
    let seeds = [
        ("topology_leaf_up", report(1, 1, (2, 20), 5001, 64)),
        ("topology_spine", report(5, 1, (9, 10), 5001, 64)),
        ("topology_leaf_down", report(3, 1, (20, 3), 5001, 63)),
        ("topology_bridged", report(4, 1, (1, 2), 5002, 64)),
    ];
    let corpus = concat!(env!("CARGO_MANIFEST_DIR"), "/../fuzz/corpus/int_translate");
    let bless = std::env::var_os("DTA_BLESS_SEEDS").is_some();
    for (name, payload) in seeds {
        let mut bytes = vec![0x61, 0x85];
        bytes.extend(payload);
        let path = format!("{corpus}/{name}");
        if bless {
            std::fs::write(&path, &bytes).unwrap();
        }
        let seed = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(seed, bytes, "{path} (DTA_BLESS_SEEDS=1 rewrites it)");
    }
}
