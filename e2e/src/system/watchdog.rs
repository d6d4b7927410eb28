//! The watchdog of a run: a hung test is killed, cleaned up and failed.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// After `limit`, kills the daemons, removes the namespaces and exits with failure: a hung test must not
/// hang `make test`, nor leave namespaces behind. It writes to the process's stderr directly (the test
/// harness captures `eprintln!` and never shows it when the process exits), with the daemons' log tails.
pub(super) fn watchdog(
    limit: Duration,
    prefix: &str,
    dir: &std::path::Path,
    pids: Arc<Mutex<Vec<u32>>>,
    disarm: Arc<AtomicBool>,
) {
    let prefix = prefix.to_string();
    let dir = dir.to_path_buf();
    std::thread::spawn(move || {
        let end = Instant::now() + limit;
        while Instant::now() < end {
            if disarm.load(Ordering::Relaxed) {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let mut err = std::io::stderr();
        let _ = writeln!(
            err,
            "WATCHDOG: test {prefix} exceeded {limit:?}; cleaning up and failing"
        );
        for name in [
            "translator.log",
            "translator2.log",
            "twin.log",
            "collector.log",
        ] {
            if let Ok(text) = std::fs::read_to_string(dir.join(name)) {
                let lines: Vec<&str> = text.lines().collect();
                let _ = writeln!(err, "---- last lines of {name} ----");
                for l in &lines[lines.len().saturating_sub(30)..] {
                    let _ = writeln!(err, "{l}");
                }
            }
        }
        if let Ok(v) = pids.lock() {
            for &pid in v.iter() {
                // SAFETY: kill(2) on PIDs of our own children.
                unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            }
        }
        for s in ["r", "t", "c", "s", "u"] {
            let _ = crate::netns::ip(&["netns", "del", &format!("{prefix}{s}")]);
        }
        let _ = std::fs::remove_dir_all(&dir);
        std::process::exit(1);
    });
}
