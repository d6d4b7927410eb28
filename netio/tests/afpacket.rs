//! AF_PACKET backend on a veth pair inside a network namespace that the test creates and removes.

mod common;

use std::time::{Duration, Instant};

use common::netns::netns_or_skip;
use dta_netio::{AfPacket, AfPacketConfig, FrameBatch, RxBurst, RxStats, TxBurst, TxStats};

const ETHERTYPE: u16 = 0x88b5; // IEEE local experimental: nothing else in the namespace sends it.
const MAC_A: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0a];
const MAC_B: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0b];

/// Frame `n` from A to B: Ethernet header with our EtherType, then `n` and a pattern, 60 to 1514 bytes.
fn frame(n: u32) -> Vec<u8> {
    let len = 60 + (n as usize * 37) % (1514 - 60 + 1);
    let mut f = Vec::with_capacity(len);
    f.extend_from_slice(&MAC_B);
    f.extend_from_slice(&MAC_A);
    f.extend_from_slice(&ETHERTYPE.to_be_bytes());
    f.extend_from_slice(&n.to_be_bytes());
    while f.len() < len {
        f.push((f.len() as u32 ^ n) as u8);
    }
    f
}

fn ours(f: &[u8]) -> bool {
    f.len() >= 14 && f[12..14] == ETHERTYPE.to_be_bytes()
}

/// Receives until `want` of our frames arrived or the deadline passed; returns them and the others' count.
fn receive(
    port: &mut AfPacket,
    batch: &mut FrameBatch,
    want: usize,
    out: &mut Vec<Vec<u8>>,
) -> usize {
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut others = 0;
    let start = out.len();
    while out.len() - start < want && Instant::now() < deadline {
        port.wait_readable(Duration::from_millis(50)).unwrap();
        batch.clear();
        port.recv_burst(batch).unwrap();
        for f in batch.iter() {
            if ours(f) {
                out.push(f.to_vec());
            } else {
                others += 1;
            }
        }
    }
    others
}

#[test]
fn veth_pair_carries_exact_frames_both_ways() {
    let tag = format!("dtaT{}", std::process::id());
    let Some(ns) = netns_or_skip(&tag) else {
        return;
    };
    let (a, b) = (format!("{tag}a"), format!("{tag}b"));
    ns.ip(&["link", "add", &a, "type", "veth", "peer", "name", &b])
        .unwrap();
    ns.ip(&["link", "set", &a, "address", "02:00:00:00:00:0a", "up"])
        .unwrap();
    ns.ip(&["link", "set", &b, "address", "02:00:00:00:00:0b", "up"])
        .unwrap();

    let cfg = AfPacketConfig::default();
    let (mut pa, mut pb) = ns.run_in(|| {
        (
            AfPacket::open(&a, &cfg).unwrap(),
            AfPacket::open(&b, &cfg).unwrap(),
        )
    });
    assert_eq!(pa.mac(), MAC_A);
    assert_eq!(pb.mac(), MAC_B);
    assert_eq!(pa.ifname(), a);

    // A to B: 2000 frames in bursts of 32, each burst received before the next is sent so that no buffer
    // can overflow and every count is exact.
    const N: u32 = 2000;
    let mut out = FrameBatch::new(32, 2048);
    let mut inb = FrameBatch::new(64, 2048);
    let mut got = Vec::new();
    let mut others = 0;
    let mut bytes = 0u64;
    let mut n = 0;
    while n < N {
        out.clear();
        while out.free() > 0 && n < N {
            let f = frame(n);
            bytes += f.len() as u64;
            out.push(&f).unwrap();
            n += 1;
        }
        assert_eq!(pa.send_burst(&out).unwrap(), out.len());
        let before = got.len();
        others += receive(&mut pb, &mut inb, out.len(), &mut got);
        assert_eq!(
            got.len() - before,
            out.len(),
            "burst ending at frame {n} arrived whole"
        );
    }
    assert_eq!(got.len(), N as usize, "frames received on B");
    for (i, f) in got.iter().enumerate() {
        assert_eq!(f, &frame(i as u32), "frame {i}");
    }
    assert_eq!(
        pa.tx_stats(),
        TxStats {
            frames: N as u64,
            bytes,
            dropped: 0
        }
    );
    assert_eq!(
        others, 0,
        "IPv6 is off: nothing but our frames crosses the link"
    );
    assert_eq!(
        pb.rx_stats(),
        RxStats {
            frames: N as u64,
            bytes,
            dropped: 0,
            missed: 0,
        }
    );
    assert_eq!(
        pa.rx_stats().frames,
        0,
        "A does not see its own frames (PACKET_IGNORE_OUTGOING)"
    );

    // B to A, through the same batch B received into: what a reflector would do.
    inb.clear();
    for i in 0..5 {
        inb.push(&frame(10_000 + i)).unwrap();
    }
    assert_eq!(pb.send_burst(&inb).unwrap(), 5);
    let mut back = Vec::new();
    let mut small = FrameBatch::new(8, 2048);
    receive(&mut pa, &mut small, 5, &mut back);
    let expected: Vec<Vec<u8>> = (0..5).map(|i| frame(10_000 + i)).collect();
    assert_eq!(back, expected);

    // A frame over the MTU is refused by the kernel: dropped and counted, the rest of the burst still goes.
    out.clear();
    out.push(&frame(1)).unwrap();
    let mut jumbo = frame(2);
    jumbo.resize(1600, 0xee);
    out.push(&jumbo).unwrap();
    out.push(&frame(3)).unwrap();
    let before = pa.tx_stats();
    assert_eq!(pa.send_burst(&out).unwrap(), 2);
    assert_eq!(pa.tx_stats().dropped - before.dropped, 1);
    let mut rest = Vec::new();
    receive(&mut pb, &mut inb, 2, &mut rest);
    assert_eq!(rest, vec![frame(1), frame(3)]);

    // A frame larger than the receiver's slots is dropped and counted, not cut.
    out.clear();
    out.push(&frame(60)).unwrap(); // 60 + 60*37 % 1455 = 825 bytes
    out.push(&frame(0)).unwrap(); // 60 bytes
    assert_eq!(pa.send_burst(&out).unwrap(), 2);
    let mut tiny = FrameBatch::new(8, 512);
    let mut small_frames = Vec::new();
    receive(&mut pb, &mut tiny, 1, &mut small_frames);
    assert_eq!(small_frames, vec![frame(0)]);
    assert_eq!(pb.rx_stats().dropped, 1);

    // Steady state: 100 bursts each way through reused batches allocate nothing.
    out.clear();
    for n in 0..32 {
        out.push(&frame(n)).unwrap();
    }
    let (mut allocs, mut moved) = (0, 0);
    for _ in 0..100 {
        let before = common::alloc_count::allocations();
        pa.send_burst(&out).unwrap();
        let mut got = 0;
        let deadline = Instant::now() + Duration::from_secs(2);
        while got < 32 && Instant::now() < deadline {
            inb.clear();
            got += pb.recv_burst(&mut inb).unwrap();
        }
        allocs += common::alloc_count::allocations() - before;
        moved += got;
    }
    assert_eq!(moved, 3200);
    assert_eq!(allocs, 0, "the AF_PACKET burst path allocated");

    // Idle: waiting times out.
    assert!(!pb.wait_readable(Duration::from_millis(20)).unwrap());
    tiny.clear();
    assert_eq!(pb.recv_burst(&mut tiny).unwrap(), 0);
    drop((pa, pb));
    drop(ns);
    assert!(
        common::netns::ip(&["netns", "del", &tag]).is_err(),
        "namespace already removed"
    );
}

#[test]
fn unknown_interface_and_bad_config_are_errors_with_context() {
    let err = AfPacket::open("dtaNoSuchIf0", &AfPacketConfig::default())
        .err()
        .unwrap();
    assert!(
        err.to_string().starts_with("interface dtaNoSuchIf0: "),
        "{err}"
    );
    let err = AfPacket::open("a-name-longer-than-15", &AfPacketConfig::default())
        .err()
        .unwrap();
    assert!(err.to_string().contains("1 to 15 bytes"), "{err}");
    let cfg = AfPacketConfig {
        max_burst: 0,
        ..AfPacketConfig::default()
    };
    assert!(AfPacket::open("lo", &cfg)
        .err()
        .unwrap()
        .to_string()
        .contains("max_burst 0"));
}
