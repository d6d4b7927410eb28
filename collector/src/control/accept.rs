//! The accept loop: each connection given a slot and a thread, or refused over the limits.

use std::net::TcpListener;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::connection::serve_connection;
use super::refusal::refuse_quickly;
use super::shared::Shared;

/// How often the accept loop checks for shutdown.
const POLL: Duration = Duration::from_millis(50);
/// Refusals of connections over the limits are logged at most this often, with a count.
const REFUSAL_LOG_EVERY: Duration = Duration::from_secs(10);

pub(super) fn accept_loop(listener: TcpListener, server: Arc<Shared>) {
    let (mut refused, mut last_log) = (0u64, None::<Instant>);
    while !server.stop.load(Ordering::Relaxed) {
        server.reap();
        match listener.accept() {
            Ok((stream, peer)) => {
                let slot = match server.slots.take(peer.ip(), &server.limits) {
                    Ok(slot) => slot,
                    Err(why) => {
                        // Log the first refusal, then a count at most every REFUSAL_LOG_EVERY: a flood
                        // of connections must not become a flood of log lines.
                        refused += 1;
                        if last_log.map_or(true, |t| t.elapsed() >= REFUSAL_LOG_EVERY) {
                            log::warn!(
                                "refusing control connection from {peer}: {why} ({refused} refused since the last \
                                 such message)"
                            );
                            (refused, last_log) = (0, Some(Instant::now()));
                        }
                        refuse_quickly(stream, why);
                        continue;
                    }
                };
                let s = server.clone();
                let spawned = std::thread::Builder::new()
                    .name("dta-control-conn".into())
                    .spawn(move || {
                        let _slot = slot;
                        if let Err(e) = serve_connection(stream, peer, &s) {
                            log::warn!("control connection from {peer}: {e}");
                        }
                    });
                if let Err(e) = spawned {
                    log::error!("cannot serve control connection from {peer}: {e}");
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(POLL),
            Err(e) => {
                log::warn!("control accept: {e}");
                std::thread::sleep(POLL);
            }
        }
    }
}
