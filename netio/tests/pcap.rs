//! Pcap backends: write a capture, read it back, and check every frame, timestamp and count exactly.

use dta_netio::{FrameBatch, NetioError, PcapSink, PcapSource, RxBurst, RxStats, TxBurst, TxStats};

fn temp_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("dta-netio-{}-{name}.pcap", std::process::id()))
}

/// Frame `n`: `60 + n % 1400` bytes whose content depends on `n`, so that any reordering or mix-up shows.
fn frame(n: u32) -> Vec<u8> {
    let len = 60 + (n % 1400) as usize;
    (0..len).map(|i| (n as usize * 7 + i) as u8).collect()
}

#[test]
fn write_then_read_back_exact_frames_and_timestamps() {
    let path = temp_path("roundtrip");
    const N: u32 = 1000;
    let mut sink = PcapSink::create(&path).unwrap();
    let mut out = FrameBatch::new(32, 2048);
    let mut expected_bytes = 0u64;
    for n in 0..N {
        let f = frame(n);
        expected_bytes += f.len() as u64;
        out.push_stamped(&f, 1_700_000_000_000_000_000 + n as u64 * 1_001)
            .unwrap();
        if out.free() == 0 || n == N - 1 {
            assert_eq!(sink.send_burst(&out).unwrap(), out.len());
            out.clear();
        }
    }
    assert_eq!(
        sink.tx_stats(),
        TxStats {
            frames: N as u64,
            bytes: expected_bytes,
            dropped: 0
        }
    );
    sink.finish().unwrap();
    // 24-byte file header, 16-byte record headers.
    let file_len = std::fs::metadata(&path).unwrap().len();
    assert_eq!(file_len, 24 + 16 * N as u64 + expected_bytes);

    let mut src = PcapSource::open(&path).unwrap();
    let mut inb = FrameBatch::new(64, 2048);
    let mut n = 0u32;
    let mut bursts = 0;
    while !src.is_done() {
        inb.clear();
        let got = src.recv_burst(&mut inb).unwrap();
        assert_eq!(got, inb.len());
        for i in 0..inb.len() {
            assert_eq!(inb.frame(i), &frame(n)[..], "frame {n}");
            assert_eq!(
                inb.timestamp_ns(i),
                1_700_000_000_000_000_000 + n as u64 * 1_001
            );
            n += 1;
        }
        bursts += 1;
    }
    assert_eq!(n, N);
    assert_eq!(bursts, 16, "15 full bursts of 64, one of 40, then the end");
    assert_eq!(src.recv_burst(&mut inb).unwrap(), 0);
    assert_eq!(
        src.rx_stats(),
        RxStats {
            frames: N as u64,
            bytes: expected_bytes,
            dropped: 0,
            missed: 0,
        }
    );
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn frames_larger_than_the_slot_are_dropped_and_counted() {
    let path = temp_path("oversize");
    let mut sink = PcapSink::create(&path).unwrap();
    let mut out = FrameBatch::new(4, 2048);
    out.push(&[1; 100]).unwrap();
    out.push(&[2; 1500]).unwrap();
    out.push(&[3; 200]).unwrap();
    assert_eq!(sink.send_burst(&out).unwrap(), 3);
    sink.finish().unwrap();

    let mut src = PcapSource::open(&path).unwrap();
    let mut small = FrameBatch::new(4, 256);
    assert_eq!(src.recv_burst(&mut small).unwrap(), 2);
    assert!(src.is_done());
    assert_eq!(small.frame(0), &[1; 100][..]);
    assert_eq!(small.frame(1), &[3; 200][..]);
    assert!(
        small.timestamp_ns(0) > 0,
        "unknown timestamps become the send time"
    );
    assert_eq!(
        src.rx_stats(),
        RxStats {
            frames: 2,
            bytes: 300,
            dropped: 1,
            missed: 0,
        }
    );
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn reads_microsecond_big_endian_files_written_elsewhere() {
    // A classic big-endian microsecond pcap with one 14-byte frame at 1.000002 s, written byte by byte.
    let path = temp_path("classic");
    let mut bytes = vec![];
    bytes.extend_from_slice(&0xa1b2_c3d4u32.to_be_bytes());
    bytes.extend_from_slice(&2u16.to_be_bytes());
    bytes.extend_from_slice(&4u16.to_be_bytes());
    bytes.extend_from_slice(&[0; 8]);
    bytes.extend_from_slice(&65535u32.to_be_bytes());
    bytes.extend_from_slice(&1u32.to_be_bytes());
    for v in [1u32, 2, 14, 14] {
        bytes.extend_from_slice(&v.to_be_bytes());
    }
    bytes.extend_from_slice(&[0xab; 14]);
    std::fs::write(&path, &bytes).unwrap();
    let mut src = PcapSource::open(&path).unwrap();
    let mut b = FrameBatch::new(4, 64);
    assert_eq!(src.recv_burst(&mut b).unwrap(), 1);
    assert_eq!(b.frame(0), &[0xab; 14][..]);
    assert_eq!(b.timestamp_ns(0), 1_000_002_000);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn non_ethernet_and_missing_files_are_refused_with_the_path() {
    let path = temp_path("rawip");
    let mut bytes = vec![];
    bytes.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    bytes.extend_from_slice(&2u16.to_le_bytes());
    bytes.extend_from_slice(&4u16.to_le_bytes());
    bytes.extend_from_slice(&[0; 8]);
    bytes.extend_from_slice(&65535u32.to_le_bytes());
    bytes.extend_from_slice(&101u32.to_le_bytes()); // LINKTYPE_RAW
    std::fs::write(&path, &bytes).unwrap();
    match PcapSource::open(&path) {
        Err(NetioError::PcapLinkType {
            link_type: 101,
            path: p,
        }) => assert_eq!(p, path),
        other => panic!("expected a link-type error, got {:?}", other.err()),
    }
    std::fs::remove_file(&path).unwrap();

    let err = PcapSource::open("/nonexistent/dta.pcap").err().unwrap();
    assert!(
        err.to_string().starts_with("open /nonexistent/dta.pcap: "),
        "{err}"
    );
}
