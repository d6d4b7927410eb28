//! Over loopback UDP: a fake translator receives retransmittable reports, "loses" two, sends a DTA NACK
//! with the last in-order seqnum, and must then receive exactly the missing reports, byte for byte.
//! The NACK is built here from DESIGN.md section 2's table, not with the library's parser.

use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::time::Duration;

use dta_reporter::{Report, Reporter, ReporterConfig};

const LOOPBACK: Ipv4Addr = Ipv4Addr::LOCALHOST;

fn bind() -> UdpSocket {
    let s = UdpSocket::bind(SocketAddrV4::new(LOOPBACK, 0)).expect("bind loopback");
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    s
}

fn recv(s: &UdpSocket) -> Vec<u8> {
    let mut buf = [0u8; 2048];
    let (n, _) = s.recv_from(&mut buf).expect("a report within 2 s");
    buf[..n].to_vec()
}

#[test]
fn nack_replays_exactly_the_missing_reports() {
    let translator = bind();
    let tport = translator.local_addr().unwrap().port();
    let nack_rx = bind();
    let nack_addr = nack_rx.local_addr().unwrap();
    let mut reporter = Reporter::new(bind(), ReporterConfig::default()).with_nack_socket(nack_rx);

    let to = SocketAddrV4::new(LOOPBACK, tport);
    let mut originals = Vec::new();
    for key in 0..6u32 {
        let r = Report::KeyWrite {
            redundancy: 2,
            key,
            data: vec![0xd0, 0, 0, key as u8],
        };
        assert_eq!(reporter.send_to(to, &r, true).unwrap(), key as u8);
        originals.push(recv(&translator));
    }
    // A non-retransmittable report of another opcode is neither buffered nor replayed.
    let ki = Report::KeyIncrement {
        redundancy: 1,
        key: 9,
        counter: 1,
    };
    reporter.send_to(to, &ki, false).unwrap();
    assert_eq!(recv(&translator)[..3], [0x03, 0x00, 0x00]);

    // Report 3 as sent: opcode 01, seqnum 03, retransmit flag, N 2, key 3, data d0 00 00 03.
    assert_eq!(
        originals[3],
        [0x01, 0x03, 0x40, 0x02, 0x00, 0x00, 0x00, 0x03, 0xd0, 0x00, 0x00, 0x03]
    );

    // The translator got 0..=3 in order and lost 4 and 5: NACK with last in-order seqnum 3.
    // Seq base (opcode 01, seqnum 03, flags 00), then seqnum 03, nack bit set.
    let nack = [0x01, 0x03, 0x00, 0x03, 0x80];
    translator.send_to(&nack, nack_addr).unwrap();
    let resent = reporter.poll_nacks(Duration::from_secs(1)).unwrap();
    assert_eq!(resent, 2);
    assert_eq!(recv(&translator), originals[4]);
    assert_eq!(recv(&translator), originals[5]);
    // Nothing else arrives: not the acknowledged 0..=3, not the Key-Increment.
    translator
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut buf = [0u8; 64];
    assert!(translator.recv_from(&mut buf).is_err());

    // A garbage datagram on the NACK port is counted and ignored.
    translator.send_to(&[0x01, 0x03], nack_addr).unwrap();
    assert_eq!(reporter.poll_nacks(Duration::from_millis(200)).unwrap(), 0);

    let s = reporter.stats();
    assert_eq!(
        (s.sent, s.resent, s.nacks, s.bad_nacks, s.unrecoverable),
        (7, 2, 1, 1, 0)
    );
    assert_eq!(
        reporter
            .retransmit_buffer()
            .len(LOOPBACK, dta_protocol::dta::Opcode::KeyWrite),
        2
    );
}
