//! The daemons as child processes inside a namespace (`ip netns exec`, which execs, so the child's PID is
//! the daemon's). Their stdout is read line by line (they print the addresses they listen on), stderr goes
//! to a log file. Dropping a [`Proc`] kills it.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// A running daemon.
pub struct Proc {
    name: String,
    child: Child,
    lines: Receiver<String>,
    /// Where its stderr goes.
    pub log: PathBuf,
}

impl Proc {
    /// Starts `bin args` in namespace `ns` (`""`: this process's own), stderr to `log`.
    pub fn spawn(name: &str, ns: &str, bin: &Path, args: &[&str], log: &Path) -> Result<Proc> {
        let err = File::create(log).with_context(|| format!("creating {}", log.display()))?;
        // The init namespace (`""`) needs no `ip netns exec`.
        let mut cmd = if ns.is_empty() {
            Command::new(bin)
        } else {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", ns]).arg(bin);
            c
        };
        let mut child = cmd
            .args(args)
            .env(
                "RUST_LOG",
                std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into()),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(err)
            .spawn()
            .with_context(|| format!("starting {name}"))?;
        let out = child.stdout.take().context("child stdout")?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Proc {
            name: name.to_string(),
            child,
            lines: rx,
            log: log.to_path_buf(),
        })
    }

    /// The PID.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether it is still running.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The last lines of its log, for an error: the log may live where the reader cannot look (inside
    /// the rxe VM, whose files go with it), so the error carries them.
    fn log_tail(&self) -> String {
        const LINES: usize = 15;
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = &lines[lines.len().saturating_sub(LINES)..];
        if tail.is_empty() {
            return String::new();
        }
        format!("; its log ends:\n{}", tail.join("\n"))
    }

    /// Waits for a stdout line starting with `prefix` and returns it.
    pub fn wait_line(&mut self, prefix: &str, timeout: Duration) -> Result<String> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self
                .lines
                .recv_timeout(left.min(Duration::from_millis(200)))
            {
                Ok(l) if l.starts_with(prefix) => return Ok(l),
                Ok(_) => {}
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if !self.running() {
                        bail!(
                            "{} exited before printing {prefix:?}; see {}{}",
                            self.name,
                            self.log.display(),
                            self.log_tail()
                        );
                    }
                    if left.is_zero() {
                        bail!(
                            "{} did not print {prefix:?} in {timeout:?}; see {}{}",
                            self.name,
                            self.log.display(),
                            self.log_tail()
                        );
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    bail!(
                        "{} closed stdout before printing {prefix:?}; see {}{}",
                        self.name,
                        self.log.display(),
                        self.log_tail()
                    )
                }
            }
        }
    }

    /// Kills it at once (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Asks it to stop (SIGTERM) and returns the rest of its stdout once it exited.
    pub fn terminate(&mut self, timeout: Duration) -> Result<String> {
        // SAFETY: kill(2) on our own child's PID.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + timeout;
        let mut out = String::new();
        loop {
            while let Ok(l) = self.lines.try_recv() {
                out.push_str(&l);
                out.push('\n');
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                // The reader thread may still hold the last lines.
                while let Ok(l) = self.lines.recv_timeout(Duration::from_millis(200)) {
                    out.push_str(&l);
                    out.push('\n');
                }
                if !status.success() {
                    bail!(
                        "{} exited with {status}; see {}{}",
                        self.name,
                        self.log.display(),
                        self.log_tail()
                    );
                }
                return Ok(out);
            }
            if Instant::now() > deadline {
                self.kill();
                bail!("{} did not stop within {timeout:?} of SIGTERM", self.name);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process that exits before its line: the error names it and carries its log's last 15 lines, so
    /// that a failure inside the rxe VM (whose files go with it) still says why.
    #[test]
    fn an_early_exit_carries_the_end_of_the_log() {
        let log = std::env::temp_dir().join(format!("dta-procs-test-{}.log", std::process::id()));
        let script = "for i in $(seq 1 20); do echo \"line $i\" >&2; done; exit 3";
        let mut p = Proc::spawn("early", "", Path::new("/bin/sh"), &["-c", script], &log).unwrap();
        let e = p
            .wait_line("translator running", Duration::from_secs(30))
            .unwrap_err()
            .to_string();
        let _ = std::fs::remove_file(&log);
        assert!(e.starts_with("early "), "{e}");
        assert!(e.contains("before printing \"translator running\""), "{e}");
        let tail: Vec<String> = (6..=20).map(|i| format!("line {i}")).collect();
        assert!(
            e.ends_with(&format!("its log ends:\n{}", tail.join("\n"))),
            "{e}"
        );
        assert!(!e.contains("line 5\n"), "{e}");
    }
}
