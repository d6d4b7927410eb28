//! Process and machine facts: per-thread CPU time, peak RSS, CPU pinning, and the machine description every
//! figure carries.

use serde::Serialize;

/// CPU time of the calling thread (user + system), ns.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out pointer; CLOCK_THREAD_CPUTIME_ID always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CPU time of the whole process (every thread, user + system), ns.
pub fn process_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Peak resident set of this process (VmHWM), KiB; 0 if /proc is unreadable.
pub fn vm_hwm_kib() -> u64 {
    status_field("VmHWM:")
}

fn status_field(name: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_whitespace().nth(1).map(str::to_owned))
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Pins the calling thread to CPU `cpu` modulo the CPUs online, so two workers never share a core by the
/// scheduler's choice. Best effort: a refused pin leaves the thread where it is.
pub fn pin_to_cpu(cpu: usize) {
    let n = online_cpus();
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET stays within it for cpu < CPU_SETSIZE.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu % n, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// CPUs online. Not `available_parallelism`: that reads this thread's affinity, which the EAL narrows to
/// its main lcore, and every thread spawned after `rte_eal_init` inherits it.
pub fn online_cpus() -> usize {
    // SAFETY: plain query.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n).unwrap_or(1).max(1)
}

/// The machine a figure ran on.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Machine {
    pub cpu_model: String,
    pub cores: usize,
    pub kernel: String,
    pub dpdk_version: String,
    pub hugepages: bool,
    /// 1-minute load average before the run and the number of CPUs: others share this machine.
    pub loadavg_before: String,
}

impl Machine {
    pub fn probe(hugepages: bool) -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split(':').nth(1))
            .map_or_else(|| "unknown".into(), |s| s.trim().to_owned());
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map_or_else(|_| "unknown".into(), |s| s.trim().to_owned());
        let dpdk_version = std::process::Command::new("pkg-config")
            .args(["--modversion", "libdpdk"])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map_or_else(
                || "unknown".into(),
                |o| String::from_utf8_lossy(&o.stdout).trim().to_owned(),
            );
        let loadavg_before = std::fs::read_to_string("/proc/loadavg")
            .map_or_else(|_| "unknown".into(), |s| s.trim().to_owned());
        Machine {
            cpu_model,
            cores: online_cpus(),
            kernel,
            dpdk_version,
            hugepages,
            loadavg_before,
        }
    }

    /// One line for captions and tables.
    pub fn line(&self) -> String {
        format!(
            "{}, {} cores, Linux {}, DPDK {}, {}; load before run {}",
            self.cpu_model,
            self.cores,
            self.kernel,
            self.dpdk_version,
            if self.hugepages {
                "hugepages"
            } else {
                "no hugepages"
            },
            self.loadavg_before
        )
    }
}
