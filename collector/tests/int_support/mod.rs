//! Collector memory written the way the INT contract (`dta_protocol::int::mapping`) and DESIGN.md
//! section 3 say the translator writes it, by independent means: slots from `dta_protocol::hash`'s
//! placement and hop checksums, records packed field by field here, and every key pinned to a value
//! computed with Python's `zlib.crc32` and `struct.pack` (never with the mapping's functions).

#![allow(dead_code)]

use std::sync::Arc;

use dta_collector::config::Config;
use dta_collector::engine::QueryEngine;
use dta_collector::memory::Arena;
use dta_collector::metrics::Metrics;
use dta_protocol::hash::{hop_checksum, key_checksum, placement, postcard_g, POSTCARD_BLANK};
use dta_protocol::layout::RegionKind;

/// A collector with every INT region: Key-Write entries of 16 bytes (a 12-byte hop record and 4 zero
/// bytes), N = 2 everywhere, drop list 4 and queue list 5 of 32 entries, node ids 100..=199 (apart from
/// the `[postcarding]` universe 1..=64, so a test can tell which one decoded).
pub const CONFIG: &str = r#"
[postcarding]
ranges = [[1, 64]]

[int]
drop_list = 4
queue_list = 5
nodes = [[100, 199]]
hops = 5

[[region]]
kind = "key_write"
slots = 1024
entry_size = 16
n_max = 4
redundancy = 2

[[region]]
kind = "key_increment"
slots = 1024
n_max = 2
redundancy = 2

[[region]]
kind = "postcarding"
chunks = 1024
hops = 5
n_max = 2

[[region]]
kind = "append"
id = 4
entries = 32
entry_size = 16
batch_size = 16

[[region]]
kind = "append"
id = 5
entries = 32
entry_size = 16
batch_size = 16
"#;

/// `CONFIG` without a drop list: a second collector of the same translator.
pub fn config_without_drop_list() -> String {
    CONFIG.replace("drop_list = 4\n", "")
}

const SLOTS: u64 = 1024;

/// 10.0.0.1 → 10.0.0.2, TCP 12345 → 80: `zlib.crc32(inet_pton(v4) ×2 + bytes([6]) + pack('>HH'))`.
pub const F1: &str = "10.0.0.1,10.0.0.2,tcp,12345,80";
pub const F1_KEY: u32 = 0x3db5_e2e5;
/// `zlib.crc32(pack('<I', F1_KEY) + b'H' + bytes([hop]))` for hops 1..=5.
pub const F1_HOP_KEYS: [u32; 5] = [
    0xece7_82dd,
    0x75ee_d367,
    0x02e9_e3f1,
    0x9c8d_7652,
    0xeb8a_46c4,
];
/// 2001:db8::1 → 2001:db8::2, UDP 5000 → 4791.
pub const F2: &str = "2001:db8::1,2001:db8::2,udp,5000,4791";
pub const F2_KEY: u32 = 0x17a0_24e1;
/// 10.1.0.1 → 10.2.0.9, UDP 4000 → 53.
pub const F3: &str = "10.1.0.1,10.2.0.9,17,4000,53";
pub const F3_KEY: u32 = 0x3b60_ecf9;

/// `zlib.crc32(b'D' + pack('<I', node) + bytes([reason]))`.
pub const DROP_7_3: u32 = 0x0e22_6473;
pub const DROP_7_4: u32 = 0x9046_f1d0;
pub const DROP_7_71: u32 = 0x7f93_e1fa;
pub const DROP_8_71: u32 = 0xfdc3_762b;

pub fn engine(config: &str) -> Arc<QueryEngine> {
    let config = Config::parse(config).unwrap();
    let arena = Arc::new(Arena::new_normal(&config.region_layout()).unwrap());
    Arc::new(QueryEngine::new(arena, &config, Arc::new(Metrics::default())).unwrap())
}

fn poke(e: &QueryEngine, kind: RegionKind, id: Option<u32>, at: usize, bytes: &[u8]) {
    let slot = e.arena().find(kind, id).unwrap();
    assert!(at + bytes.len() <= slot.len(), "write beyond the region");
    let off = slot.offset + at;
    e.arena().write().as_mut_slice()[off..off + bytes.len()].copy_from_slice(bytes);
}

/// A hop record: `pack('<III', node, latency, queue_id << 24 | occupancy)`.
pub fn hop_record(node: u32, latency: u32, queue_id: u8, occupancy: u32) -> [u8; 12] {
    let mut b = [0u8; 12];
    b[0..4].copy_from_slice(&node.to_le_bytes());
    b[4..8].copy_from_slice(&latency.to_le_bytes());
    b[8..12].copy_from_slice(&((u32::from(queue_id) << 24) | occupancy).to_le_bytes());
    b
}

/// Key-Write copy `copy` of `key`: the checksum (little-endian), the 12 data bytes, 4 zero bytes.
pub fn put_key_write(e: &QueryEngine, key: u32, copy: u8, data: [u8; 12]) {
    put_key_write_entry(e, key, copy, key_checksum(key), data);
}

/// An entry with any checksum in the slot of copy `copy` of `key` (another key's entry landing there).
pub fn put_key_write_entry(e: &QueryEngine, key: u32, copy: u8, checksum: u32, data: [u8; 12]) {
    let mut entry = [0u8; 16];
    entry[..4].copy_from_slice(&checksum.to_le_bytes());
    entry[4..16].copy_from_slice(&data);
    let at = placement(key, copy, SLOTS) as usize * 16;
    poke(e, RegionKind::KeyWrite, None, at, &entry);
}

/// Counter `copy` of `key`: a native-endian u64 at 8 × slot.
pub fn put_counter(e: &QueryEngine, key: u32, copy: u8, value: u64) {
    let at = placement(key, copy, SLOTS) as usize * 8;
    poke(e, RegionKind::KeyIncrement, None, at, &value.to_ne_bytes());
}

/// Chunk copy `copy` of flow `key` holding `path`: cell i = hopsum_i(key) XOR g(v), big-endian, blanks
/// after the path.
pub fn put_path(e: &QueryEngine, key: u32, copy: u8, path: &[u32]) {
    let mut chunk = [0u8; 32];
    for hop in 1..=5u8 {
        let v = path
            .get(usize::from(hop - 1))
            .copied()
            .unwrap_or(POSTCARD_BLANK);
        let cell = hop_checksum(hop, key).unwrap() ^ postcard_g(v);
        let at = usize::from(hop - 1) * 4;
        chunk[at..at + 4].copy_from_slice(&cell.to_be_bytes());
    }
    let at = placement(key, copy, SLOTS) as usize * 32;
    poke(e, RegionKind::Postcarding, None, at, &chunk);
}

/// A drop event: `pack('<IIHBBI', flow, node, port, reason, queue_id, timestamp)`.
pub fn drop_event(flow: u32, node: u32, port: u16, reason: u8, queue: u8, ts: u32) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[0..4].copy_from_slice(&flow.to_le_bytes());
    b[4..8].copy_from_slice(&node.to_le_bytes());
    b[8..10].copy_from_slice(&port.to_le_bytes());
    b[10] = reason;
    b[11] = queue;
    b[12..16].copy_from_slice(&ts.to_le_bytes());
    b
}

/// Entries `entries` at absolute indices `first..` of list `list` (32 entries after a 64-byte header),
/// then the head word.
pub fn put_list(e: &QueryEngine, list: u32, first: u64, entries: &[[u8; 16]], head: u64) {
    for (i, entry) in entries.iter().enumerate() {
        let slot = (first + i as u64) % 32;
        poke(
            e,
            RegionKind::Append,
            Some(list),
            64 + slot as usize * 16,
            entry,
        );
    }
    poke(e, RegionKind::Append, Some(list), 0, &head.to_le_bytes());
}

/// `zlib.crc32(pack('<I', F3_KEY) + b'H' + bytes([hop]))` for hops 1..=3.
pub const F3_HOP_KEYS: [u32; 3] = [0x32c4_cb45, 0xabcd_9aff, 0xdcca_aa69];

/// F1's records at hops 1..=3: (node, latency, queue, occupancy).
pub const F1_HOPS: [(u32, u32, u8, u32); 3] = [
    (101, 1500, 2, 300),
    (102, 2500, 1, 70_000),
    (103, 800, 0, 1200),
];

/// The drop list's five events (head 5): nodes 7 and 8, reasons 71 and 3.
pub fn drop_events() -> [[u8; 16]; 5] {
    [
        drop_event(F1_KEY, 7, 130, 71, 2, 1000),
        drop_event(0, 8, 131, 71, 0, 1001),
        drop_event(F1_KEY, 7, 130, 3, 2, 1002),
        drop_event(F2_KEY, 7, 12, 71, 1, 1003),
        drop_event(F1_KEY, 8, 1, 3, 0, 1004),
    ]
}

/// Writes what the INT tests query, both copies of everything unless a case needs otherwise:
/// * paths: F1 through 101..=105; F2 through 5, 6 (in [postcarding], not in [int] nodes); F3's copies
///   disagree ([101, 102] and [101, 103]);
/// * F1's hop records 1..=3 (`F1_HOPS`); F3's hop 1 copies disagree, hop 2's copy 0 slot holds another
///   key's entry and copy 1 a record, hop 3 is not written;
/// * drop counters: node 7 reason 3 = (2, 3), reason 71 = (5, 5); node 8 reason 71 = (9, 9);
/// * the drop list's five events.
pub fn write_scenario(e: &QueryEngine) {
    for copy in 0..2 {
        put_path(e, F1_KEY, copy, &[101, 102, 103, 104, 105]);
        put_path(e, F2_KEY, copy, &[5, 6]);
        for (i, &(node, lat, q, occ)) in F1_HOPS.iter().enumerate() {
            put_key_write(e, F1_HOP_KEYS[i], copy, hop_record(node, lat, q, occ));
        }
        put_counter(e, DROP_7_71, copy, 5);
        put_counter(e, DROP_8_71, copy, 9);
    }
    put_path(e, F3_KEY, 0, &[101, 102]);
    put_path(e, F3_KEY, 1, &[101, 103]);
    put_key_write(e, F3_HOP_KEYS[0], 0, hop_record(110, 10, 1, 5));
    put_key_write(e, F3_HOP_KEYS[0], 1, hop_record(111, 20, 1, 6));
    put_key_write_entry(e, F3_HOP_KEYS[1], 0, 0x1234_5678, hop_record(1, 1, 1, 1));
    put_key_write(e, F3_HOP_KEYS[1], 1, hop_record(112, 30, 3, 40));
    put_counter(e, DROP_7_3, 0, 2);
    put_counter(e, DROP_7_3, 1, 3);
    put_list(e, 4, 0, &drop_events(), 5);
}

/// A queue event: `pack('<IHBxII', node, port, queue_id, occupancy, timestamp)`.
pub fn queue_event(node: u32, port: u16, queue: u8, occupancy: u32, ts: u32) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[0..4].copy_from_slice(&node.to_le_bytes());
    b[4..6].copy_from_slice(&port.to_le_bytes());
    b[6] = queue;
    b[8..12].copy_from_slice(&occupancy.to_le_bytes());
    b[12..16].copy_from_slice(&ts.to_le_bytes());
    b
}

/// The queue list's four events (head 4): node 7's queues 1 and 2, node 8's queue 1.
pub fn queue_events() -> [[u8; 16]; 4] {
    [
        queue_event(7, 130, 1, 5000, 100),
        queue_event(8, 2, 1, 90_000, 101),
        queue_event(7, 131, 2, 12_000, 102),
        queue_event(7, 130, 1, 7000, 103),
    ]
}
