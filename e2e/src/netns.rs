//! Network namespaces made by the harness: created with `ip netns add`, deleted on drop (even on panic),
//! and a way to run code inside one on a short-lived thread.

use std::os::fd::AsRawFd;
use std::process::Command;

use anyhow::{bail, Context, Result};

/// Runs `cmd args` and returns its stdout; the error carries the command and its stderr.
pub fn run(cmd: &str, args: &[&str]) -> Result<String> {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .with_context(|| format!("running {cmd} {}", args.join(" ")))?;
    if !out.status.success() {
        bail!(
            "{cmd} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs `ip` with `args`; the error carries the command and its stderr.
pub fn ip(args: &[&str]) -> Result<()> {
    run("ip", args).map(drop)
}

/// A namespace deleted with everything in it when dropped, or the init namespace (name `""`), which is
/// used as it is and never deleted: rxe's UDP socket lives there, so a collector on Soft-RoCE must too.
#[derive(Debug)]
pub struct Netns {
    name: String,
}

impl Netns {
    /// Creates `name` with loopback up and IPv6 off (no router solicitations on the test links).
    pub fn create(name: &str) -> Result<Self> {
        ip(&["netns", "add", name])?;
        let ns = Netns {
            name: name.to_string(),
        };
        ns.ip(&["link", "set", "lo", "up"])?;
        for key in ["all", "default"] {
            ns.exec(&[
                "sysctl",
                "-qw",
                &format!("net.ipv6.conf.{key}.disable_ipv6=1"),
            ])?;
        }
        Ok(ns)
    }

    /// The namespace this process runs in (the VM's init namespace in the rxe suite); not deleted on drop.
    pub fn init() -> Self {
        Netns {
            name: String::new(),
        }
    }

    /// The name (`""` for the init namespace).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `ip -n <ns> args`.
    pub fn ip(&self, args: &[&str]) -> Result<()> {
        if self.name.is_empty() {
            return ip(args);
        }
        let mut all = vec!["-n", self.name.as_str()];
        all.extend_from_slice(args);
        ip(&all)
    }

    /// Runs a command inside (`ip netns exec`).
    pub fn exec(&self, cmd: &[&str]) -> Result<()> {
        if self.name.is_empty() {
            let (bin, args) = cmd.split_first().context("empty command")?;
            return run(bin, args).map(drop);
        }
        let mut all = vec!["netns", "exec", self.name.as_str()];
        all.extend_from_slice(cmd);
        ip(&all)
    }

    /// Runs `f` on a thread inside the namespace. Sockets opened there stay in it.
    pub fn run_in<T: Send>(&self, f: impl FnOnce() -> T + Send) -> Result<T> {
        enter_and_run(&self.name, f)
    }
}

/// Runs `f` on a thread that entered namespace `name` (`""`: the init namespace, entered by no one).
pub fn enter_and_run<T: Send>(name: &str, f: impl FnOnce() -> T + Send) -> Result<T> {
    if name.is_empty() {
        return std::thread::scope(|s| {
            s.spawn(f)
                .join()
                .map_err(|_| anyhow::anyhow!("thread in the init namespace panicked"))
        });
    }
    let path = format!("/run/netns/{name}");
    let file = std::fs::File::open(&path).with_context(|| format!("opening {path}"))?;
    std::thread::scope(|s| {
        s.spawn(|| {
            // SAFETY: setns with a valid namespace descriptor changes only this thread's network namespace.
            let r = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
            if r != 0 {
                bail!("setns {path}: {}", std::io::Error::last_os_error());
            }
            Ok(f())
        })
        .join()
        .map_err(|_| anyhow::anyhow!("thread inside {name} panicked"))?
    })
}

impl Drop for Netns {
    fn drop(&mut self) {
        if self.name.is_empty() {
            return;
        }
        if let Err(e) = ip(&["netns", "del", &self.name]) {
            eprintln!("cleanup: {e:#}");
        }
    }
}
