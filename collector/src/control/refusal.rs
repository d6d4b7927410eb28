//! Refusals: the line that says why, sent at once to a connection over the limits, or sent and drained on
//! a served connection so that the peer reads it before the close.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use dta_protocol::control::{CollectorMessage, Refusal, CONTROL_VERSION};

/// After a refusal, how long and how much of the peer's further input is read and discarded.
const DRAIN: Duration = Duration::from_millis(400);
const DRAIN_BYTES: usize = 1 << 20;

/// Sends a refusal on a connection over the limits without waiting for it, and closes it.
pub(super) fn refuse_quickly(mut stream: TcpStream, error: String) {
    let _ = stream.set_nonblocking(true);
    let _ = stream.write_all(refusal_line(error).as_bytes());
    let _ = stream.shutdown(std::net::Shutdown::Both);
}

fn refusal_line(error: String) -> String {
    let r = CollectorMessage::Refusal(Refusal {
        version: CONTROL_VERSION,
        error,
    });
    let mut text = serde_json::to_string(&r).unwrap_or_default();
    text.push('\n');
    text
}

/// Logs why, sends the refusal line and ends the connection.
pub(super) fn refuse(stream: &mut TcpStream, peer: SocketAddr, why: String) -> std::io::Result<()> {
    log::warn!("refusing translator at {peer}: {why}");
    stream.write_all(refusal_line(why).as_bytes())?;
    let _ = stream.shutdown(std::net::Shutdown::Write);
    // Read what the peer still sends for a moment, so that closing with unread bytes (which sends a reset)
    // does not destroy the refusal before the peer has read it.
    let end = Instant::now() + DRAIN;
    let mut sink = [0u8; 4096];
    let mut drained = 0;
    while drained < DRAIN_BYTES && Instant::now() < end {
        let _ = stream.set_read_timeout(Some(DRAIN / 4));
        match stream.read(&mut sink) {
            Ok(0) => break,
            Ok(n) => drained += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    Ok(())
}
