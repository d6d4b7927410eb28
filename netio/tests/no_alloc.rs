//! The burst paths allocate nothing once warmed up: counted with a per-thread counting allocator.

mod common;

use common::alloc_count::allocations;
use dta_netio::{memory, FrameBatch, PcapSink, PcapSource, RxBurst, TxBurst};

#[test]
fn memory_pair_bursts_do_not_allocate() {
    let (mut a, mut b) = memory::pair(256, 2048);
    let mut out = FrameBatch::new(32, 2048);
    let mut inb = FrameBatch::new(32, 2048);
    let before = allocations();
    let mut moved = 0;
    for round in 0..1000u32 {
        out.clear();
        while out.free() > 0 {
            out.push_with(|buf| {
                buf[..4].copy_from_slice(&round.to_be_bytes());
                64
            })
            .unwrap();
        }
        a.send_burst(&out).unwrap();
        inb.clear();
        moved += b.recv_burst(&mut inb).unwrap();
    }
    assert_eq!(allocations() - before, 0);
    assert_eq!(moved, 32_000);
}

#[test]
fn pcap_bursts_do_not_allocate() {
    let path = std::env::temp_dir().join(format!("dta-netio-{}-noalloc.pcap", std::process::id()));
    let mut sink = PcapSink::create(&path).unwrap();
    let mut out = FrameBatch::new(32, 2048);
    for n in 0..32u8 {
        out.push(&[n; 100]).unwrap();
    }
    let before = allocations();
    for _ in 0..100 {
        sink.send_burst(&out).unwrap();
    }
    assert_eq!(allocations() - before, 0, "writing");
    sink.finish().unwrap();

    let mut src = PcapSource::open(&path).unwrap();
    let mut inb = FrameBatch::new(32, 2048);
    // The reader's buffer grows to its working size during the first burst.
    src.recv_burst(&mut inb).unwrap();
    let mut read = inb.len();
    let before = allocations();
    while !src.is_done() {
        inb.clear();
        read += src.recv_burst(&mut inb).unwrap();
    }
    assert_eq!(allocations() - before, 0, "reading");
    assert_eq!(read, 3200);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn the_counter_sees_allocations() {
    let before = allocations();
    let v = std::hint::black_box(Vec::<u8>::with_capacity(16));
    assert_eq!(allocations() - before, 1);
    drop(v);
}
