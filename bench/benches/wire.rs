//! Per-packet costs of the wire formats on the translator's path: parsing a DTA report (payload alone and
//! the whole Ethernet/IPv4/UDP frame), building a report frame, and building a RoCE WRITE frame with its
//! iCRC. The iCRC alone is protocol/benches/icrc.rs.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use dta_protocol::dta::{Body, HeaderForm, KeyWriteRepr, ReportFormat, ReportRepr};
use dta_protocol::roce::{FrameRepr, ROCEV2_UDP_PORT};
use dta_protocol::udp::{UdpEndpoints, UdpFrame, HEADERS_LEN};

fn fmt() -> ReportFormat {
    ReportFormat {
        form: HeaderForm::Seq,
        keywrite_data_len: 4,
        append_entry_len: 4,
    }
}

fn endpoints() -> UdpEndpoints {
    UdpEndpoints::new(
        [2, 0, 0, 0, 0, 9],
        [2, 0, 0, 0, 0, 1],
        [10, 0, 0, 9],
        [198, 18, 0, 2],
        5000,
        40040,
    )
}

fn report(key: u32) -> ReportRepr<'static> {
    ReportRepr::new(
        Body::KeyWrite(KeyWriteRepr {
            redundancy: 1,
            key,
            data: &[1, 2, 3, 4],
        }),
        HeaderForm::Seq,
        7,
    )
}

fn bench(c: &mut Criterion) {
    let fmt = fmt();
    let r = report(0xdead_beef);
    let mut payload = vec![0u8; r.buffer_len(&fmt)];
    r.emit(&mut payload, &fmt).expect("report");
    let ep = endpoints();
    let mut frame = vec![0u8; HEADERS_LEN + payload.len()];
    ep.emit_frame(&mut frame, &payload).expect("frame");

    let mut g = c.benchmark_group("wire");
    g.throughput(Throughput::Elements(1));
    g.bench_function("dta_parse_keywrite", |b| {
        b.iter(|| ReportRepr::parse(black_box(&payload), &fmt).expect("parses"))
    });
    g.bench_function("dta_frame_parse_keywrite", |b| {
        b.iter(|| {
            let u = UdpFrame::parse(black_box(&frame)).expect("udp");
            ReportRepr::parse(u.payload, &fmt).expect("parses").base
        })
    });
    let mut out = vec![0u8; frame.len()];
    let mut pl = vec![0u8; payload.len()];
    let mut key = 0u32;
    g.bench_function("report_frame_build_keywrite", |b| {
        b.iter(|| {
            key = key.wrapping_add(1);
            report(key).emit(&mut pl, &fmt).expect("report");
            ep.emit_frame(&mut out, black_box(&pl)).expect("frame")
        })
    });
    let roce_ep = UdpEndpoints::new(
        [2, 0, 0, 0, 0, 1],
        [2, 0, 0, 0, 0, 2],
        [198, 18, 0, 1],
        [198, 18, 0, 2],
        49152,
        ROCEV2_UDP_PORT,
    );
    let entry = [0xA5u8; 8];
    let mut roce = vec![0u8; 128];
    let mut psn = 0u32;
    g.bench_function("roce_write_frame_build", |b| {
        b.iter(|| {
            psn = (psn + 1) & 0xFF_FFFF;
            FrameRepr::write_only(roce_ep, 17, psn, false, 0x7f00_0000_1000, 0x1234, &entry)
                .emit(black_box(&mut roce))
                .expect("frame")
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
