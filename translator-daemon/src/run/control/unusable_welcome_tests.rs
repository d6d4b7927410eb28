use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::time::Duration;

use dta_protocol::control::{CollectorMessage, ResponderQp, Welcome, CONTROL_VERSION};
use dta_protocol::layout::{Geometry, KeyWriteGeometry, Region};
use dta_translator::Config;

use super::super::worker::ToWorker;
use super::{ControlCounters, ControlLink, Refused};

/// A welcome for our one QP, its Key-Write entries `entry_size` bytes (8 fits the default reports'
/// 4 data bytes; 16 does not).
fn welcome(entry_size: u32, va: u64) -> Welcome {
    Welcome {
        version: CONTROL_VERSION,
        mac: [2, 0, 0, 0, 0, 2],
        ip: [198, 18, 0, 2],
        qps: vec![ResponderQp {
            qpn: 0x11,
            peer_qpn: 0x100,
        }],
        max_dest_rd_atomic: 16,
        path_mtu: 1024,
        regions: vec![Region {
            id: 0,
            va,
            rkey: 1,
            geometry: Geometry::KeyWrite(KeyWriteGeometry::new(256, entry_size, 4).unwrap()),
        }],
        append_heads: Vec::new(),
    }
}

/// A collector's control port answering each hello with the next of `answers`, then the last again.
/// It keeps every connection open (the lease on the QPs), as a collector does.
fn collector(answers: Vec<Welcome>) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut k = 0;
        let mut open = Vec::new();
        for s in l.incoming() {
            let Ok(mut s) = s else { return };
            let mut line = String::new();
            if BufReader::new(s.try_clone().unwrap())
                .read_line(&mut line)
                .is_err()
            {
                continue;
            }
            let w = &answers[k.min(answers.len() - 1)];
            k += 1;
            let mut out = serde_json::to_string(&CollectorMessage::Welcome(w.clone())).unwrap();
            out.push('\n');
            let _ = s.write_all(out.as_bytes());
            open.push(s);
        }
    });
    addr
}

/// A control link to `addr` with one worker: the link, the worker's end, the re-establishment
/// request sender and the stop flag (the in-use and re-hello tests use it too).
pub(super) fn link(
    addr: SocketAddr,
) -> (ControlLink, Receiver<ToWorker>, Sender<()>, Arc<AtomicBool>) {
    let (to_worker, from_client) = mpsc::channel();
    let (request, requests) = mpsc::channel();
    let stop = Arc::new(AtomicBool::new(false));
    let link = ControlLink {
        index: 0,
        addr,
        token: "t".into(),
        mac: [2, 0, 0, 0, 0, 1],
        ip: [198, 18, 0, 1],
        qpns: vec![0x100],
        base_psn: 0,
        workers: vec![to_worker],
        requests,
        counters: Arc::new(ControlCounters::default()),
        stop: stop.clone(),
        engine: Config::default(),
    };
    (link, from_client, request, stop)
}

/// Issue 26, item 2: a collector that comes back with regions the translator cannot use. The client
/// refuses that welcome, detaches the workers once, keeps asking with backoff (counted by reason), and
/// when the collector offers usable memory, the workers start over on it. Before, the unusable welcome
/// went to the workers, whose engines refused it and kept a queue nothing drained, and the client
/// waited for a QP error that never came again.
#[test]
fn an_unusable_welcome_is_refused_retried_and_resumed_from() {
    let good = welcome(8, 0x10_0000);
    let bad = welcome(16, 0x20_0000);
    let back = welcome(8, 0x30_0000);
    let addr = collector(vec![good.clone(), bad.clone(), bad, back.clone()]);
    let (link, from_client, request, stop) = link(addr);
    let counters = link.counters.clone();
    let (initial_tx, initial) = mpsc::channel();
    let client = std::thread::spawn(move || link.run(initial_tx));
    let (i, first) = initial.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!((i, first.unwrap()), (0, good));
    assert_eq!(counters.usable.load(Ordering::Relaxed), 1);
    // The collector restarted: a worker's QP failed.
    request.send(()).unwrap();
    let msg = from_client.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(matches!(msg, ToWorker::Detach { collector: 0 }));
    let msg = from_client.recv_timeout(Duration::from_secs(10)).unwrap();
    let ToWorker::Replace {
        collector: 0,
        welcome,
        ..
    } = msg
    else {
        panic!("a Replace after the usable welcome");
    };
    assert_eq!(welcome.regions, back.regions);
    let refused = |r: Refused| counters.refused[r as usize].load(Ordering::Relaxed);
    assert_eq!(refused(Refused::Unusable), 2);
    assert_eq!(refused(Refused::ByCollector), 0);
    assert_eq!(counters.failures.load(Ordering::Relaxed), 2);
    assert_eq!(counters.welcomes.load(Ordering::Relaxed), 4);
    assert_eq!(counters.restarts.load(Ordering::Relaxed), 1);
    assert_eq!(counters.usable.load(Ordering::Relaxed), 1);
    // One Detach for the two refusals, nothing else.
    assert!(from_client.try_recv().is_err());
    stop.store(true, Ordering::Relaxed);
    client.join().unwrap();
}

/// An unusable welcome at start-up is a configuration to fix: said, not retried.
#[test]
fn an_unusable_first_welcome_says_why() {
    let addr = collector(vec![welcome(16, 0x10_0000)]);
    let (link, _from_client, _request, _stop) = link(addr);
    let counters = link.counters.clone();
    let (initial_tx, initial) = mpsc::channel();
    std::thread::spawn(move || link.run(initial_tx));
    let (_, first) = initial.recv_timeout(Duration::from_secs(10)).unwrap();
    let why = first.unwrap_err();
    assert!(
        why.contains("Key-Write entries hold 12 data bytes, reports carry 4"),
        "{why}"
    );
    assert_eq!(
        counters.refused[Refused::Unusable as usize].load(Ordering::Relaxed),
        1
    );
    assert_eq!(counters.usable.load(Ordering::Relaxed), 0);
}
