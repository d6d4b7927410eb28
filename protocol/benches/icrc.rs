//! iCRC cost per packet: the naive computation over the whole masked frame against the per-QP prefix,
//! which hashes only the bytes after the BTH's AckReq/PSN word; and the CRC of such a tail alone.
//!
//! The packet is an RC WRITE ONLY with a 16-byte payload: the iCRC covers 8 + 20 + 8 + 12 + 16 + 16 = 80
//! bytes, a Key-Write entry of 16 bytes being the typical DTA write.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use dta_protocol::roce::short_crc::{Crc32Short, TailCrc};
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
    // The CRC of the 36 bytes a Key-Write frame hashes after its PSN word (continuing from a state), by
    // crc32fast and by the short-message CRC (carry-less multiply when the CPU has it, else the table).
    let tail = &f[f.len() - 4 - 36..f.len() - 4];
    let mut g = c.benchmark_group("crc_36B");
    g.throughput(Throughput::Elements(1));
    g.bench_function("crc32fast", |b| {
        b.iter(|| {
            let mut h = crc32fast::Hasher::new_with_initial(0x1234_5678);
            h.update(black_box(tail));
            h.finalize()
        })
    });
    let short = Crc32Short::detect();
    g.bench_function("short_crc_update", |b| {
        b.iter(|| !short.update(!0x1234_5678, black_box(tail)))
    });
    let fixed = TailCrc::new(short, 36);
    let zeros = Crc32Short::zeros(!0x1234_5678, 36);
    g.bench_function("short_crc_fixed_tail", |b| {
        b.iter(|| !(zeros ^ fixed.linear(black_box(&f[..f.len() - 4]))))
    });
    g.finish();
}

criterion_group!(benches, bench_icrc);
criterion_main!(benches);
