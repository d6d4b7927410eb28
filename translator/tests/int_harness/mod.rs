//! The INT tests' harness: a translator engine with the INT front end on, one collector's regions, and a
//! memory model its frames are applied to, read back with the collector's own queries. Reports come from
//! the independent encoder `dta_e2e::int_spec`.
// Each test file uses part of it (and takes its imports from it).
#![allow(dead_code, unused_imports)]

pub use std::collections::BTreeMap;
pub use std::net::{IpAddr, Ipv4Addr};

pub use dta_collector::query::{
    key_increment, key_write, KeyWriteAnswer, PathAnswer, PostcardDecoder,
};
pub use dta_e2e::int_spec::{self as spec, pack};
pub use dta_protocol::control::{ResponderQp, Welcome, CONTROL_VERSION};
pub use dta_protocol::int::inner::FlowKey;
pub use dta_protocol::int::mapping::{
    drop_counter_key, flow_hop_key, flow_key, EventLists, HopRecord,
};
pub use dta_protocol::layout::{
    AppendGeometry, Geometry, KeyIncrementGeometry, KeyWriteGeometry, PostcardGeometry, Region,
};
pub use dta_protocol::roce::{Extension, FrameRepr};
pub use dta_translator::int::IntDrop;
pub use dta_translator::{Config, Engine, Instant};
pub use etherparse::PacketBuilder;

pub const COLLECTOR_MAC: [u8; 6] = [2, 0, 0, 0, 0, 2];
pub const COLLECTOR_IP: [u8; 4] = [198, 18, 0, 2];
pub const KW_VA: u64 = 0x10_0000;
pub const KI_VA: u64 = 0x20_0000;
pub const PC_VA: u64 = 0x30_0000;
pub const DROPS_VA: u64 = 0x40_0000;
pub const QUEUES_VA: u64 = 0x50_0000;
pub const DROP_LIST: u32 = 7;
pub const QUEUE_LIST: u32 = 8;
/// Worker k's drop and queue lists when several workers take INT reports (k = 0: the lists above).
pub const WORKER_LISTS: [(u32, u32, u64, u64); 3] = [
    (DROP_LIST, QUEUE_LIST, DROPS_VA, QUEUES_VA),
    (17, 18, 0x60_0000, 0x70_0000),
    (27, 28, 0x80_0000, 0x90_0000),
];
pub const INT_UDP: u16 = 5000;

pub fn kw() -> KeyWriteGeometry {
    KeyWriteGeometry::new(1 << 14, 16, 4).unwrap()
}
pub fn ki() -> KeyIncrementGeometry {
    KeyIncrementGeometry::new(1024, 4).unwrap()
}
pub fn pc() -> PostcardGeometry {
    PostcardGeometry::new(4096, 5, 2).unwrap()
}
pub fn list() -> AppendGeometry {
    AppendGeometry::new(64, 16, 16).unwrap()
}

pub fn regions() -> Vec<Region> {
    let r = |id, va, geometry| Region {
        id,
        va,
        rkey: 0x77,
        geometry,
    };
    vec![
        r(0, KW_VA, Geometry::KeyWrite(kw())),
        r(0, KI_VA, Geometry::KeyIncrement(ki())),
        r(0, PC_VA, Geometry::Postcarding(pc())),
        r(DROP_LIST, DROPS_VA, Geometry::Append(list())),
        r(QUEUE_LIST, QUEUES_VA, Geometry::Append(list())),
        r(
            WORKER_LISTS[1].0,
            WORKER_LISTS[1].2,
            Geometry::Append(list()),
        ),
        r(
            WORKER_LISTS[1].1,
            WORKER_LISTS[1].3,
            Geometry::Append(list()),
        ),
        r(
            WORKER_LISTS[2].0,
            WORKER_LISTS[2].2,
            Geometry::Append(list()),
        ),
        r(
            WORKER_LISTS[2].1,
            WORKER_LISTS[2].3,
            Geometry::Append(list()),
        ),
    ]
}

pub fn welcome() -> Welcome {
    Welcome {
        version: CONTROL_VERSION,
        mac: COLLECTOR_MAC,
        ip: COLLECTOR_IP,
        qps: vec![ResponderQp {
            qpn: 0x11,
            peer_qpn: 0x100,
        }],
        max_dest_rd_atomic: 16,
        path_mtu: 1024,
        regions: regions(),
        append_heads: Vec::new(),
    }
}

/// The INT front end on, with both event lists and INT-MD over UDP on `INT_UDP`.
pub fn engine() -> Engine {
    engine_with(|_| {})
}

/// [`engine`] with `change` made to its configuration.
pub fn engine_with(change: impl FnOnce(&mut Config)) -> Engine {
    let mut c = Config::default();
    c.report.keywrite_data_len = 12;
    c.postcard.redundancy = 2;
    c.int.enabled = true;
    c.int.md_udp_port = Some(INT_UDP);
    c.int.drop_list = EventLists::one(DROP_LIST);
    c.int.queue_list = EventLists::one(QUEUE_LIST);
    change(&mut c);
    c.validate().expect("a valid configuration");
    Engine::new(c, &[welcome()], Instant(0)).unwrap()
}

/// The collector's memory, written by the translator's frames.
pub struct Memory(BTreeMap<u64, Vec<u8>>);

impl Memory {
    pub fn new() -> Self {
        Memory(
            regions()
                .iter()
                .map(|r| (r.va, vec![0u8; r.len() as usize]))
                .collect(),
        )
    }

    pub fn at(&mut self, va: u64, len: usize) -> &mut [u8] {
        let (&base, m) = self
            .0
            .range_mut(..=va)
            .next_back()
            .expect("below every region");
        let at = (va - base) as usize;
        assert!(at + len <= m.len(), "write outside the region at {base:#x}");
        &mut m[at..at + len]
    }

    /// Sends everything the engine has (flushing caches first) and applies it.
    pub fn sync(&mut self, e: &mut Engine, now: Instant) {
        e.flush(now);
        self.send(e, now);
    }

    /// Sends and applies what the engine has, without flushing its caches.
    pub fn send(&mut self, e: &mut Engine, now: Instant) {
        let mut out = Vec::new();
        while e.poll_transmit(now, &mut out) {
            let f = FrameRepr::parse(&out).expect("a valid RoCE frame");
            match f.ext {
                Extension::Reth(r) => self.at(r.va, f.payload.len()).copy_from_slice(f.payload),
                Extension::Atomic(a) => {
                    let cell = self.at(a.va, 8);
                    let old = u64::from_ne_bytes(cell.try_into().unwrap());
                    cell.copy_from_slice(&(old + a.swap_add).to_ne_bytes());
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        e.assume_delivered();
    }

    pub fn region(&self, va: u64) -> &[u8] {
        &self.0[&va]
    }

    pub fn path(&self, flow: u32, universe: &[u32]) -> PathAnswer {
        PostcardDecoder::new(universe)
            .query(self.region(PC_VA), &pc(), flow, 2)
            .unwrap()
    }

    pub fn hop(&self, flow: u32, hop: u8) -> Option<HopRecord> {
        match key_write(self.region(KW_VA), &kw(), flow_hop_key(flow, hop), 2, 2).unwrap() {
            KeyWriteAnswer::Found { data, .. } => HopRecord::decode(&hex::decode(data).unwrap()),
            _ => None,
        }
    }

    pub fn drops(&self, node: u32, reason: u8) -> u64 {
        key_increment(self.region(KI_VA), &ki(), drop_counter_key(node, reason), 2)
            .unwrap()
            .estimate
    }

    /// The entries of an Append list, as the head word counts them.
    pub fn entries(&self, va: u64) -> Vec<Vec<u8>> {
        let m = self.region(va);
        let head = u64::from_le_bytes(m[..8].try_into().unwrap());
        (0..head)
            .map(|i| {
                let at = 64 + 16 * i as usize;
                m[at..at + 16].to_vec()
            })
            .collect()
    }
}

/// The UDP payload of a report to the collector, in an Ethernet/IPv4/UDP frame.
pub fn frame(payload: &[u8], dst_port: u16) -> Vec<u8> {
    let mut out = Vec::new();
    PacketBuilder::ethernet2([2, 0, 0, 0, 0, 0x33], COLLECTOR_MAC)
        .ipv4([10, 9, 9, 9], COLLECTOR_IP, 64)
        .udp(40000, dst_port)
        .write(&mut out, payload)
        .unwrap();
    out
}

pub const SRC: [u8; 4] = [10, 0, 0, 1];
pub const DST: [u8; 4] = [10, 0, 1, 2];

pub fn flow(sport: u16) -> u32 {
    flow_key(&FlowKey {
        src: IpAddr::V4(Ipv4Addr::from(SRC)),
        dst: IpAddr::V4(Ipv4Addr::from(DST)),
        protocol: 17,
        src_port: sport,
        dst_port: 80,
    })
}

/// The flow's packet as a switch mirrors it: Ethernet/IPv4/UDP with TTL `ttl`.
pub fn inner(sport: u16, ttl: u8) -> Vec<u8> {
    spec::inner(&spec_flow(sport), ttl)
}

pub fn spec_flow(sport: u16) -> spec::Flow {
    spec::Flow {
        src: SRC,
        dst: DST,
        sport,
        dport: 80,
    }
}

/// A v0.5 switch-local report (hw_id 1, ingress port 3).
#[allow(clippy::too_many_arguments)]
pub fn v05_local(
    switch: u32,
    seq: u32,
    congested: bool,
    ig_ts: u32,
    eg_ts: u32,
    queue: (u8, u32),
    eg_port: u16,
    inner: &[u8],
) -> Vec<u8> {
    let l = spec::Local {
        switch,
        hw_id: 1,
        seq,
        congested,
        ig_ts,
        eg_ts,
        queue,
        ig_port: 3,
        eg_port,
    };
    spec::v05_local(&l, inner)
}

/// A v0.5 drop report (hw_id 2, ingress port 4, ingress timestamp 0xABCD).
pub fn v05_drop(
    switch: u32,
    seq: u32,
    reason: u8,
    queue: u8,
    eg_port: u16,
    inner: &[u8],
) -> Vec<u8> {
    let d = spec::Drop {
        switch,
        hw_id: 2,
        seq,
        ig_ts: 0xABCD,
        reason,
        queue,
        ig_port: 4,
        eg_port,
    };
    spec::v05_drop(&d, inner)
}

/// The flow's packet with an INT-MD stack over UDP port `INT_UDP`: (node, latency, occupancy) oldest
/// first, queue id 1.
pub fn int_md_packet(sport: u16, hops: &[(u32, u32, u32)]) -> Vec<u8> {
    let hops: Vec<spec::MdHop> = hops
        .iter()
        .map(|&(node, latency, occupancy)| spec::MdHop {
            node,
            latency,
            queue: (1, occupancy),
        })
        .collect();
    spec::int_md_packet(&spec_flow(sport), INT_UDP, 60, &hops)
}

/// One individual report: RepMdBits, the metadata they select, the D and Q flags, the inner frame.
pub type Individual = (u16, Vec<u8>, bool, bool, Vec<u8>);

pub fn v2_group(node: u32, seq: u32, reports: &[Individual]) -> Vec<u8> {
    let r: Vec<spec::Individual> = reports
        .iter()
        .map(|(bits, md, dropped, congested, inner)| spec::Individual {
            bits: *bits,
            md: md.clone(),
            dropped: *dropped,
            congested: *congested,
            inner: inner.clone(),
        })
        .collect();
    spec::v2_group(node, seq, &r)
}
