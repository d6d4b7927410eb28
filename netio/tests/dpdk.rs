//! DPDK backend on virtual devices, without hugepages. The EAL initialises once per process, so every DPDK
//! case lives in this one test binary and runs in sequence from one test function.
#![cfg(feature = "dpdk")]

mod common;

use dta_netio::dpdk::{eal_init, Eal, Port, PortConfig};
use dta_netio::{FrameBatch, NetioError, RxBurst, RxStats, TxBurst, TxStats};

fn eal_args() -> Vec<String> {
    [
        "-l",
        "0",
        "--no-huge",
        "--no-shconf",
        "-m",
        "256",
        "--no-pci",
        "--vdev=net_ring0",
        "--vdev=net_null0",
        "--log-level=warning",
        "--no-telemetry",
    ]
    .map(String::from)
    .to_vec()
}

/// Frame `n`: 60 to 1514 bytes, its number in the first four bytes, a pattern after.
fn frame(n: u32) -> Vec<u8> {
    let len = 60 + (n as usize * 53) % (1514 - 60 + 1);
    let mut f = n.to_be_bytes().to_vec();
    while f.len() < len {
        f.push((f.len() as u32).wrapping_mul(31).wrapping_add(n) as u8);
    }
    f
}

#[test]
fn dpdk_suite() {
    let started = std::time::Instant::now();
    let eal = eal_init(eal_args()).expect("EAL init on vdevs without hugepages");
    let again = eal_init(vec!["--different".into()]).expect("a second init returns the first EAL");
    assert!(std::ptr::eq(eal, again));
    assert_eq!(eal.args(), &eal_args()[..]);

    ring_loop_returns_exact_frames(eal);
    ring_full_drops_and_counts(eal);
    in_place_build_and_receive(eal);
    burst_in_place_drops_and_counts(eal);
    mbufs_of_a_burst_spread_over_cache_sets(eal);
    reflected_frames_come_back_untouched(eal);
    null_device_with_rss_queues_on_two_threads(eal);
    errors_name_the_call(eal);
    af_packet_vdev_on_a_veth_in_a_namespace(eal);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(60),
        "bounded in time"
    );
}

/// net_ring0 loops TX back to RX: 10,000 frames sent in bursts come back identical and in order.
fn ring_loop_returns_exact_frames(eal: &Eal) {
    let (port, mut queues) = Port::open(eal, "net_ring0", &PortConfig::default()).unwrap();
    assert_eq!(queues.len(), 1);
    let q = &mut queues[0];
    assert_eq!((q.port_id(), q.queue_id()), (port.port_id(), 0));

    const N: u32 = 10_000;
    let mut out = FrameBatch::new(32, 2048);
    let mut inb = FrameBatch::new(64, 2048);
    let (mut n, mut next, mut bytes) = (0u32, 0u32, 0u64);
    while n < N {
        out.clear();
        while out.free() > 0 && n < N {
            let f = frame(n);
            bytes += f.len() as u64;
            out.push(&f).unwrap();
            n += 1;
        }
        assert_eq!(q.send_burst(&out).unwrap(), out.len());
        inb.clear();
        assert_eq!(q.recv_burst(&mut inb).unwrap(), out.len());
        for f in inb.iter() {
            assert_eq!(f, &frame(next)[..], "frame {next}");
            next += 1;
        }
    }
    assert_eq!(next, N);
    assert_eq!(
        q.tx_stats(),
        TxStats {
            frames: N as u64,
            bytes,
            dropped: 0
        }
    );
    assert_eq!(
        q.rx_stats(),
        RxStats {
            frames: N as u64,
            bytes,
            dropped: 0,
            missed: 0,
        }
    );
    let s = port.stats().unwrap();
    assert_eq!((s.tx_packets, s.rx_packets), (N as u64, N as u64));
    assert_eq!(port.pool().in_use(), 0, "every mbuf went back to the pool");

    // A frame over the mbuf's 2048-byte data room is dropped on send, the others go.
    let mut big = FrameBatch::new(4, 4096);
    big.push(&frame(1)).unwrap();
    big.push(&[0xaa; 2049]).unwrap();
    big.push(&[0xbb; 600]).unwrap();
    assert_eq!(q.send_burst(&big).unwrap(), 2);
    assert_eq!(q.tx_stats().dropped, 1);
    // A received frame larger than the batch's slots is dropped on receive and counted.
    let mut small = FrameBatch::new(8, 512);
    assert_eq!(q.recv_burst(&mut small).unwrap(), 1);
    assert_eq!(small.frame(0), &frame(1)[..]);
    assert_eq!(q.rx_stats().dropped, 1);
    assert_eq!(port.pool().in_use(), 0);
}

/// Without a receiver the ring fills: net_ring's 1024-entry ring takes 1023 frames, the rest of every burst is
/// dropped and counted, and draining returns every mbuf to the pool.
fn ring_full_drops_and_counts(eal: &Eal) {
    let (port, mut queues) = Port::open(eal, "net_ring0", &PortConfig::default()).unwrap();
    let q = &mut queues[0];
    let mut out = FrameBatch::new(64, 2048);
    let mut burst_bytes = 0;
    for n in 0..64 {
        burst_bytes += frame(n).len() as u64;
        out.push(&frame(n)).unwrap();
    }
    let accepted: Vec<usize> = (0..20).map(|_| q.send_burst(&out).unwrap()).collect();
    // 15 whole bursts (960 frames), then 63 of the 16th, then nothing.
    assert_eq!(
        &accepted[..17],
        &[64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 63, 0]
    );
    assert_eq!(accepted.iter().sum::<usize>(), 1023);
    let last_bytes = frame(63).len() as u64;
    assert_eq!(
        q.tx_stats(),
        TxStats {
            frames: 1023,
            bytes: 16 * burst_bytes - last_bytes,
            dropped: 1280 - 1023
        }
    );
    assert_eq!(port.pool().in_use(), 1023);
    let mut inb = FrameBatch::new(64, 2048);
    let mut got = 0;
    for _ in 0..100 {
        inb.clear();
        let n = q.recv_burst(&mut inb).unwrap();
        if n == 0 {
            break;
        }
        assert_eq!(inb.frame(0), &frame((got % 64) as u32)[..]);
        got += n;
    }
    assert_eq!(got, 1023);
    assert_eq!(port.pool().in_use(), 0);
}

/// The zero-copy paths: frames built straight into mbufs, received where they lie.
fn in_place_build_and_receive(eal: &Eal) {
    let (port, mut queues) = Port::open(eal, "net_ring0", &PortConfig::default()).unwrap();
    let q = &mut queues[0];
    // 40 builds: every tenth declines (0), build 5 claims more than the room (dropped), the rest are frames.
    let sent = q.send_in_place(40, |k, room| {
        assert_eq!(room.len(), 2048, "the default data room after the headroom");
        match k {
            5 => 5000,
            k if k % 10 == 9 => 0,
            k => {
                let f = frame(k as u32);
                room[..f.len()].copy_from_slice(&f);
                f.len()
            }
        }
    });
    let expected: Vec<u32> = (0..40).filter(|k| *k != 5 && k % 10 != 9).collect();
    assert_eq!(sent, expected.len());
    assert_eq!(sent, 35);
    let bytes: u64 = expected.iter().map(|&k| frame(k).len() as u64).sum();
    assert_eq!(
        q.tx_stats(),
        TxStats {
            frames: 35,
            bytes,
            dropped: 1
        }
    );
    let mut got = Vec::new();
    let seen = q.recv_in_place(|f| got.push(u32::from_be_bytes(f[..4].try_into().unwrap())));
    assert_eq!(seen, 35);
    assert_eq!(got, expected);
    assert_eq!(
        q.rx_stats(),
        RxStats {
            frames: 35,
            bytes,
            dropped: 0,
            missed: 0,
        }
    );
    // max_burst (64) bounds one call.
    assert_eq!(
        q.send_in_place(100, |k, room| {
            room[0] = k as u8;
            60
        }),
        64
    );
    assert_eq!(q.recv_in_place(|_| {}), 64);
    assert_eq!(port.pool().in_use(), 0);

    // Steady state: both paths allocate nothing per burst.
    let mut out = FrameBatch::new(32, 2048);
    for n in 0..32 {
        out.push(&frame(n)).unwrap();
    }
    let mut inb = FrameBatch::new(32, 2048);
    let before = common::alloc_count::allocations();
    let mut moved = 0;
    for _ in 0..1000 {
        q.send_burst(&out).unwrap();
        inb.clear();
        moved += q.recv_burst(&mut inb).unwrap();
        q.send_in_place(32, |k, room| {
            room[0] = k as u8;
            60
        });
        moved += q.recv_in_place(|f| assert_eq!(f.len(), 60));
    }
    assert_eq!(
        common::alloc_count::allocations() - before,
        0,
        "DPDK burst paths allocated"
    );
    assert_eq!(moved, 64_000);

    // The burst form: one builder call with every room. 40 mbufs, 30 built: among them one declined (0)
    // and one overrunning its room (dropped, counted); the 10 unbuilt are kept for the next burst.
    let dropped_before = q.tx_stats().dropped;
    let sent = q.send_burst_in_place(40, |rooms, lens| {
        assert_eq!(rooms.len(), 40);
        assert_eq!(lens.len(), 40);
        for (k, (room, len)) in rooms.iter_mut().zip(lens.iter_mut()).take(30).enumerate() {
            *len = match k {
                7 => 0,
                11 => 5000,
                k => {
                    let f = frame(k as u32);
                    room[..f.len()].copy_from_slice(&f);
                    f.len()
                }
            };
        }
        30
    });
    let expected: Vec<u32> = (0..30).filter(|k| *k != 7 && *k != 11).collect();
    assert_eq!(sent, expected.len());
    assert_eq!(q.tx_stats().dropped - dropped_before, 1);
    let mut got = Vec::new();
    q.recv_in_place(|f| got.push(u32::from_be_bytes(f[..4].try_into().unwrap())));
    assert_eq!(got, expected);
    assert_eq!(q.spare_mbufs(), 10);
    assert_eq!(port.pool().in_use(), 10);
    // Every frame fitting (the common case): lengths set in place; the builder's claim is capped at n.
    // The 8 mbufs are spares of the burst before (2 stay spare).
    let sent = q.send_burst_in_place(8, |rooms, lens| {
        for (k, (room, len)) in rooms.iter_mut().zip(lens.iter_mut()).enumerate() {
            room[0] = k as u8;
            *len = 60;
        }
        100
    });
    assert_eq!(sent, 8);
    let mut got = Vec::new();
    q.recv_in_place(|f| got.push((f[0], f.len())));
    assert_eq!(got, (0..8).map(|k| (k, 60)).collect::<Vec<_>>());
    assert_eq!(q.spare_mbufs(), 2);
    // 20 wanted: the 2 spares and 18 fresh ones; 19 built, one kept.
    let sent = q.send_burst_in_place(20, |rooms, lens| {
        for (k, (room, len)) in rooms.iter_mut().zip(lens.iter_mut()).take(19).enumerate() {
            room[..2].copy_from_slice(&[0xAB, k as u8]);
            *len = 64;
        }
        19
    });
    assert_eq!(sent, 19);
    let mut got = Vec::new();
    q.recv_in_place(|f| got.push((f[0], f[1], f.len())));
    assert_eq!(got, (0..19).map(|k| (0xAB, k, 64)).collect::<Vec<_>>());
    assert_eq!(q.spare_mbufs(), 1);
    assert_eq!(port.pool().in_use(), 1);
    // Dropping the queue gives the spare back.
    drop(queues);
    assert_eq!(port.pool().in_use(), 0);
}

/// `send_burst_in_place` around its rule (every built frame fits its room): a bad length first, in the
/// middle or last sends the others in order and counts their bytes, and the unbuilt mbufs stay spare; a
/// device that takes part of a burst is charged only the bytes it took.
/// Without hugepages the pool packs its mbufs instead of putting one at the start of each 4 KiB page:
/// the rooms of a burst of 32 then start in different L1 sets (64-byte lines, 4 KiB of sets), at most 8
/// in one (an 8-way L1 holds them). DPDK's default layout put all 32 in one set.
fn mbufs_of_a_burst_spread_over_cache_sets(eal: &Eal) {
    let (port, mut queues) = Port::open(eal, "net_ring0", &PortConfig::default()).unwrap();
    let q = &mut queues[0];
    let mut starts = Vec::new();
    let sent = q.send_burst_in_place(32, |rooms, _| {
        starts.extend(rooms.iter().map(|r| r.as_ptr() as usize));
        0
    });
    assert_eq!((sent, starts.len()), (0, 32));
    let mut per_set = [0usize; 64];
    for a in &starts {
        per_set[(a >> 6) & 63] += 1;
    }
    let most = per_set.iter().max().copied().unwrap_or(0);
    assert!(most <= 8, "{most} of 32 rooms in one L1 set: {starts:x?}");
    drop(queues);
    drop(port);
}

/// net_ring0 loops TX back to RX: frames sent, reflected once (received and sent back untouched), come
/// back in order and byte for byte, and each pass is counted.
fn reflected_frames_come_back_untouched(eal: &Eal) {
    let (port, mut queues) = Port::open(eal, "net_ring0", &PortConfig::default()).unwrap();
    let q = &mut queues[0];
    let sent = q.send_in_place(20, |k, room| {
        let f = frame(k as u32 + 100);
        room[..f.len()].copy_from_slice(&f);
        f.len()
    });
    assert_eq!(sent, 20);
    assert_eq!(q.reflect_burst(), 20);
    assert_eq!(
        q.reflect_burst(),
        20,
        "the reflected frames loop back once more"
    );
    let mut got = Vec::new();
    assert_eq!(q.recv_in_place(|f| got.push(f.to_vec())), 20);
    let want: Vec<Vec<u8>> = (0..20).map(|k| frame(k + 100)).collect();
    assert_eq!(got, want);
    assert_eq!(q.rx_stats().frames, 60);
    assert_eq!((q.tx_stats().frames, q.tx_stats().dropped), (60, 0));
    assert_eq!(q.reflect_burst(), 0, "nothing left to reflect");
    drop(queues);
    drop(port);
}

fn burst_in_place_drops_and_counts(eal: &Eal) {
    let (port, mut queues) = Port::open(eal, "net_ring0", &PortConfig::default()).unwrap();
    let q = &mut queues[0];
    // Builds `built` of the rooms: frame k, or `bad(k)` as its length when that is Some (nothing written).
    fn burst(
        q: &mut dta_netio::dpdk::DpdkQueue,
        n: usize,
        built: usize,
        bad: impl Fn(usize) -> Option<usize>,
    ) -> usize {
        q.send_burst_in_place(n, |rooms, lens| {
            for (k, (room, len)) in rooms
                .iter_mut()
                .zip(lens.iter_mut())
                .take(built)
                .enumerate()
            {
                *len = bad(k).unwrap_or_else(|| {
                    let f = frame(k as u32);
                    room[..f.len()].copy_from_slice(&f);
                    f.len()
                });
            }
            built
        })
    }
    /// Mbufs asked for, frames built, and the frames given a bad length: (k, length).
    type Case = (usize, usize, &'static [(usize, usize)]);
    let cases: [Case; 5] = [
        (12, 10, &[(0, 2049)]),
        (12, 10, &[(4, 5000), (6, 0)]),
        (12, 10, &[(9, 2049)]),
        (12, 10, &[(3, 0), (4, 0)]),
        (12, 10, &[(0, 0), (1, 9000), (9, usize::MAX)]),
    ];
    let mut spares = 0;
    for (n, built, bad) in cases {
        let before = q.tx_stats();
        let sent = burst(q, n, built, |k| {
            bad.iter().find(|(b, _)| *b == k).map(|&(_, l)| l)
        });
        let expected: Vec<u32> = (0..built as u32)
            .filter(|k| bad.iter().all(|(b, _)| *b != *k as usize))
            .collect();
        assert_eq!(sent, expected.len(), "{bad:?}");
        let after = q.tx_stats();
        assert_eq!(after.frames - before.frames, expected.len() as u64);
        assert_eq!(
            after.bytes - before.bytes,
            expected.iter().map(|&k| frame(k).len() as u64).sum::<u64>(),
            "{bad:?}"
        );
        let overruns = bad.iter().filter(|(_, l)| *l != 0).count() as u64;
        assert_eq!(after.dropped - before.dropped, overruns, "{bad:?}");
        let mut got = Vec::new();
        q.recv_in_place(|f| {
            assert_eq!(
                f,
                &frame(u32::from_be_bytes(f[..4].try_into().unwrap()))[..]
            );
            got.push(u32::from_be_bytes(f[..4].try_into().unwrap()))
        });
        assert_eq!(got, expected, "{bad:?}");
        // The spares of the burst before cover this one's first mbufs; the unbuilt ones stay.
        spares = spares - spares.min(n) + (n - built);
        assert_eq!(q.spare_mbufs(), spares);
        assert_eq!(port.pool().in_use() as usize, spares);
    }

    // The ring takes 1023 frames: fill it to 1000, then a burst of 40 (2 of them the spares left above)
    // fits 23.
    let mut queued = 0;
    while queued < 1000 {
        queued += q.send_in_place(25, |_, room| {
            room[..60].fill(0xCC);
            60
        });
    }
    assert_eq!(queued, 1000);
    let before = q.tx_stats();
    assert_eq!(burst(q, 40, 40, |_| None), 23);
    let after = q.tx_stats();
    assert_eq!(after.frames - before.frames, 23);
    assert_eq!(
        after.bytes - before.bytes,
        (0..23).map(|k| frame(k).len() as u64).sum::<u64>()
    );
    assert_eq!(after.dropped - before.dropped, 17);
    assert_eq!(q.spare_mbufs(), 0);
    // Draining returns every mbuf: the refused ones were freed.
    let mut drained = 0;
    loop {
        let k = q.recv_in_place(|_| {});
        if k == 0 {
            break;
        }
        drained += k;
    }
    assert_eq!(drained, 1023);
    assert_eq!(port.pool().in_use(), 0);
}

/// net_null with two queues (RSS on): each queue works from its own thread; null RX makes 64-byte frames and
/// null TX takes everything.
fn null_device_with_rss_queues_on_two_threads(eal: &'static Eal) {
    let cfg = PortConfig {
        queues: 2,
        ..PortConfig::default()
    };
    let (port, mut queues) = Port::open(eal, "net_null0", &cfg).unwrap();
    let mut q1 = queues.pop().unwrap();
    let mut q0 = queues.pop().unwrap();
    assert_eq!((q0.queue_id(), q1.queue_id()), (0, 1));
    let worker = std::thread::spawn(move || {
        let lcore = dta_netio::dpdk::register_thread(eal).unwrap();
        let mut inb = FrameBatch::new(48, 2048);
        let n = q1.recv_burst(&mut inb).unwrap();
        let sent = q1.send_burst(&inb).unwrap();
        let all64 = inb.iter().all(|f| f.len() == 64);
        (lcore, n, all64, sent, q1.rx_stats(), q1.tx_stats())
    });
    let mut inb = FrameBatch::new(64, 2048);
    assert_eq!(q0.recv_burst(&mut inb).unwrap(), 64);
    assert_eq!(q0.send_burst(&inb).unwrap(), 64);
    let (lcore, n, all64, sent, rx, tx) = worker.join().unwrap();
    assert_ne!(
        lcore, 0,
        "the worker got an lcore id of its own (0 is the main thread's)"
    );
    assert_ne!(
        lcore,
        u32::MAX,
        "LCORE_ID_ANY means the registration did nothing"
    );
    assert_eq!((n, all64, sent), (48, true, 48));
    assert_eq!(
        rx,
        RxStats {
            frames: 48,
            bytes: 48 * 64,
            dropped: 0,
            missed: 0,
        }
    );
    assert_eq!(
        tx,
        TxStats {
            frames: 48,
            bytes: 48 * 64,
            dropped: 0
        }
    );
    let s = port.stats().unwrap();
    assert_eq!((s.rx_packets, s.tx_packets), (112, 112));
    drop(q0);
    assert_eq!(port.pool().in_use(), 0);
}

fn errors_name_the_call(eal: &Eal) {
    match Port::open(eal, "net_nope0", &PortConfig::default())
        .err()
        .unwrap()
    {
        NetioError::Dpdk {
            call,
            errno,
            message,
        } => {
            assert!(
                call.starts_with("rte_eth_dev_get_port_by_name(net_nope0)"),
                "{call}"
            );
            assert_eq!(errno, libc_enodev());
            assert_eq!(message, "No such device");
        }
        other => panic!("expected a DPDK error, got {other}"),
    }
    let cfg = PortConfig {
        queues: 2,
        ..PortConfig::default()
    };
    let e = Port::open(eal, "net_ring0", &cfg).err().unwrap();
    assert!(e.to_string().contains("2 queues need RSS"), "{e}");
    let cfg = PortConfig {
        queues: 0,
        ..PortConfig::default()
    };
    assert!(matches!(
        Port::open(eal, "net_ring0", &cfg),
        Err(NetioError::Config(_))
    ));
    // The ring port is still usable after the refused setups.
    let (_port, mut queues) = Port::open(eal, "net_ring0", &PortConfig::default()).unwrap();
    let mut out = FrameBatch::new(1, 2048);
    out.push(&frame(7)).unwrap();
    assert_eq!(queues[0].send_burst(&out).unwrap(), 1);
    let mut inb = FrameBatch::new(4, 2048);
    assert_eq!(queues[0].recv_burst(&mut inb).unwrap(), 1);
    assert_eq!(inb.frame(0), &frame(7)[..]);
}

/// The set-up the end-to-end tests use: DPDK's net_af_packet on one end of a veth pair in a namespace made
/// here, hot-plugged after EAL init, talking to our AF_PACKET backend on the other end.
fn af_packet_vdev_on_a_veth_in_a_namespace(eal: &Eal) {
    use dta_netio::{AfPacket, AfPacketConfig};
    let tag = format!("dtaD{}", std::process::id());
    let Some(ns) = common::netns::netns_or_skip(&tag) else {
        return;
    };
    let (a, b) = (format!("{tag}a"), format!("{tag}b"));
    ns.ip(&["link", "add", &a, "type", "veth", "peer", "name", &b])
        .unwrap();
    ns.ip(&["link", "set", &a, "address", "02:00:00:00:00:0a", "up"])
        .unwrap();
    ns.ip(&["link", "set", &b, "address", "02:00:00:00:00:0b", "up"])
        .unwrap();
    let vdev = "net_af_packet7";
    // net_af_packet finds its interface by name in the calling thread's namespace when it probes, starts,
    // stops and changes promiscuous mode: those calls run inside the namespace; bursts run from anywhere.
    let (port, mut queues, mut peer) = ns.run_in(|| {
        eal.attach(&format!("{vdev},iface={a}")).unwrap();
        let (port, queues) = Port::open(eal, vdev, &PortConfig::default()).unwrap();
        (
            port,
            queues,
            AfPacket::open(&b, &AfPacketConfig::default()).unwrap(),
        )
    });
    {
        assert_eq!(port.mac(), [2, 0, 0, 0, 0, 0x0a]);
        let q = &mut queues[0];
        // A frame is an Ethernet header (B <- A, EtherType 0x88b5) and a numbered payload.
        let mk = |n: u32, dst: [u8; 6], src: [u8; 6]| {
            let mut f = [dst, src].concat();
            f.extend_from_slice(&0x88b5u16.to_be_bytes());
            f.extend_from_slice(&frame(n));
            f.truncate(1514); // the veth's MTU
            f
        };
        const A: [u8; 6] = [2, 0, 0, 0, 0, 0x0a];
        const B: [u8; 6] = [2, 0, 0, 0, 0, 0x0b];
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut out = FrameBatch::new(32, 2048);
        let mut inb = FrameBatch::new(64, 2048);
        // DPDK -> socket, then socket -> DPDK, 10 bursts of 32 each way, every frame checked.
        for round in 0..10u32 {
            out.clear();
            for k in 0..32 {
                out.push(&mk(round * 32 + k, B, A)).unwrap();
            }
            assert_eq!(q.send_burst(&out).unwrap(), 32);
            let mut got = Vec::new();
            while got.len() < 32 && std::time::Instant::now() < deadline {
                peer.wait_readable(std::time::Duration::from_millis(20))
                    .unwrap();
                inb.clear();
                peer.recv_burst(&mut inb).unwrap();
                got.extend(
                    inb.iter()
                        .filter(|f| f[12..14] == [0x88, 0xb5])
                        .map(<[u8]>::to_vec),
                );
            }
            let want: Vec<Vec<u8>> = (0..32).map(|k| mk(round * 32 + k, B, A)).collect();
            assert_eq!(got, want, "round {round}, DPDK to socket");

            out.clear();
            for k in 0..32 {
                out.push(&mk(10_000 + round * 32 + k, A, B)).unwrap();
            }
            assert_eq!(peer.send_burst(&out).unwrap(), 32);
            let mut got = Vec::new();
            while got.len() < 32 && std::time::Instant::now() < deadline {
                inb.clear();
                q.recv_burst(&mut inb).unwrap();
                got.extend(
                    inb.iter()
                        .filter(|f| f[12..14] == [0x88, 0xb5])
                        .map(<[u8]>::to_vec),
                );
            }
            let want: Vec<Vec<u8>> = (0..32).map(|k| mk(10_000 + round * 32 + k, A, B)).collect();
            assert_eq!(got, want, "round {round}, socket to DPDK");
        }
        assert_eq!(q.tx_stats().frames, 320);
        assert_eq!(
            q.rx_stats().frames,
            320,
            "IPv6 is off: only our frames on the link"
        );
        assert_eq!(peer.rx_stats().frames, 320);
    }
    ns.run_in(move || {
        drop((queues, port));
        eal.detach_vdev(vdev).unwrap();
    });
    assert!(
        Port::open(eal, vdev, &PortConfig::default()).is_err(),
        "detached"
    );
    drop(ns);
}

fn libc_enodev() -> i32 {
    19
}
