//! Reading one line of a connection within a deadline for the whole line and a size limit.

use std::io::Read;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How reading one line ended.
pub(super) enum LineRead {
    /// A whole line, newline included.
    Line(Vec<u8>),
    /// The peer closed the connection; `partial` bytes of an unfinished line were dropped.
    Eof { partial: usize },
    /// No newline within the size limit.
    TooLong,
    /// The deadline passed; `partial` bytes had arrived.
    TimedOut { partial: usize },
}

/// Reads one line that must arrive whole before `deadline` and within `max` bytes. Bytes after the newline
/// stay in `pending` for the next line.
pub(super) fn read_line_by(
    stream: &mut TcpStream,
    pending: &mut Vec<u8>,
    deadline: Instant,
    max: usize,
    stop: &AtomicBool,
) -> std::io::Result<LineRead> {
    let mut scanned = 0;
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(i) = pending[scanned..].iter().position(|&b| b == b'\n') {
            let rest = pending.split_off(scanned + i + 1);
            return Ok(LineRead::Line(std::mem::replace(pending, rest)));
        }
        scanned = pending.len();
        if pending.len() >= max {
            return Ok(LineRead::TooLong);
        }
        let now = Instant::now();
        if now >= deadline || stop.load(Ordering::Relaxed) {
            return Ok(LineRead::TimedOut {
                partial: pending.len(),
            });
        }
        // Wake at least every second to notice a server stop.
        stream.set_read_timeout(Some((deadline - now).min(Duration::from_secs(1))))?;
        let want = chunk.len().min(max - pending.len());
        match stream.read(&mut chunk[..want]) {
            Ok(0) => {
                return Ok(LineRead::Eof {
                    partial: pending.len(),
                })
            }
            Ok(n) => pending.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(e),
        }
    }
}
