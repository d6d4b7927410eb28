//! The INT queries through the HTTP API (`/query/int-*`, the engine's JSON) and the CLI
//! (`dta-collector query int-*`): flow parsing, key-hash routing of int-path, and int-flow and int-drops
//! asked of every collector and joined.
#![cfg(feature = "server")]

mod int_support;

use std::process::{Command, Output};
use std::sync::Arc;

use dta_collector::engine::{DropsQuery, QueryEngine};
use dta_collector::http::{route, HttpServer, HttpStats};
use dta_collector::metrics::Metrics;
use dta_collector::query::int::{parse_flow, Shard, Window};
use int_support::*;

fn get(e: &QueryEngine, url: &str) -> (u16, String) {
    let (status, ctype, body) = route("GET", url, e, &Metrics::default(), &HttpStats::default());
    assert_eq!(ctype, "application/json");
    (status, body)
}

const F1_URL: &str = "10.0.0.1%2C10.0.0.2%2Ctcp%2C12345%2C80";

#[test]
fn http_int_path_answers_the_engines_json() {
    let e = engine(CONFIG);
    write_scenario(&e);
    let expected = r#"{"flow":"10.0.0.1,10.0.0.2,6,12345,80","flow_key":1035330277,"outcome":"found","path":[101,102,103,104,105],"chunks":2}"#;
    assert_eq!(
        get(&e, &format!("/query/int-path?flow={F1_URL}")),
        (200, expected.to_string())
    );
    // Commas need no escaping; n as for the postcard query.
    let (status, body) = get(&e, "/query/int-path?flow=10.0.0.1,10.0.0.2,6,12345,80&n=1");
    assert_eq!(status, 200);
    assert!(body.ends_with(r#""chunks":1}"#), "{body}");
    let (status, body) = get(&e, &format!("/query/int-path?flow={F2}"));
    assert_eq!(
        (status, body.as_str()),
        (
            200,
            r#"{"flow":"2001:db8::1,2001:db8::2,17,5000,4791","flow_key":396371169,"outcome":"empty"}"#
        )
    );
    let (status, body) = get(&e, &format!("/query/int-path?flow={F3}"));
    assert_eq!(status, 200);
    assert!(
        body.ends_with(r#""outcome":"conflict","paths":[[101,102],[101,103]]}"#),
        "{body}"
    );
}

#[test]
fn http_int_flow_answers_the_engines_json() {
    let e = engine(CONFIG);
    write_scenario(&e);
    let f1 = parse_flow(F1).unwrap();
    let whole = serde_json::to_string(&e.int_flow(&f1, None, 1, Shard::ALL).unwrap()).unwrap();
    assert_eq!(
        get(&e, &format!("/query/int-flow?flow={F1_URL}")),
        (200, whole.clone())
    );
    assert!(
        whole.contains(r#""totals":{"hops_found":3,"latency_sum":4800,"max_occupancy":{"hop":2,"node":102,"queue_id":1,"occupancy":70000}}"#),
        "{whole}"
    );
    // A shard: the hops collector 2 of 3 holds (2 and 5).
    let part = serde_json::to_string(
        &e.int_flow(&f1, None, 1, Shard { index: 2, count: 3 })
            .unwrap(),
    )
    .unwrap();
    let (status, body) = get(&e, &format!("/query/int-flow?flow={F1_URL}&shard=2/3"));
    assert_eq!((status, &body), (200, &part));
    assert!(body.contains(r#""hops":[{"hop":2,"#), "{body}");
    // Threshold 3 with N = 2: nothing can win.
    let (_, body) = get(&e, &format!("/query/int-flow?flow={F1_URL}&t=3"));
    assert!(
        body.ends_with(r#""totals":{"hops_found":0,"latency_sum":0,"max_occupancy":null}}"#),
        "{body}"
    );
}

#[test]
fn http_int_drops_answers_the_engines_json() {
    let e = engine(CONFIG);
    write_scenario(&e);
    let expected = concat!(
        r#"{"node":7,"reason":71,"counts":[{"reason":71,"key":2140398074,"count":5}],"total":5,"#,
        r#""events":[{"list":4,"head":5,"first":0,"scanned":5,"overrun":0,"next_tail":5,"events":["#,
        r#"{"flow":1035330277,"node":7,"port":130,"reason":71,"queue_id":2,"timestamp":1000},"#,
        r#"{"flow":396371169,"node":7,"port":12,"reason":71,"queue_id":1,"timestamp":1003}]}]}"#
    );
    assert_eq!(
        get(&e, "/query/int-drops?node=7&reason=71"),
        (200, expected.to_string())
    );
    assert_eq!(
        get(&e, "/query/int-drops?node=0x7&reason=0x47"),
        (200, expected.to_string())
    );
    let all = DropsQuery {
        node: 7,
        reason: None,
        n: None,
        window: Window {
            tail: None,
            max: 1024,
        },
        shard: Shard::ALL,
    };
    assert_eq!(
        get(&e, "/query/int-drops?node=7"),
        (
            200,
            serde_json::to_string(&e.int_drops(&all).unwrap()).unwrap()
        )
    );
    let window = DropsQuery {
        window: Window {
            tail: Some(1),
            max: 2,
        },
        shard: Shard { index: 1, count: 2 },
        ..all
    };
    assert_eq!(
        get(&e, "/query/int-drops?node=7&tail=1&max=2&shard=1/2"),
        (
            200,
            serde_json::to_string(&e.int_drops(&window).unwrap()).unwrap()
        )
    );
}

#[test]
fn http_int_routes_refuse_bad_parameters_clearly() {
    let e = engine(CONFIG);
    let cases = [
        (
            "/query/int-path",
            r#"{"error":"bad query: missing parameter flow (SRC,DST,PROTO,SPORT,DPORT)"}"#,
        ),
        (
            "/query/int-flow?flow=10.0.0.1",
            r#"{"error":"bad query: flow \"10.0.0.1\": 1 fields; expected SRC,DST,PROTO,SPORT,DPORT"}"#,
        ),
        (
            "/query/int-path?flow=10.0.0.1,::1,6,1,2",
            r#"{"error":"bad query: flow \"10.0.0.1,::1,6,1,2\": source and destination are of different IP versions"}"#,
        ),
        (
            "/query/int-drops",
            r#"{"error":"bad query: missing parameter node"}"#,
        ),
        (
            "/query/int-drops?node=seven",
            r#"{"error":"bad query: parameter node=\"seven\" is not a valid number"}"#,
        ),
        (
            "/query/int-drops?node=7&reason=256",
            r#"{"error":"bad query: parameter reason=\"256\" is not a valid number"}"#,
        ),
        (
            "/query/int-flow?flow=10.0.0.1,10.0.0.2,6,1,2&shard=2/2",
            r#"{"error":"bad query: shard \"2/2\" is not I/N with I < N (this collector's index among N)"}"#,
        ),
    ];
    for (url, body) in cases {
        assert_eq!(get(&e, url), (400, body.to_string()), "{url}");
    }
    // A region that is not configured is 404, as for the other queries.
    let no_list = engine("[[region]]\nkind = \"key_increment\"\nslots = 16\nn_max = 1\n");
    assert_eq!(
        get(&no_list, "/query/int-path?flow=10.0.0.1,10.0.0.2,6,1,2").0,
        404
    );
}

fn cli(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dta-collector"))
        .arg("query")
        .args(args)
        .env("RUST_LOG", "off")
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).trim_end().to_string()
}

#[test]
fn cli_refuses_bad_flows_before_asking() {
    let cases = [
        (
            "10.0.0.1,::1,6,1,2",
            "source and destination are of different IP versions",
        ),
        (
            "10.0.0.1,10.0.0.2,icmp,0,0",
            "protocol \"icmp\" is neither tcp, udp nor a number 0..=255",
        ),
        (
            "10.0.0.1,10.0.0.2,tcp,80",
            "4 fields; expected SRC,DST,PROTO,SPORT,DPORT",
        ),
        (
            "10.0.0.1,10.0.0.2,tcp,1,99999",
            "destination port \"99999\" is not a number 0..=65535",
        ),
    ];
    for (flow, why) in cases {
        for what in ["int-path", "int-flow"] {
            // Port 9 (discard) on loopback: a parse error must come before any connection.
            let o = cli(&["--server", "127.0.0.1:9", what, "--flow", flow]);
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(!o.status.success());
            assert!(err.contains(why), "{flow}: {err}");
            assert!(err.contains("--flow"), "{err}");
            assert!(!err.contains("connecting"), "{err}");
        }
    }
    let o = cli(&[
        "--server",
        "127.0.0.1:9",
        "int-drops",
        "--node",
        "7",
        "--reason",
        "300",
    ]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--reason"));
}

fn serve(e: &Arc<QueryEngine>) -> (HttpServer, String) {
    let s = HttpServer::start(
        "127.0.0.1:0".parse().unwrap(),
        e.clone(),
        Arc::new(Metrics::default()),
    )
    .unwrap();
    let addr = s.local_addr().to_string();
    (s, addr)
}

#[test]
fn cli_routes_int_path_by_the_flow_keys_hash() {
    // key_checksum(F1_KEY) = zlib.crc32(pack('<I', 0x3db5e2e5)) is even: collector 0 of 2 holds the path.
    let holder = engine(CONFIG);
    for copy in 0..2 {
        put_path(&holder, F1_KEY, copy, &[101, 102, 103, 104, 105]);
    }
    let other = engine(CONFIG);
    let ((_a, a), (_b, b)) = (serve(&holder), serve(&other));
    let found = r#"{"flow":"10.0.0.1,10.0.0.2,6,12345,80","flow_key":1035330277,"outcome":"found","path":[101,102,103,104,105],"chunks":2}"#;
    assert_eq!(
        stdout(&cli(&[
            "--server",
            &format!("{a},{b}"),
            "int-path",
            "--flow",
            F1
        ])),
        found
    );
    // In the other order the flow is routed to the collector without it.
    assert_eq!(
        stdout(&cli(&[
            "--server",
            &format!("{b},{a}"),
            "int-path",
            "--flow",
            F1
        ])),
        r#"{"flow":"10.0.0.1,10.0.0.2,6,12345,80","flow_key":1035330277,"outcome":"empty"}"#
    );
    // IPv6 flows go through the query string too.
    assert_eq!(
        stdout(&cli(&["--server", &a, "int-path", "--flow", F2])),
        r#"{"flow":"2001:db8::1,2001:db8::2,17,5000,4791","flow_key":396371169,"outcome":"empty"}"#
    );
}

#[test]
fn cli_joins_int_flow_hops_from_every_collector() {
    // Every hop record of F1 on the collector its key routes to among 3 (zlib.crc32(pack('<I', key))
    // % 3: hops 1, 3 → 0; 4 → 1; 2, 5 → 2), and all of them on one collector for the expected answer.
    let shards = [engine(CONFIG), engine(CONFIG), engine(CONFIG)];
    let whole = engine(CONFIG);
    let records = [
        (101, 1500, 2, 300),
        (102, 2500, 1, 70_000),
        (103, 800, 0, 1200),
        (104, 100, 7, 0xFF_FFFF),
        (105, 3, 0, 0),
    ];
    let home = [0, 2, 0, 1, 2];
    for (i, &(node, lat, q, occ)) in records.iter().enumerate() {
        for copy in 0..2 {
            put_key_write(
                &shards[home[i]],
                F1_HOP_KEYS[i],
                copy,
                hop_record(node, lat, q, occ),
            );
            put_key_write(&whole, F1_HOP_KEYS[i], copy, hop_record(node, lat, q, occ));
        }
    }
    let servers: Vec<(HttpServer, String)> = shards.iter().map(serve).collect();
    let list = servers
        .iter()
        .map(|(_, a)| a.as_str())
        .collect::<Vec<_>>()
        .join(",");
    let expected = serde_json::to_string(
        &whole
            .int_flow(&parse_flow(F1).unwrap(), None, 1, Shard::ALL)
            .unwrap(),
    )
    .unwrap();
    assert!(expected.contains(r#""totals":{"hops_found":5,"latency_sum":4903,"max_occupancy":{"hop":4,"node":104,"queue_id":7,"occupancy":16777215}}"#), "{expected}");
    assert_eq!(
        stdout(&cli(&["--server", &list, "int-flow", "--flow", F1])),
        expected
    );
    // Asked in another order, each collector is asked for keys it does not hold: nothing is found.
    let reversed = servers
        .iter()
        .rev()
        .map(|(_, a)| a.as_str())
        .collect::<Vec<_>>()
        .join(",");
    let out = stdout(&cli(&["--server", &reversed, "int-flow", "--flow", F1]));
    assert!(out.contains(r#""hops_found":1,"#), "{out}");
}

#[test]
fn cli_joins_int_drops_from_every_collector() {
    // Node 7's counters: reason 71 on collector 0 of 2, reason 3 on collector 1; the drop list on 0.
    let first = engine(CONFIG);
    let second = engine(&config_without_drop_list());
    for copy in 0..2 {
        put_counter(&first, DROP_7_71, copy, 5);
    }
    put_counter(&second, DROP_7_3, 0, 2);
    put_counter(&second, DROP_7_3, 1, 3);
    put_list(&first, 4, 0, &drop_events(), 5);
    let whole = engine(CONFIG);
    write_scenario(&whole);
    let ((_a, a), (_b, b)) = (serve(&first), serve(&second));
    let out = stdout(&cli(&[
        "--server",
        &format!("{a},{b}"),
        "int-drops",
        "--node",
        "7",
    ]));
    let all = DropsQuery {
        node: 7,
        reason: None,
        n: None,
        window: Window {
            tail: None,
            max: 1024,
        },
        shard: Shard::ALL,
    };
    assert_eq!(
        out,
        serde_json::to_string(&whole.int_drops(&all).unwrap()).unwrap()
    );
    assert!(out.contains(r#""counts":[{"reason":3,"key":237134963,"count":2},{"reason":71,"key":2140398074,"count":5}],"total":7,"#), "{out}");
    // One collector alone answers through the same CLI, unjoined.
    let out = stdout(&cli(&[
        "--server",
        &b,
        "int-drops",
        "--node",
        "7",
        "--reason",
        "3",
    ]));
    assert_eq!(
        out,
        r#"{"node":7,"reason":3,"counts":[{"reason":3,"key":237134963,"count":2}],"total":2,"events":[]}"#
    );
}

#[test]
fn int_queues_over_http_and_from_the_collector_with_the_list() {
    let with = engine(CONFIG);
    put_list(&with, 5, 0, &queue_events(), 4);
    let expected = concat!(
        r#"{"node":7,"queue_id":1,"max_occupancy":7000,"events":[{"list":5,"head":4,"first":0,"#,
        r#""scanned":4,"overrun":0,"next_tail":4,"events":["#,
        r#"{"node":7,"port":130,"queue_id":1,"occupancy":5000,"timestamp":100},"#,
        r#"{"node":7,"port":130,"queue_id":1,"occupancy":7000,"timestamp":103}]}]}"#
    );
    assert_eq!(
        get(&with, "/query/int-queues?node=7&queue=1"),
        (200, expected.to_string())
    );
    assert_eq!(
        get(&with, "/query/int-queues?queue=1").1,
        r#"{"error":"bad query: missing parameter node"}"#
    );
    let without = engine(&CONFIG.replace("queue_list = 5\n", ""));
    let ((_a, a), (_b, b)) = (serve(&without), serve(&with));
    let out = stdout(&cli(&[
        "--server",
        &format!("{a},{b}"),
        "int-queues",
        "--node",
        "7",
        "--queue",
        "1",
    ]));
    assert_eq!(out, expected);
}
