//! Reading the collector's answer to a hello: one line, within a size cap and one deadline for all of it.

use std::io::Read;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// How the answer to a hello is read: the whole line within `deadline` and `max` bytes. A welcome without
/// a newline used to grow the translator to 2 GiB, and one byte every 4 s kept it from ever starting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnswerLimits {
    /// The whole answer line, from sending the hello to its newline.
    pub deadline: Duration,
    /// Longest answer line, newline included.
    pub max: usize,
}

impl Default for AnswerLimits {
    fn default() -> Self {
        AnswerLimits {
            // As long as the collector gives a hello (its `hello_deadline`).
            deadline: Duration::from_secs(10),
            // A welcome is a few hundred bytes per region and 30 per QP; the collector's hellos are capped
            // at 256 KiB. 1 MiB is thousands of regions.
            max: 1 << 20,
        }
    }
}

/// Reads one line that must arrive whole before `deadline` and within `max` bytes.
pub(super) fn read_answer(stream: &mut TcpStream, limits: AnswerLimits) -> Result<String> {
    let deadline = Instant::now() + limits.deadline;
    let mut line = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let now = Instant::now();
        if now >= deadline {
            bail!(
                "no complete answer within {:?} ({} bytes received)",
                limits.deadline,
                line.len()
            );
        }
        stream.set_read_timeout(Some(deadline - now))?;
        // Never past the newline: what follows the answer is not ours to take (it stays in the socket).
        let want = chunk.len().min(limits.max - line.len());
        let n = match stream.peek(&mut chunk[..want]) {
            Ok(0) => bail!(
                "the collector closed the connection without answering ({} bytes of an answer)",
                line.len()
            ),
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) =>
            {
                continue
            }
            Err(e) => return Err(e).context("reading the answer"),
        };
        let take = chunk[..n]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(n, |i| i + 1);
        stream.read_exact(&mut chunk[..take])?;
        line.extend_from_slice(&chunk[..take]);
        if line.last() == Some(&b'\n') {
            return String::from_utf8(line).context("the answer is not UTF-8 text");
        }
        if line.len() >= limits.max {
            bail!(
                "the collector's answer is longer than {} bytes without a newline",
                limits.max
            );
        }
    }
}
