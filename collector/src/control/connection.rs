//! One connection's life: its lease on the QPs its hellos open, and its lines answered until EOF, a
//! refusal or a deadline.

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use dta_protocol::control::CollectorMessage;

use super::hello::answer;
use super::line::{read_line_by, LineRead};
use super::refusal::refuse;
use super::shared::Shared;
use super::LeaseId;

/// How long writing an answer may take before the connection is given up (a peer that does not read).
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// Ends a connection's lease however the connection ends: its QPs then have the grace period.
struct LeaseGuard<'a> {
    server: &'a Shared,
    lease: LeaseId,
    peer: SocketAddr,
    welcomed: bool,
}

impl Drop for LeaseGuard<'_> {
    fn drop(&mut self) {
        let grace = self.server.limits.qps.grace;
        self.server
            .table()
            .end_lease(self.lease, Instant::now(), grace);
        if self.welcomed {
            log::info!(
                "control connection from {peer} ended; its QPs are closed in {grace:?} unless it says \
                 hello again",
                peer = self.peer
            );
        }
    }
}

/// Answers hellos on one connection until EOF, a refusal or a deadline. A translator may say hello again
/// on the same connection to re-establish its QPs after an error.
pub(super) fn serve_connection(
    mut stream: TcpStream,
    peer: SocketAddr,
    server: &Shared,
) -> std::io::Result<()> {
    let limits = &server.limits;
    stream.set_nonblocking(false)?;
    stream.set_write_timeout(Some(WRITE_TIMEOUT))?;
    let mut pending = Vec::new();
    let mut deadline = Instant::now() + limits.hello_deadline;
    let mut lease = LeaseGuard {
        server,
        lease: server.next_lease.fetch_add(1, Ordering::Relaxed),
        peer,
        welcomed: false,
    };
    server.table().connected(lease.lease, peer);
    loop {
        let welcomed = lease.welcomed;
        let line = match read_line_by(
            &mut stream,
            &mut pending,
            deadline,
            limits.max_hello,
            &server.stop,
        )? {
            LineRead::Line(l) => l,
            LineRead::Eof { .. } | LineRead::TimedOut { partial: 0 } if welcomed => return Ok(()),
            LineRead::Eof { partial } => {
                if partial > 0 || !welcomed {
                    log::info!(
                        "control connection from {peer} closed without a complete hello ({partial} bytes)"
                    );
                }
                return Ok(());
            }
            LineRead::TimedOut { partial } => {
                let why = format!(
                    "no complete hello within {:?} ({partial} bytes received)",
                    if welcomed {
                        limits.idle_deadline
                    } else {
                        limits.hello_deadline
                    }
                );
                return refuse(&mut stream, peer, why);
            }
            LineRead::TooLong => {
                let why = format!("hello longer than {} bytes", limits.max_hello);
                return refuse(&mut stream, peer, why);
            }
        };
        let reply = match String::from_utf8(line) {
            Err(e) => Err(format!(
                "hello is not UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            )),
            Ok(text) => answer(&text, server, lease.lease, welcomed),
        };
        match reply {
            Ok(Some(w)) => {
                let mut text = serde_json::to_string(&CollectorMessage::Welcome(w))
                    .map_err(std::io::Error::other)?;
                text.push('\n');
                stream.write_all(text.as_bytes())?;
                lease.welcomed = true;
                deadline = Instant::now() + limits.idle_deadline;
            }
            // A keep-alive: the translator is still there.
            Ok(None) => deadline = Instant::now() + limits.idle_deadline,
            Err(why) => return refuse(&mut stream, peer, why),
        }
    }
}
