use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::AtomicBool;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use dta_protocol::control::{CollectorMessage, Welcome, CONTROL_VERSION, KEEPALIVE_EVERY};
use dta_translator::Config;

use super::answer::AnswerLimits;
use super::{ControlCounters, ControlLink};

fn link(addr: SocketAddr) -> ControlLink {
    let (_tx, requests) = mpsc::channel();
    ControlLink {
        index: 0,
        addr,
        token: "t".into(),
        mac: [2, 0, 0, 0, 0, 1],
        ip: [198, 18, 0, 1],
        qpns: vec![0x100],
        base_psn: 0,
        workers: Vec::new(),
        requests,
        counters: Arc::new(ControlCounters::default()),
        stop: Arc::new(AtomicBool::new(false)),
        engine: Config::default(),
    }
}

/// A collector that reads the hello and then runs `answer` on the connection.
fn collector(answer: impl FnOnce(TcpStream) + Send + 'static) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        if let Ok((s, _)) = l.accept() {
            let mut hello = [0u8; 4096];
            let _ = (&s).read(&mut hello);
            answer(s);
        }
    });
    addr
}

/// Issue 26, item 8: a welcome without a newline grew the translator to 2 GiB. The answer is cut at
/// the size cap with a clear error (which `establish` retries like any failed attempt).
#[test]
fn an_answer_without_a_newline_is_cut_at_the_size_cap() {
    let addr = collector(|mut s| {
        let junk = [b'x'; 64 << 10];
        // Until the translator hangs up: far more than the cap.
        for _ in 0..64 {
            if s.write_all(&junk).is_err() {
                break;
            }
        }
    });
    let e = link(addr).connect(0).err().expect("refused");
    assert_eq!(
        format!("{e:#}"),
        "the collector's answer is longer than 1048576 bytes without a newline"
    );
}

/// Issue 26, item 8: one byte every 4 s kept the translator from ever starting (a timeout per read,
/// none for the line). The whole answer has one deadline.
#[test]
fn a_trickled_answer_meets_one_deadline_for_the_whole_line() {
    let (done_tx, done) = mpsc::channel::<()>();
    let addr = collector(move |mut s| {
        // One byte every 50 ms, each within any per-read timeout, until the translator gives up.
        while done.try_recv().is_err() && s.write_all(b"{").is_ok() {
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    let limits = AnswerLimits {
        deadline: Duration::from_millis(500),
        ..AnswerLimits::default()
    };
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(link(addr).connect_with(0, limits).map(|_| ()));
    });
    // Bounded by the outcome, not by the trickle: before the deadline it never returned.
    let r = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the handshake returned");
    let _ = done_tx.send(());
    let e = format!("{:#}", r.expect_err("refused"));
    assert!(
        e.starts_with("no complete answer within 500ms (") && e.ends_with(" bytes received)"),
        "{e}"
    );
}

/// The welcome's connection is kept (the lease on our QPs); when the collector closes it the lease
/// says so, so that the client says hello again before the QPs are reclaimed.
#[test]
fn the_welcome_connection_is_kept_and_its_end_is_noticed() {
    let (close_tx, close) = mpsc::channel::<()>();
    let addr = collector(move |mut s| {
        let w = CollectorMessage::Welcome(Welcome {
            version: CONTROL_VERSION,
            mac: [2, 0, 0, 0, 0, 2],
            ip: [198, 18, 0, 2],
            qps: vec![dta_protocol::control::ResponderQp {
                qpn: 0x200,
                peer_qpn: 0x100,
            }],
            max_dest_rd_atomic: 16,
            path_mtu: 1024,
            regions: vec![],
            append_heads: Vec::new(),
        });
        let mut line = serde_json::to_string(&w).unwrap();
        line.push('\n');
        s.write_all(line.as_bytes()).unwrap();
        let _ = close.recv();
        // Read the keep-alive first: closing with unread bytes would be a reset, not a close.
        let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
        let _ = s.read(&mut [0u8; 4096]);
    });
    let (w, mut lease) = link(addr).connect(0).unwrap();
    assert_eq!(w.qps[0].qpn, 0x200);
    assert_eq!(lease.check(), Ok(()));
    // A keep-alive when one is due.
    lease.last_sent = Instant::now() - KEEPALIVE_EVERY;
    assert_eq!(lease.check(), Ok(()));
    close_tx.send(()).unwrap();
    let end = Instant::now() + Duration::from_secs(10);
    let why = loop {
        match lease.check() {
            Ok(()) => assert!(Instant::now() < end, "the close was not noticed"),
            Err(why) => break why,
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(why, "the collector closed the control connection");
}
