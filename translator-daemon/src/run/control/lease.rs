//! The lease on our QPs: the welcome's connection, kept open with keep-alives and watched for its end.

use std::io::Write;
use std::net::TcpStream;
use std::time::Instant;

use dta_protocol::control::{KeepAlive, TranslatorMessage, CONTROL_VERSION, KEEPALIVE_EVERY};

/// The open control connection of the last welcome: while it lives the collector keeps our QPs.
pub(super) struct Lease {
    pub(super) stream: TcpStream,
    pub(super) last_sent: Instant,
}

impl Lease {
    pub(super) fn new(stream: TcpStream) -> Self {
        Lease {
            stream,
            last_sent: Instant::now(),
        }
    }

    /// Sends a keep-alive when one is due, and says whether the collector has ended the connection (it
    /// sends nothing after a welcome but a refusal before closing).
    pub(super) fn check(&mut self) -> std::result::Result<(), String> {
        if self.last_sent.elapsed() >= KEEPALIVE_EVERY {
            let ka = TranslatorMessage::KeepAlive(KeepAlive {
                version: CONTROL_VERSION,
            });
            let mut line = serde_json::to_string(&ka).map_err(|e| e.to_string())?;
            line.push('\n');
            self.stream
                .write_all(line.as_bytes())
                .map_err(|e| format!("sending a keep-alive: {e}"))?;
            self.last_sent = Instant::now();
        }
        let mut b = [0u8; 512];
        self.stream
            .set_nonblocking(true)
            .map_err(|e| e.to_string())?;
        let r = self.stream.peek(&mut b);
        let _ = self.stream.set_nonblocking(false);
        match r {
            Ok(0) => Err("the collector closed the control connection".into()),
            Ok(n) => Err(format!(
                "the collector ended the control connection: {}",
                String::from_utf8_lossy(&b[..n]).trim_end()
            )),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(()),
            Err(e) => Err(format!("control connection: {e}")),
        }
    }
}
