use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use dta_protocol::control::{CollectorMessage, ResponderQp, Welcome, CONTROL_VERSION};

use super::super::worker::ToWorker;

/// A collector's control port answering every hello, on every connection, with a welcome of the
/// same (empty) regions and a new responder QPN; it counts connections and hellos.
fn collector(connections: Arc<AtomicUsize>, hellos: Arc<AtomicUsize>) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { return };
            connections.fetch_add(1, Ordering::Relaxed);
            let hellos = hellos.clone();
            std::thread::spawn(move || {
                let mut lines = BufReader::new(s.try_clone().unwrap()).lines();
                while let Some(Ok(line)) = lines.next() {
                    if !line.contains("\"hello\"") {
                        continue;
                    }
                    let n = hellos.fetch_add(1, Ordering::Relaxed) as u32;
                    let w = CollectorMessage::Welcome(Welcome {
                        version: CONTROL_VERSION,
                        mac: [2, 0, 0, 0, 0, 2],
                        ip: [198, 18, 0, 2],
                        qps: vec![ResponderQp {
                            qpn: 0x200 + n,
                            peer_qpn: 0x100,
                        }],
                        max_dest_rd_atomic: 16,
                        path_mtu: 1024,
                        regions: vec![],
                        append_heads: Vec::new(),
                    });
                    let mut out = serde_json::to_string(&w).unwrap();
                    out.push('\n');
                    if s.write_all(out.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

#[test]
fn a_failed_qp_is_re_established_on_the_open_connection() {
    let (connections, hellos) = (Arc::default(), Arc::default());
    let addr = collector(Arc::clone(&connections), Arc::clone(&hellos));
    let (link, from_client, request, stop) = super::unusable_welcome_tests::link(addr);
    let counters = link.counters.clone();
    let (initial_tx, initial) = mpsc::channel();
    let client = std::thread::spawn(move || link.run(initial_tx));
    let (_, first) = initial.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(first.unwrap().qps[0].qpn, 0x200);
    for k in 1..=2u32 {
        request.send(()).unwrap();
        let msg = from_client.recv_timeout(Duration::from_secs(10)).unwrap();
        let ToWorker::Reestablish { welcome, .. } = msg else {
            panic!("a Reestablish");
        };
        assert_eq!(welcome.qps[0].qpn, 0x200 + k);
        // The client drops requests that arrived while it re-established (they were about the old
        // QPs): let it get past that before the next failure.
        std::thread::sleep(Duration::from_millis(300));
    }
    assert_eq!(connections.load(Ordering::Relaxed), 1, "one connection");
    assert_eq!(hellos.load(Ordering::Relaxed), 3);
    assert_eq!(counters.welcomes.load(Ordering::Relaxed), 3);
    assert_eq!(counters.reestablished.load(Ordering::Relaxed), 2);
    assert_eq!(counters.failures.load(Ordering::Relaxed), 0);
    stop.store(true, Ordering::Relaxed);
    client.join().unwrap();
}
