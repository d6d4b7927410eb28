//! A network namespace that a test creates and that is removed when the guard drops, even on panic.

use std::os::fd::AsRawFd;
use std::process::Command;

/// A named network namespace (`ip netns add`), deleted with everything in it on drop.
pub struct Netns {
    name: String,
}

/// Runs `ip` with `args`; the error carries the command and its stderr.
pub fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip {}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Netns {
    /// Creates namespace `name` with IPv6 off, so the kernel sends no router solicitations or MLD reports
    /// into links the test counts frames on.
    pub fn create(name: &str) -> Result<Self, String> {
        ip(&["netns", "add", name])?;
        let ns = Netns {
            name: name.to_owned(),
        };
        ns.exec(&["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"])?;
        ns.exec(&["sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"])?;
        Ok(ns)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Runs a command inside the namespace (`ip netns exec`).
    pub fn exec(&self, cmd: &[&str]) -> Result<(), String> {
        let mut args = vec!["netns", "exec", self.name.as_str()];
        args.extend_from_slice(cmd);
        ip(&args)
    }

    /// Runs `ip -n <ns> <args>`.
    pub fn ip(&self, args: &[&str]) -> Result<(), String> {
        let mut all = vec!["-n", self.name.as_str()];
        all.extend_from_slice(args);
        ip(&all)
    }

    /// Runs `f` on a thread that has entered the namespace. Sockets opened there stay in the namespace when
    /// used from other threads afterwards, so the test's own thread never changes namespace.
    pub fn run_in<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        let path = format!("/run/netns/{}", self.name);
        std::thread::scope(|s| {
            s.spawn(|| {
                let file =
                    std::fs::File::open(&path).unwrap_or_else(|e| panic!("open {path}: {e}"));
                // SAFETY: setns on a valid namespace descriptor changes only this thread's network namespace.
                let r = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
                assert_eq!(r, 0, "setns {path}: {}", std::io::Error::last_os_error());
                f()
            })
            .join()
            .expect("thread inside the namespace panicked")
        })
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        if let Err(e) = ip(&["netns", "del", &self.name]) {
            eprintln!("cleanup: {e}");
        }
    }
}

/// Creates a namespace for a test, or explains why the test is skipped. Returns `None` to skip; panics
/// instead when DTA_REQUIRE_NETNS=1, so that CI cannot pass by skipping.
pub fn netns_or_skip(name: &str) -> Option<Netns> {
    match Netns::create(name) {
        Ok(ns) => Some(ns),
        Err(e) => {
            if std::env::var("DTA_REQUIRE_NETNS").as_deref() == Ok("1") {
                panic!("DTA_REQUIRE_NETNS=1 but a network namespace cannot be created: {e}");
            }
            eprintln!("SKIP: cannot create a network namespace (needs root and iproute2): {e}");
            None
        }
    }
}
