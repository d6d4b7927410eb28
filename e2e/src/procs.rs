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
                            "{} exited before printing {prefix:?}; see {}",
                            self.name,
                            self.log.display()
                        );
                    }
                    if left.is_zero() {
                        bail!(
                            "{} did not print {prefix:?} in {timeout:?}; see {}",
                            self.name,
                            self.log.display()
                        );
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    bail!(
                        "{} closed stdout before printing {prefix:?}; see {}",
                        self.name,
                        self.log.display()
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
                        "{} exited with {status}; see {}",
                        self.name,
                        self.log.display()
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
