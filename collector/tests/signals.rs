//! `dta-collector serve` under SIGHUP and SIGUSR1 (issue 26, item 11): by default both killed it, its
//! regions with it, and said nothing. Now SIGHUP is ignored (logged) and SIGUSR1 prints the counters so
//! far; the collector keeps running and keeps answering, and SIGTERM still stops it.
#![cfg(feature = "server")]

mod process;

use std::time::{Duration, Instant};

use dta_collector::client;
use process::{example, serve};

fn kill(pid: u32, sig: i32) {
    // SAFETY: kill(2) on our own child.
    assert_eq!(unsafe { libc::kill(pid as i32, sig) }, 0);
}

#[test]
fn sighup_is_ignored_and_sigusr1_prints_the_counters() {
    let mut s = serve(&example(), &[]);
    let (status, _) = client::get(&s.http, "/query/keywrite?key=42").unwrap();
    assert_eq!(status, 200);
    kill(s.child.id(), libc::SIGHUP);
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        s.child.try_wait().unwrap().is_none(),
        "SIGHUP killed the collector"
    );
    let (status, _) = client::get(&s.http, "/query/keywrite?key=42").unwrap();
    assert_eq!(status, 200, "still answering after SIGHUP");
    kill(s.child.id(), libc::SIGUSR1);
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut seen = Vec::new();
    // The header, then the counters so far: the two queries above among them.
    while !seen.iter().any(|l: &String| {
        l.trim() == "dta_collector_queries_total{kind=\"keywrite\",result=\"ok\"} 2"
    }) {
        let left = deadline.saturating_duration_since(Instant::now());
        match s.lines.recv_timeout(left) {
            Ok(l) => seen.push(l),
            Err(_) => panic!("no counters within 10 s of SIGUSR1: {seen:?}"),
        }
    }
    assert!(
        seen.iter()
            .any(|l| l == "dta-collector counters on SIGUSR1"),
        "{seen:?}"
    );
    assert!(
        s.child.try_wait().unwrap().is_none(),
        "SIGUSR1 killed the collector"
    );
    kill(s.child.id(), libc::SIGTERM);
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(st) = s.child.try_wait().unwrap() {
            break st;
        }
        assert!(Instant::now() < deadline, "no exit within 10 s of SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status}");
}
