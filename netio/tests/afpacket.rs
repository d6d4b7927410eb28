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

/// Frame `n` from A to B carrying `tags` (TPID, TCI) after the MACs, then our EtherType, `n` and a pattern
/// up to `len` bytes: built here byte by byte, as it is on the wire.
fn tagged(n: u32, tags: &[(u16, u16)], len: usize) -> Vec<u8> {
    let mut f = Vec::with_capacity(len);
    f.extend_from_slice(&MAC_B);
    f.extend_from_slice(&MAC_A);
    for (tpid, tci) in tags {
        f.extend_from_slice(&tpid.to_be_bytes());
        f.extend_from_slice(&tci.to_be_bytes());
    }
    f.extend_from_slice(&ETHERTYPE.to_be_bytes());
    f.extend_from_slice(&n.to_be_bytes());
    while f.len() < len {
        f.push((f.len() as u32 ^ n) as u8);
    }
    f
}

/// Issue 26, item 10: the kernel takes a frame's outer VLAN tag off before a packet socket reads it; the
/// socket puts it back from PACKET_AUXDATA, so a frame received is the frame as sent (802.1Q with its
/// priority bits, 802.1ad with an inner 802.1Q tag, VID 0 priority tags, jumbo frames on an MTU 9000 link),
/// and a frame over the receiver's slots is dropped and counted, tag included in its length.
#[test]
fn vlan_tags_and_jumbo_frames_arrive_as_sent() {
    let tag = format!("dtaV{}", std::process::id());
    let Some(ns) = netns_or_skip(&tag) else {
        return;
    };
    let (a, b) = (format!("{tag}a"), format!("{tag}b"));
    ns.ip(&["link", "add", &a, "type", "veth", "peer", "name", &b])
        .unwrap();
    for (dev, mac) in [(&a, "02:00:00:00:00:0a"), (&b, "02:00:00:00:00:0b")] {
        ns.ip(&["link", "set", dev, "address", mac, "mtu", "9000", "up"])
            .unwrap();
    }
    let cfg = AfPacketConfig::default();
    let (mut pa, mut pb) = ns.run_in(|| {
        (
            AfPacket::open(&a, &cfg).unwrap(),
            AfPacket::open(&b, &cfg).unwrap(),
        )
    });
    // Which frames look like ours: our EtherType after any tags.
    let ours = |f: &[u8]| {
        let mut at = 12;
        while f.len() >= at + 4 && matches!(u16::from_be_bytes([f[at], f[at + 1]]), 0x8100 | 0x88a8)
        {
            at += 4;
        }
        f.len() >= at + 2 && f[at..at + 2] == ETHERTYPE.to_be_bytes()
    };
    let sent = vec![
        // VID 100, PCP 5.
        tagged(1, &[(0x8100, 0xa064)], 64),
        // Untagged, between tagged ones.
        tagged(2, &[], 64),
        // A priority tag: VID 0, PCP 3 (RoCE's lossless class without VLANs).
        tagged(3, &[(0x8100, 0x6000)], 100),
        // QinQ: an 802.1ad S-tag (VID 200) over an 802.1Q C-tag (VID 300).
        tagged(4, &[(0x88a8, 0x00c8), (0x8100, 0x012c)], 80),
        // Jumbo, MTU 9000, tagged: 9000 + 14 + 4 bytes.
        tagged(5, &[(0x8100, 0x0064)], 9018),
        // Jumbo untagged.
        tagged(6, &[], 9014),
    ];
    let mut out = FrameBatch::new(8, dta_netio::JUMBO_SLOT_SIZE);
    for f in &sent {
        out.push(f).unwrap();
    }
    assert_eq!(pa.send_burst(&out).unwrap(), sent.len());

    let mut inb = FrameBatch::new(16, dta_netio::JUMBO_SLOT_SIZE);
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(5);
    while got.len() < sent.len() && Instant::now() < deadline {
        pb.wait_readable(Duration::from_millis(50)).unwrap();
        inb.clear();
        pb.recv_burst(&mut inb).unwrap();
        got.extend(inb.iter().filter(|f| ours(f)).map(<[u8]>::to_vec));
    }
    assert_eq!(got.len(), sent.len(), "every frame arrived");
    for (i, (g, s)) in got.iter().zip(&sent).enumerate() {
        assert_eq!(g.len(), s.len(), "frame {i}'s length");
        assert!(g == s, "frame {i} arrived as sent: {:02x?}", &g[..22]);
    }
    assert_eq!(pb.rx_stats().dropped, 0);

    // Into standard 2 KiB slots: the two jumbo frames are dropped and counted; a 2050-byte frame on the
    // wire whose tag the kernel took off (2046 bytes read) too, as with its tag it does not fit.
    let sent = vec![
        tagged(7, &[(0x8100, 0x0064)], 2050),
        tagged(8, &[(0x8100, 0x0064)], 2048),
        tagged(9, &[(0x8100, 0x0064)], 9018),
        tagged(10, &[], 9014),
        tagged(11, &[(0x8100, 0x0064)], 64),
    ];
    out.clear();
    for f in &sent {
        out.push(f).unwrap();
    }
    assert_eq!(pa.send_burst(&out).unwrap(), sent.len());
    let before = pb.rx_stats().dropped;
    let mut small = FrameBatch::new(16, dta_netio::DEFAULT_SLOT_SIZE);
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(5);
    while (got.len() < 2 || pb.rx_stats().dropped - before < 3) && Instant::now() < deadline {
        pb.wait_readable(Duration::from_millis(50)).unwrap();
        small.clear();
        pb.recv_burst(&mut small).unwrap();
        got.extend(small.iter().filter(|f| ours(f)).map(<[u8]>::to_vec));
    }
    let lens: Vec<usize> = got.iter().map(Vec::len).collect();
    assert_eq!(lens, [2048, 64]);
    assert!(
        got == [sent[1].clone(), sent[4].clone()],
        "frames 8 and 11 as sent"
    );
    assert_eq!(pb.rx_stats().dropped - before, 3, "the frames over 2 KiB");
}
