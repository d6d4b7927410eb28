use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::Duration;

use dta_protocol::control::{
    CollectorMessage, Refusal, ResponderQp, Welcome, CONTROL_VERSION, REFUSED_IN_USE,
};

use super::Refused;

/// A collector's control port answering the first `refusals` hellos with the in-use refusal (and
/// closing), then welcoming (and keeping the connection).
fn collector(refusals: usize) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut open = Vec::new();
        for (k, s) in l.incoming().enumerate() {
            let Ok(mut s) = s else { return };
            let mut line = String::new();
            if BufReader::new(s.try_clone().unwrap())
                .read_line(&mut line)
                .is_err()
            {
                continue;
            }
            let answer = if k < refusals {
                CollectorMessage::Refusal(Refusal {
                    version: CONTROL_VERSION,
                    error: format!(
                        "translator QP 0x100 of 198.18.0.1 {REFUSED_IN_USE} from 10.9.9.9:4000"
                    ),
                })
            } else {
                CollectorMessage::Welcome(Welcome {
                    version: CONTROL_VERSION,
                    mac: [2, 0, 0, 0, 0, 2],
                    ip: [198, 18, 0, 2],
                    qps: vec![ResponderQp {
                        qpn: 0x11,
                        peer_qpn: 0x100,
                    }],
                    max_dest_rd_atomic: 16,
                    path_mtu: 1024,
                    regions: vec![],
                    append_heads: Vec::new(),
                })
            };
            let mut out = serde_json::to_string(&answer).unwrap();
            out.push('\n');
            let _ = s.write_all(out.as_bytes());
            open.push(s);
        }
    });
    addr
}

/// At start-up an in-use refusal is not fatal (unlike a wrong token): the client says why in its
/// counters, retries with backoff and takes the welcome that comes once the holder is gone.
#[test]
fn an_in_use_refusal_is_counted_and_retried_until_welcomed() {
    let addr = collector(3);
    let (link, _from_client, _tx, stop) = super::unusable_welcome_tests::link(addr);
    let counters = link.counters.clone();
    let (initial_tx, initial) = mpsc::channel();
    let client = std::thread::spawn(move || link.run(initial_tx));
    let (i, first) = initial.recv_timeout(Duration::from_secs(20)).unwrap();
    assert_eq!(i, 0);
    assert_eq!(first.unwrap().qps[0].qpn, 0x11);
    let refused = |r: Refused| counters.refused[r as usize].load(Ordering::Relaxed);
    assert_eq!(refused(Refused::InUse), 3);
    assert_eq!(refused(Refused::ByCollector), 0);
    assert_eq!(counters.failures.load(Ordering::Relaxed), 3);
    assert_eq!(counters.welcomes.load(Ordering::Relaxed), 1);
    assert_eq!(counters.usable.load(Ordering::Relaxed), 1);
    stop.store(true, Ordering::Relaxed);
    client.join().unwrap();
}

#[test]
fn the_in_use_refusal_is_told_apart_from_a_wrong_token() {
    let e = anyhow::anyhow!(
        "the collector refused us: translator QP 0x100 of 198.18.0.1 {REFUSED_IN_USE} from x"
    );
    assert_eq!(Refused::of(&e), Some(Refused::InUse));
    let e = anyhow::anyhow!("the collector refused us: wrong token");
    assert_eq!(Refused::of(&e), Some(Refused::ByCollector));
}
