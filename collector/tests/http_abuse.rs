//! The HTTP API under abusive clients, against `dta-collector serve --backend soft` as a process with the
//! default HTTP limits (64 connections, 10 s to read a request, 10 s to write a response, 16 KiB of request
//! head): a client that pipelines requests and never reads, an endless request line, more idle connections
//! than the cap, one address holding its own cap, and percent-encoded query parameters. On loopback; each test is bounded in time (about
//! 25 s at most) and kills its child on every path. The figures (RSS, latency) are printed; run with
//! `--nocapture` to see them.
// The daemon's parts (control server, HTTP API, the binary) exist with the `server` feature only.
#![cfg(feature = "server")]

mod process;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use process::Serve;

/// The server's cap on connections (`Limits::default().max_connections`).
const MAX_CONNECTIONS: usize = 64;
/// Its cap on connections from one address (`Limits::default().max_per_address`).
const PER_ADDRESS: usize = 8;

/// A connection to `addr` from loopback address `from` (any 127.0.0.x is this host's).
fn connect_from(from: [u8; 4], addr: &str) -> TcpStream {
    use socket2::{Domain, Socket, Type};
    let to: std::net::SocketAddr = addr.parse().expect("the API's address");
    let s = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    s.bind(&std::net::SocketAddr::from((from, 0)).into())
        .unwrap();
    s.connect(&to.into()).unwrap();
    s.into()
}

fn serve() -> Serve {
    process::serve(&process::example(), &[])
}

/// One HTTP/1.0 GET with 5 s timeouts: status and body.
fn get(addr: &str, path: &str) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    s.set_write_timeout(Some(Duration::from_secs(5)))?;
    // A refused connection may be closed before the request is written: its answer is read all the same.
    let _ = write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| std::io::Error::other(format!("malformed answer {text:?}")))?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("no status in {head:?}")))?;
    Ok((status, body.to_string()))
}

/// A query that must be answered (200) within 5 s; returns how long it took.
fn query_answered(addr: &str) -> Duration {
    let t = Instant::now();
    let (status, body) = get(addr, "/query/keywrite?key=42").expect("query answered within 5 s");
    assert_eq!(status, 200, "{body}");
    t.elapsed()
}

fn metric(addr: &str, series: &str) -> Option<u64> {
    let (_, text) = get(addr, "/metrics").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
}

/// (a) A client pipelines GET /metrics until the server stops taking them (it never reads an answer);
/// another client's query is still answered, and the abuser's connection is closed at the write deadline.
#[test]
fn a_client_that_never_reads_does_not_stall_the_others() {
    let s = serve();
    let rss_before = s.rss_kib();
    let idle_latency = query_answered(&s.http);

    let mut abuser = TcpStream::connect(&s.http).unwrap();
    abuser
        .set_write_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let batch = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n".repeat(100);
    let (mut sent, mut blocked) = (0usize, false);
    // Until the server has stopped reading (its answers fill both socket buffers), or 200,000 requests.
    while sent < 200_000 {
        match abuser.write_all(batch.as_bytes()) {
            Ok(()) => sent += 100,
            Err(_) => {
                blocked = true;
                break;
            }
        }
    }
    let under_abuse = query_answered(&s.http);
    let rss_during = s.rss_kib();
    println!(
        "slow reader: {sent}+ pipelined GET /metrics, server stopped reading: {blocked}; query latency \
         idle {idle_latency:?}, under abuse {under_abuse:?}; collector RSS {rss_before} KiB before, \
         {rss_during} KiB during"
    );
    // The write deadline (10 s) closes the abuser's connection; the others never waited for it.
    let series = "dta_collector_http_refused_total{reason=\"write_timeout\"}";
    let deadline = Instant::now() + Duration::from_secs(20);
    while metric(&s.http, series) != Some(1) {
        assert!(
            Instant::now() < deadline,
            "the abuser's connection was not closed at the write deadline"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    let after = query_answered(&s.http);
    println!(
        "slow reader: closed at the write deadline; query latency after {after:?}; RSS {} KiB",
        s.rss_kib()
    );
    drop(abuser);
}

/// (b) A 64 MiB request line without CRLF, and a head of too many header bytes: the server refuses after
/// its head limit and closes, so it neither reads nor keeps the rest.
#[test]
fn an_endless_request_line_is_refused_without_buffering_it() {
    let s = serve();
    let rss_before = s.rss_kib();
    let mut c = TcpStream::connect(&s.http).unwrap();
    c.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
    c.write_all(b"GET /").unwrap();
    let chunk = vec![b'a'; 64 * 1024];
    let total = 64 << 20;
    let mut accepted = 0usize;
    let t = Instant::now();
    while accepted < total {
        match c.write(&chunk) {
            Ok(n) => accepted += n,
            Err(_) => break,
        }
    }
    let rss_after = s.rss_kib();
    println!(
        "64 MiB request line: {accepted} bytes accepted before the server closed ({:?}); collector RSS \
         {rss_before} KiB before, {rss_after} KiB after",
        t.elapsed()
    );
    assert!(
        accepted < 16 << 20,
        "the server took {accepted} bytes of one request line"
    );
    assert!(
        rss_after < rss_before + 16 * 1024,
        "the collector grew from {rss_before} to {rss_after} KiB"
    );
    drop(c);

    // Headers past the limit (64 KiB of them, sent whole): refused with 431 or reset, never answered 200.
    let mut c = TcpStream::connect(&s.http).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    c.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut req = String::from("GET /metrics HTTP/1.1\r\nHost: x\r\n");
    for i in 0..1024 {
        req.push_str(&format!("X-Filler-{i}: {}\r\n", "b".repeat(48)));
    }
    req.push_str("\r\n");
    let _ = c.write_all(req.as_bytes());
    let mut answer = Vec::new();
    let outcome = c.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    println!("64 KiB of headers: {outcome:?}, {:?}", text.lines().next());
    assert!(
        text.starts_with("HTTP/1.1 431") || (outcome.is_err() && answer.is_empty()),
        "over-long headers were not refused: {outcome:?} {text:?}"
    );
    query_answered(&s.http);
}

/// (c) Query parameters are percent-decoded.
#[test]
fn query_parameters_are_percent_decoded() {
    let s = serve();
    let plain = get(&s.http, "/query/keyincrement?key=42&n=2").unwrap();
    let encoded = get(&s.http, "/query/keyincrement?key=%34%32&n=%32").unwrap();
    assert_eq!(plain.0, 200, "{}", plain.1);
    assert_eq!(encoded, plain);
    assert_eq!(get(&s.http, "/query/keywrite?key=0x%32%61").unwrap().0, 200);
    // Append list 3 exists and list 4 does not: the decoded value is the one looked up.
    assert_eq!(get(&s.http, "/query/append?list=%33").unwrap().0, 200);
    assert_eq!(
        get(&s.http, "/query/append?list=%34").unwrap(),
        (404, r#"{"error":"no append region with id 4"}"#.to_string())
    );
}

/// (d) The connection cap: with 64 idle connections open, one more is answered 503 at once and closed
/// (counted); the idle ones are closed at the read deadline (10 s), and queries are answered again.
#[test]
fn connections_beyond_the_cap_are_refused_until_idle_ones_time_out() {
    let s = serve();
    // From 8 addresses, as many as each may hold: the whole cap.
    let idle: Vec<TcpStream> = (0..MAX_CONNECTIONS)
        .map(|k| connect_from([127, 0, 0, 10 + (k / PER_ADDRESS) as u8], &s.http))
        .collect();
    // The acceptor takes them in order; until it has counted them all (a loaded machine may take a
    // while), an extra connection is still served: ask until one is refused.
    let until = Instant::now() + Duration::from_secs(5);
    let (t, (status, body)) = loop {
        std::thread::sleep(Duration::from_millis(100));
        let t = Instant::now();
        let answer = get(&s.http, "/query/keywrite?key=42").expect("an answer to the extra one");
        if answer.0 == 503 || Instant::now() > until {
            break (t, answer);
        }
    };
    println!(
        "connection {}: HTTP {status} in {:?}: {body}",
        MAX_CONNECTIONS + 1,
        t.elapsed()
    );
    assert_eq!(status, 503, "{body}");

    let deadline = Instant::now() + Duration::from_secs(20);
    let latency = loop {
        let t = Instant::now();
        match get(&s.http, "/query/keywrite?key=42") {
            Ok((200, _)) => break t.elapsed(),
            Ok((503, _)) => {}
            other => panic!("unexpected answer while the cap is reached: {other:?}"),
        }
        assert!(
            Instant::now() < deadline,
            "idle connections were not closed at the read deadline"
        );
        std::thread::sleep(Duration::from_millis(250));
    };
    let refused = metric(
        &s.http,
        "dta_collector_http_refused_total{reason=\"connection_cap\"}",
    )
    .unwrap();
    // The first idle connection closed frees the slot that answered; the others reach their read
    // deadline at about the same time, but a loaded machine may run their threads later: ask (bounded).
    let idle_closed = loop {
        let n = metric(
            &s.http,
            "dta_collector_http_refused_total{reason=\"idle_timeout\"}",
        )
        .unwrap();
        if n >= MAX_CONNECTIONS as u64 || Instant::now() > deadline {
            break n;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    println!(
        "cap: {refused} connections refused while {MAX_CONNECTIONS} idle were held; {idle_closed} idle \
         closed at the deadline; query answered {latency:?} after they were"
    );
    assert!(refused >= 1);
    assert_eq!(idle_closed, MAX_CONNECTIONS as u64);
    // The idle clients see their connections closed.
    for mut c in idle {
        c.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
        let mut b = [0u8; 1];
        assert_eq!(c.read(&mut b).unwrap(), 0);
    }
}

/// (e) One host's keep-alive connections cannot lock the others out: past 8 open from one address its next
/// one is answered 503 (counted as `address_cap`), while a query from another address is answered at once.
#[test]
fn one_address_cannot_take_every_connection() {
    let s = serve();
    let hog = [127, 0, 0, 30];
    let idle: Vec<TcpStream> = (0..PER_ADDRESS)
        .map(|_| connect_from(hog, &s.http))
        .collect();
    // The acceptor counts them in order: ask from the same address until one is refused (bounded).
    let until = Instant::now() + Duration::from_secs(5);
    let status = loop {
        std::thread::sleep(Duration::from_millis(100));
        let mut c = connect_from(hog, &s.http);
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let _ = write!(c, "GET /metrics HTTP/1.0\r\n\r\n");
        let mut raw = Vec::new();
        let _ = c.read_to_end(&mut raw);
        let text = String::from_utf8_lossy(&raw).to_string();
        if text.starts_with("HTTP/1.1 503") || Instant::now() > until {
            break text;
        }
    };
    assert!(status.starts_with("HTTP/1.1 503"), "{status}");
    let latency = query_answered(&s.http);
    let refused = metric(
        &s.http,
        "dta_collector_http_refused_total{reason=\"address_cap\"}",
    )
    .unwrap();
    println!("one address: {PER_ADDRESS} held, {refused} refused; another's query answered in {latency:?}");
    assert!(refused >= 1);
    assert_eq!(
        metric(
            &s.http,
            "dta_collector_http_refused_total{reason=\"connection_cap\"}"
        ),
        Some(0)
    );
    drop(idle);
}

/// `/regions` tells anyone the layouts but not the virtual addresses and R_Keys: with those and a live
/// QPN, any host on the data path could write the collector's memory.
#[test]
fn regions_are_listed_without_their_keys() {
    let s = serve();
    let (status, body) = get(&s.http, "/regions").expect("GET /regions");
    assert_eq!(status, 200, "{body}");
    let regions: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    let list = regions.as_array().expect("a list");
    assert!(!list.is_empty(), "{body}");
    for r in list {
        assert!(r.get("kind").is_some() && r.get("len").is_some(), "{r}");
        assert!(r.get("va").is_none() && r.get("rkey").is_none(), "{r}");
    }
}
