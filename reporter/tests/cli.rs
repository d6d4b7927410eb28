//! `dta-report` end to end: the binary sends the counted, key-incremented reports to a loopback socket.

use std::net::UdpSocket;
use std::process::Command;
use std::time::Duration;

fn run_and_collect(args: &[&str], expect: usize) -> Vec<Vec<u8>> {
    let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
    rx.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let port = rx.local_addr().unwrap().port().to_string();
    let status = Command::new(env!("CARGO_BIN_EXE_dta-report"))
        .args(args)
        .args(["--to", "127.0.0.1", "--port", &port])
        .status()
        .unwrap();
    assert!(status.success());
    let mut buf = [0u8; 2048];
    (0..expect)
        .map(|_| {
            let (n, _) = rx.recv_from(&mut buf).expect("report");
            buf[..n].to_vec()
        })
        .collect()
}

#[test]
fn keywrite_count_increment_key() {
    let got = run_and_collect(
        &[
            "keywrite",
            "--key",
            "0x10",
            "--data",
            "0x2a",
            "--redundancy",
            "3",
            "--count",
            "3",
            "--increment-key",
            "--rate",
            "1000",
        ],
        3,
    );
    for (i, r) in got.iter().enumerate() {
        let i = i as u8;
        assert_eq!(
            r,
            &[
                0x01,
                i,
                0x00,
                0x03,
                0x00,
                0x00,
                0x00,
                0x10 + i,
                0x00,
                0x00,
                0x00,
                0x2a
            ]
        );
    }
}

#[test]
fn sketch_and_compact_postcard() {
    let got = run_and_collect(
        &[
            "sketch",
            "--sketch-id",
            "2",
            "--op",
            "max",
            "--column",
            "7",
            "--counters",
            "1,2",
        ],
        1,
    );
    assert_eq!(
        got[0],
        [
            0x05, 0x00, 0x00, 0x02, 0x01, 0x00, 0x00, 0x00, 0x07, 0x02, 0x00, 0, 0, 0, 1, 0, 0, 0,
            2
        ]
    );
    let got = run_and_collect(
        &[
            "postcard",
            "--header",
            "compact",
            "--key",
            "5",
            "--hop",
            "2",
            "--data",
            "0x0a0b0c0d",
        ],
        1,
    );
    assert_eq!(got[0], [0x04, 0x00, 0, 0, 0, 5, 2, 0x0a, 0x0b, 0x0c, 0x0d]);
}
