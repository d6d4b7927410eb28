//! ns per report on the engine's hot path (no I/O): a Key-Write N=1 report in, one RoCE frame out.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use dta_protocol::control::{ResponderQp, Welcome, CONTROL_VERSION};
use dta_protocol::dta::{Body, HeaderForm, KeyWriteRepr, ReportFormat, ReportRepr};
use dta_protocol::layout::{Geometry, KeyWriteGeometry, Region};
use dta_protocol::udp::{UdpEndpoints, HEADERS_LEN};
use dta_translator::{Config, Engine, Instant};

fn frame(key: u32) -> Vec<u8> {
    let fmt = ReportFormat::default();
    let body = Body::KeyWrite(KeyWriteRepr {
        redundancy: 1,
        key,
        data: &[1, 2, 3, 4],
    });
    let r = ReportRepr::new(body, HeaderForm::Seq, 0);
    let mut payload = vec![0u8; r.buffer_len(&fmt)];
    r.emit(&mut payload, &fmt).expect("report");
    let ep = UdpEndpoints::new(
        [2, 0, 0, 0, 0, 9],
        [2, 0, 0, 0, 0, 1],
        [10, 0, 0, 9],
        [198, 18, 0, 2],
        5000,
        40040,
    );
    let mut out = vec![0u8; HEADERS_LEN + payload.len()];
    ep.emit_frame(&mut out, &payload).expect("frame");
    out
}

fn bench(c: &mut Criterion) {
    let w = Welcome {
        version: CONTROL_VERSION,
        mac: [2, 0, 0, 0, 0, 2],
        ip: [198, 18, 0, 2],
        qps: vec![ResponderQp {
            qpn: 17,
            peer_qpn: 256,
        }],
        max_dest_rd_atomic: 16,
        path_mtu: 1024,
        regions: vec![Region {
            id: 0,
            va: 0x7f00_0000_0000,
            rkey: 0x1234,
            geometry: Geometry::KeyWrite(KeyWriteGeometry::new(1 << 20, 8, 4).expect("geometry")),
        }],
        append_heads: Vec::new(),
    };
    let mut e = Engine::new(Config::default(), &[w], Instant(0)).expect("engine");
    let frames: Vec<Vec<u8>> = (0..1024).map(frame).collect();
    let mut out = Vec::with_capacity(2048);
    let mut i = 0usize;
    let mut g = c.benchmark_group("engine");
    g.throughput(Throughput::Elements(1));
    g.bench_function("keywrite_n1_report", |b| {
        b.iter(|| {
            i = (i + 1) & 1023;
            e.handle_frame(Instant(0), &frames[i]);
            while e.poll_transmit(Instant(0), &mut out) {}
            // No collector in the bench: retire the window as if ACKed, which a real ACK also costs.
            e.assume_delivered();
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
