//! DPDK backend on virtual devices, without hugepages. The EAL initialises once per process, so every DPDK
//! case lives in this one test binary and runs in sequence from one test function.
#![cfg(feature = "dpdk")]

mod common;

use dta_netio::dpdk::{
    attach_ring, eal_init, handoff, register_thread, Eal, MbufBurst, Mempool, Port, PortConfig,
};
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
    mbufs_round_trip_on_a_ring(eal);
    mbuf_burst_moves_frees_and_compacts(eal);
    clearing_a_burst_returns_each_mbuf_to_its_own_pool(eal);
    handoff_ring_keeps_order_across_threads(eal);
    handoff_ring_backpressure_and_refusal(eal);
    received_mbufs_become_transmit_rooms(eal);
    prefilled_pool_is_what_net_null_delivers(eal);
    null_device_with_rss_queues_on_two_threads(eal);
    send_mbufs_with_a_hole_sends_the_others(eal);
    errors_name_the_call(eal);
    af_packet_vdev_on_a_veth_in_a_namespace(eal);
    jumbo_frames_cross_a_dpdk_port_with_an_mtu(eal);
    memif_frames_longer_than_a_buffer_arrive_whole(eal);
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

/// A DPDK port set to MTU 9000 (issue 26, item 10) receives and sends 9,018-byte frames (9,000 bytes of IP,
/// an 802.1Q tag) whole, in one mbuf; an MTU beyond the device's limit is refused with its range.
fn jumbo_frames_cross_a_dpdk_port_with_an_mtu(eal: &Eal) {
    use dta_netio::{AfPacket, AfPacketConfig};
    let tag = format!("dtaJ{}", std::process::id());
    let Some(ns) = common::netns::netns_or_skip(&tag) else {
        return;
    };
    let (a, b) = (format!("{tag}a"), format!("{tag}b"));
    ns.ip(&["link", "add", &a, "type", "veth", "peer", "name", &b])
        .unwrap();
    for (dev, mac) in [(&a, "02:00:00:00:00:0a"), (&b, "02:00:00:00:00:0b")] {
        ns.ip(&["link", "set", dev, "address", mac, "mtu", "9000", "up"])
            .unwrap();
    }
    // net_pcap on the interface: its frames are as long as libpcap's snapshot (net_af_packet's ethdev
    // limits stop at MTU 1500 in DPDK 22.11, whatever its ring's frame size).
    let vdev = "net_pcap8";
    let cfg = PortConfig {
        mtu: Some(9000),
        mbufs: 1023,
        mbuf_cache: 32,
        ..PortConfig::default()
    };
    let (port, mut queues, mut peer) = ns.run_in(|| {
        eal.attach(&format!("{vdev},iface={a}")).unwrap();
        // Jumbo frames stop at 9216 (a frame in one mbuf), whatever the device takes.
        let too_big = PortConfig {
            mtu: Some(9217),
            ..cfg.clone()
        };
        let e = match Port::open(eal, vdev, &too_big) {
            Ok(_) => panic!("MTU 9217 taken"),
            Err(e) => e.to_string(),
        };
        assert!(
            e.contains("MTU 9217 is outside what the device takes (") && e.ends_with("..=9216)"),
            "{e}"
        );
        let (port, queues) = Port::open(eal, vdev, &cfg).unwrap();
        (
            port,
            queues,
            AfPacket::open(&b, &AfPacketConfig::default()).unwrap(),
        )
    });
    {
        let q = &mut queues[0];
        const A: [u8; 6] = [2, 0, 0, 0, 0, 0x0a];
        const B: [u8; 6] = [2, 0, 0, 0, 0, 0x0b];
        // Ethernet, an 802.1Q tag (VID 7), EtherType 0x88b5 and 9,000 numbered bytes.
        let mk = |n: u32, dst: [u8; 6], src: [u8; 6]| {
            let mut f = [dst, src].concat();
            f.extend_from_slice(&[0x81, 0x00, 0x00, 0x07, 0x88, 0xb5]);
            f.extend((0..9000u32).map(|i| (i.wrapping_mul(31) ^ n) as u8));
            f
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut out = FrameBatch::new(4, 10240);
        let mut inb = FrameBatch::new(8, 10240);
        for k in 0..4 {
            out.push(&mk(k, B, A)).unwrap();
        }
        assert_eq!(q.send_burst(&out).unwrap(), 4);
        let mut got = Vec::new();
        while got.len() < 4 && std::time::Instant::now() < deadline {
            peer.wait_readable(std::time::Duration::from_millis(20))
                .unwrap();
            inb.clear();
            peer.recv_burst(&mut inb).unwrap();
            got.extend(inb.iter().filter(|f| f.len() > 9000).map(<[u8]>::to_vec));
        }
        let want: Vec<Vec<u8>> = (0..4).map(|k| mk(k, B, A)).collect();
        assert_eq!(got.len(), 4, "DPDK to socket");
        assert!(got == want, "DPDK to socket: the frames as sent");
        out.clear();
        for k in 0..4 {
            out.push(&mk(100 + k, A, B)).unwrap();
        }
        assert_eq!(peer.send_burst(&out).unwrap(), 4);
        let mut got = Vec::new();
        while got.len() < 4 && std::time::Instant::now() < deadline {
            inb.clear();
            q.recv_burst(&mut inb).unwrap();
            got.extend(inb.iter().filter(|f| f.len() > 9000).map(<[u8]>::to_vec));
        }
        let want: Vec<Vec<u8>> = (0..4).map(|k| mk(100 + k, A, B)).collect();
        assert_eq!(got.len(), 4, "socket to DPDK");
        assert!(got == want, "socket to DPDK: the frames as sent");
    }
    ns.run_in(move || {
        drop((queues, port));
        eal.detach_vdev(vdev).unwrap();
    });
    drop(ns);
}

/// net_memif with buffers smaller than a frame (`bsize=128`): every receive path (owned mbufs, in place,
/// copied) hands a frame of several memif buffers over whole and byte for byte. docs/deploy.md advises
/// `bsize=256` for telemetry's small frames, where an INT report or a forwarded frame can be longer. DPDK
/// 22.11's memif copies a frame's buffers into one mbuf; later releases give one mbuf segment per memif
/// buffer, which the data path (single-segment frames only) would drop as oversize: this catches that.
fn memif_frames_longer_than_a_buffer_arrive_whole(eal: &Eal) {
    use std::time::{Duration, Instant};
    let sock = format!("/run/dta-netio-test-{}.sock", std::process::id());
    let (server, client) = ("net_memif20", "net_memif21");
    for (name, role) in [(server, "server"), (client, "client")] {
        eal.attach(&format!("{name},role={role},socket={sock},id=0,bsize=128"))
            .unwrap();
    }
    let cfg = PortConfig {
        mbufs: 1023,
        mbuf_cache: 32,
        ..PortConfig::default()
    };
    let (sp, mut sq) = Port::open(eal, server, &cfg).unwrap();
    let (cp, mut cq) = Port::open(eal, client, &cfg).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !(sp.link_up().unwrap() && cp.link_up().unwrap()) {
        assert!(Instant::now() < deadline, "memif link up within 10 s");
        std::thread::sleep(Duration::from_millis(10));
    }
    // One buffer, exactly one, one byte more, several, a full Ethernet frame.
    let lens = [60usize, 128, 129, 300, 1514];
    let frames: Vec<Vec<u8>> = lens
        .iter()
        .enumerate()
        .map(|(i, &len)| {
            let mut f = frame(i as u32);
            f.resize(len, 0);
            for (k, b) in f.iter_mut().enumerate().skip(4) {
                *b = (k as u32).wrapping_mul(7).wrapping_add(i as u32) as u8;
            }
            f
        })
        .collect();
    let mut out = FrameBatch::new(8, 2048);
    for f in &frames {
        out.push(f).unwrap();
    }
    let (tx, rx) = (&mut cq[0], &mut sq[0]);
    // Receives until every frame sent came (or 10 s passed), with `recv`; returns what came.
    let mut take = |recv: &mut dyn FnMut(&mut dta_netio::dpdk::DpdkQueue) -> Vec<Vec<u8>>| {
        assert_eq!(tx.send_burst(&out).unwrap(), frames.len());
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut got = Vec::new();
        while got.len() < frames.len() && Instant::now() < deadline {
            got.extend(recv(rx));
        }
        got
    };
    let mut burst = MbufBurst::with_capacity(32);
    let owned = take(&mut |q| {
        q.recv_mbufs(&mut burst);
        let got = burst.frames().map(<[u8]>::to_vec).collect();
        burst.clear();
        got
    });
    assert_eq!(owned, frames, "recv_mbufs: whole frames");
    let in_place = take(&mut |q| {
        let mut got = Vec::new();
        q.recv_in_place(|f| got.push(f.to_vec()));
        got
    });
    assert_eq!(in_place, frames, "recv_in_place: whole frames");
    let copied = take(&mut |q| drain(q));
    assert_eq!(copied, frames, "recv_burst: whole frames");
    let (rx_stats, _) = (rx.rx_stats(), ());
    assert_eq!(rx_stats.frames, 3 * frames.len() as u64);
    assert_eq!(rx_stats.dropped, 0);
    drop((sq, cq, sp, cp));
    for name in [client, server] {
        eal.detach_vdev(name).unwrap();
    }
}

fn libc_enodev() -> i32 {
    19
}

/// The numbers (first four bytes) of a burst's frames, in order; a hole (or a frame too short) is `None`.
fn numbers(b: &MbufBurst) -> Vec<Option<u32>> {
    b.frames()
        .map(|f| {
            f.get(..4)
                .map(|n| u32::from_be_bytes(n.try_into().unwrap()))
        })
        .collect()
}

/// Frame `n`, short: 60 to 123 bytes, its number first, a pattern after.
fn small(n: u32) -> Vec<u8> {
    let mut f = frame(n);
    f.truncate(60 + (n as usize % 64));
    f
}

/// Drains queue `q` through the copying receive: every frame left on its ring, in order.
fn drain(q: &mut dta_netio::dpdk::DpdkQueue) -> Vec<Vec<u8>> {
    let mut inb = FrameBatch::new(64, 2048);
    let mut got = Vec::new();
    loop {
        inb.clear();
        if q.recv_burst(&mut inb).unwrap() == 0 {
            return got;
        }
        got.extend(inb.iter().map(<[u8]>::to_vec));
    }
}

// The one exported mbuf call a test needs beyond the crate's API: giving back a reference it took itself.
extern "C" {
    fn rte_pktmbuf_free_bulk(mbufs: *mut *mut u8, count: std::os::raw::c_uint);
}

/// The `rte_mbuf` header of a frame freshly written by this crate (data offset 128): the pools have no
/// private area, so it sits 128 bytes (`sizeof(struct rte_mbuf)`) before the buffer. The offsets poked
/// below (DPDK 22.11's first cache line) are checked against what the frame says first.
///
/// # Safety
/// `f` must be the frame of a live single-segment mbuf of a pool of this crate, as allocated.
unsafe fn mbuf_header(f: &[u8]) -> *mut u8 {
    let m = f.as_ptr().sub(256).cast_mut();
    let buf_addr = *(m as *const usize);
    let at16 = |off: usize| *(m.add(off) as *const u16);
    assert_eq!(buf_addr, m as usize + 128, "buf_addr");
    assert_eq!(at16(16), 128, "data_off");
    assert_eq!(at16(18), 1, "refcnt");
    assert_eq!(at16(20), 1, "nb_segs");
    assert_eq!(*(m.add(36) as *const u32) as usize, f.len(), "pkt_len");
    assert_eq!(at16(40) as usize, f.len(), "data_len");
    assert_eq!(at16(54), 2048 + 128, "buf_len");
    m
}

/// recv_mbufs and send_mbufs: frames received as owned mbufs and sent on as they are come back byte for
/// byte and in order, counted once each way; `attach_ring` gives the device ring's far side; a device that
/// refuses part of a burst has the rest freed and counted as dropped, its bytes not counted.
fn mbufs_round_trip_on_a_ring(eal: &Eal) {
    let (port, mut queues) = Port::open(eal, "net_ring0", &PortConfig::default()).unwrap();
    let q = &mut queues[0];
    let pool = port.pool();
    let mut out = FrameBatch::new(100, 2048);
    for n in 0..100 {
        out.push(&frame(n)).unwrap();
    }
    let sent_bytes: u64 = (0..100).map(|n| frame(n).len() as u64).sum();
    assert_eq!(q.send_burst(&out).unwrap(), 100);
    assert_eq!(pool.in_use(), 100);

    let mut burst = MbufBurst::with_capacity(90);
    assert_eq!(
        (
            burst.len(),
            burst.capacity(),
            burst.free(),
            burst.is_empty()
        ),
        (0, 90, 90, true)
    );
    // max_burst (64) bounds one call, the burst's room the next; a full burst receives nothing.
    assert_eq!(q.recv_mbufs(&mut burst), 64);
    assert_eq!(q.recv_mbufs(&mut burst), 26);
    assert_eq!(q.recv_mbufs(&mut burst), 0);
    assert_eq!((burst.len(), burst.free()), (90, 0));
    for (k, f) in burst.frames().enumerate() {
        assert_eq!(f, &frame(k as u32)[..], "frame {k}");
    }
    assert_eq!(burst.frames().len(), 90);
    assert!(burst.frame(90).is_empty(), "past the end reads empty");
    assert_eq!(burst.port(90), None);
    let rx_bytes: u64 = (0..90).map(|n| frame(n).len() as u64).sum();
    assert_eq!(
        q.rx_stats(),
        RxStats {
            frames: 90,
            bytes: rx_bytes,
            dropped: 0,
            missed: 0
        }
    );
    assert_eq!(pool.in_use(), 100, "received, not copied");

    // Sent on as they are: behind the 10 frames still on the ring.
    assert_eq!(q.send_mbufs(&mut burst), 90);
    assert!(burst.is_empty());
    assert_eq!(
        q.tx_stats(),
        TxStats {
            frames: 190,
            bytes: sent_bytes + rx_bytes,
            dropped: 0
        }
    );
    assert_eq!(pool.in_use(), 100);
    // The ring's far side sees the same mbufs, in order.
    let (mut far_tx, mut far_rx) = attach_ring(eal, "ETH_RXTX0_net_ring0").unwrap();
    let mut far = MbufBurst::with_capacity(128);
    assert_eq!(far_rx.waiting(), 100);
    assert_eq!(far_rx.recv(&mut far), 100);
    let want: Vec<u32> = (90..100).chain(0..90).collect();
    assert_eq!(
        numbers(&far),
        want.iter().map(|&n| Some(n)).collect::<Vec<_>>()
    );
    for (f, &n) in far.frames().zip(&want) {
        assert_eq!(f, &frame(n)[..]);
    }
    // ... and what it puts on the ring the queue receives.
    assert_eq!(far_tx.send(&mut far), 100);
    assert!(far.is_empty());
    let want: Vec<Vec<u8>> = (90..100).chain(0..90).map(frame).collect();
    assert_eq!(drain(q), want);
    assert_eq!(pool.in_use(), 0);
    assert!(attach_ring(eal, "ETH_RXTX0_no_such_ring").is_err());

    // An empty burst sends nothing.
    assert_eq!(q.send_mbufs(&mut burst), 0);
    // A full ring: 1000 frames queued, a burst of 40 fits 23; the other 17 are freed and counted.
    let mut queued = 0;
    while queued < 1000 {
        queued += q.send_in_place(25, |_, room| {
            room[..60].fill(0xCC);
            60
        });
    }
    for n in 0..40 {
        assert!(burst.push_copy(pool, &frame(n)));
    }
    let before = q.tx_stats();
    assert_eq!(q.send_mbufs(&mut burst), 23);
    assert!(burst.is_empty());
    let after = q.tx_stats();
    assert_eq!(after.frames - before.frames, 23);
    assert_eq!(
        after.bytes - before.bytes,
        (0..23).map(|n| frame(n).len() as u64).sum::<u64>()
    );
    assert_eq!(after.dropped - before.dropped, 17);
    assert_eq!(
        pool.in_use(),
        1023,
        "the refused mbufs went back to the pool"
    );
    let got = drain(q);
    assert_eq!(got.len(), 1023);
    assert_eq!(
        &got[1000..],
        &(0..23).map(frame).collect::<Vec<_>>()[..],
        "the accepted prefix, in order"
    );
    assert_eq!(pool.in_use(), 0);
}

/// MbufBurst bookkeeping: moves leave holes and keep order at the destination, frees give the mbuf back at
/// once, compaction closes the holes in order, clear and drop free the rest: the pool ends where it began.
fn mbuf_burst_moves_frees_and_compacts(eal: &Eal) {
    let (port, mut queues) = Port::open(eal, "net_ring0", &PortConfig::default()).unwrap();
    let q = &mut queues[0];
    let pool = port.pool();
    let start = pool.in_use();
    let mut a = MbufBurst::with_capacity(16);
    for n in 0..10 {
        assert!(a.push_copy(pool, &frame(n)));
    }
    assert_eq!(pool.in_use(), start + 10);
    let mut b = MbufBurst::with_capacity(2);
    let mut c = MbufBurst::with_capacity(4);
    assert!(a.move_to(5, &mut b));
    assert!(a.move_to(2, &mut b));
    assert!(!a.move_to(7, &mut b), "the destination is full");
    assert!(!a.move_to(2, &mut c), "a hole moves nothing");
    assert!(!a.move_to(10, &mut c), "past the end moves nothing");
    assert!(c.is_empty());
    assert_eq!(numbers(&b), [Some(5), Some(2)], "in the order moved");
    assert_eq!(a.len(), 10, "holes still count");
    assert!(a.frame(2).is_empty() && a.frame(5).is_empty());
    assert!(a.frame_mut(2).is_empty() && a.room_mut(2).is_empty());
    assert_eq!(a.port(2), None);
    assert!(a.port(3).is_some());
    assert_eq!(a.frame(7), &frame(7)[..]);
    assert_eq!(pool.in_use(), start + 10, "moved, neither copied nor freed");

    a.free_one(0);
    assert_eq!(pool.in_use(), start + 9);
    a.free_one(0);
    a.free_one(2);
    a.free_one(99);
    assert_eq!(pool.in_use(), start + 9, "holes and the end free nothing");
    let n = |v: &[u32]| v.iter().map(|&k| Some(k)).collect::<Vec<_>>();
    let mut expected = n(&[1, 3, 4, 6, 7, 8, 9]);
    expected.insert(0, None);
    expected.insert(2, None);
    expected.insert(5, None);
    assert_eq!(numbers(&a), expected);

    a.compact();
    assert_eq!((a.len(), a.free()), (7, 9));
    assert_eq!(numbers(&a), n(&[1, 3, 4, 6, 7, 8, 9]));
    for (f, k) in a.frames().zip([1, 3, 4, 6, 7, 8, 9]) {
        assert_eq!(f, &frame(k)[..]);
    }
    assert!(a.frame(7).is_empty(), "nothing stale past the new end");
    a.compact();
    assert_eq!(numbers(&a), n(&[1, 3, 4, 6, 7, 8, 9]), "idempotent");
    assert!(a.move_to(0, &mut c));
    assert!(a.move_to(6, &mut c));
    a.compact();
    assert_eq!(numbers(&a), n(&[3, 4, 6, 7, 8]));
    assert_eq!(numbers(&c), n(&[1, 9]));
    assert_eq!(pool.in_use(), start + 9);

    // Written in place.
    a.frame_mut(0)[4] = 0xEE;
    assert_eq!(a.frame(0)[4], 0xEE);
    assert_eq!(a.room_mut(0).len(), 2048, "the room from the data offset");
    assert_eq!(a.room_mut(0)[4], 0xEE);
    // Rewritten: the bytes behind the frame, at the buffer's end (the frame's bytes kept, as a pool that
    // is never written by a device needs them); refused when they do not fit behind it, for a hole and
    // past the end, the frame then unchanged; no mbuf taken or freed.
    let msg = [0x5Au8; 60];
    let mut r = MbufBurst::with_capacity(3);
    for k in [4, 6] {
        assert!(r.push_copy(pool, &frame(k)));
    }
    assert!(r.rewrite(0, &msg));
    assert_eq!(r.frame(0), &msg[..]);
    assert_eq!(r.room_mut(0).len(), 60, "at the end of the buffer");
    assert!(!r.rewrite(0, &msg), "no room behind the message itself");
    let f6 = frame(6);
    let too_long = vec![0u8; 2048 - f6.len() + 1];
    assert!(!r.rewrite(1, &too_long));
    assert_eq!(r.frame(1), &f6[..], "unchanged when refused");
    assert!(r.rewrite(1, &too_long[1..]));
    assert_eq!(r.frame(1).len(), too_long.len() - 1);
    assert!(!r.rewrite(2, &msg), "past the end");
    r.free_one(1);
    assert!(!r.rewrite(1, &msg) && r.frame(1).is_empty(), "a hole");
    // The frame's bytes are still where they were: taken back as a room for a frame to send, its first
    // bytes are the frame's (sent as they are here, 64 of them).
    let mut again = MbufBurst::with_capacity(1);
    assert!(r.move_to(0, &mut again));
    drop(r);
    assert_eq!(pool.in_use(), start + 10);
    q.reuse_as_spares(&mut again);
    let sent = q.send_burst_in_place(1, |_, lens| {
        lens[0] = 64;
        1
    });
    assert_eq!(sent, 1);
    assert_eq!(drain(q), vec![frame(4)[..64].to_vec()]);
    assert_eq!(pool.in_use(), start + 9);
    // push_copy refuses an oversize frame and a full burst, keeping nothing.
    assert!(!a.push_copy(pool, &[0u8; 2049]));
    assert_eq!(pool.in_use(), start + 9);
    let mut k = 100;
    while a.free() > 0 {
        assert!(a.push_copy(pool, &frame(k)));
        k += 1;
    }
    assert!(!a.push_copy(pool, &frame(1)));
    assert_eq!((a.len(), k), (16, 111));
    assert_eq!(pool.in_use(), start + 9 + 11);
    assert!(
        !a.push_copy(pool, &[]),
        "a full burst takes nothing, not even an empty frame"
    );
    assert_eq!(pool.in_use(), start + 9 + 11);

    // The compacted burst goes out in its order.
    assert_eq!(q.send_mbufs(&mut a), 16);
    let got = drain(q);
    let got_numbers: Vec<u32> = got
        .iter()
        .map(|f| u32::from_be_bytes(f[..4].try_into().unwrap()))
        .collect();
    let want: Vec<u32> = [3, 4, 6, 7, 8].into_iter().chain(100..111).collect();
    assert_eq!(got_numbers, want);
    assert_eq!(got[0][4], 0xEE);
    let mut f3 = frame(3);
    f3[4] = 0xEE;
    assert_eq!(got[0], f3);
    assert_eq!(&got[1..5], &[4, 6, 7, 8].map(frame)[..]);
    assert_eq!(pool.in_use(), start + 4, "b and c hold 4");

    // clear frees what is held, holes skipped; drop frees the rest.
    b.free_one(0);
    b.clear();
    assert!(b.is_empty() && b.frame(0).is_empty());
    assert_eq!(pool.in_use(), start + 2);
    b.clear();
    drop(c);
    assert_eq!(pool.in_use(), start);
}

/// `MbufBurst::clear` gathers plain mbufs into one bulk put per run of a pool: a burst alternating between two
/// pools in runs of 1, 2 and 3, with holes between, gives every mbuf back to its own pool (each pool's count
/// falls to its start), and every mbuf of both pools can be taken again afterwards (none lost, none put
/// into the other pool, which would make one pool hold more than it was made with).
fn clearing_a_burst_returns_each_mbuf_to_its_own_pool(eal: &Eal) {
    const SIZE: u32 = 63;
    let a = Mempool::new(eal, "dta_test_free_a", SIZE, 0, 2048 + 128, -1).unwrap();
    let b = Mempool::new(eal, "dta_test_free_b", SIZE, 0, 2048 + 128, -1).unwrap();
    let mut burst = MbufBurst::with_capacity(64);
    let mut holes = MbufBurst::with_capacity(64);
    let mut k = 0;
    'fill: for run in [1, 2, 3].iter().cycle() {
        for pool in [&a, &b] {
            for _ in 0..*run {
                if burst.free() < 2 {
                    break 'fill;
                }
                assert!(burst.push_copy(pool, &frame(k)));
                k += 1;
            }
            // A hole: an mbuf moved out leaves a null entry behind.
            assert!(burst.push_copy(pool, &frame(k)));
            assert!(burst.move_to(burst.len() - 1, &mut holes));
        }
    }
    let (held_a, held_b) = (a.in_use(), b.in_use());
    assert_eq!(
        held_a + held_b,
        burst.len() as u32,
        "one mbuf per entry, holes moved out"
    );
    assert!(held_a >= 20 && held_b >= 20, "both pools in the burst");
    burst.clear();
    holes.clear();
    assert_eq!((a.in_use(), b.in_use()), (0, 0));
    assert_eq!((a.available(), b.available()), (SIZE, SIZE));
    // Every mbuf of each pool is taken again, and a 64th is refused: none went to the other pool.
    for pool in [&a, &b] {
        let mut all = MbufBurst::with_capacity(SIZE as usize + 1);
        for n in 0..SIZE {
            assert!(all.push_copy(pool, &frame(n)), "mbuf {n} of {SIZE}");
        }
        assert!(
            !all.push_copy(pool, &frame(0)),
            "the pool holds {SIZE}, no more"
        );
        assert_eq!(all.frames().count(), SIZE as usize);
    }
}

/// A handoff ring between two threads: 50,000 mbufs in bursts of up to 32, taken in bursts of up to 64,
/// arrive in exactly the order sent, each byte for byte, none refused, none leaked.
fn handoff_ring_keeps_order_across_threads(eal: &'static Eal) {
    const N: u32 = 50_000;
    let pool = Mempool::new(eal, "dta_test_fifo", 2047, 64, 2048 + 128, -1).unwrap();
    let (mut tx, mut rx) = handoff(eal, "dta_test_fifo", 256).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let (refused, got) = std::thread::scope(|s| {
        let pool = &pool;
        let tx = &mut tx;
        let rx = &mut rx;
        let producer = s.spawn(move || {
            register_thread(eal).unwrap();
            let mut b = MbufBurst::with_capacity(32);
            let mut next = 0;
            while next < N || !b.is_empty() {
                while next < N && b.push_copy(pool, &small(next)) {
                    next += 1;
                }
                let before = b.len();
                let taken = tx.send(&mut b);
                assert_eq!(b.len(), before - taken, "the rest stays in the burst");
                if taken == 0 {
                    assert!(std::time::Instant::now() < deadline, "producer stuck");
                    std::thread::yield_now();
                }
            }
            tx.refused()
        });
        let consumer = s.spawn(move || {
            register_thread(eal).unwrap();
            let mut b = MbufBurst::with_capacity(64);
            let mut expect = 0u32;
            while expect < N {
                if rx.recv(&mut b) == 0 {
                    assert!(
                        std::time::Instant::now() < deadline,
                        "consumer stuck at {expect}"
                    );
                    std::thread::yield_now();
                    continue;
                }
                for f in b.frames() {
                    assert_eq!(f, &small(expect)[..], "mbuf {expect}");
                    expect += 1;
                }
                b.clear();
            }
            expect
        });
        (producer.join().unwrap(), consumer.join().unwrap())
    });
    assert_eq!((refused, got), (0, N));
    assert_eq!(rx.waiting(), 0);
    assert_eq!(pool.in_use(), 0);
    drop((tx, rx));
}

/// A full handoff ring takes what it has room for from the front of the burst and leaves the rest there,
/// in order; `refuse` frees and counts them; the consumer takes at most its burst's room; dropping both ends
/// frees what is still on the ring and the ring's name.
fn handoff_ring_backpressure_and_refusal(eal: &Eal) {
    let pool = Mempool::new(eal, "dta_test_bp", 511, 0, 2048 + 128, -1).unwrap();
    let fill = |b: &mut MbufBurst, r: std::ops::Range<u32>| {
        for n in r {
            assert!(b.push_copy(&pool, &small(n)));
        }
    };
    let some = |r: std::ops::Range<u32>| r.map(Some).collect::<Vec<_>>();
    // Capacity 100: a ring of 128 slots, which holds 127.
    let (mut tx, mut rx) = handoff(eal, "dta_test_bp", 100).unwrap();
    assert!(
        handoff(eal, "dta_test_bp", 100).is_err(),
        "ring names are unique"
    );
    let mut b = MbufBurst::with_capacity(64);
    fill(&mut b, 0..64);
    assert_eq!(tx.send(&mut b), 64);
    assert!(b.is_empty());
    fill(&mut b, 64..128);
    assert_eq!(tx.send(&mut b), 63);
    assert_eq!(
        numbers(&b),
        some(127..128),
        "the one that did not fit stays"
    );
    assert_eq!(rx.waiting(), 127);
    fill(&mut b, 128..140);
    assert_eq!(tx.send(&mut b), 0);
    assert_eq!(numbers(&b), some(127..140), "order kept for the next offer");
    assert_eq!(tx.send(&mut b), 0);
    assert_eq!(tx.refused(), 0, "held back, not refused");
    assert_eq!(pool.in_use(), 127 + 13);

    // The consumer takes up to its burst's room, in order.
    let mut r = MbufBurst::with_capacity(100);
    fill(&mut r, 1000..1003);
    assert_eq!(rx.recv(&mut r), 97, "onto the end of what the burst holds");
    assert_eq!(rx.recv(&mut r), 0, "no room left");
    let mut want = some(1000..1003);
    want.extend(some(0..97));
    assert_eq!(numbers(&r), want);
    r.clear();
    // Room again on the ring: the held mbufs go first, in order.
    assert_eq!(tx.send(&mut b), 13);
    assert!(b.is_empty());
    assert_eq!(rx.waiting(), 43);
    fill(&mut b, 140..204);
    assert_eq!(tx.send(&mut b), 64);
    fill(&mut b, 204..268);
    assert_eq!(tx.send(&mut b), 20, "the ring's last 20 slots");
    assert_eq!(numbers(&b), some(224..268));
    tx.refuse(&mut b);
    assert!(b.is_empty());
    assert_eq!(tx.refused(), 44);
    tx.refuse(&mut b);
    assert_eq!(tx.refused(), 44, "an empty burst refuses nothing");
    assert_eq!(pool.in_use(), 127, "the refused ones freed");
    assert_eq!(rx.recv(&mut r), 100);
    let mut all = numbers(&r);
    r.clear();
    assert_eq!(rx.recv(&mut r), 27);
    all.extend(numbers(&r));
    r.clear();
    assert_eq!(all, some(97..224));
    assert_eq!(pool.in_use(), 0);

    // Dropping both ends frees what is on the ring, and the name.
    fill(&mut b, 0..10);
    assert_eq!(tx.send(&mut b), 10);
    drop(tx);
    assert_eq!(pool.in_use(), 10, "the consumer still holds the ring");
    drop(rx);
    assert_eq!(pool.in_use(), 0);
    let (tx, rx) = handoff(eal, "dta_test_bp", 127).unwrap();
    drop((tx, rx));
    // A capacity is a floor: 127 fits a 128-slot ring, 128 needs the next one.
    for (cap, holds) in [(1u32, 1usize), (127, 127), (128, 255)] {
        let (mut tx, rx) = handoff(eal, &format!("dta_test_cap{cap}"), cap).unwrap();
        let mut b = MbufBurst::with_capacity(300);
        fill(&mut b, 0..300);
        assert_eq!(tx.send(&mut b), holds, "capacity {cap}");
        assert_eq!(rx.waiting(), holds);
        b.clear();
        drop((tx, rx));
        assert_eq!(pool.in_use(), 0);
    }
}

/// reuse_as_spares: the mbufs of a burst the caller is done with become the rooms of the next
/// send_burst_in_place, so a receive-then-transmit loop takes nothing more from the pool; at most
/// TX_ROOMS are kept (the rest freed), holes are skipped, and a chained or shared mbuf is not taken.
fn received_mbufs_become_transmit_rooms(eal: &Eal) {
    use dta_netio::dpdk::DpdkQueue;
    let (port, mut queues) = Port::open(eal, "net_ring0", &PortConfig::default()).unwrap();
    let q = &mut queues[0];
    let pool = port.pool();
    assert_eq!(q.spare_mbufs(), 0);
    let mut b = MbufBurst::with_capacity(64);
    for n in 0..32 {
        assert!(b.push_copy(pool, &small(n)));
    }
    q.reuse_as_spares(&mut b);
    assert!(b.is_empty());
    assert_eq!((q.spare_mbufs(), pool.in_use()), (32, 32));
    let mut seq = 0u32;
    for round in 0..1000 {
        // The rooms handed to the builder are the mbufs received last round.
        let mut spares: Vec<usize> = Vec::new();
        if round > 0 {
            spares = b.frames().map(|f| f.as_ptr() as usize).collect();
            q.reuse_as_spares(&mut b);
            assert!(b.is_empty());
            assert_eq!(q.spare_mbufs(), 32);
        }
        let mut rooms_at = Vec::new();
        let sent = q.send_burst_in_place(32, |rooms, lens| {
            for (k, (room, len)) in rooms.iter_mut().zip(lens.iter_mut()).enumerate() {
                assert_eq!(room.len(), 2048, "a reused mbuf's room is a fresh one's");
                rooms_at.push(room.as_ptr() as usize);
                let f = small(seq + k as u32);
                room[..f.len()].copy_from_slice(&f);
                *len = f.len();
            }
            32
        });
        assert_eq!(sent, 32);
        if round > 0 {
            let (mut s, mut r) = (spares, rooms_at);
            s.sort_unstable();
            r.sort_unstable();
            assert_eq!(s, r, "round {round}: the received mbufs carried this burst");
        }
        assert_eq!(q.spare_mbufs(), 0);
        assert_eq!(
            pool.in_use(),
            32,
            "round {round}: no mbuf beyond the 32 in flight"
        );
        assert_eq!(q.recv_mbufs(&mut b), 32);
        for (k, f) in b.frames().enumerate() {
            assert_eq!(f, &small(seq + k as u32)[..]);
        }
        seq += 32;
    }
    assert_eq!(q.tx_stats().frames, 32_000);
    assert_eq!(q.tx_stats().dropped, 0);

    // Holes are skipped.
    b.free_one(3);
    let mut other = MbufBurst::with_capacity(4);
    assert!(b.move_to(7, &mut other));
    q.reuse_as_spares(&mut b);
    assert!(b.is_empty());
    assert_eq!((q.spare_mbufs(), pool.in_use()), (30, 31));
    drop(other);
    // At most TX_ROOMS: 34 more are taken of 100, the other 66 freed; then none.
    let mut big = MbufBurst::with_capacity(100);
    for n in 0..100 {
        assert!(big.push_copy(pool, &small(n)));
    }
    q.reuse_as_spares(&mut big);
    assert!(big.is_empty());
    assert_eq!(q.spare_mbufs(), DpdkQueue::TX_ROOMS);
    assert_eq!(pool.in_use(), 64);
    for n in 0..5 {
        assert!(big.push_copy(pool, &small(n)));
    }
    q.reuse_as_spares(&mut big);
    assert!(big.is_empty());
    assert_eq!((q.spare_mbufs(), pool.in_use()), (64, 64));
    // Spend 60 spares: 4 are left.
    assert_eq!(
        q.send_burst_in_place(60, |rooms, lens| {
            for (room, len) in rooms.iter_mut().zip(lens.iter_mut()) {
                room[..60].fill(0x11);
                *len = 60;
            }
            60
        }),
        60
    );
    assert_eq!(drain(q).len(), 60);
    assert_eq!((q.spare_mbufs(), pool.in_use()), (4, 4));

    // Only plain mbufs: of four, one made to look chained (nb_segs 2) and one holding a second reference
    // are not taken. The chained one goes back to the pool; the shared one loses the burst's reference only.
    let mut four = MbufBurst::with_capacity(4);
    for n in 0..4 {
        assert!(four.push_copy(pool, &small(n)));
    }
    // SAFETY: plain mbufs of this pool, owned by `four`; the fields poked are checked first.
    let (chained, mut shared) = unsafe { (mbuf_header(four.frame(1)), mbuf_header(four.frame(3))) };
    // SAFETY: as above; nb_segs 2 with no next segment, which a free turns back to 1.
    unsafe {
        *(chained.add(20) as *mut u16) = 2;
        *(shared.add(18) as *mut u16) = 2;
    }
    assert!(four.frame(1).is_empty(), "a chain reads as an empty frame");
    assert!(four.room_mut(1).is_empty(), "and has no room to write");
    assert_eq!(pool.in_use(), 8);
    q.reuse_as_spares(&mut four);
    assert!(four.is_empty());
    assert_eq!(q.spare_mbufs(), 6, "the two plain ones taken");
    // SAFETY: the test's own reference keeps it alive.
    assert_eq!(
        unsafe { *(shared.add(18) as *const u16) },
        1,
        "one reference dropped"
    );
    assert_eq!(pool.in_use(), 7, "6 spares and the shared one");
    // SAFETY: the test's reference, given back.
    unsafe { rte_pktmbuf_free_bulk(&mut shared, 1) };
    assert_eq!(pool.in_use(), 6);
    // The spares are as fresh: 6 frames built and sent in them come back intact.
    assert_eq!(
        q.send_burst_in_place(6, |rooms, lens| {
            for (k, (room, len)) in rooms.iter_mut().zip(lens.iter_mut()).enumerate() {
                let f = frame(k as u32);
                room[..f.len()].copy_from_slice(&f);
                *len = f.len();
            }
            6
        }),
        6
    );
    let mut got = drain(q);
    got.sort();
    let mut want: Vec<Vec<u8>> = (0..6).map(frame).collect();
    want.sort();
    assert_eq!(got, want);
    assert_eq!((q.spare_mbufs(), pool.in_use()), (0, 0));
    drop(queues);
    assert_eq!(port.pool().in_use(), 0);
}

/// Mempool::prefill on `net_null` with `copy=0,size=100`: the device delivers exactly the pre-filled frames,
/// each of them as often as prefill wrote it, stamped with the port; a frame too long for the room is
/// refused without touching the pool.
fn prefilled_pool_is_what_net_null_delivers(eal: &Eal) {
    eal.attach("net_null5,size=100,copy=0").unwrap();
    // No mempool cache: the receive can then take the pool's very last mbufs.
    let cfg = PortConfig {
        mbufs: 1023,
        mbuf_cache: 0,
        ..PortConfig::default()
    };
    let (port, mut queues) = Port::open(eal, "net_null5", &cfg).unwrap();
    let q = &mut queues[0];
    let frames: Vec<Vec<u8>> = (0..3)
        .map(|k| {
            let mut f = frame(500 + k);
            f.truncate(100);
            f
        })
        .collect();
    assert_eq!(port.pool().prefill(&[]).unwrap(), 0);
    assert_eq!(port.pool().prefill(&frames).unwrap(), 1023);
    assert_eq!(port.pool().in_use(), 0, "every mbuf given back");
    for round in 0..2 {
        let mut b = MbufBurst::with_capacity(1023);
        while q.recv_mbufs(&mut b) > 0 {}
        assert_eq!(b.len(), 1023, "round {round}: the whole pool");
        assert_eq!(port.pool().in_use(), 1023);
        let mut counts = [0usize; 3];
        for i in 0..b.len() {
            let k = frames
                .iter()
                .position(|f| f[..] == *b.frame(i))
                .unwrap_or_else(|| panic!("round {round}: frame {i} is none of the three"));
            counts[k] += 1;
            assert_eq!(b.port(i), Some(port.port_id()));
        }
        assert_eq!(counts, [341, 341, 341], "round {round}");
        assert_eq!(q.rx_stats().frames, 1023 * (round + 1));
        assert_eq!(q.rx_stats().bytes, 102_300 * (round + 1));
        drop(b);
        assert_eq!(port.pool().in_use(), 0);
        if round == 0 {
            // Refused, and nothing written: the next round receives the same frames.
            match port.pool().prefill(&[vec![0xAB; 2049]]) {
                Err(NetioError::Config(m)) => assert!(m.contains("2049 bytes"), "{m}"),
                other => panic!("expected a Config error, got {other:?}"),
            }
            assert_eq!(port.pool().in_use(), 0);
        }
    }
    drop(queues);
    drop(port);
    eal.detach_vdev("net_null5").unwrap();
}

/// `send_mbufs` on a burst with a hole (which safe code makes with `move_to` or `free_one`) sends the other
/// frames: holes are closed first. (It read the hole's null pointer as an mbuf before: undefined behaviour
/// from safe code, found by this case.)
fn send_mbufs_with_a_hole_sends_the_others(eal: &'static Eal) {
    let (port, mut queues) = Port::open(eal, "net_ring0", &PortConfig::default()).unwrap();
    let q = &mut queues[0];
    let mut b = MbufBurst::with_capacity(4);
    for n in 0..3 {
        assert!(b.push_copy(port.pool(), &frame(n)));
    }
    b.free_one(1);
    assert_eq!(q.send_mbufs(&mut b), 2);
    assert_eq!(drain(q), vec![frame(0), frame(2)]);
    assert_eq!(port.pool().in_use(), 0);
}
