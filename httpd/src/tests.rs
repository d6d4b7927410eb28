use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use crate::serve::{parse, response, Parsed};
use crate::{Config, HttpStats, Limits, Request, Response, Server};

fn head(req: &str, max_body: usize) -> crate::serve::Head {
    match parse(req.as_bytes(), max_body) {
        Parsed::Complete(h) => h,
        Parsed::Partial => panic!("partial: {req:?}"),
        Parsed::Refuse(s, why) => panic!("refused {s} {why}: {req:?}"),
    }
}

fn refused(req: &str, max_body: usize) -> u16 {
    match parse(req.as_bytes(), max_body) {
        Parsed::Refuse(s, _) => s,
        _ => panic!("not refused: {req:?}"),
    }
}

#[test]
fn parses_heads_and_refuses_what_it_does_not_take() {
    let h = head("GET /a?b=1 HTTP/1.1\r\nHost: x\r\n\r\nGET /next", 0);
    assert_eq!((h.method.as_str(), h.target.as_str()), ("GET", "/a?b=1"));
    assert_eq!((h.len, h.body), (32, 0));
    assert!(h.keep_alive, "HTTP/1.1 keeps alive by default");
    assert!(!head("GET / HTTP/1.0\r\n\r\n", 0).keep_alive);
    assert!(!head("GET / HTTP/1.1\r\nConnection: keep-alive, Close\r\n\r\n", 0).keep_alive);
    assert_eq!(
        head("POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\n", 5).body,
        5
    );
    assert!(matches!(
        parse(b"GET / HTTP/1.1\r\nHost", 0),
        Parsed::Partial
    ));
    assert_eq!(
        refused("POST / HTTP/1.1\r\nContent-Length: 6\r\n\r\n", 5),
        413
    );
    assert_eq!(
        refused("POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n", 5),
        400
    );
    assert_eq!(
        refused("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 5),
        400
    );
    assert_eq!(refused("\x16\x03\x01 not http\r\n\r\n", 0), 400);
    let many = format!("GET / HTTP/1.1\r\n{}\r\n", "A: b\r\n".repeat(65));
    assert_eq!(refused(&many, 0), 431);
}

#[test]
fn responses_carry_length_and_connection() {
    let r = String::from_utf8(response(404, "text/plain", "no\n", false)).unwrap();
    assert_eq!(
        r,
        "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\
         Connection: close\r\n\r\nno\n"
    );
    let r = String::from_utf8(response(200, "a/b", "", true)).unwrap();
    assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
    assert!(r.contains("Connection: keep-alive\r\n"), "{r}");
}

#[test]
fn requests_split_path_and_query() {
    let stats = HttpStats::default();
    let r = Request {
        method: "GET",
        target: "/query/keywrite?key=%34%32&n=1",
        stats: &stats,
    };
    assert_eq!(r.path(), "/query/keywrite");
    assert_eq!(r.query(), "key=%34%32&n=1");
    let r = Request {
        target: "/metrics",
        ..r
    };
    assert_eq!((r.path(), r.query()), ("/metrics", ""));
}

#[test]
fn stats_render_under_the_prefix() {
    let stats = HttpStats::default();
    stats
        .write_timeouts
        .fetch_add(2, std::sync::atomic::Ordering::Relaxed);
    let text = stats.render("dta_collector");
    assert!(text.contains("# TYPE dta_collector_http_connections counter\n"));
    assert!(text.contains("dta_collector_http_connections_active 0\n"));
    assert!(text.contains("dta_collector_http_refused_total{reason=\"write_timeout\"} 2\n"));
    assert!(text.contains("dta_collector_http_refused_total{reason=\"connection_cap\"} 0\n"));
    assert!(text
        .lines()
        .all(|l| l.is_empty() || l.contains("dta_collector_http_")));
}

/// A server answering `/metrics` with its own counters under `demo_`, and 404 otherwise.
fn demo(limits: Limits) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let config = Config {
        name: "httpd-test".into(),
        limits,
        ..Config::default()
    };
    Server::start(listener, config, |req: &Request| match req.target() {
        "/metrics" => Response::new(
            200,
            "text/plain; version=0.0.4",
            format!("demo_up 1\n{}", req.stats().render("demo")),
        ),
        other => Response::new(
            404,
            "text/plain; charset=utf-8",
            format!("no such endpoint {other}\n"),
        ),
    })
    .unwrap()
}

/// Sends `request` on a new connection and reads until the server closes it.
fn exchange(addr: SocketAddr, request: &str) -> std::io::Result<String> {
    let mut c = TcpStream::connect(addr)?;
    c.set_read_timeout(Some(Duration::from_secs(5)))?;
    let _ = c.write_all(request.as_bytes());
    let mut text = String::new();
    c.read_to_string(&mut text)?;
    Ok(text)
}

fn get(addr: SocketAddr, path: &str) -> std::io::Result<String> {
    exchange(addr, &format!("GET {path} HTTP/1.0\r\n\r\n"))
}

/// A connection to `addr` from loopback address `from` (any 127.0.0.x is this host's).
fn connect_from(from: [u8; 4], addr: SocketAddr) -> std::io::Result<TcpStream> {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::IPV4, Type::STREAM, None)?;
    s.bind(&SocketAddr::from((from, 0)).into())?;
    s.connect(&addr.into())?;
    Ok(s.into())
}

/// `GET path` from loopback address `from`: the whole answer.
fn get_from(from: [u8; 4], addr: SocketAddr, path: &str) -> std::io::Result<String> {
    let mut c = connect_from(from, addr)?;
    c.set_read_timeout(Some(Duration::from_secs(5)))?;
    let _ = c.write_all(format!("GET {path} HTTP/1.0\r\n\r\n").as_bytes());
    let mut text = String::new();
    c.read_to_string(&mut text)?;
    Ok(text)
}

/// One client address cannot take every slot: past `max_per_address` open connections its next one is
/// answered 503 and counted (`address_cap`), while another address is still served and the total cap is
/// never reached.
#[test]
fn one_address_cannot_take_every_connection() {
    let limits = Limits {
        max_connections: 10,
        max_per_address: 3,
        read_timeout: Duration::from_secs(5),
        ..Limits::default()
    };
    let server = demo(limits);
    let addr = server.local_addr();
    let hog = [127, 0, 0, 2];
    let idle: Vec<TcpStream> = (0..3).map(|_| connect_from(hog, addr).unwrap()).collect();
    // The acceptor counts them in order: ask from the same address until one is refused (bounded).
    let deadline = Instant::now() + Duration::from_secs(5);
    let refused = loop {
        let text = get_from(hog, addr, "/metrics").unwrap();
        if text.starts_with("HTTP/1.1 503") || Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    // Another address is served meanwhile.
    let text = get_from([127, 0, 0, 3], addr, "/metrics").unwrap();
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(
        !text.contains("demo_http_refused_total{reason=\"address_cap\"} 0\n"),
        "{text}"
    );
    assert!(
        text.contains("demo_http_refused_total{reason=\"connection_cap\"} 0\n"),
        "{text}"
    );
    drop(idle);
}

#[test]
fn keeps_alive_answers_the_handler_and_refuses_with_the_config_body() {
    let server = demo(Limits::default());
    let addr = server.local_addr();
    let text = get(addr, "/nowhere").unwrap();
    assert!(text.starts_with("HTTP/1.1 404 Not Found\r\n"), "{text}");
    assert!(text.ends_with("no such endpoint /nowhere\n"), "{text}");

    // Two pipelined requests on one kept-alive connection, then one that closes it.
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    c.write_all(
        b"GET /metrics HTTP/1.1\r\n\r\nGET /metrics HTTP/1.1\r\n\r\nGET /x HTTP/1.1\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let mut text = String::new();
    c.read_to_string(&mut text).unwrap();
    assert_eq!(text.matches("HTTP/1.1 200 OK\r\n").count(), 2, "{text}");
    assert_eq!(text.matches("Connection: keep-alive\r\n").count(), 2);
    assert!(text.contains("HTTP/1.1 404 Not Found\r\n"));
    assert!(text.contains("demo_http_requests_total 1\n"), "{text}");

    // A refusal the server makes itself uses the configured body (plain text by default).
    let text = exchange(
        addr,
        "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
    )
    .unwrap();
    assert!(text.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{text}");
    assert!(text.contains("Content-Type: text/plain; charset=utf-8\r\n"));
    assert!(
        text.ends_with("Transfer-Encoding is not supported\n"),
        "{text}"
    );
    assert_eq!(
        server
            .stats()
            .bad_requests
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
}

#[test]
fn dropping_the_server_closes_its_connections() {
    let server = demo(Limits::default());
    let mut idle = TcpStream::connect(server.local_addr()).unwrap();
    idle.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let t = Instant::now();
    drop(server);
    let mut rest = Vec::new();
    let _ = idle.read_to_end(&mut rest);
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "the idle connection outlived the server by {:?}",
        t.elapsed()
    );
}

/// The server holds under a client that pipelines and never reads, an endless request line and more
/// connections than its cap (small limits here; the collector's `tests/http_abuse.rs` uses the defaults
/// against the daemon).
#[test]
fn holds_under_abusive_clients() {
    let limits = Limits {
        max_connections: 3,
        read_timeout: Duration::from_secs(1),
        write_timeout: Duration::from_secs(1),
        ..Limits::default()
    };
    let server = demo(limits);
    let addr = server.local_addr();
    let scrape = || get(addr, "/metrics");

    // Three idle connections fill the cap: one more is answered 503.
    let idle: Vec<_> = (0..3).map(|_| TcpStream::connect(addr).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(300));
    let text = scrape().unwrap();
    assert!(text.starts_with("HTTP/1.1 503"), "{text}");
    // The read deadline frees them.
    let deadline = Instant::now() + Duration::from_secs(10);
    let text = loop {
        let text = scrape().unwrap();
        if text.starts_with("HTTP/1.1 200") {
            break text;
        }
        assert!(Instant::now() < deadline, "the cap was never freed: {text}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(text.contains("demo_http_refused_total{reason=\"connection_cap\"}"));
    assert!(!text.contains("demo_http_refused_total{reason=\"connection_cap\"} 0\n"));
    assert!(!text.contains("demo_http_refused_total{reason=\"idle_timeout\"} 0\n"));
    drop(idle);

    // Pipelines until the server stops reading; a scrape on another connection is still answered.
    let mut abuser = TcpStream::connect(addr).unwrap();
    abuser
        .set_write_timeout(Some(Duration::from_secs(1)))
        .unwrap();
    let batch = "GET /metrics HTTP/1.1\r\n\r\n".repeat(100);
    for _ in 0..2000 {
        if abuser.write_all(batch.as_bytes()).is_err() {
            break;
        }
    }
    // The cap is small: a slot of an earlier scrape is freed when its thread ends, which a loaded
    // machine may not have run yet, so "busy" is asked again.
    let deadline = Instant::now() + Duration::from_secs(5);
    let text = loop {
        let text = scrape().unwrap();
        if !text.starts_with("HTTP/1.1 503") || Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains("demo_up 1\n"));

    // 8 MiB of request line: refused after the head limit, the rest never read.
    let mut long = TcpStream::connect(addr).unwrap();
    long.set_write_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let chunk = vec![b'a'; 64 * 1024];
    let mut accepted = 0usize;
    while accepted < 8 << 20 {
        match long.write(&chunk) {
            Ok(n) => accepted += n,
            Err(_) => break,
        }
    }
    assert!(
        accepted < 8 << 20,
        "{accepted} bytes of one request line taken"
    );
    drop(long);

    // The abuser's connection is closed at the write deadline.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = scrape().unwrap();
        if text.contains("demo_http_refused_total{reason=\"write_timeout\"} 1\n") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the abuser was never closed: {text}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(abuser);
    drop(server);
}
