//! iCRC cost per packet: the naive computation over the whole masked frame against the per-QP prefix,
//! which hashes only the bytes after the BTH's AckReq/PSN word.
//!
//! The packet is an RC WRITE ONLY with a 16-byte payload: the iCRC covers 8 + 20 + 8 + 12 + 16 + 16 = 80
//! bytes, a Key-Write entry of 16 bytes being the typical DTA write.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use dta_protocol::roce::{icrc, FrameRepr, IcrcPrefix, ROCEV2_UDP_PORT};
use dta_protocol::udp::UdpEndpoints;

fn frame() -> Vec<u8> {
    let ep = UdpEndpoints::new(
        [2, 0, 0, 0, 0, 1],
        [2, 0, 0, 0, 0, 2],
        [198, 18, 0, 1],
        [198, 18, 0, 2],
        49152,
        ROCEV2_UDP_PORT,
    );
    let payload = [0xA5u8; 16];
    let f = FrameRepr::write_only(ep, 0x11, 0x100, false, 0x7f00_0000_1000, 0x1234, &payload);
    let mut buf = vec![0u8; f.buffer_len()];
    f.emit(&mut buf).expect("frame fits");
    buf
}

fn bench_icrc(c: &mut Criterion) {
    let mut f = frame();
    let prefix = IcrcPrefix::new(&f).expect("valid template");
    let mut g = c.benchmark_group("icrc_80B");
    g.throughput(Throughput::Elements(1));
    g.bench_function("naive", |b| {
        b.iter(|| icrc::compute(black_box(&f)).expect("valid frame"))
    });
    g.bench_function("per_qp_prefix", |b| {
        let at = f.len() - 4;
        b.iter(|| prefix.finish(black_box(&f), at))
    });
    g.bench_function("per_qp_prefix_fill", |b| {
        let mut psn = 0u32;
        b.iter(|| {
            psn = psn.wrapping_add(1);
            f[51..54].copy_from_slice(&psn.to_be_bytes()[1..]);
            prefix.fill(black_box(&mut f))
        })
    });
    g.finish();
}

criterion_group!(benches, bench_icrc);
criterion_main!(benches);
