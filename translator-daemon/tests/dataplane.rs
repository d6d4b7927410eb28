//! The DPDK data path (`run::dataplane::DataPlane::poll`) on virtual devices: frames go in on `net_ring`
//! rings from the far side (`attach_ring`), one poll runs, and what came out of each port is read back
//! from its ring (or from a `net_pcap` file) and compared byte for byte with frames this test built on its
//! own (etherparse, or bytes written out here; reports with dta-protocol's builders, as the bench does).
//!
//! A `net_ring` queue is one ring both ways: what a port sends it receives again on its next poll. So
//! frames to forward go in on port 1 (polled last) and are read from port 0's ring after one poll, or leave
//! through a `net_pcap` port that receives nothing.
//!
//! The EAL initialises once per process: every case runs in sequence from one test function
//! (`dataplane_suite`); the regression cases of bugs this file found run beside it and take the same lock.
#![cfg(feature = "dpdk")]

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant as Clock};

use dta_e2e::int_spec as spec;
use dta_netio::dpdk::{
    attach_ring, eal_init, register_thread, DpdkQueue, Eal, MbufBurst, Mempool, Port, PortConfig,
};
use dta_netio::{RxStats, TxStats};
use dta_protocol::control::{ResponderQp, Welcome, CONTROL_VERSION};
use dta_protocol::dta::{
    AppendRepr, Body, HeaderForm, KeyWriteRepr, NackRepr, Opcode, ReportRepr, DTA_UDP_PORT,
};
use dta_protocol::hash::key_checksum;
use dta_protocol::int::inner::FlowKey;
use dta_protocol::int::mapping::{flow_key, EventLists};
use dta_protocol::layout::{AppendGeometry, Geometry, KeyWriteGeometry, Region};
use dta_protocol::roce::{AckKind, AethRepr, FrameRepr};
use dta_protocol::udp::UdpEndpoints;
use dta_translator::int::{IntDrop, Shard};
use dta_translator::{Config, Engine, Instant};
use dta_translator_daemon::run::dataplane::{
    handoff_capacity, handoff_mesh, DataPlane, PlaneConfig,
};
use dta_translator_daemon::run::steer::{Steering, Target};

const T_MAC: [u8; 6] = [2, 0, 0, 0, 0, 1];
const T_IP: [u8; 4] = [198, 18, 0, 1];
const C_MAC: [u8; 6] = [2, 0, 0, 0, 0, 2];
const C_IP: [u8; 4] = [198, 18, 0, 2];
const R_MAC: [u8; 6] = [2, 0, 0, 0, 0, 9];
const R_IP: [u8; 4] = [10, 0, 0, 9];
/// Some other host behind the collector's side.
const H_MAC: [u8; 6] = [2, 0, 0, 0, 0, 0x77];
const H_IP: [u8; 4] = [198, 18, 0, 77];
const COLLECTOR_QPN: u32 = 17;
const QPN_BASE: u32 = 0x100;
const KW_RKEY: u32 = 0x1001;
/// Append lists the collector holds: list `id` at rkey 0x2000 + id.
const LISTS: [u32; 6] = [1, 2, 3, 4, 5, 6];
/// The engines' clock: constant, so no timer fires during a case.
const NOW: Instant = Instant(1_000_000_000);
/// Index of Key-Write and Append in `Counters::reports_in` (opcode - 1).
const KW: usize = 0;
const APPEND: usize = 1;

fn eal_args() -> Vec<String> {
    [
        "--no-huge",
        "--no-shconf",
        "-m",
        "256",
        "--no-pci",
        "--log-level=warning",
        "--no-telemetry",
        "-l",
        "0",
    ]
    .map(String::from)
    .to_vec()
}

/// One case at a time in this process (the ignored bug cases run beside the suite with
/// `--include-ignored`), on the one EAL.
static LOCK: Mutex<()> = Mutex::new(());

fn setup() -> (MutexGuard<'static, ()>, &'static Eal) {
    let guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let eal = eal_init(eal_args()).expect("EAL init on vdevs without hugepages");
    // A test thread other than the one that initialised the EAL gets an lcore of its own.
    register_thread(eal).ok();
    (guard, eal)
}

#[test]
fn dataplane_suite() {
    let started = Clock::now();
    let (_guard, eal) = setup();
    // The far side's mbufs: frames put on the device rings as a peer would.
    let pool = Mempool::new(eal, "dta_test_far", 4095, 0, 2048 + 128, -1).unwrap();
    let t = Rig { eal, pool: &pool };

    bump_in_the_wire_out_of_the_other_port(&t);
    bump_in_the_wire_from_port_1_to_port_0(&t);
    arp_for_us_is_answered_in_place(&t);
    reports_before_the_engine_are_startup_drops(&t);
    roce_for_another_host_is_forwarded(&t);
    nacks_go_back_out_of_the_arrival_port(&t);
    two_workers_hand_off_to_the_owner(&t);
    handoff_backpressure_holds_back_and_loses_nothing(&t);
    int_reports_are_spread_over_two_workers(&t);
    a_v2_group_of_two_other_workers_flows_goes_to_both(&t);
    assert_eq!(pool.in_use(), 0, "every far-side mbuf came back");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "bounded in time"
    );
}

/// The EAL and the far side's pool.
struct Rig<'a> {
    eal: &'static Eal,
    pool: &'a Mempool,
}

impl Rig<'_> {
    /// Hot-plugs `net_ring` device `name` and opens it with `queues` queues (no RSS: each queue is its own
    /// ring, `ETH_RXTX{q}_{name}`).
    fn ring_port(&self, name: &str, queues: u16) -> (Port, Vec<DpdkQueue>) {
        self.eal.attach(name).unwrap();
        Port::open(self.eal, name, &port_config(queues)).unwrap()
    }

    /// Puts `frames` on ring `ring` as the device's peer: the port receives them next, in order.
    /// `net_ring` leaves each mbuf's port field as the allocation set it (none).
    fn put(&self, ring: &str, frames: &[Vec<u8>]) {
        self.put_stamped(ring, frames, None);
    }

    /// [`put`](Self::put), with each mbuf's port field set to `port` as a NIC's receive sets it.
    fn put_stamped(&self, ring: &str, frames: &[Vec<u8>], port: Option<u16>) {
        let (mut tx, _rx) = attach_ring(self.eal, ring).unwrap();
        let mut b = MbufBurst::with_capacity(frames.len().max(1));
        for f in frames {
            assert!(b.push_copy(self.pool, f));
        }
        if let Some(port) = port {
            stamp_port(&b, port);
        }
        assert_eq!(tx.send(&mut b), frames.len(), "room on {ring}");
    }

    /// Takes every frame waiting on ring `ring` (what the port sent), in order.
    fn take(&self, ring: &str) -> Vec<Vec<u8>> {
        let (_tx, mut rx) = attach_ring(self.eal, ring).unwrap();
        let mut b = MbufBurst::with_capacity(1024);
        rx.recv(&mut b);
        b.frames().map(<[u8]>::to_vec).collect()
    }
}

/// Sets `rte_mbuf.port` of every mbuf of `b` to `port`. The header lies 128 bytes (`sizeof(struct
/// rte_mbuf)`, no private area in these pools) before the buffer, the frame 128 bytes (the headroom) into
/// it; the fields around are checked first, and the result through `MbufBurst::port`.
fn stamp_port(b: &MbufBurst, port: u16) {
    for (i, f) in b.frames().enumerate() {
        // SAFETY: a live single-segment mbuf that `b` owns, fresh from `push_copy` (data offset 128);
        // the layout is checked before the write (DPDK 22.11's first cache line).
        unsafe {
            let m = f.as_ptr().sub(256).cast_mut();
            assert_eq!(*(m as *const usize), m as usize + 128, "buf_addr");
            assert_eq!(*(m.add(16) as *const u16), 128, "data_off");
            assert_eq!(usize::from(*(m.add(40) as *const u16)), f.len(), "data_len");
            *(m.add(22) as *mut u16) = port;
        }
        assert_eq!(b.port(i), Some(port));
    }
}

fn port_config(queues: u16) -> PortConfig {
    PortConfig {
        queues,
        mbufs: 2047,
        mbuf_cache: 32,
        require_rss: false,
        ..PortConfig::default()
    }
}

fn ring(q: u16, dev: &str) -> String {
    format!("ETH_RXTX{q}_{dev}")
}

fn steering(workers: usize) -> Steering {
    Steering {
        workers,
        collectors: 1,
        qpn_base: QPN_BASE,
        local_ip: T_IP,
        report_port: DTA_UDP_PORT,
        int_port: None,
        form: HeaderForm::Seq,
    }
}

fn plane_config(index: usize, workers: usize) -> PlaneConfig {
    PlaneConfig {
        index,
        steering: steering(workers),
        collector_port: 1,
        local_mac: T_MAC,
        burst: 64,
    }
}

/// Worker `w`'s engine: QPN `QPN_BASE + w` towards one collector with a Key-Write region and the Append
/// lists of `LISTS` (batches of one entry, so that each report is written at once).
fn engine(w: u32) -> Engine {
    let mut cfg = Config::default();
    cfg.local.mac = T_MAC;
    cfg.local.ip = T_IP;
    cfg.local.qpn_base = QPN_BASE + w;
    let mut regions = vec![Region {
        id: 0,
        va: 0x7f00_0000_0000,
        rkey: KW_RKEY,
        geometry: Geometry::KeyWrite(KeyWriteGeometry::new(1 << 16, 8, 4).unwrap()),
    }];
    for id in LISTS {
        regions.push(Region {
            id,
            va: 0x7f30_0000_0000 + (u64::from(id) << 24),
            rkey: 0x2000 + id,
            geometry: Geometry::Append(AppendGeometry::new(1024, 4, 1).unwrap()),
        });
    }
    let welcome = Welcome {
        version: CONTROL_VERSION,
        mac: C_MAC,
        ip: C_IP,
        qps: vec![ResponderQp {
            qpn: COLLECTOR_QPN,
            peer_qpn: QPN_BASE + w,
        }],
        max_dest_rd_atomic: 16,
        path_mtu: 1024,
        regions,
        append_heads: Vec::new(),
    };
    Engine::new(cfg, &[welcome], Instant(0)).unwrap()
}

/// An Ethernet/IPv4/UDP frame built by etherparse.
fn udp4(src: ([u8; 6], [u8; 4], u16), dst: ([u8; 6], [u8; 4], u16), payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    etherparse::PacketBuilder::ethernet2(src.0, dst.0)
        .ipv4(src.1, dst.1, 64)
        .udp(src.2, dst.2)
        .write(&mut out, payload)
        .unwrap();
    out
}

/// A DTA report from the reporter to the collector's address on the report port.
fn report(body: Body, seq: u8, retransmit: bool) -> Vec<u8> {
    let mut r = ReportRepr::new(body, HeaderForm::Seq, seq);
    r.base.retransmit = retransmit;
    let fmt = Config::default().report.format();
    let mut payload = vec![0u8; r.buffer_len(&fmt)];
    r.emit(&mut payload, &fmt).unwrap();
    udp4((R_MAC, R_IP, 5000), (T_MAC, C_IP, DTA_UDP_PORT), &payload)
}

fn append(list_id: u32, entry: u32, seq: u8) -> Vec<u8> {
    report(
        Body::Append(AppendRepr {
            list_id,
            data: &entry.to_be_bytes(),
        }),
        seq,
        false,
    )
}

fn key_write(key: u32, data: u32, seq: u8, retransmit: bool) -> Vec<u8> {
    report(
        Body::KeyWrite(KeyWriteRepr {
            redundancy: 1,
            key,
            data: &data.to_be_bytes(),
        }),
        seq,
        retransmit,
    )
}

/// A RoCEv2 ACKNOWLEDGE from `src_ip` to `dst_ip` for QP `qpn`, PSN `psn` (iCRC and all).
fn ack(src_ip: [u8; 4], dst_ip: [u8; 4], qpn: u32, psn: u32, msn: u32) -> Vec<u8> {
    let ep = UdpEndpoints::new(C_MAC, T_MAC, src_ip, dst_ip, 49152, 4791);
    let aeth = AethRepr {
        kind: AckKind::Ack { credits: 31 },
        msn,
    };
    let f = FrameRepr::acknowledge(ep, qpn, psn, aeth);
    let mut out = vec![0u8; f.buffer_len()];
    let n = f.emit(&mut out).unwrap();
    out.truncate(n);
    out
}

/// Frames no engine takes, of every kind a wire carries, each numbered `n` somewhere in its payload: a raw
/// EtherType, IPv4/UDP (DNS), IPv4/TCP, IPv6/UDP to the report port, a VLAN-tagged report, and RoCE
/// between the collector and another host.
fn foreign(n: u32) -> Vec<u8> {
    let tag = n.to_be_bytes();
    let mut out = Vec::new();
    match n % 6 {
        0 => {
            out.extend_from_slice(&H_MAC);
            out.extend_from_slice(&R_MAC);
            out.extend_from_slice(&[0x88, 0xb5]);
            out.extend_from_slice(&tag);
            out.resize(60 + (n as usize * 37) % 1400, 0xA5);
        }
        1 => {
            out = udp4(
                (R_MAC, R_IP, 5353),
                (H_MAC, H_IP, 53),
                &[&tag[..], b"dns"].concat(),
            )
        }
        2 => etherparse::PacketBuilder::ethernet2(R_MAC, H_MAC)
            .ipv4(R_IP, H_IP, 64)
            .tcp(40000, 80, n, 1024)
            .write(&mut out, &[&tag[..], b"GET /"].concat())
            .unwrap(),
        3 => etherparse::PacketBuilder::ethernet2(R_MAC, T_MAC)
            .ipv6([0xfd; 16], [0xfe; 16], 64)
            .udp(5000, DTA_UDP_PORT)
            .write(&mut out, &key_write_payload(n))
            .unwrap(),
        4 => etherparse::PacketBuilder::ethernet2(R_MAC, T_MAC)
            .single_vlan(10.try_into().unwrap())
            .ipv4(R_IP, C_IP, 64)
            .udp(5000, DTA_UDP_PORT)
            .write(&mut out, &key_write_payload(n))
            .unwrap(),
        _ => {
            // An ACK from the collector to another host, for a QPN that is ours.
            out = ack(C_IP, H_IP, QPN_BASE, n, 1);
            out[6..12].copy_from_slice(&C_MAC);
            out[0..6].copy_from_slice(&H_MAC);
        }
    }
    out
}

/// The UDP payload of a well-formed Key-Write (what makes `foreign` 3 and 4 look like reports inside).
fn key_write_payload(n: u32) -> Vec<u8> {
    let f = key_write(n, n, 0, false);
    f[42..].to_vec()
}

/// An ARP request from `sender` (MAC, IP) for `target`, padded with 0x5A to `len` bytes.
fn arp_request(sender: ([u8; 6], [u8; 4]), target: [u8; 4], len: usize) -> Vec<u8> {
    let mut f = vec![0xff; 6];
    f.extend_from_slice(&sender.0);
    f.extend_from_slice(&[0x08, 0x06]);
    f.extend_from_slice(&[0x00, 0x01, 0x08, 0x00, 6, 4, 0x00, 0x01]);
    f.extend_from_slice(&sender.0);
    f.extend_from_slice(&sender.1);
    f.extend_from_slice(&[0; 6]);
    f.extend_from_slice(&target);
    assert_eq!(f.len(), 42);
    f.resize(len, 0x5A);
    f
}

/// The reply a translator at `T_MAC`/`T_IP` owes `request`: addressed back to the sender, from us, with
/// the request's padding kept.
fn arp_reply_to(request: &[u8]) -> Vec<u8> {
    let (sender_mac, sender_ip) = (&request[22..28], &request[28..32]);
    let mut f = Vec::new();
    f.extend_from_slice(sender_mac);
    f.extend_from_slice(&T_MAC);
    f.extend_from_slice(&[0x08, 0x06, 0x00, 0x01, 0x08, 0x00, 6, 4, 0x00, 0x02]);
    f.extend_from_slice(&T_MAC);
    f.extend_from_slice(&T_IP);
    f.extend_from_slice(sender_mac);
    f.extend_from_slice(sender_ip);
    f.extend_from_slice(&request[42..]);
    f
}

/// The fields of a RoCEv2 request the translator sent, read at fixed offsets (IPv4 without options).
#[derive(Debug)]
struct Roce {
    src_mac: [u8; 6],
    dst_mac: [u8; 6],
    src_ip: [u8; 4],
    dst_ip: [u8; 4],
    dst_port: u16,
    opcode: u8,
    dest_qp: u32,
    psn: u32,
    /// RETH: virtual address, rkey, length; then the payload before the iCRC.
    va: u64,
    rkey: u32,
    dma_len: u32,
    payload: Vec<u8>,
}

fn roce(f: &[u8]) -> Roce {
    assert_eq!(&f[12..14], &[0x08, 0x00], "IPv4");
    assert_eq!(f[14], 0x45, "no IP options");
    assert_eq!(f[23], 17, "UDP");
    let be = |r: std::ops::Range<usize>| f[r].iter().fold(0u64, |a, &b| a << 8 | u64::from(b));
    let bth = 42;
    let opcode = f[bth];
    let reth = bth + 12;
    Roce {
        src_mac: f[6..12].try_into().unwrap(),
        dst_mac: f[0..6].try_into().unwrap(),
        src_ip: f[26..30].try_into().unwrap(),
        dst_ip: f[30..34].try_into().unwrap(),
        dst_port: be(36..38) as u16,
        opcode,
        dest_qp: be(bth + 5..bth + 8) as u32,
        psn: be(bth + 9..bth + 12) as u32,
        va: be(reth..reth + 8),
        rkey: be(reth + 8..reth + 12) as u32,
        dma_len: be(reth + 12..reth + 16) as u32,
        payload: f[reth + 16..f.len() - 4].to_vec(),
    }
}

/// RDMA WRITE Only (RC).
const WRITE_ONLY: u8 = 0x0A;

fn assert_write_to_collector(r: &Roce) {
    assert_eq!((r.src_mac, r.dst_mac), (T_MAC, C_MAC), "{r:?}");
    assert_eq!(
        (r.src_ip, r.dst_ip, r.dst_port),
        (T_IP, C_IP, 4791),
        "{r:?}"
    );
    assert_eq!((r.opcode, r.dest_qp), (WRITE_ONLY, COLLECTOR_QPN), "{r:?}");
    assert_eq!(r.dma_len as usize, r.payload.len(), "{r:?}");
}

/// Sum of a port's frames (bytes) in `frames`.
fn bytes(frames: &[Vec<u8>]) -> u64 {
    frames.iter().map(|f| f.len() as u64).sum()
}

/// (a) Non-DTA frames received on port 0 leave by port 1 as they came, in order, with no engine and with
/// one (the one-worker path, where the engine classifies): port 1 is a `net_pcap` file that receives
/// nothing, read back once the port is closed.
fn bump_in_the_wire_out_of_the_other_port(t: &Rig) {
    let path = std::env::temp_dir().join(format!("dta_dataplane_{}.pcap", std::process::id()));
    let (a, mut aq) = t.ring_port("net_ring1", 1);
    t.eal
        .attach(&format!("net_pcap1,tx_pcap={}", path.display()))
        .unwrap();
    let (b, mut bq) = Port::open(t.eal, "net_pcap1", &port_config(1)).unwrap();
    let mut plane = DataPlane::new(
        plane_config(0, 1),
        vec![aq.remove(0), bq.remove(0)],
        vec![None],
        Vec::new(),
    );
    let frames: Vec<Vec<u8>> = (0..120).map(foreign).collect();
    // Without an engine: the steering path.
    t.put(&ring(0, "net_ring1"), &frames[..60]);
    assert!(plane.poll(None, NOW));
    assert_eq!(plane.counters().forwarded, 60);
    assert!(!plane.poll(None, NOW), "nothing left to do");
    // With the engine: it classifies the burst and gives every frame back.
    let mut e = engine(0);
    t.put(&ring(0, "net_ring1"), &frames[60..]);
    assert!(plane.poll(Some(&mut e), NOW));
    let c = plane.counters();
    assert_eq!(c.forwarded, 120);
    assert_eq!(
        (
            c.not_forwarded,
            c.arp_replies,
            c.handed_off,
            c.startup_drops
        ),
        (0, 0, 0, 0)
    );
    assert_eq!((e.counters().frames_in, e.counters().not_for_us), (60, 60));
    assert_eq!(e.counters().reports_in, [0; 6]);
    assert_eq!(e.counters().acks + e.counters().stale_responses, 0);
    assert!(!plane.poll(Some(&mut e), NOW));
    assert!(
        t.take(&ring(0, "net_ring1")).is_empty(),
        "nothing back out of port 0"
    );
    let all = bytes(&frames);
    let stats = plane.port_stats();
    assert_eq!(
        stats[0],
        (
            RxStats {
                frames: 120,
                bytes: all,
                dropped: 0,
                missed: 0
            },
            TxStats::default()
        )
    );
    assert_eq!(
        stats[1].1,
        TxStats {
            frames: 120,
            bytes: all,
            dropped: 0
        }
    );
    assert_eq!(stats[1].0.frames, 0);
    drop(plane);
    drop((a, b));
    t.eal.detach_vdev("net_pcap1").unwrap();
    t.eal.detach_vdev("net_ring1").unwrap();
    let file = std::fs::File::open(&path).unwrap();
    let mut reader = pcap_file::pcap::PcapReader::new(file).unwrap();
    let mut out = Vec::new();
    while let Some(p) = reader.next_packet() {
        out.push(p.unwrap().data.into_owned());
    }
    std::fs::remove_file(&path).ok();
    assert_eq!(out.len(), 120);
    for (k, (got, want)) in out.iter().zip(&frames).enumerate() {
        assert_eq!(got, want, "frame {k} out of port 1");
    }
}

/// (a) The other way, on two rings: frames received on port 1 leave by port 0 byte for byte and in order;
/// a report among them is the engine's and the only one not forwarded.
fn bump_in_the_wire_from_port_1_to_port_0(t: &Rig) {
    let (a, mut aq) = t.ring_port("net_ring2", 1);
    let (b, mut bq) = t.ring_port("net_ring3", 1);
    let mut plane = DataPlane::new(
        plane_config(0, 1),
        vec![aq.remove(0), bq.remove(0)],
        vec![None],
        Vec::new(),
    );
    let frames: Vec<Vec<u8>> = (200..260).map(foreign).collect();
    t.put(&ring(0, "net_ring3"), &frames);
    assert!(plane.poll(None, NOW));
    assert_eq!(plane.counters().forwarded, 60);
    assert_eq!(t.take(&ring(0, "net_ring2")), frames);
    assert!(t.take(&ring(0, "net_ring3")).is_empty());

    let mut e = engine(0);
    let mut mixed = frames[..30].to_vec();
    mixed.insert(10, key_write(7, 70, 0, false));
    mixed.insert(20, append(LISTS[0], 0xabcd, 0));
    t.put(&ring(0, "net_ring3"), &mixed);
    assert!(plane.poll(Some(&mut e), NOW));
    assert_eq!(plane.counters().forwarded, 90);
    assert_eq!(t.take(&ring(0, "net_ring2")), frames[..30].to_vec());
    assert_eq!(e.counters().frames_in, 32);
    assert_eq!(e.counters().not_for_us, 30);
    assert_eq!(
        (e.counters().reports_in[KW], e.counters().reports_in[APPEND]),
        (1, 1)
    );
    // The two reports' writes went out of the collector port (port 1, polled before the transmit).
    let out = t.take(&ring(0, "net_ring3"));
    assert_eq!(out.len() as u64, e.counters().roce_frames_out);
    assert_eq!(plane.counters().engine_frames_out, out.len() as u64);
    assert!(out.len() >= 2, "{} frames", out.len());
    for f in &out {
        assert_write_to_collector(&roce(f));
    }
    let rkeys: Vec<u32> = out.iter().map(|f| roce(f).rkey).collect();
    assert!(
        rkeys.contains(&KW_RKEY) && rkeys.contains(&(0x2000 + LISTS[0])),
        "{rkeys:x?}"
    );

    // Frames that look like Key-Writes where a report has its opcode (byte 42 is 1) amid a run of
    // Key-Write reports: a DNS datagram, a raw frame, a Key-Write to another UDP port. Forwarded in order.
    let dns = udp4(
        (R_MAC, R_IP, 5353),
        (H_MAC, H_IP, 53),
        &[1, 0, 0, 1, 0xd0, 0x0d],
    );
    let mut raw = foreign(6);
    raw[42] = 1;
    let elsewhere = udp4(
        (R_MAC, R_IP, 5000),
        (T_MAC, C_IP, DTA_UDP_PORT + 1),
        &key_write_payload(9),
    );
    assert_eq!((dns[42], raw[42], elsewhere[42]), (1, 1, 1));
    let run = vec![
        key_write(30, 1, 1, false),
        dns.clone(),
        key_write(31, 2, 2, false),
        key_write(32, 3, 3, false),
        raw.clone(),
        elsewhere.clone(),
        key_write(33, 4, 4, false),
    ];
    assert_eq!(t.pool.in_use(), 0, "nothing held: no spare left over");
    t.put(&ring(0, "net_ring3"), &run);
    assert!(plane.poll(Some(&mut e), NOW));
    // The writes were built in the reports' own mbufs (the far side's pool), not in mbufs of the
    // collector port's pool: 4 writes and 3 forwarded frames are the 7 mbufs out.
    assert_eq!(
        (t.pool.in_use(), a.pool().in_use(), b.pool().in_use()),
        (7, 0, 0)
    );
    assert_eq!(t.take(&ring(0, "net_ring2")), vec![dns, raw, elsewhere]);
    assert_eq!(plane.counters().forwarded, 93);
    assert_eq!(e.counters().reports_in[KW], 5);
    let out = t.take(&ring(0, "net_ring3"));
    assert_eq!(out.len(), 4, "one write a report");
    let data: Vec<Vec<u8>> = out.iter().map(|f| roce(f).payload[4..].to_vec()).collect();
    assert_eq!(
        data,
        (1u32..=4)
            .map(|d| d.to_be_bytes().to_vec())
            .collect::<Vec<_>>()
    );
    drop(plane);
    drop((a, b));
    t.eal.detach_vdev("net_ring2").unwrap();
    t.eal.detach_vdev("net_ring3").unwrap();
}

/// (b) An ARP request for the translator's address is answered in its own mbuf out of the port it came
/// in on (a padded request keeps its length and padding); one for another address, and an ARP reply, are
/// forwarded untouched. Without an engine and with one.
fn arp_for_us_is_answered_in_place(t: &Rig) {
    let (a, mut aq) = t.ring_port("net_ring4", 1);
    let (b, mut bq) = t.ring_port("net_ring5", 1);
    let mut plane = DataPlane::new(
        plane_config(0, 1),
        vec![aq.remove(0), bq.remove(0)],
        vec![None],
        Vec::new(),
    );
    let (p0, p1) = (ring(0, "net_ring4"), ring(0, "net_ring5"));
    let mut e = engine(0);
    for with_engine in [false, true] {
        let before = plane.counters();
        let poll = |plane: &mut DataPlane, e: &mut Engine| {
            plane.poll(with_engine.then_some(e), NOW);
        };
        // From the collector's side (port 1), padded to 60 bytes as a NIC sends it.
        let req = arp_request((C_MAC, C_IP), T_IP, 60);
        let other = arp_request((C_MAC, C_IP), H_IP, 60);
        let mut answer = arp_request((H_MAC, H_IP), T_IP, 60);
        answer[21] = 2;
        t.put(&p1, &[other.clone(), req.clone(), answer.clone()]);
        poll(&mut plane, &mut e);
        let reply = t.take(&p1);
        assert_eq!(reply, vec![arp_reply_to(&req)], "engine {with_engine}");
        assert_eq!(reply[0].len(), 60);
        assert_eq!(
            &reply[0][..12],
            &[C_MAC, T_MAC].concat()[..],
            "to the asker, from us"
        );
        assert_eq!(
            t.take(&p0),
            vec![other.clone(), answer.clone()],
            "forwarded"
        );
        // From the reporters' side (port 0), unpadded.
        let req0 = arp_request((R_MAC, R_IP), T_IP, 42);
        t.put(&p0, std::slice::from_ref(&req0));
        poll(&mut plane, &mut e);
        assert_eq!(t.take(&p0), vec![arp_reply_to(&req0)]);
        assert!(t.take(&p1).is_empty());
        let c = plane.counters();
        assert_eq!(c.arp_replies - before.arp_replies, 2);
        assert_eq!(c.forwarded - before.forwarded, 2);
    }
    assert_eq!(
        (e.counters().not_for_us, e.counters().frames_in),
        (4, 4),
        "with the engine, it saw the ARP frames first and gave them back"
    );
    drop(plane);
    drop((a, b));
    t.eal.detach_vdev("net_ring4").unwrap();
    t.eal.detach_vdev("net_ring5").unwrap();
}

/// (d) Reports and responses that arrive before the engine exists are counted as startup drops and
/// freed, not forwarded; what is not ours is forwarded meanwhile.
fn reports_before_the_engine_are_startup_drops(t: &Rig) {
    let (a, mut aq) = t.ring_port("net_ring6", 1);
    let (b, mut bq) = t.ring_port("net_ring7", 1);
    let mut plane = DataPlane::new(
        plane_config(0, 1),
        vec![aq.remove(0), bq.remove(0)],
        vec![None],
        Vec::new(),
    );
    let dns = foreign(1);
    let raw = foreign(0);
    let frames = vec![
        key_write(1, 1, 0, false),
        dns.clone(),
        append(LISTS[1], 5, 0),
        ack(C_IP, T_IP, QPN_BASE, 0, 1),
        raw.clone(),
        key_write(2, 2, 1, true),
    ];
    t.put(&ring(0, "net_ring7"), &frames);
    assert!(plane.poll(None, NOW));
    let c = plane.counters();
    assert_eq!((c.startup_drops, c.forwarded), (4, 2));
    assert_eq!(
        t.take(&ring(0, "net_ring6")),
        vec![dns.clone(), raw.clone()]
    );
    assert!(t.take(&ring(0, "net_ring7")).is_empty());
    // Only reports, on port 0 this time.
    let reports: Vec<Vec<u8>> = (0..50).map(|k| key_write(k, k, k as u8, false)).collect();
    t.put(&ring(0, "net_ring6"), &reports);
    assert!(plane.poll(None, NOW));
    let c = plane.counters();
    assert_eq!(
        (c.startup_drops, c.forwarded, c.engine_frames_out),
        (54, 2, 0)
    );
    assert!(t.take(&ring(0, "net_ring6")).is_empty());
    assert!(t.take(&ring(0, "net_ring7")).is_empty());
    drop(plane);
    drop((a, b));
    t.eal.detach_vdev("net_ring6").unwrap();
    t.eal.detach_vdev("net_ring7").unwrap();
}

/// (e) RoCE from the collector to another host crosses the bump in the wire untouched, with the engine
/// classifying (one worker) and with steering (two workers); the engine consumes none of it.
fn roce_for_another_host_is_forwarded(t: &Rig) {
    let (a, mut aq) = t.ring_port("net_ring8", 1);
    let (b, mut bq) = t.ring_port("net_ring9", 1);
    let mut plane = DataPlane::new(
        plane_config(0, 1),
        vec![aq.remove(0), bq.remove(0)],
        vec![None],
        Vec::new(),
    );
    let mut e = engine(0);
    // ACKs for our own QPN and PSNs, but addressed to another host.
    let frames: Vec<Vec<u8>> = (0..8)
        .map(|k| ack(C_IP, H_IP, QPN_BASE, k, k + 1))
        .collect();
    t.put(&ring(0, "net_ring9"), &frames);
    assert!(plane.poll(Some(&mut e), NOW));
    assert_eq!(t.take(&ring(0, "net_ring8")), frames);
    assert_eq!(plane.counters().forwarded, 8);
    let c = e.counters();
    assert_eq!((c.frames_in, c.not_for_us), (8, 8));
    assert_eq!((c.acks, c.stale_responses, c.qp_errors), (0, 0, 0));
    drop(plane);
    drop((a, b));
    t.eal.detach_vdev("net_ring8").unwrap();
    t.eal.detach_vdev("net_ring9").unwrap();
}

/// (c, d, e) Two workers, each with queue k of both ports and the handoff rings between them.
fn two_workers_hand_off_to_the_owner(t: &Rig) {
    let (a, aq) = t.ring_port("net_ring10", 2);
    let (b, bq) = t.ring_port("net_ring11", 2);
    let (r0, r1) = (ring(0, "net_ring10"), ring(1, "net_ring10"));
    let (c0, c1) = (ring(0, "net_ring11"), ring(1, "net_ring11"));
    let mesh = handoff_mesh(t.eal, "dta_test_mesh", 2).unwrap();
    let mut planes: Vec<DataPlane> = aq
        .into_iter()
        .zip(bq)
        .zip(mesh)
        .enumerate()
        .map(|(w, ((a, b), (to, from)))| DataPlane::new(plane_config(w, 2), vec![a, b], to, from))
        .collect();
    let owner = |id: u32| key_checksum(id) as usize % 2;
    let s = steering(2);
    // Lists owned by each worker, and Key-Write keys each worker would be given by key.
    let list_of = |w: usize| *LISTS.iter().find(|&&l| owner(l) == w).unwrap();
    let key_of = |w: usize| (100u32..).find(|&k| owner(k) == w).unwrap();
    let (l0, l1) = (list_of(0), list_of(1));
    assert_eq!(s.target(&append(l1, 0, 0)), Target::Worker(1));
    assert_eq!(s.target(&key_write(key_of(1), 0, 0, false)), Target::Any);

    // Before the engines: a report for worker 1 that worker 0 received is handed off and dropped there.
    t.put(&r0, &[append(l1, 1, 0), key_write(key_of(1), 1, 0, false)]);
    assert!(planes[0].poll(None, NOW));
    assert_eq!(
        (
            planes[0].counters().handed_off,
            planes[0].counters().startup_drops
        ),
        (1, 1)
    );
    assert!(planes[1].poll(None, NOW));
    assert_eq!(planes[1].counters().startup_drops, 1);
    assert!(!planes[1].poll(None, NOW));

    let mut engines = [engine(0), engine(1)];
    let poll = |planes: &mut Vec<DataPlane>, engines: &mut [Engine; 2], w: usize| {
        planes[w].poll(Some(&mut engines[w]), NOW)
    };
    let reports = |e: &Engine| e.counters().reports_in;

    // (c) An Append report for worker 1's list, received by worker 0: handed off, translated by worker 1,
    // written out of worker 1's queue of the collector port.
    t.put(&r0, &[append(l1, 0xfeed_0001, 1)]);
    assert!(poll(&mut planes, &mut engines, 0));
    assert_eq!(planes[0].counters().handed_off, 2);
    assert_eq!(
        engines[0].counters().frames_in,
        0,
        "worker 0's engine never saw it"
    );
    assert!(t.take(&c0).is_empty() && t.take(&r0).is_empty());
    assert!(poll(&mut planes, &mut engines, 1));
    assert_eq!(reports(&engines[1])[APPEND], 1);
    assert_eq!(reports(&engines[0]), [0; 6]);
    let out = t.take(&c1);
    assert!(!out.is_empty());
    assert_eq!(out.len() as u64, engines[1].counters().roce_frames_out);
    assert_eq!(planes[1].counters().engine_frames_out, out.len() as u64);
    let writes: Vec<Roce> = out.iter().map(|f| roce(f)).collect();
    for w in &writes {
        assert_write_to_collector(w);
    }
    let entry = writes
        .iter()
        .find(|w| w.rkey == 0x2000 + l1 && w.payload == 0xfeed_0001u32.to_be_bytes())
        .unwrap_or_else(|| panic!("the entry's write: {writes:?}"));
    assert_eq!(
        entry.va & !0xff_ffff,
        0x7f30_0000_0000 + (u64::from(l1) << 24)
    );
    assert!(t.take(&c0).is_empty() && t.take(&r1).is_empty());
    let mut last_psn = [0u32; 2];
    last_psn[1] = writes.last().unwrap().psn;
    assert!(engines[1].qp_stats(0).unwrap().window > 0);

    // And worker 0's own list stays with it.
    t.put(&r0, &[append(l0, 0xfeed_0000, 1)]);
    assert!(poll(&mut planes, &mut engines, 0));
    assert_eq!(reports(&engines[0])[APPEND], 1);
    assert_eq!(planes[0].counters().handed_off, 2);
    let out0 = t.take(&c0);
    assert!(out0
        .iter()
        .any(|f| roce(f).rkey == 0x2000 + l0 && roce(f).payload == 0xfeed_0000u32.to_be_bytes()));
    last_psn[0] = roce(out0.last().unwrap()).psn;

    // (c) A Key-Write without the retransmit flag has no owner: translated where it arrived, whatever its
    // key, on both workers.
    for (w, rx_ring, tx_ring) in [(0, &r0, &c0), (1, &r1, &c1)] {
        let key = key_of(1 - w);
        let handed = planes[w].counters().handed_off;
        t.put(rx_ring, &[key_write(key, 0x5eed_0000 + w as u32, 2, false)]);
        assert!(poll(&mut planes, &mut engines, w));
        assert_eq!(
            planes[w].counters().handed_off,
            handed,
            "worker {w} kept it"
        );
        assert_eq!(reports(&engines[w])[KW], 1, "worker {w}");
        let out = t.take(tx_ring);
        assert_eq!(out.len(), 1, "worker {w}");
        let kw = roce(&out[0]);
        assert_write_to_collector(&kw);
        assert_eq!(kw.rkey, KW_RKEY);
        assert_eq!(&kw.payload[4..], &(0x5eed_0000 + w as u32).to_be_bytes());
        assert_eq!(
            kw.psn,
            (last_psn[w] + 1) & 0xff_ffff,
            "worker {w}: its QP's next PSN"
        );
        last_psn[w] = kw.psn;
    }
    assert_eq!(reports(&engines[0])[KW] + reports(&engines[1])[KW], 2);
    assert!(!poll(&mut planes, &mut engines, 0));
    assert!(!poll(&mut planes, &mut engines, 1));

    // No response yet: both windows still hold their writes; nothing was refused, stale or dropped.
    assert!(engines[0].qp_stats(0).unwrap().window > 0);
    assert!(engines[1].qp_stats(0).unwrap().window > 0);
    for e in &engines {
        let c = e.counters();
        assert_eq!((c.stale_responses, c.qp_errors, c.not_for_us), (0, 0, 0));
        assert_eq!(c.drops.iter().sum::<u64>(), 0, "{:?}", c.drops);
    }

    // (e) RoCE from the collector to another host, on worker 1's collector queue: forwarded out of
    // worker 1's queue of port 0, consumed by no one.
    let other: Vec<Vec<u8>> = (0..3)
        .map(|k| ack(C_IP, H_IP, QPN_BASE + 1, k, 9))
        .collect();
    let fwd = planes[1].counters().forwarded;
    t.put(&c1, &other);
    assert!(poll(&mut planes, &mut engines, 1));
    assert_eq!(planes[1].counters().forwarded, fwd + 3);
    assert_eq!(t.take(&r1), other);
    assert_eq!(
        engines[1].counters().frames_in,
        2,
        "its Append and its Key-Write only"
    );

    for (w, p) in planes.iter().enumerate() {
        let c = p.counters();
        assert_eq!(
            (c.handoff_full, c.handoff_waits, c.not_forwarded),
            (0, 0, 0),
            "worker {w}"
        );
    }
    for r in [&r0, &r1, &c0, &c1] {
        assert!(t.take(r).is_empty(), "{r} left over");
    }
    drop(planes);
    drop((a, b));
    t.eal.detach_vdev("net_ring10").unwrap();
    t.eal.detach_vdev("net_ring11").unwrap();
}

/// A DTA NACK as the reporter must receive it: addressed back to it from where its report went (the
/// collector's IP, our MAC), to the NACK port, for `opcode` after `seqnum`.
fn assert_nack(f: &[u8], opcode: Opcode, seqnum: u8) {
    assert_eq!(
        (&f[0..6], &f[6..12], &f[12..14]),
        (&R_MAC[..], &T_MAC[..], &[8, 0][..])
    );
    assert_eq!((f[14], f[23]), (0x45, 17), "IPv4 without options, UDP");
    assert_eq!((&f[26..30], &f[30..34]), (&C_IP[..], &R_IP[..]));
    let ports = (
        u16::from_be_bytes([f[34], f[35]]),
        u16::from_be_bytes([f[36], f[37]]),
    );
    assert_eq!(ports, (DTA_UDP_PORT, 40044));
    let udp_len = usize::from(u16::from_be_bytes([f[38], f[39]]));
    let nack = NackRepr::parse(&f[42..34 + udp_len], HeaderForm::Seq).unwrap();
    assert_eq!(
        nack,
        NackRepr {
            opcode,
            seqnum,
            nack: true
        }
    );
}

/// DTA NACKs go back out of the port their reports came in on: one worker (the engine classifies), and
/// two workers where the reporter's owner received them, or was handed them by the other worker (the
/// mbufs stamped with their port, as a NIC does).
fn nacks_go_back_out_of_the_arrival_port(t: &Rig) {
    let (a, mut aq) = t.ring_port("net_ring12", 1);
    let (b, mut bq) = t.ring_port("net_ring13", 1);
    let mut plane = DataPlane::new(
        plane_config(0, 1),
        vec![aq.remove(0), bq.remove(0)],
        vec![None],
        Vec::new(),
    );
    let (p0, p1) = (ring(0, "net_ring12"), ring(0, "net_ring13"));
    let mut e = engine(0);
    // Retransmittable Key-Writes 0, then 3: 1 and 2 are missing, NACKed after 0.
    t.put(&p0, &[key_write(10, 1, 0, true), key_write(11, 2, 3, true)]);
    assert!(plane.poll(Some(&mut e), NOW));
    assert_eq!(e.counters().dta_nacks_sent, 1);
    let back = t.take(&p0);
    assert_eq!(back.len(), 1, "the NACK, out of port 0");
    assert_nack(&back[0], Opcode::KeyWrite, 0);
    let out = t.take(&p1);
    assert_eq!(out.len(), 1, "report 0's write only");
    assert_write_to_collector(&roce(&out[0]));
    assert_eq!(
        plane.counters().engine_frames_out,
        1,
        "NACKs are not the engine's RoCE"
    );
    drop(plane);
    drop((a, b));
    t.eal.detach_vdev("net_ring12").unwrap();
    t.eal.detach_vdev("net_ring13").unwrap();

    let (a, aq) = t.ring_port("net_ring14", 2);
    let (b, bq) = t.ring_port("net_ring15", 2);
    let mesh = handoff_mesh(t.eal, "dta_test_nack_mesh", 2).unwrap();
    let mut planes: Vec<DataPlane> = aq
        .into_iter()
        .zip(bq)
        .zip(mesh)
        .enumerate()
        .map(|(w, ((a, b), (to, from)))| DataPlane::new(plane_config(w, 2), vec![a, b], to, from))
        .collect();
    let mut engines = [engine(0), engine(1)];
    // Retransmittable reports belong to their reporter's worker.
    let owner = key_checksum(u32::from_be_bytes(R_IP)) as usize % 2;
    let other = 1 - owner;
    assert_eq!(
        steering(2).target(&key_write(1, 1, 0, true)),
        Target::Worker(owner)
    );
    let (r_owner, r_other) = (
        ring(owner as u16, "net_ring14"),
        ring(other as u16, "net_ring14"),
    );
    // Received by the owner.
    t.put(
        &r_owner,
        &[key_write(20, 1, 0, true), key_write(21, 2, 2, true)],
    );
    assert!(planes[owner].poll(Some(&mut engines[owner]), NOW));
    let back = t.take(&r_owner);
    assert_eq!(back.len(), 1);
    assert_nack(&back[0], Opcode::KeyWrite, 0);
    let c_owner = ring(owner as u16, "net_ring15");
    assert_eq!(t.take(&c_owner).len(), 1, "report 0's write");
    // Received by the other worker, stamped as port 0's: handed off, NACKed out of port 0 (the owner's
    // queue of it); the writes of the in-order ones go out of the owner's collector queue.
    t.put_stamped(
        &r_other,
        &[key_write(22, 3, 1, true), key_write(23, 4, 5, true)],
        Some(a.port_id()),
    );
    assert!(planes[other].poll(Some(&mut engines[other]), NOW));
    assert_eq!(planes[other].counters().handed_off, 2);
    assert!(planes[owner].poll(Some(&mut engines[owner]), NOW));
    let back = t.take(&r_owner);
    assert_eq!(back.len(), 1, "{back:02x?}");
    assert_nack(&back[0], Opcode::KeyWrite, 1);
    assert_eq!(engines[owner].counters().dta_nacks_sent, 2);
    assert_eq!(engines[other].counters().frames_in, 0);
    let writes = t.take(&c_owner);
    assert_eq!(writes.len(), 1, "report 1's write");
    assert_write_to_collector(&roce(&writes[0]));
    for r in [&r_other, &ring(other as u16, "net_ring15")] {
        assert!(t.take(r).is_empty(), "{r}");
    }
    drop(planes);
    drop((a, b));
    t.eal.detach_vdev("net_ring14").unwrap();
    t.eal.detach_vdev("net_ring15").unwrap();
}

/// INT lists of each worker's engine in [`int_reports_are_spread_over_two_workers`]: (drop, queue).
const INT_LISTS: [(u32, u32); 3] = [(7, 8), (9, 10), (11, 12)];
const INT_PORT: u16 = 32766;

/// Worker `w`'s engine with INT on: only events (drop and queue lists of its own, one entry a batch),
/// so that each report's work is one write whose list says which worker did it.
fn int_engine(w: usize, workers: usize) -> Engine {
    let mut cfg = Config::default();
    cfg.local.mac = T_MAC;
    cfg.local.ip = T_IP;
    cfg.local.qpn_base = QPN_BASE + w as u32;
    cfg.int.enabled = true;
    // Hop records (a flow's state, written by its owner) and the event lists (the receiver's).
    (cfg.int.path, cfg.int.flow_state, cfg.int.drop_counts) = (false, true, false);
    cfg.report.keywrite_data_len = 12;
    cfg.int.redundancy = HOP_RECORD_COPIES;
    cfg.int.drop_list = EventLists::one(INT_LISTS[w].0);
    cfg.int.queue_list = EventLists::one(INT_LISTS[w].1);
    let mut regions: Vec<Region> = INT_LISTS
        .iter()
        .flat_map(|&(d, q)| [d, q])
        .map(|id| Region {
            id,
            va: 0x7f30_0000_0000 + (u64::from(id) << 24),
            rkey: 0x2000 + id,
            geometry: Geometry::Append(AppendGeometry::new(1024, 16, 1).unwrap()),
        })
        .collect();
    regions.push(Region {
        id: 0,
        va: HOP_RECORDS_VA,
        rkey: KW_RKEY,
        geometry: Geometry::KeyWrite(KeyWriteGeometry::new(1 << 16, 16, 4).unwrap()),
    });
    let welcome = Welcome {
        version: CONTROL_VERSION,
        mac: C_MAC,
        ip: C_IP,
        qps: vec![ResponderQp {
            qpn: COLLECTOR_QPN,
            peer_qpn: QPN_BASE + w as u32,
        }],
        max_dest_rd_atomic: 16,
        path_mtu: 1024,
        regions,
        append_heads: Vec::new(),
    };
    let mut e = Engine::new(cfg, &[welcome], Instant(0)).unwrap();
    e.set_int_shard(w, workers);
    e
}

/// Where the INT engines' Key-Write region (hop records) starts: below every list.
const HOP_RECORDS_VA: u64 = 0x7f00_0000_0000;
/// Copies of each hop record (Key-Write N): one RDMA WRITE each.
const HOP_RECORD_COPIES: u8 = 2;

/// The list id a write of `r` lands in (its VA is the list's region); `None` for a hop record.
fn list_of(r: &Roce) -> Option<u32> {
    (r.va >= 0x7f30_0000_0000).then(|| list_of_write(r))
}

/// The list id a write of `r` lands in (its VA is the list's region).
fn list_of_write(r: &Roce) -> u32 {
    ((r.va - 0x7f30_0000_0000) >> 24) as u32
}

/// Workers `workers` on two `net_ring` devices (`names`: reporters' side, collectors' side) whose steering
/// takes INT reports, with their handoff mesh.
fn int_planes(
    t: &Rig,
    names: [&str; 2],
    mesh: &str,
    workers: usize,
) -> (Port, Port, Vec<DataPlane>) {
    let (a, aq) = t.ring_port(names[0], workers as u16);
    let (b, bq) = t.ring_port(names[1], workers as u16);
    let mesh = handoff_mesh(t.eal, mesh, workers).unwrap();
    let config = |w| PlaneConfig {
        steering: Steering {
            int_port: Some(INT_PORT),
            ..steering(workers)
        },
        ..plane_config(w, workers)
    };
    let planes = aq
        .into_iter()
        .zip(bq)
        .zip(mesh)
        .enumerate()
        .map(|(w, ((a, b), (to, from)))| DataPlane::new(config(w), vec![a, b], to, from))
        .collect();
    (a, b, planes)
}

/// The reported packet's flow of the INT tests: UDP from source port `sport`.
fn int_flow(sport: u16) -> spec::Flow {
    spec::Flow {
        src: [10, 0, 0, 1],
        dst: [10, 0, 1, 2],
        sport,
        dport: 80,
    }
}

/// Which of `workers` workers owns `int_flow(sport)`'s state.
fn int_owner(workers: usize, sport: u16) -> usize {
    let f = int_flow(sport);
    let key = flow_key(&FlowKey {
        src: f.src.into(),
        dst: f.dst.into(),
        protocol: 17,
        src_port: f.sport,
        dst_port: f.dport,
    });
    Shard {
        index: 0,
        count: workers,
    }
    .owner(key)
}

/// (g) INT reports on two workers (issue 25, item 3): every report of one switch arrives on worker 0's
/// queue (one outer 5-tuple); worker 0's engine counts each packet and its sequence, translates every
/// report, writes every queue and drop event to its own lists and the hop records of its own flows, and
/// hands the hop record of each flow worker 1 owns to worker 1 as a message written over the report's
/// own mbuf (moved through the handoff ring, not copied), which worker 1's engine writes without parsing
/// the report. Each report is counted once.
fn int_reports_are_spread_over_two_workers(t: &Rig) {
    let (a, b, mut planes) = int_planes(t, ["net_ring20", "net_ring21"], "dta_test_int_mesh", 2);
    let mut engines = [int_engine(0, 2), int_engine(1, 2)];
    let int_frame =
        |payload: Vec<u8>| udp4((R_MAC, R_IP, 40000), (T_MAC, T_IP, INT_PORT), &payload);
    // Switch 5: 20 congested per-hop reports (hop 1, seq 1..=20), then 4 drops on hw_id 2 (seq 1..=4).
    let mut frames: Vec<Vec<u8>> = (1..=20u16)
        .map(|sport| {
            let l = spec::Local {
                switch: 5,
                hw_id: 1,
                seq: u32::from(sport),
                congested: true,
                ig_ts: 100,
                eg_ts: 200,
                queue: (1, u32::from(sport)),
                ig_port: 3,
                eg_port: 4,
            };
            int_frame(spec::v05_local(&l, &spec::inner(&int_flow(sport), 63)))
        })
        .collect();
    frames.extend((1..=4u16).map(|seq| {
        let d = spec::Drop {
            switch: 5,
            hw_id: 2,
            seq: u32::from(seq),
            ig_ts: 7,
            reason: 71,
            queue: 1,
            ig_port: 3,
            eg_port: 4,
        };
        int_frame(spec::v05_drop(&d, &spec::inner(&int_flow(100 + seq), 63)))
    }));
    let theirs = (1..=20u16).filter(|&s| int_owner(2, s) == 1).count();
    assert!(
        (5..=15).contains(&theirs),
        "{theirs} of 20 flows are worker 1's"
    );
    t.put(&ring(0, "net_ring20"), &frames);
    assert!(planes[0].poll(Some(&mut engines[0]), NOW));
    assert_eq!(
        (
            planes[0].counters().handed_off,
            planes[0].counters().handoff_full
        ),
        (theirs as u64, 0)
    );
    // One poll each: a `net_ring` queue receives what it sent on the next.
    assert!(planes[1].poll(Some(&mut engines[1]), NOW));
    let (c0, c1) = (&engines[0].counters().int, &engines[1].counters().int);
    assert_eq!(
        (c0.packets, c1.packets),
        (24, 0),
        "the receiver counts packets"
    );
    assert_eq!(
        (c0.reports, c1.reports),
        (24, 0),
        "each report once, by the receiver that translates it"
    );
    assert_eq!(c1.dropped(IntDrop::Malformed), 0, "every message read");
    assert_eq!((c0.lost, c0.late, c1.lost), (0, 0, 0));
    // Worker 0: every queue and drop event, and its flows' hop records; worker 1: its flows' hop records
    // only, out of its own collector queue.
    for (w, lists, records) in [
        (0usize, [(8u32, 20), (7, 4)], 20 - theirs),
        (1, [(10, 0), (9, 0)], theirs),
    ] {
        let writes: Vec<Roce> = t
            .take(&ring(w as u16, "net_ring21"))
            .iter()
            .map(|f| roce(f))
            .collect();
        for r in &writes {
            assert_write_to_collector(r);
            if let Some(list) = list_of(r) {
                assert!(
                    list == INT_LISTS[w].0 || list == INT_LISTS[w].1,
                    "worker {w} writes its own lists only, not list {list}"
                );
            }
        }
        for (list, n) in lists {
            // 16-byte events; the head word (8 bytes at the list's start) is written besides.
            let events = writes
                .iter()
                .filter(|r| list_of(r) == Some(list) && r.payload.len() == 16)
                .count();
            assert_eq!(events, n, "worker {w}, list {list}");
        }
        let hop_records = writes.iter().filter(|r| list_of(r).is_none()).count();
        let copies = usize::from(HOP_RECORD_COPIES);
        assert_eq!(hop_records, records * copies, "worker {w}'s hop records");
    }
    drop(planes);
    drop((a, b));
    t.eal.detach_vdev("net_ring20").unwrap();
    t.eal.detach_vdev("net_ring21").unwrap();
}

/// (h) A v2.0 group whose reports name flows of two other workers (three workers): the receiver translates
/// both reports (its counts, its queue events) and leaves each flow's hop record to its owner: one message
/// written over the frame's mbuf, the other in a fresh mbuf of its collector port's pool; each owner
/// writes its flow's record.
fn a_v2_group_of_two_other_workers_flows_goes_to_both(t: &Rig) {
    let (a, b, mut planes) = int_planes(t, ["net_ring22", "net_ring23"], "dta_test_int3_mesh", 3);
    let mut engines = [int_engine(0, 3), int_engine(1, 3), int_engine(2, 3)];
    let of = |w: usize| (1u16..).find(|&s| int_owner(3, s) == w).unwrap();
    // Per-hop reports (hop 1 from TTL 63) with the Q flag: each is one queue event and one hop record.
    let report = |sport: u16| spec::Individual {
        bits: 0,
        md: Vec::new(),
        dropped: false,
        congested: true,
        inner: spec::inner(&int_flow(sport), 63),
    };
    let group = spec::v2_group(9, 1, &[report(of(1)), report(of(2))]);
    let frame = udp4((R_MAC, R_IP, 40000), (T_MAC, T_IP, INT_PORT), &group);
    t.put(&ring(0, "net_ring22"), &[frame]);
    assert!(planes[0].poll(Some(&mut engines[0]), NOW));
    assert_eq!(
        (
            planes[0].counters().handed_off,
            planes[0].counters().handoff_full
        ),
        (2, 0)
    );
    for w in [1, 2] {
        assert!(planes[w].poll(Some(&mut engines[w]), NOW));
    }
    let c: Vec<_> = engines.iter().map(|e| e.counters().int.clone()).collect();
    assert_eq!(
        c.iter().map(|c| (c.packets, c.reports)).collect::<Vec<_>>(),
        [(1, 2), (0, 0), (0, 0)]
    );
    for w in 0..3u16 {
        let writes: Vec<Roce> = t
            .take(&ring(w, "net_ring23"))
            .iter()
            .map(|f| roce(f))
            .collect();
        // 16-byte events (a hop record's entry is 16 bytes too, in no list).
        let events = writes
            .iter()
            .filter_map(|r| list_of(r).filter(|_| r.payload.len() == 16))
            .collect::<Vec<_>>();
        let hop_records = writes.iter().filter(|r| list_of(r).is_none()).count();
        let (want_events, want_records) = if w == 0 {
            (vec![INT_LISTS[0].1; 2], 0)
        } else {
            (vec![], usize::from(HOP_RECORD_COPIES))
        };
        assert_eq!(events, want_events, "worker {w}'s queue events");
        assert_eq!(hop_records, want_records, "worker {w}'s hop records");
    }
    drop(planes);
    drop((a, b));
    t.eal.detach_vdev("net_ring22").unwrap();
    t.eal.detach_vdev("net_ring23").unwrap();
}

/// Two workers on two `net_ring` devices, `names` = [reporters' side, collectors' side] (queue k of each
/// to worker k), with their engines and handoff rings.
struct TwoWorkers {
    a: Port,
    b: Port,
    planes: Vec<DataPlane>,
    engines: [Engine; 2],
    names: [&'static str; 2],
}

impl TwoWorkers {
    fn new(t: &Rig, names: [&'static str; 2], mesh: &str) -> Self {
        let (a, aq) = t.ring_port(names[0], 2);
        let (b, bq) = t.ring_port(names[1], 2);
        let mesh = handoff_mesh(t.eal, mesh, 2).unwrap();
        let planes = aq
            .into_iter()
            .zip(bq)
            .zip(mesh)
            .enumerate()
            .map(|(w, ((a, b), (to, from)))| {
                DataPlane::new(plane_config(w, 2), vec![a, b], to, from)
            })
            .collect();
        TwoWorkers {
            a,
            b,
            planes,
            engines: [engine(0), engine(1)],
            names,
        }
    }

    fn poll(&mut self, w: usize) -> bool {
        self.planes[w].poll(Some(&mut self.engines[w]), NOW)
    }

    /// Ring of queue `q` of the reporters' (0) or collectors' (1) device.
    fn ring(&self, port: usize, q: u16) -> String {
        ring(q, self.names[port])
    }

    /// Sends an Append report for worker 1's list in through worker 0 and returns the PSN of worker 1's
    /// write for it.
    fn write_of_worker_1(&mut self, t: &Rig, entry: u32, seq: u8) -> u32 {
        let l1 = *LISTS.iter().find(|&&l| key_checksum(l) % 2 == 1).unwrap();
        t.put(&self.ring(0, 0), &[append(l1, entry, seq)]);
        assert!(self.poll(0));
        assert!(self.poll(1));
        let out = t.take(&self.ring(1, 1));
        assert_eq!(out.len(), 1);
        let w = roce(&out[0]);
        assert_write_to_collector(&w);
        w.psn
    }

    fn close(self, t: &Rig) {
        let [n0, n1] = self.names;
        drop(self.planes);
        drop((self.a, self.b));
        t.eal.detach_vdev(n0).unwrap();
        t.eal.detach_vdev(n1).unwrap();
    }
}

/// Regression (found in ca25834, "RoCE responses only from the collector-facing port"; fixed since):
/// `take_handoff` hands a whole handed-off burst to `Engine::handle_reporter_frames` (RoCE responses
/// refused) when its *first* mbuf's port field names the reporters' port or no known port; `net_ring` (and
/// any PMD that leaves `mbuf.port` unset) then has every handed-off ACK refused as not for us. Worker 1's
/// ACK arriving on worker 0's collector queue never reaches worker 1's QP: its window never drains.
#[test]
fn handed_off_ack_from_a_port_unstamped_device_reaches_its_owner() {
    let (_guard, eal) = setup();
    let pool = Mempool::new(eal, "dta_test_far_bug1", 1023, 0, 2048 + 128, -1).unwrap();
    let t = Rig { eal, pool: &pool };
    let mut r = TwoWorkers::new(&t, ["net_ring20", "net_ring21"], "dta_test_bug1_mesh");
    let psn = r.write_of_worker_1(&t, 1, 0);
    assert_eq!(r.engines[1].qp_stats(0).unwrap().window, 1);
    t.put(&r.ring(1, 0), &[ack(C_IP, T_IP, QPN_BASE + 1, psn, 1)]);
    assert!(r.poll(0));
    assert_eq!(r.planes[0].counters().handed_off, 2);
    assert_eq!(r.engines[0].counters().frames_in, 0);
    assert!(r.poll(1));
    let c = r.engines[1].counters().clone();
    let window = r.engines[1].qp_stats(0).unwrap().window;
    r.close(&t);
    assert_eq!(
        (c.acks, c.not_for_us, window),
        (1, 0, 0),
        "worker 1's ACK, handed off by worker 0, must retire its write"
    );
}

/// Regression (found in ca25834 too, with a NIC that stamps `mbuf.port`): worker 0 receives, in one poll, a report for
/// worker 1 on the reporters' port and worker 1's ACK on the collectors' port; both travel on the one
/// handoff ring, the report first, and `take_handoff` judges the burst by that first mbuf: the ACK is
/// refused as if it had come from the reporters' side.
#[test]
fn handed_off_ack_behind_a_report_reaches_its_owner() {
    let (_guard, eal) = setup();
    let pool = Mempool::new(eal, "dta_test_far_bug2", 1023, 0, 2048 + 128, -1).unwrap();
    let t = Rig { eal, pool: &pool };
    let mut r = TwoWorkers::new(&t, ["net_ring22", "net_ring23"], "dta_test_bug2_mesh");
    let psn = r.write_of_worker_1(&t, 1, 0);
    let l1 = *LISTS.iter().find(|&&l| key_checksum(l) % 2 == 1).unwrap();
    let (pa, pb) = (r.a.port_id(), r.b.port_id());
    t.put_stamped(&r.ring(0, 0), &[append(l1, 2, 1)], Some(pa));
    t.put_stamped(
        &r.ring(1, 0),
        &[ack(C_IP, T_IP, QPN_BASE + 1, psn, 1)],
        Some(pb),
    );
    assert!(r.poll(0));
    assert_eq!(r.planes[0].counters().handed_off, 3);
    assert!(r.poll(1));
    let c = r.engines[1].counters().clone();
    let out = t.take(&r.ring(1, 1));
    r.close(&t);
    assert_eq!(c.reports_in[APPEND], 2);
    assert_eq!(out.len(), 1, "the second report's write");
    assert_eq!(
        (c.acks, c.not_for_us),
        (1, 0),
        "the ACK came in on the collectors' port, behind a report from the reporters'"
    );
}

/// Backpressure: worker 0 hands worker 1 more than its ring holds (the test plays worker 1 on the ring's
/// far end). The ring takes 4,095 (two workers' capacity); the rest waits in worker 0's staging burst,
/// and while it waits worker 0 receives nothing (counted as a wait), the frames staying on the device. Once worker 1 takes some, everything arrives, in order, none refused.
fn handoff_backpressure_holds_back_and_loses_nothing(t: &Rig) {
    assert_eq!(handoff_capacity(2), 4095);
    let big = Mempool::new(t.eal, "dta_test_far_big", 10239, 0, 2048 + 128, -1).unwrap();
    let tb = Rig {
        eal: t.eal,
        pool: &big,
    };
    let (a, aq) = tb.ring_port("net_ring16", 2);
    let (b, bq) = tb.ring_port("net_ring17", 2);
    let mesh = handoff_mesh(t.eal, "dta_test_bp_mesh", 2).unwrap();
    let mut planes: Vec<DataPlane> = aq
        .into_iter()
        .zip(bq)
        .zip(mesh)
        .enumerate()
        .map(|(w, ((a, b), (to, from)))| DataPlane::new(plane_config(w, 2), vec![a, b], to, from))
        .collect();
    let l1 = *LISTS.iter().find(|&&l| key_checksum(l) % 2 == 1).unwrap();
    let r0 = ring(0, "net_ring16");
    let (_unused, mut to_worker_1) = attach_ring(t.eal, "dta_test_bp_mesh_0_1").unwrap();
    let burst =
        |from: u32| -> Vec<Vec<u8>> { (from..from + 64).map(|k| append(l1, k, k as u8)).collect() };
    let mut next = 0u32;
    for _ in 0..64 {
        tb.put(&r0, &burst(next));
        next += 64;
        assert!(planes[0].poll(None, NOW));
    }
    // The ring filled while the last burst was staged: port 1 was not received that poll (one wait).
    let c = planes[0].counters();
    assert_eq!(
        (c.handed_off, c.handoff_waits, c.handoff_full),
        (4096, 1, 0)
    );
    assert_eq!(to_worker_1.waiting(), 4095);
    // Held back: nothing received, one wait counted, the burst still on the device's ring.
    tb.put(&r0, &burst(next));
    next += 64;
    assert!(planes[0].poll(None, NOW));
    let c = planes[0].counters();
    assert_eq!(
        (c.handed_off, c.handoff_waits, c.handoff_full),
        (4096, 2, 0)
    );
    assert_eq!(planes[0].port_stats()[0].0.frames, 4096);
    let (_unused2, r0_far) = attach_ring(t.eal, &r0).unwrap();
    assert_eq!(r0_far.waiting(), 64, "the device keeps them");
    // The collectors' port is still received while held back: its ACKs open the worker's window (one for
    // worker 0's own QP, taken by its engine; here none yet, so counted as arriving before it), and 64
    // for worker 1's QP, staged behind the reports (the staging burst has room for two bursts).
    let acks: Vec<Vec<u8>> = std::iter::once(ack(C_IP, T_IP, QPN_BASE, 0, 1))
        .chain((0..63).map(|k| ack(C_IP, T_IP, QPN_BASE + 1, k, k + 1)))
        .collect();
    tb.put(&ring(0, "net_ring17"), &acks);
    assert!(planes[0].poll(None, NOW));
    let c = planes[0].counters();
    assert_eq!(
        (c.handed_off, c.handoff_waits, c.startup_drops),
        (4096 + 63, 3, 1)
    );
    assert_eq!(planes[0].port_stats()[1].0.frames, 64);
    assert_eq!(r0_far.waiting(), 64, "the reporters' port still waits");
    // A burst of room is left (64 staged of 128): still received. Then 65 are staged, and with less than
    // a burst of room the collectors' port waits too.
    let two = [
        ack(C_IP, T_IP, QPN_BASE, 1, 2),
        ack(C_IP, T_IP, QPN_BASE + 1, 63, 64),
    ];
    tb.put(&ring(0, "net_ring17"), &two);
    assert!(planes[0].poll(None, NOW));
    assert_eq!(planes[0].port_stats()[1].0.frames, 66);
    tb.put(&ring(0, "net_ring17"), &[ack(C_IP, T_IP, QPN_BASE, 2, 3)]);
    assert!(planes[0].poll(None, NOW));
    assert_eq!(planes[0].port_stats()[1].0.frames, 66);
    assert_eq!(planes[0].counters().handoff_waits, 5);
    // Worker 1 takes; worker 0 catches up: every report and ACK, in the order received (the ACKs behind
    // the report that was staged when they came, before the reports the device kept; worker 0's third
    // ACK too).
    let mut got = MbufBurst::with_capacity(1024);
    let mut order = Vec::new();
    for _ in 0..100 {
        to_worker_1.recv(&mut got);
        for f in got.frames() {
            // An ACK's UDP destination port is 4791 (bytes 36..38), its PSN BTH bytes 9..12 (frame bytes
            // 51..54); a report's last 4 bytes number it.
            order.push(if f[36..38] == 4791u16.to_be_bytes() {
                Err(u32::from_be_bytes([0, f[51], f[52], f[53]]))
            } else {
                Ok(u32::from_be_bytes(f[f.len() - 4..].try_into().unwrap()))
            });
        }
        got.clear();
        planes[0].poll(None, NOW);
        if order.len() == next as usize + 64 {
            break;
        }
    }
    assert_eq!(next, 4160);
    let want: Vec<Result<u32, u32>> = (0..4096)
        .map(Ok)
        .chain((0..64).map(Err))
        .chain((4096..4160).map(Ok))
        .collect();
    let first_difference = order.iter().zip(&want).position(|(a, b)| a != b);
    assert_eq!(
        (order.len(), first_difference),
        (want.len(), None),
        "handed off in order"
    );
    let c = planes[0].counters();
    assert_eq!(
        (
            c.handed_off,
            c.handoff_waits,
            c.handoff_full,
            c.startup_drops
        ),
        (4160 + 64, 5, 0, 3)
    );
    assert_eq!(to_worker_1.waiting(), 0);
    assert_eq!(r0_far.waiting(), 0);
    drop(planes);
    drop((a, b));
    assert_eq!(big.in_use(), 0, "nothing lost, nothing leaked");
    t.eal.detach_vdev("net_ring16").unwrap();
    t.eal.detach_vdev("net_ring17").unwrap();
}

/// Regression (found in d47dfad; fixed since, `DataPlane::receive`/`stage`): the staging burst of a worker's ring is sized for one
/// receive burst, and `poll` checks that every staging burst is empty only once, before its first port.
/// When the ring to worker 1 fills while worker 0 stages port 0's burst, the rest stays staged; port 1's
/// burst is then still received, and its frames for worker 1 that no longer fit the staging burst are
/// freed by `stage` without being counted anywhere (not `handoff_full`, not `handoff_waits`): worker 1's
/// ACKs vanish although backpressure promises that nothing more is received until the owner catches up.
#[test]
fn a_full_handoff_ring_loses_nothing_from_the_second_port() {
    let (_guard, eal) = setup();
    let pool = Mempool::new(eal, "dta_test_far_bug3", 10239, 0, 2048 + 128, -1).unwrap();
    let t = Rig { eal, pool: &pool };
    let mut r = TwoWorkers::new(&t, ["net_ring24", "net_ring25"], "dta_test_bug3_mesh");
    let l1 = *LISTS.iter().find(|&&l| key_checksum(l) % 2 == 1).unwrap();
    let (_unused, mut to_worker_1) = attach_ring(eal, "dta_test_bug3_mesh_0_1").unwrap();
    // Fill the ring to 10 short of its capacity.
    let fill = handoff_capacity(2) - 10;
    let mut filled = 0u32;
    while filled < fill {
        let n = (fill - filled).min(64);
        let frames: Vec<Vec<u8>> = (filled..filled + n)
            .map(|k| append(l1, k, k as u8))
            .collect();
        t.put(&r.ring(0, 0), &frames);
        assert!(r.planes[0].poll(None, NOW));
        filled += n;
    }
    assert_eq!(to_worker_1.waiting(), fill as usize);
    // One poll receives 64 reports for worker 1 on port 0 and 64 of worker 1's ACKs on port 1.
    let reports: Vec<Vec<u8>> = (0..64).map(|k| append(l1, 100_000 + k, k as u8)).collect();
    let acks: Vec<Vec<u8>> = (0..64)
        .map(|k| ack(C_IP, T_IP, QPN_BASE + 1, k, k + 1))
        .collect();
    t.put(&r.ring(0, 0), &reports);
    t.put(&r.ring(1, 0), &acks);
    r.planes[0].poll(None, NOW);
    // Worker 1 takes everything; worker 0 catches up.
    let mut got = MbufBurst::with_capacity(1024);
    let mut after_fill = Vec::new();
    let mut skipped = 0;
    for _ in 0..100 {
        to_worker_1.recv(&mut got);
        for f in got.frames() {
            if skipped < fill {
                skipped += 1;
            } else {
                after_fill.push(f.to_vec());
            }
        }
        got.clear();
        r.planes[0].poll(None, NOW);
        if to_worker_1.waiting() == 0 && after_fill.len() >= 128 {
            break;
        }
    }
    let c = r.planes[0].counters();
    let left_on_port_1 = t.take(&r.ring(1, 0)).len();
    r.close(&t);
    let want: Vec<Vec<u8>> = reports.iter().chain(&acks).cloned().collect();
    assert_eq!(
        (after_fill.len(), left_on_port_1, c.handed_off, c.handoff_full),
        (128, 0, u64::from(fill) + 128, 0),
        "every report and ACK for worker 1 handed off (or at least counted); {} of the ACKs arrived",
        after_fill.len().saturating_sub(64)
    );
    assert_eq!(after_fill, want, "in the order received");
}
