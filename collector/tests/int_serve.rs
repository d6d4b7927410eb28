//! `dta-collector serve` with an `[int]` section, as a process: a bad section stops it at start-up with
//! the reason, a good one serves the INT routes.
#![cfg(feature = "server")]

mod int_support;
mod process;

use std::process::{Command, Stdio};

use dta_collector::client;
use int_support::CONFIG;

const CONTROL: &str = "[control]\nbind = \"127.0.0.1:0\"\ntoken = \"t\"\n";

fn config_file(name: &str, text: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("dta-int-{name}-{}.toml", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_bad_int_section_stops_serve_with_the_reason() {
    let cases = [
        (
            "missing-list",
            CONFIG.replace("drop_list = 4", "drop_list = 9"),
            "[int] drop_list = 9: no append region with id 9",
        ),
        (
            "small-entries",
            CONFIG.replace("entry_size = 16\nn_max = 4", "entry_size = 8\nn_max = 4"),
            "fewer than a 12-byte hop record",
        ),
    ];
    for (name, text, why) in cases {
        let path = config_file(name, &format!("{CONTROL}{text}"));
        let out = Command::new(env!("CARGO_BIN_EXE_dta-collector"))
            .args(["serve", "--backend", "soft", "--config"])
            .arg(&path)
            .args(["--http", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let _ = std::fs::remove_file(&path);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{name}: {err}");
        assert!(err.contains(why), "{name}: {err}");
    }
}

#[test]
fn serve_answers_the_int_routes() {
    let path = config_file("serve", &format!("{CONTROL}{CONFIG}"));
    let s = process::serve(path.to_str().unwrap(), &[]);
    let _ = std::fs::remove_file(&path);
    let (status, body) = client::get(
        &s.http,
        "/query/int-path?flow=10.0.0.1,10.0.0.2,tcp,12345,80",
    )
    .unwrap();
    assert_eq!(
        (status, body.as_str()),
        (
            200,
            r#"{"flow":"10.0.0.1,10.0.0.2,6,12345,80","flow_key":1035330277,"outcome":"empty"}"#
        )
    );
    let (status, body) = client::get(
        &s.http,
        "/query/int-flow?flow=10.0.0.1,10.0.0.2,tcp,12345,80",
    )
    .unwrap();
    assert_eq!(status, 200);
    assert!(
        body.ends_with(r#""totals":{"hops_found":0,"latency_sum":0,"max_occupancy":null}}"#),
        "{body}"
    );
    // Five hops read, as [int] hops says.
    assert_eq!(body.matches(r#""outcome":"empty""#).count(), 5, "{body}");
    let (status, body) = client::get(&s.http, "/query/int-drops?node=7").unwrap();
    assert_eq!(
        (status, body.as_str()),
        (
            200,
            r#"{"node":7,"reason":null,"counts":[],"total":0,"events":[{"list":4,"head":0,"first":0,"scanned":0,"overrun":0,"next_tail":0,"events":[]}]}"#
        )
    );
    let (status, body) = client::get(&s.http, "/query/int-queues?node=7").unwrap();
    assert_eq!(
        (status, body.as_str()),
        (
            200,
            r#"{"node":7,"queue_id":null,"max_occupancy":null,"events":[{"list":5,"head":0,"first":0,"scanned":0,"overrun":0,"next_tail":0,"events":[]}]}"#
        )
    );
    let (_, metrics) = client::get(&s.http, "/metrics").unwrap();
    assert!(
        metrics.contains("dta_collector_queries_total{kind=\"postcard\",result=\"ok\"} 1"),
        "{metrics}"
    );
}
