//! The processes of the whole-system run: started pinned to one CPU, killed with the bench if it dies
//! (`PR_SET_PDEATHSIG`), stopped on drop (SIGTERM, then SIGKILL), and their DPDK runtime directories
//! removed, including those a killed earlier run left behind.

use std::fs::File;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// The prefix of every `--file-prefix` this bench gives, followed by its pid.
pub const PREFIX: &str = "dta-sys";

/// Where DPDK keeps a process's runtime files for `--file-prefix prefix`.
fn runtime_dir(prefix: &str) -> PathBuf {
    let base = if unsafe { libc::geteuid() } == 0 {
        PathBuf::from("/var/run/dpdk")
    } else {
        std::env::var_os("XDG_RUNTIME_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/tmp"))
            .join("dpdk")
    };
    base.join(prefix)
}

/// This run's `--file-prefix` for `role`.
pub fn file_prefix(role: &str) -> String {
    format!("{PREFIX}-{}-{role}", std::process::id())
}

/// Removes the runtime directories of earlier runs whose bench process is gone.
pub fn remove_stale_runtime_dirs() {
    let Some(base) = runtime_dir("x").parent().map(Path::to_path_buf) else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(&base) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(&format!("{PREFIX}-"))
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        // SAFETY: signal 0 only checks that the process exists.
        let alive = unsafe { libc::kill(pid, 0) } == 0;
        if !alive {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// A started process.
pub struct Proc {
    pub name: String,
    child: Option<Child>,
    prefix: Option<String>,
}

impl Proc {
    /// Starts `cmd` pinned to `cpu`, its stdout and stderr to `dir/name.out` and `dir/name.log`; `prefix`
    /// is its DPDK `--file-prefix`, whose directory goes when it stops.
    pub fn start(
        name: &str,
        mut cmd: Command,
        cpu: usize,
        dir: &Path,
        prefix: Option<String>,
    ) -> Result<Proc> {
        let out = File::create(dir.join(format!("{name}.out")))?;
        let err = File::create(dir.join(format!("{name}.log")))?;
        cmd.stdin(Stdio::piped()).stdout(out).stderr(err);
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(cpu, &mut set);
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().with_context(|| format!("starting {name}"))?;
        Ok(Proc {
            name: name.to_string(),
            child: Some(child),
            prefix,
        })
    }

    /// Its standard input (a pipe; dropping it closes it).
    pub fn stdin(&mut self) -> Option<&mut std::process::ChildStdin> {
        self.child.as_mut().and_then(|c| c.stdin.as_mut())
    }

    /// Closes its standard input.
    pub fn close_stdin(&mut self) {
        if let Some(c) = self.child.as_mut() {
            c.stdin.take();
        }
    }

    /// Its process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Fails if it has exited.
    pub fn check_running(&mut self) -> Result<()> {
        if let Some(c) = self.child.as_mut() {
            if let Some(st) = c.try_wait()? {
                bail!("{} exited early ({st})", self.name);
            }
        }
        Ok(())
    }

    /// Waits up to `limit` for it to exit by itself; true if it did (with success).
    pub fn wait_for(&mut self, limit: Duration) -> Result<bool> {
        let start = Instant::now();
        let Some(c) = self.child.as_mut() else {
            return Ok(true);
        };
        loop {
            if let Some(st) = c.try_wait()? {
                self.child = None;
                self.remove_runtime_dir();
                if !st.success() {
                    bail!("{} failed ({st})", self.name);
                }
                return Ok(true);
            }
            if start.elapsed() >= limit {
                return Ok(false);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGTERM (or `signal`), up to `grace` to exit, then SIGKILL.
    pub fn stop(&mut self, signal: i32, grace: Duration) {
        if let Some(mut c) = self.child.take() {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(c.id() as i32, signal) };
            let start = Instant::now();
            while start.elapsed() < grace {
                if let Ok(Some(_)) = c.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            if let Ok(None) = c.try_wait() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
        self.remove_runtime_dir();
    }

    fn remove_runtime_dir(&self) {
        if let Some(p) = &self.prefix {
            let _ = std::fs::remove_dir_all(runtime_dir(p));
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.stop(libc::SIGTERM, Duration::from_secs(3));
    }
}

/// A free TCP port on the loopback (bound and released; the daemons bind it a moment later).
pub fn free_port() -> Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

/// GET `path` from `addr` (HTTP/1.1, one request a connection); the body.
pub fn http_get(addr: SocketAddr, path: &str) -> Result<String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut text = String::new();
    s.read_to_string(&mut text)?;
    let (head, body) = text
        .split_once("\r\n\r\n")
        .context("HTTP answer without a header end")?;
    if !head.starts_with("HTTP/1.1 200") {
        bail!(
            "GET {path} from {addr}: {}",
            head.lines().next().unwrap_or("")
        );
    }
    Ok(body.to_string())
}

/// CPU time (user + system, seconds) and involuntary context switches of every thread of `pid`, from
/// /proc (zeros if it is gone).
pub fn cpu_and_preemptions(pid: u32) -> (f64, u64) {
    let tick = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return (0.0, 0);
    };
    let (mut cpu, mut preempted) = (0.0, 0);
    for t in tasks.flatten() {
        if let Ok(stat) = std::fs::read_to_string(t.path().join("stat")) {
            // Fields after the command's closing parenthesis: state is 3rd, utime 14th, stime 15th.
            if let Some((_, rest)) = stat.rsplit_once(')') {
                let f: Vec<&str> = rest.split_whitespace().collect();
                let ticks = |i: usize| f.get(i - 3).and_then(|x| x.parse::<f64>().ok());
                cpu += ticks(14).unwrap_or(0.0) + ticks(15).unwrap_or(0.0);
            }
        }
        if let Ok(status) = std::fs::read_to_string(t.path().join("status")) {
            preempted += status
                .lines()
                .find_map(|l| l.strip_prefix("nonvoluntary_ctxt_switches:"))
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    (cpu / tick, preempted)
}
