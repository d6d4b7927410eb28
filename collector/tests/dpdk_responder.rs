//! The software responder's run-to-completion loop on a DPDK queue (`io_loop::mbufs::MbufLoop`, what
//! `dta-collector serve --backend soft` runs on DPDK) against the sans-IO responder fed the same frames:
//! the responses must be the same bytes in the same order, the counters and the region memory the same
//! bytes, and no mbuf may leak. Requests go in and responses come out through the far side of a `net_ring`
//! vdev's queue ring. The EAL (without hugepages) initialises once per process, so every case runs in
//! sequence from one test function.
#![cfg(feature = "dpdk")]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use dta_collector::http::HttpStats;
use dta_collector::io_loop::{self, mbufs::MbufLoop};
use dta_collector::memory::Arena;
use dta_collector::metrics::Metrics;
use dta_collector::responder::{
    FaultConfig, FaultInjector, Outcome, Responder, ResponderConfig, Stats, RESPONSE_MAX,
};
use dta_netio::dpdk::{
    attach_ring, eal_init, register_thread, Eal, HandoffRx, HandoffTx, MbufBurst, Mempool, Port,
    PortConfig,
};
use dta_netio::OpenPort;
use dta_protocol::layout::{Geometry, KeyIncrementGeometry, KeyWriteGeometry};
use dta_protocol::roce::FrameRepr;
use dta_protocol::udp::UdpEndpoints;

const TRANSLATOR: [u8; 4] = [198, 18, 0, 1];
const COLLECTOR: [u8; 4] = [198, 18, 0, 2];
/// QP of the well-behaved requester, and of the one that errs.
const QP_GOOD: u32 = 0x100;
const QP_BAD: u32 = 0x101;
/// Frames per round: at most one receive burst, so that one poll takes them all before its responses go
/// into the same ring.
const ROUND: usize = 64;

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
        "--vdev=net_ring1",
        "--log-level=warning",
        "--no-telemetry",
    ]
    .map(String::from)
    .to_vec()
}

fn new_arena() -> Arena {
    Arena::new_normal(&[
        (
            0,
            Geometry::KeyWrite(KeyWriteGeometry::new(1024, 8, 1).unwrap()),
        ),
        (
            0,
            Geometry::KeyIncrement(KeyIncrementGeometry::new(512, 1).unwrap()),
        ),
    ])
    .unwrap()
}

fn new_responder(arena: &Arena) -> Responder {
    let config = ResponderConfig {
        local_ip: Some(COLLECTOR),
        ..ResponderConfig::default()
    };
    let mut r = Responder::new(config, arena.slots().to_vec());
    r.open_qp(QP_GOOD, TRANSLATOR, 0x11, 0);
    r.open_qp(QP_BAD, TRANSLATOR, 0x12, 500);
    r
}

fn emit(f: FrameRepr<'_>) -> Vec<u8> {
    let mut buf = vec![0u8; f.buffer_len()];
    f.emit(&mut buf).unwrap();
    buf
}

/// The requests, in rounds of at most [`ROUND`]: WRITEs (AckReq on every 4th), FETCH_ADDs, and on the
/// second QP a PSN ahead (NAK once, then silence), a duplicate (re-ACK), a bad R_Key (NAK, QP in error)
/// and what follows it (dropped); a frame that is not RoCE; a frame to another address.
fn requests(arena: &Arena) -> Vec<Vec<Vec<u8>>> {
    let kw = arena.slots()[0].region;
    let ki = arena.slots()[1].region;
    let ep = UdpEndpoints::new(
        [2, 0, 0, 0, 0, 1],
        [2, 0, 0, 0, 0, 2],
        TRANSLATOR,
        COLLECTOR,
        0xC000,
        4791,
    );
    let mut psn = 0u32;
    let next = |psn: &mut u32| {
        *psn += 1;
        *psn - 1
    };
    let mut rounds = Vec::new();
    // Round 1: a whole burst of WRITEs with varied payloads and addresses.
    let mut r = Vec::new();
    for i in 0..ROUND as u64 {
        let p = next(&mut psn);
        let data = (i * 0x0101_0101_0101).to_be_bytes();
        let va = kw.va + (i * 37 % 1024) * 8;
        r.push(emit(FrameRepr::write_only(
            ep,
            QP_GOOD,
            p,
            p % 4 == 3,
            va,
            kw.rkey,
            &data,
        )));
    }
    rounds.push(r);
    // Round 2: FETCH_ADDs between WRITEs, other traffic, and the erring QP.
    let mut r = Vec::new();
    for i in 0..40u64 {
        let p = next(&mut psn);
        let data = [i as u8; 8];
        let f = if i % 2 == 0 {
            FrameRepr::fetch_add(ep, QP_GOOD, p, true, ki.va + (i % 7) * 8, ki.rkey, i + 1)
        } else {
            FrameRepr::write_only(ep, QP_GOOD, p, i % 5 == 0, kw.va + i * 8, kw.rkey, &data)
        };
        r.push(emit(f));
    }
    r.push(vec![0xAB; 60]);
    let mut elsewhere = ep;
    elsewhere.dst_ip = [198, 18, 0, 9];
    let p = next(&mut psn);
    r.push(emit(FrameRepr::write_only(
        elsewhere, QP_GOOD, p, true, kw.va, kw.rkey, &[9; 8],
    )));
    // The erring QP: PSN 502 before 500 (NAK, then silence for 503), 500 and 501 in order, 500 again
    // (duplicate: re-ACKed), a bad R_Key at 502 (NAK, QP in error), then 503 (dropped: QP in error).
    let bad = |psn: u32, rkey: u32| {
        emit(FrameRepr::write_only(
            ep,
            QP_BAD,
            psn,
            true,
            kw.va + 8,
            rkey,
            &[7; 8],
        ))
    };
    for (p, key) in [
        (502, kw.rkey),
        (503, kw.rkey),
        (500, kw.rkey),
        (501, kw.rkey),
        (500, kw.rkey),
        (502, kw.rkey ^ 0x5A),
        (503, kw.rkey),
    ] {
        r.push(bad(p, key));
    }
    rounds.push(r);
    // Round 3: the good QP goes on past the PSN of the frame to elsewhere, which it never saw: ahead, NAKed;
    // then that PSN and the one NAKed, in order.
    let mut r = Vec::new();
    let skipped = psn - 1;
    for p in [psn, skipped, psn] {
        r.push(emit(FrameRepr::fetch_add(
            ep, QP_GOOD, p, true, ki.va, ki.rkey, 100,
        )));
    }
    rounds.push(r);
    rounds
}

/// The far side of the `net_ring` queue and a pool to build requests in.
struct Wire<'p> {
    tx: HandoffTx,
    rx: HandoffRx,
    pool: &'p dta_netio::dpdk::Mempool,
    burst: MbufBurst,
}

impl Wire<'_> {
    fn put(&mut self, frames: &[Vec<u8>]) {
        for f in frames {
            assert!(self.burst.push_copy(self.pool, f), "an mbuf for a request");
        }
        self.tx.send(&mut self.burst);
        assert!(self.burst.is_empty(), "the ring took every request");
    }

    /// Every frame the loop sent, in order.
    fn take(&mut self) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        while self.rx.recv(&mut self.burst) > 0 {
            out.extend(self.burst.frames().map(<[u8]>::to_vec));
            self.burst.clear();
        }
        out
    }
}

/// The sans-IO responder fed `frames` one by one, each response's bytes.
fn reference(r: &mut Responder, arena: &Arena, frames: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut out = [0u8; RESPONSE_MAX];
    let mut responses = Vec::new();
    for f in frames {
        if let Outcome::Respond(n) = r.handle(f, arena.write().as_mut_slice(), &mut out) {
            responses.push(out[..n].to_vec());
        }
    }
    responses
}

fn memory(arena: &Arena) -> Vec<u8> {
    arena.read().as_slice().to_vec()
}

#[test]
fn dpdk_responder_suite() {
    let eal = eal_init(eal_args()).expect("EAL init on vdevs without hugepages");
    let (port, mut queues) = Port::open(eal, "net_ring0", &PortConfig::default()).unwrap();
    let queue = &mut queues[0];
    let (tx, rx) = attach_ring(eal, "ETH_RXTX0_net_ring0").unwrap();
    let mut wire = Wire {
        tx,
        rx,
        pool: port.pool(),
        burst: MbufBurst::with_capacity(1024),
    };
    responses_and_memory_are_exact(queue, &mut wire);
    faults_reorder_drop_and_corrupt_as_the_injector_does(queue, &mut wire);
    // Every mbuf is back in the pool but the spares the queue keeps for its next responses.
    assert_eq!(port.pool().in_use() as usize, queue.spare_mbufs());
    the_daemon_runs_a_dpdk_port_on_the_mbuf_loop(eal);
}

/// Three rounds through the loop and through the sans-IO responder: the same responses, byte for byte, the
/// same counters and memory, and the counts each round should give.
fn responses_and_memory_are_exact(queue: &mut dta_netio::dpdk::DpdkQueue, wire: &mut Wire<'_>) {
    let arena = new_arena();
    let responder = Mutex::new(new_responder(&arena));
    let ref_arena = new_arena();
    let mut ref_responder = new_responder(&ref_arena);
    // The same requests to each arena's own addresses (the responses do not carry them).
    let rounds = requests(&arena);
    let ref_rounds = requests(&ref_arena);
    let mut l = MbufLoop::new(queue, &responder, &arena, FaultConfig::default());
    assert_eq!(l.poll(), 0, "nothing on the wire yet");
    // Round 1: 16 ACKs; round 2: 20 ATOMIC ACKs, 4 ACKs on the good QP, and on the bad one a NAK (PSN
    // ahead), 2 ACKs (500, 501), a re-ACK (500 again), a NAK (R_Key); round 3: a NAK (ahead), then the
    // ATOMIC ACKs of the expected PSN and of the one NAKed.
    let due = [16, 20 + 4 + 5, 3];
    let mut sent = 0;
    let mut answered = 0;
    for (k, ((round, ref_round), want)) in rounds.iter().zip(&ref_rounds).zip(due).enumerate() {
        wire.put(round);
        assert_eq!(l.poll(), round.len(), "one poll takes the round");
        let got = wire.take();
        if k == 0 {
            // The first round's ACKs on their own: PSNs 3, 7, ..., 63 to the requester's QP.
            for (i, ack) in got.iter().enumerate() {
                let f = FrameRepr::parse(ack).unwrap();
                assert_eq!((f.bth.psn, f.bth.dest_qp), (4 * i as u32 + 3, 0x11));
                assert_eq!(f.endpoints.dst_ip, TRANSLATOR);
            }
        }
        let expected = reference(&mut ref_responder, &ref_arena, ref_round);
        assert_eq!(got.len(), want, "responses of the round");
        assert_eq!(got, expected, "the same response bytes, in order");
        sent += round.len() as u64;
        answered += got.len() as u64;
    }
    // Nothing is left over in the queue.
    assert_eq!(l.poll(), 0);
    assert!(wire.take().is_empty());
    let (rx, tx) = (l.rx_stats(), l.tx_stats());
    assert_eq!((rx.frames, rx.dropped), (sent, 0));
    assert_eq!((tx.frames, tx.dropped), (answered, 0));
    drop(l);
    let stats: Stats = responder.lock().unwrap().stats().clone();
    assert_eq!(stats, *ref_responder.stats());
    assert_eq!(stats.writes, 64 + 20 + 2, "WRITEs applied");
    assert_eq!(stats.atomics, 20 + 2, "FETCH_ADDs applied");
    assert_eq!(memory(&arena), memory(&ref_arena), "memory written exactly");
    // And what it holds: the first round's WRITEs, the FETCH_ADDs' sums.
    let kw = arena.slots()[0];
    let mem = memory(&arena);
    for i in 0..ROUND as u64 {
        let at = kw.offset + (i * 37 % 1024) as usize * 8;
        // The second round's WRITEs overwrote entries 1, 3, ..., 39.
        let later = (i * 37 % 1024) % 2 == 1 && (i * 37 % 1024) < 40;
        if !later {
            assert_eq!(mem[at..at + 8], (i * 0x0101_0101_0101).to_be_bytes());
        }
    }
    let ki = arena.slots()[1];
    let counters: u64 = mem[ki.offset..ki.offset + 7 * 8]
        .chunks_exact(8)
        .map(|c| u64::from_ne_bytes(c.try_into().unwrap()))
        .sum();
    let adds: u64 = (0..40).step_by(2).map(|i| i + 1).sum();
    assert_eq!(counters, adds + 200, "every FETCH_ADD applied once");
}

/// Fault injection in front of the loop copies frames and holds one back across bursts; what the
/// responder sees must be what the injector, seeded alike, makes of the same bursts.
fn faults_reorder_drop_and_corrupt_as_the_injector_does(
    queue: &mut dta_netio::dpdk::DpdkQueue,
    wire: &mut Wire<'_>,
) {
    let faults = FaultConfig {
        drop: 0.05,
        reorder: 0.3,
        corrupt: 0.05,
        seed: 11,
    };
    let arena = new_arena();
    let responder = Mutex::new(new_responder(&arena));
    let ref_arena = new_arena();
    let mut ref_responder = new_responder(&ref_arena);
    let mut injector = FaultInjector::new(faults);
    let mut l = MbufLoop::new(queue, &responder, &arena, faults);
    let mut got = Vec::new();
    let mut expected = Vec::new();
    for (round, ref_round) in requests(&arena).into_iter().zip(requests(&ref_arena)) {
        wire.put(&round);
        assert_eq!(l.poll(), round.len());
        got.extend(wire.take());
        let mut deliver = Vec::new();
        ref_round
            .iter()
            .for_each(|f| injector.push(f, &mut deliver));
        expected.extend(reference(&mut ref_responder, &ref_arena, &deliver));
        // An empty poll releases a held frame.
        assert_eq!(l.poll(), 0);
        got.extend(wire.take());
        let mut deliver = Vec::new();
        injector.flush(&mut deliver);
        expected.extend(reference(&mut ref_responder, &ref_arena, &deliver));
    }
    let counts = l.fault_counts();
    assert_eq!(counts, injector.counts());
    assert!(counts.reordered > 0 && counts.dropped > 0 && counts.corrupted > 0);
    assert_eq!(l.tx_stats().dropped, 0);
    drop(l);
    assert!(!got.is_empty());
    assert_eq!(got, expected, "the same responses, in order");
    assert_eq!(responder.lock().unwrap().stats(), ref_responder.stats());
    assert_eq!(memory(&arena), memory(&ref_arena));
}

/// `io_loop::run`, what `serve` runs on its port, takes a DPDK port's queue to the mbuf loop: WRITEs put on
/// the ring are applied and counted in the metrics it publishes. (No AckReq: an answer would come back to
/// the loop through the same ring, as this test cannot take it first.)
fn the_daemon_runs_a_dpdk_port_on_the_mbuf_loop(eal: &Eal) {
    let mut port = OpenPort::dpdk("net_ring1", eal.args(), 64).unwrap();
    assert!(
        port.dpdk_queue().is_some(),
        "a DPDK port has a queue to run on"
    );
    let (tx, rx) = attach_ring(eal, "ETH_RXTX0_net_ring1").unwrap();
    let pool = Mempool::new(eal, "dpdk_responder_requests", 1023, 0, 2048 + 128, -1).unwrap();
    let mut wire = Wire {
        tx,
        rx,
        pool: &pool,
        burst: MbufBurst::with_capacity(64),
    };
    let arena = new_arena();
    let responder = Mutex::new(new_responder(&arena));
    let kw = arena.slots()[0];
    let ep = UdpEndpoints::new(
        [2, 0, 0, 0, 0, 1],
        [2, 0, 0, 0, 0, 2],
        TRANSLATOR,
        COLLECTOR,
        0xC000,
        4791,
    );
    let writes: Vec<Vec<u8>> = (0..64u32)
        .map(|psn| {
            let data = (u64::from(psn) << 32 | 0xD7A).to_be_bytes();
            let va = kw.region.va + u64::from(psn) * 8;
            emit(FrameRepr::write_only(
                ep,
                QP_GOOD,
                psn,
                false,
                va,
                kw.region.rkey,
                &data,
            ))
        })
        .collect();
    wire.put(&writes);
    let metrics = Metrics::default();
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let run = s.spawn(|| {
            let eal = eal_init(Vec::new()).unwrap();
            register_thread(eal).unwrap();
            io_loop::run(
                &mut port,
                &responder,
                &arena,
                FaultConfig::default(),
                &metrics,
                &stop,
            )
        });
        let t = Instant::now();
        while responder.lock().unwrap().stats().writes < 64 && t.elapsed() < Duration::from_secs(10)
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        stop.store(true, Ordering::Relaxed);
        run.join().unwrap().unwrap();
    });
    // Only the mbuf loop keeps mbufs for its next responses (the batch loop would have run as well, copying).
    let queue = port.dpdk_queue().unwrap();
    assert!(queue.spare_mbufs() > 0, "the mbuf loop ran");
    let mem = memory(&arena);
    for psn in 0..64u64 {
        let at = kw.offset + psn as usize * 8;
        assert_eq!(mem[at..at + 8], (psn << 32 | 0xD7A).to_be_bytes());
    }
    let text = metrics.render(&HttpStats::default());
    for line in [
        "dta_collector_writes_total 64",
        "dta_collector_port_rx_frames_total 64",
        "dta_collector_port_tx_frames_total 0",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
    }
    assert!(
        wire.take().is_empty(),
        "no response to WRITEs without AckReq"
    );
}
