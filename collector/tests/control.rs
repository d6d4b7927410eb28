//! The control channel over real loopback TCP: a good handshake, refusals with reasons, and a server
//! that survives malformed input.
// The daemon's parts (control server, HTTP API, the binary) exist with the `server` feature only.
#![cfg(feature = "server")]

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dta_collector::control::{Advertised, ControlLimits, ControlServer, QpLimits, QpOpener};
use dta_collector::memory::Arena;
use dta_protocol::control::{
    CollectorMessage, Hello, RequesterQp, ResponderQp, TranslatorMessage, CONTROL_VERSION,
};
use dta_protocol::layout::{Geometry, KeyWriteGeometry, Region};

/// Hands out QPNs from 0x200 and remembers what it was asked.
#[derive(Default)]
struct Opener {
    seen: Mutex<Vec<RequesterQp>>,
}

impl QpOpener for Opener {
    fn open_qp(&self, _: &Hello, q: &RequesterQp) -> Result<u32, String> {
        let mut seen = self.seen.lock().unwrap();
        seen.push(*q);
        Ok(0x200 + seen.len() as u32 - 1)
    }
    fn close_qp(&self, _: u32) {}
}

fn region() -> Region {
    Region {
        id: 0,
        va: 0x7f00_0000_1000,
        rkey: 0x1000,
        geometry: Geometry::KeyWrite(KeyWriteGeometry::new(256, 8, 4).unwrap()),
    }
}

fn server(opener: Arc<Opener>) -> ControlServer {
    let ad = Advertised {
        token: "s3cret".into(),
        mac: [2, 0, 0, 0, 0, 2],
        ip: [127, 0, 0, 1],
        max_dest_rd_atomic: 16,
        path_mtu: 1024,
        regions: vec![region()],
        memory: None,
    };
    ControlServer::start("127.0.0.1:0".parse().unwrap(), ad, opener).unwrap()
}

fn hello(token: &str) -> Hello {
    Hello {
        version: CONTROL_VERSION,
        token: token.into(),
        mac: [2, 0, 0, 0, 0, 1],
        ip: [127, 0, 0, 1],
        gid: [0; 16],
        qps: vec![
            RequesterQp {
                qpn: 0x11,
                start_psn: 100,
            },
            RequesterQp {
                qpn: 0x12,
                start_psn: 0xFF_FFFF,
            },
        ],
    }
}

fn exchange(s: &ControlServer, line: &str) -> CollectorMessage {
    let mut c = TcpStream::connect(s.local_addr()).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    c.write_all(line.as_bytes()).unwrap();
    let mut r = BufReader::new(c);
    let mut answer = String::new();
    r.read_line(&mut answer).unwrap();
    serde_json::from_str(&answer).unwrap_or_else(|e| panic!("{e}: {answer:?}"))
}

fn line(h: &Hello) -> String {
    let mut s = serde_json::to_string(&TranslatorMessage::Hello(h.clone())).unwrap();
    s.push('\n');
    s
}

fn refusal(m: CollectorMessage) -> String {
    match m {
        CollectorMessage::Refusal(r) => {
            assert_eq!(r.version, CONTROL_VERSION);
            r.error
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn good_handshake_opens_one_qp_per_translator_qp() {
    let opener = Arc::new(Opener::default());
    let s = server(opener.clone());
    match exchange(&s, &line(&hello("s3cret"))) {
        CollectorMessage::Welcome(w) => {
            assert_eq!(w.version, CONTROL_VERSION);
            assert_eq!(w.mac, [2, 0, 0, 0, 0, 2]);
            assert_eq!(
                w.qps,
                [
                    ResponderQp {
                        qpn: 0x200,
                        peer_qpn: 0x11
                    },
                    ResponderQp {
                        qpn: 0x201,
                        peer_qpn: 0x12
                    },
                ]
            );
            assert_eq!((w.max_dest_rd_atomic, w.path_mtu), (16, 1024));
            assert_eq!(w.regions, [region()]);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(opener.seen.lock().unwrap()[1].start_psn, 0xFF_FFFF);
}

#[test]
fn wrong_token_and_wrong_version_are_refused_with_reasons() {
    let opener = Arc::new(Opener::default());
    let s = server(opener.clone());
    let e = refusal(exchange(&s, &line(&hello("guess"))));
    assert!(e.contains("wrong token"), "{e}");
    let mut h = hello("s3cret");
    h.version = CONTROL_VERSION + 1;
    let e = refusal(exchange(&s, &line(&h)));
    assert!(e.contains("version 2 is not supported"), "{e}");
    // A future version with a different schema still learns about the version, not about its fields.
    let e = refusal(exchange(
        &s,
        "{\"type\":\"hello\",\"version\":9,\"other\":1}\n",
    ));
    assert!(e.contains("version 9"), "{e}");
    assert!(
        opener.seen.lock().unwrap().is_empty(),
        "no QP opened for a refused hello"
    );
}

#[test]
fn malformed_input_is_refused_and_the_server_keeps_serving() {
    let s = server(Arc::new(Opener::default()));
    for (bad, why) in [
        ("{not json\n", "malformed JSON"),
        ("[1,2,3]\n", "version"),
        ("{\"type\":\"hello\",\"version\":1}\n", "malformed hello"),
        ("\u{0}\u{1}\n", "malformed JSON"),
    ] {
        let e = refusal(exchange(&s, bad));
        assert!(e.contains(why), "{bad:?}: {e}");
    }
    let mut h = hello("s3cret");
    h.qps[0].qpn = 0x100_0000;
    assert!(refusal(exchange(&s, &line(&h))).contains("24 bits"));
    // A client that connects and vanishes does not hurt either.
    drop(TcpStream::connect(s.local_addr()).unwrap());
    assert!(matches!(
        exchange(&s, &line(&hello("s3cret"))),
        CollectorMessage::Welcome(_)
    ));
}

/// Issue 26 item 3: each welcome carries every Append list's head word as the collector's memory holds it
/// at that hello, so that a restarted translator continues the lists where they are.
#[test]
fn welcome_carries_the_append_heads_from_memory() {
    use dta_protocol::control::AppendHead;
    use dta_protocol::layout::AppendGeometry;
    let g = |entries| Geometry::Append(AppendGeometry::new(entries, 4, 16).unwrap());
    let kw = Geometry::KeyWrite(KeyWriteGeometry::new(256, 8, 4).unwrap());
    let arena = Arc::new(Arena::new_normal(&[(0, kw), (3, g(64)), (9, g(128))]).unwrap());
    let set_head = |id: u32, head: u64| {
        let slot = arena
            .slots()
            .iter()
            .find(|s| s.region.id == id && matches!(s.region.geometry, Geometry::Append(_)))
            .unwrap();
        arena.write().as_mut_slice()[slot.offset..slot.offset + 8]
            .copy_from_slice(&AppendGeometry::encode_head(head));
    };
    set_head(3, 3000);
    let ad = Advertised {
        token: "s3cret".into(),
        mac: [2, 0, 0, 0, 0, 2],
        ip: [127, 0, 0, 1],
        max_dest_rd_atomic: 16,
        path_mtu: 1024,
        regions: arena.regions(),
        memory: Some(arena.clone()),
    };
    let s = ControlServer::start(
        "127.0.0.1:0".parse().unwrap(),
        ad,
        Arc::new(Opener::default()),
    )
    .unwrap();
    let heads = |s: &ControlServer| match exchange(s, &line(&hello("s3cret"))) {
        CollectorMessage::Welcome(w) => w.append_heads,
        other => panic!("expected a welcome, got {other:?}"),
    };
    assert_eq!(
        heads(&s),
        [
            AppendHead {
                list: 3,
                head: 3000
            },
            AppendHead { list: 9, head: 0 }
        ]
    );
    // Read at each hello, not when the server started: the translator that wrote on has moved it.
    set_head(3, 4000);
    set_head(9, 1 << 40);
    assert_eq!(
        heads(&s),
        [
            AppendHead {
                list: 3,
                head: 4000
            },
            AppendHead {
                list: 9,
                head: 1 << 40
            }
        ]
    );
    // The field is left out of the JSON when there is nothing to say (a collector without memory to
    // read), and a welcome without it reads as no heads.
    let no_memory = server(Arc::new(Opener::default()));
    match exchange(&no_memory, &line(&hello("s3cret"))) {
        CollectorMessage::Welcome(w) => {
            assert!(w.append_heads.is_empty());
            let text = serde_json::to_string(&w).unwrap();
            assert!(!text.contains("append_heads"), "{text}");
        }
        other => panic!("expected a welcome, got {other:?}"),
    }
}

/// Issue 26 item 4, against the real control server: an Append list has one writer. The first translator
/// to say hello gets list 3; a second translator's welcome leaves it out (its reports for it are then
/// dropped as no_region there), counted; the holder keeps it on a new connection; once the holder is gone
/// past the grace period its QPs are reclaimed and the list goes to the next hello.
#[test]
fn an_append_list_is_given_to_one_translator_at_a_time() {
    use dta_protocol::control::AppendHead;
    use dta_protocol::layout::AppendGeometry;
    use std::sync::atomic::Ordering;
    let kw = Geometry::KeyWrite(KeyWriteGeometry::new(256, 8, 4).unwrap());
    let list = Geometry::Append(AppendGeometry::new(64, 4, 16).unwrap());
    let arena = Arc::new(Arena::new_normal(&[(0, kw), (3, list)]).unwrap());
    let s = server_over(&arena);
    // Say hello and keep the connection (the lease) open; the welcome's Append lists and heads.
    let connect = |ip: [u8; 4]| {
        let mut h = hello("s3cret");
        h.ip = ip;
        let mut c = TcpStream::connect(s.local_addr()).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        c.write_all(line(&h).as_bytes()).unwrap();
        let mut r = BufReader::new(c.try_clone().unwrap());
        let mut answer = String::new();
        r.read_line(&mut answer).unwrap();
        let w = match serde_json::from_str(&answer).unwrap() {
            CollectorMessage::Welcome(w) => w,
            other => panic!("expected a welcome, got {other:?}"),
        };
        let lists: Vec<u32> = w
            .regions
            .iter()
            .filter(|r| matches!(r.geometry, Geometry::Append(_)))
            .map(|r| r.id)
            .collect();
        assert_eq!(
            w.regions.iter().filter(|r| r.id == 0).count(),
            1,
            "Key-Write always"
        );
        (c, lists, w.append_heads)
    };
    let head = |h| vec![AppendHead { list: 3, head: h }];
    let (first, lists, heads) = connect([10, 0, 0, 1]);
    assert_eq!((lists, heads), (vec![3], head(0)));
    let (second, lists, heads) = connect([10, 0, 0, 2]);
    assert_eq!((lists, heads), (vec![], vec![]));
    assert_eq!(
        s.qp_stats().append_lists_withheld.load(Ordering::Relaxed),
        1
    );
    // The holder again on a new connection (a restart within the grace period): still its own.
    drop(first);
    let (first, lists, _) = connect([10, 0, 0, 1]);
    assert_eq!(lists, vec![3]);
    drop(second);
    // The holder gone for good: after the grace period its QPs are reclaimed and the list is free.
    drop(first);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while s.qp_stats().reclaimed.load(Ordering::Relaxed) < 4 {
        assert!(std::time::Instant::now() < deadline, "QPs not reclaimed");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (_third, lists, heads) = connect([10, 0, 0, 3]);
    assert_eq!((lists, heads), (vec![3], head(0)));
    assert_eq!(
        s.qp_stats().append_lists_withheld.load(Ordering::Relaxed),
        1
    );
}

/// Issue 26 item 4 for Sketch-Merge: two translators each merging their own reporters into one sketch
/// would write whole columns over each other's (the last writer's partial merge wins, and a count-min
/// query then underestimates). A sketch has one merging translator, as an Append list has one writer:
/// the first hello takes it, a second translator's welcome leaves it out (counted, beside the Append
/// list it also withholds), the holder keeps it across a new connection, and it is free once the holder
/// is gone past the grace period.
#[test]
fn a_sketch_is_merged_by_one_translator_at_a_time() {
    use dta_protocol::layout::{AppendGeometry, SketchGeometry};
    use std::sync::atomic::Ordering;
    let kw = Geometry::KeyWrite(KeyWriteGeometry::new(256, 8, 4).unwrap());
    let list = Geometry::Append(AppendGeometry::new(64, 4, 16).unwrap());
    let sketch = Geometry::Sketch(SketchGeometry::new(2, 8).unwrap());
    // Sketch 3 and Append list 3: region ids are per kind.
    let arena =
        Arc::new(Arena::new_normal(&[(0, kw), (3, list), (3, sketch), (5, sketch)]).unwrap());
    let s = server_over(&arena);
    // Says hello and keeps the connection; the welcome's (kind, id) of every region but Key-Write.
    let connect = |ip: [u8; 4]| {
        let mut h = hello("s3cret");
        h.ip = ip;
        let mut c = TcpStream::connect(s.local_addr()).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        c.write_all(line(&h).as_bytes()).unwrap();
        let mut answer = String::new();
        BufReader::new(c.try_clone().unwrap())
            .read_line(&mut answer)
            .unwrap();
        let w = match serde_json::from_str(&answer).unwrap() {
            CollectorMessage::Welcome(w) => w,
            other => panic!("expected a welcome, got {other:?}"),
        };
        let held: Vec<(&'static str, u32)> = w
            .regions
            .iter()
            .filter_map(|r| match r.geometry {
                Geometry::Append(_) => Some(("append", r.id)),
                Geometry::Sketch(_) => Some(("sketch", r.id)),
                _ => None,
            })
            .collect();
        assert_eq!(w.regions.len(), 1 + held.len(), "Key-Write always");
        (c, held)
    };
    let all = vec![("append", 3), ("sketch", 3), ("sketch", 5)];
    let (first, held) = connect([10, 0, 0, 1]);
    assert_eq!(held, all);
    let (second, held) = connect([10, 0, 0, 2]);
    assert_eq!(held, vec![]);
    let stats = s.qp_stats();
    assert_eq!(stats.sketches_withheld.load(Ordering::Relaxed), 2);
    assert_eq!(stats.append_lists_withheld.load(Ordering::Relaxed), 1);
    // The holder restarted (a new connection within the grace period): still its own.
    drop(first);
    let (first, held) = connect([10, 0, 0, 1]);
    assert_eq!(held, all);
    drop(second);
    drop(first);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while stats.reclaimed.load(Ordering::Relaxed) < 4 {
        assert!(std::time::Instant::now() < deadline, "QPs not reclaimed");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (_third, held) = connect([10, 0, 0, 3]);
    assert_eq!(held, all);
    assert_eq!(stats.sketches_withheld.load(Ordering::Relaxed), 2);
}

/// A control server advertising `arena`'s regions and reading its memory (the welcome's Append heads),
/// whose QPs go 300 ms after their connection.
fn server_over(arena: &Arc<Arena>) -> ControlServer {
    let ad = Advertised {
        token: "s3cret".into(),
        mac: [2, 0, 0, 0, 0, 2],
        ip: [127, 0, 0, 1],
        max_dest_rd_atomic: 16,
        path_mtu: 1024,
        regions: arena.regions(),
        memory: Some(arena.clone()),
    };
    let limits = ControlLimits {
        qps: QpLimits {
            grace: Duration::from_millis(300),
            ..QpLimits::default()
        },
        ..ControlLimits::default()
    };
    ControlServer::start_with(
        "127.0.0.1:0".parse().unwrap(),
        ad,
        Arc::new(Opener::default()),
        limits,
    )
    .unwrap()
}
