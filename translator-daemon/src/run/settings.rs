//! The daemon's configuration: the engine's TOML (the sections `offline` reads) plus four daemon sections,
//! `[io]`, `[workers]`, `[[collectors]]` and `[metrics]`. They share one file so a deployment has one
//! place to look; the engine's own parser stays strict (unknown fields are errors) because the daemon
//! sections are taken out before the rest reaches it.

use std::net::SocketAddr;

use anyhow::{bail, Context, Result};
use dta_translator::Config;
use serde::Deserialize;

/// Which packet I/O backend drives the ports (dta-netio's, shared with the collector).
pub use dta_netio::IoKind;

/// `[io]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IoSection {
    /// Backend.
    pub kind: IoKind,
    /// One port, or two for a bump in the wire. AF_PACKET: interface names. DPDK: a device name the EAL
    /// knows (PCI address, vdev on the EAL command line) or vdev devargs such as
    /// `net_af_packet0,iface=eth1`, hot-plugged at start.
    pub ports: Vec<String>,
    /// Index of the port facing the collectors (RoCE frames leave there); default: the last port.
    pub collector_port: Option<usize>,
    /// EAL arguments, passed through verbatim (DPDK only).
    pub eal_args: Vec<String>,
    /// Most frames per receive burst.
    pub burst: usize,
    /// DPDK ports' MTU (largest IP packet); none keeps the device's, 1500 on most. Set it to the links'
    /// (9000 for jumbo frames) so that a DPDK bump in the wire forwards them: the mbufs grow to hold a
    /// whole frame. AF_PACKET ports always take frames up to an MTU of 9216.
    pub mtu: Option<u16>,
    /// Refused when set: it pinned the I/O thread, which the run-to-completion workers replaced (kept so
    /// that an old configuration gets that said rather than an unknown-key error).
    pub core: Option<usize>,
}

impl Default for IoSection {
    fn default() -> Self {
        IoSection {
            kind: IoKind::AfPacket,
            ports: Vec::new(),
            collector_port: None,
            eal_args: Vec::new(),
            burst: 64,
            mtu: None,
            core: None,
        }
    }
}

/// `[workers]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkersSection {
    /// Worker threads, each with its own engine and one QP per collector.
    pub count: usize,
    /// Core of each worker thread (as DPDK lcores: one thread per core, pinned); empty leaves them to the
    /// scheduler.
    pub cores: Vec<usize>,
}

impl Default for WorkersSection {
    fn default() -> Self {
        WorkersSection {
            count: 1,
            cores: Vec::new(),
        }
    }
}

/// One `[[collectors]]`: where its control server listens and the shared token.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CollectorSection {
    /// Control server address.
    pub control: SocketAddr,
    /// Shared token.
    pub token: String,
}

/// `[metrics]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsSection {
    /// Prometheus HTTP address.
    pub bind: SocketAddr,
}

/// The daemon's sections.
#[derive(Debug, Clone, Default)]
pub struct Daemon {
    /// Ports.
    pub io: IoSection,
    /// Workers.
    pub workers: WorkersSection,
    /// Collectors, in routing order.
    pub collectors: Vec<CollectorSection>,
    /// Metrics endpoint, if any.
    pub metrics: Option<MetricsSection>,
}

/// Everything `run` needs.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The engine's configuration (shared by every worker; per-worker QPNs are derived from it).
    pub engine: Config,
    /// The daemon's sections.
    pub daemon: Daemon,
}

/// The network device a port spec drives: the interface named by DPDK devargs' `iface=` (two vdevs on
/// one interface are one port), else the spec itself (an interface name, a PCI address, a vdev name).
fn port_device(spec: &str) -> &str {
    spec.split(',')
        .find_map(|kv| kv.trim().strip_prefix("iface="))
        .unwrap_or(spec)
        .trim()
}

fn take<T: for<'de> Deserialize<'de>>(table: &mut toml::Table, key: &str) -> Result<Option<T>> {
    match table.remove(key) {
        None => Ok(None),
        Some(v) => Ok(Some(v.try_into().with_context(|| {
            format!("section [{key}] of the translator configuration")
        })?)),
    }
}

impl Settings {
    /// Parses a whole file.
    pub fn from_toml(text: &str) -> Result<Self> {
        let mut table: toml::Table = text.parse().context("translator configuration TOML")?;
        let daemon = Daemon {
            io: take(&mut table, "io")?.unwrap_or_default(),
            workers: take(&mut table, "workers")?.unwrap_or_default(),
            collectors: take(&mut table, "collectors")?.unwrap_or_default(),
            metrics: take(&mut table, "metrics")?,
        };
        let engine = Config::from_toml(&toml::to_string(&table)?)?;
        Ok(Settings { engine, daemon })
    }

    /// Checks what the daemon relies on (after command-line overrides).
    pub fn validate(&self) -> Result<()> {
        let d = &self.daemon;
        match d.io.ports.len() {
            1 | 2 => {}
            0 => bail!("no port: give [io] ports or --interface"),
            n => bail!("{n} ports: the translator drives one port, or two for a bump in the wire"),
        }
        if let [a, b] = d.io.ports.as_slice() {
            if port_device(a) == port_device(b) {
                bail!(
                    "[io] ports name {:?} twice: a bump in the wire needs two different ports (one port \
                     as both would send every frame it forwards back out where it came in)",
                    port_device(a)
                );
            }
        }
        if let Some(p) = d.io.collector_port {
            if p >= d.io.ports.len() {
                bail!(
                    "[io] collector_port {p} is not a port index (0..{})",
                    d.io.ports.len()
                );
            }
        }
        if let Some(mtu) = d.io.mtu {
            if d.io.kind != IoKind::Dpdk {
                bail!(
                    "[io] mtu {mtu}: the MTU is set on DPDK ports; AF_PACKET ports take frames up to an \
                     MTU of 9216 and follow the interface's own (ip link set ... mtu)"
                );
            }
            if !(68..=9216).contains(&mtu) {
                bail!("[io] mtu {mtu} is not in 68..=9216");
            }
        }
        if d.io.burst == 0 || d.io.burst > 1024 {
            bail!("[io] burst {} is not in 1..=1024", d.io.burst);
        }
        if d.io.core.is_some() {
            bail!(
                "[io] core: there is no I/O thread any more (each worker polls its own queue of every \
                 port); pin the workers with [workers] cores"
            );
        }
        if d.workers.count == 0 || d.workers.count > 64 {
            bail!("[workers] count {} is not in 1..=64", d.workers.count);
        }
        let int = &self.engine.int;
        for (what, lists) in [
            ("drop_list", &int.drop_list),
            ("queue_list", &int.queue_list),
        ] {
            if int.enabled && !lists.is_empty() && lists.len() < d.workers.count {
                bail!(
                    "[int] {what} names {} list(s) for {} workers: every worker takes INT reports and \
                     appends its events to a list of its own (an Append list's head has one writer), so \
                     give one per worker, e.g. {what} = {:?}, each an append region of 16-byte entries \
                     at the collector, whose [int] {what} names them all",
                    lists.len(),
                    d.workers.count,
                    (0..d.workers.count as u32)
                        .map(|k| lists.ids()[0] + 2 * k)
                        .collect::<Vec<_>>()
                );
            }
        }
        if !d.workers.cores.is_empty() && d.workers.cores.len() != d.workers.count {
            bail!(
                "[workers] cores lists {} cores for {} workers: give one per worker, or none",
                d.workers.cores.len(),
                d.workers.count
            );
        }
        if d.collectors.is_empty() {
            bail!("no collector: add a [[collectors]] section with its control address and token");
        }
        if let Some(c) = d.collectors.iter().find(|c| c.token.is_empty()) {
            bail!("collector {}: empty token", c.control);
        }
        // Worker k, collector i uses QPN qpn_base + k·collectors + i: all of them must fit in 24 bits.
        let qps = (d.workers.count * d.collectors.len()) as u64;
        if u64::from(self.engine.local.qpn_base) + qps > 0xFF_FFFF {
            bail!("[local] qpn_base leaves no room for {qps} QPs in 24 bits");
        }
        if u64::from(self.engine.local.udp_src_port_base) + qps > 0xFFFF {
            bail!("[local] udp_src_port_base leaves no room for {qps} QPs");
        }
        Ok(())
    }

    /// Checks that every configured core is one this process may run on.
    pub fn check_cores(&self, allowed: &[usize]) -> Result<()> {
        let d = &self.daemon;
        for (what, core) in d.workers.cores.iter().map(|c| ("[workers] cores", *c)) {
            if !allowed.contains(&core) {
                bail!("{what}: core {core} is not one this process may run on ({allowed:?})");
            }
        }
        Ok(())
    }

    /// The collector-facing port index.
    pub fn collector_port(&self) -> usize {
        self.daemon
            .io
            .collector_port
            .unwrap_or(self.daemon.io.ports.len().saturating_sub(1))
    }

    /// The engine configuration of worker `k`: its own QPNs and UDP source ports, so that responses can
    /// be steered back to the worker that owns the QP.
    pub fn worker_config(&self, k: usize) -> Config {
        let mut c = self.engine.clone();
        let step = (k * self.daemon.collectors.len()) as u32;
        c.local.qpn_base += step;
        c.local.udp_src_port_base = c.local.udp_src_port_base.wrapping_add(step as u16);
        // Each worker appends INT events to lists of its own (an Append list's head has one writer).
        c.int.drop_list = self.engine.int.drop_list.of_worker(k);
        c.int.queue_list = self.engine.int.queue_list.of_worker(k);
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"
[io]
kind = "dpdk"
ports = ["net_af_packet0,iface=ta", "net_af_packet1,iface=tb"]
eal_args = ["-l", "0", "--no-huge"]

[workers]
count = 2

[[collectors]]
control = "198.19.0.2:40050"
token = "t"

[metrics]
bind = "127.0.0.1:9100"

[requester]
window = 64

[local]
qpn_base = 0x200
"#;

    #[test]
    fn splits_daemon_and_engine_sections() {
        let s = Settings::from_toml(FILE).unwrap();
        s.validate().unwrap();
        assert_eq!(s.daemon.io.kind, IoKind::Dpdk);
        assert_eq!(s.daemon.io.ports.len(), 2);
        assert_eq!(s.collector_port(), 1);
        assert_eq!(s.daemon.workers.count, 2);
        assert_eq!(s.daemon.collectors[0].token, "t");
        assert_eq!(s.engine.requester.window, 64);
        assert_eq!(s.worker_config(0).local.qpn_base, 0x200);
        assert_eq!(s.worker_config(1).local.qpn_base, 0x201);
        assert_eq!(
            s.worker_config(1).local.udp_src_port_base,
            s.engine.local.udp_src_port_base + 1
        );
    }

    #[test]
    fn int_event_lists_one_per_worker() {
        let with = |lists: &str| {
            Settings::from_toml(&format!(
                "{FILE}\n[report]\nkeywrite_data_len = 12\n[int]\nenabled = true\n{lists}\n"
            ))
            .unwrap()
        };
        let s = with("drop_list = [10, 12]\nqueue_list = [11, 13]");
        s.validate().unwrap();
        assert_eq!(s.worker_config(0).int.drop_list.ids(), [10]);
        assert_eq!(s.worker_config(1).int.drop_list.ids(), [12]);
        assert_eq!(s.worker_config(1).int.queue_list.ids(), [13]);
        // One list for two workers: two writers of one head would overwrite each other.
        let e = with("drop_list = 10").validate().unwrap_err().to_string();
        assert!(
            e.contains("[int] drop_list names 1 list(s) for 2 workers")
                && e.contains("drop_list = [10, 12]"),
            "{e}"
        );
        let e = with("queue_list = [11]")
            .validate()
            .unwrap_err()
            .to_string();
        assert!(e.contains("[int] queue_list names 1 list(s)"), "{e}");
        // A list twice is refused when the engine's sections load.
        let e = Settings::from_toml(&format!(
            "{FILE}\n[report]\nkeywrite_data_len = 12\n[int]\nenabled = true\n\
             drop_list = [10, 12]\nqueue_list = [12, 13]\n"
        ))
        .unwrap_err();
        assert!(format!("{e:#}").contains("each list once"), "{e:#}");
    }

    #[test]
    fn mtu_is_a_dpdk_setting_within_jumbo_frames() {
        let with = |mtu: u16| {
            Settings::from_toml(&FILE.replace("[workers]", &format!("mtu = {mtu}\n\n[workers]")))
                .unwrap()
        };
        let s = with(9000);
        s.validate().unwrap();
        assert_eq!(s.daemon.io.mtu, Some(9000));
        let e = with(9217).validate().unwrap_err().to_string();
        assert!(e.contains("[io] mtu 9217 is not in 68..=9216"), "{e}");
        let mut s = with(9000);
        s.daemon.io.kind = IoKind::AfPacket;
        let e = s.validate().unwrap_err().to_string();
        assert!(e.contains("the MTU is set on DPDK ports"), "{e}");
    }

    #[test]
    fn refuses_with_reasons() {
        let e = Settings::from_toml("[io]\nkind = \"xdp\"\n").unwrap_err();
        assert!(format!("{e:#}").contains("[io]"), "{e:#}");
        let e = Settings::from_toml("[requester]\nwindwo = 1\n").unwrap_err();
        assert!(format!("{e:#}").contains("windwo"), "{e:#}");
        let s = Settings::from_toml("[io]\nports = [\"a\"]\n").unwrap();
        assert!(s
            .validate()
            .unwrap_err()
            .to_string()
            .contains("no collector"));
        let s = Settings::from_toml(
            "[io]\nports = [\"a\", \"b\", \"c\"]\n[[collectors]]\ncontrol = \"127.0.0.1:1\"\ntoken = \"t\"\n",
        )
        .unwrap();
        assert!(s.validate().unwrap_err().to_string().contains("3 ports"));
    }

    /// Issue 26, item 9: `ports = ["ta", "ta"]` was accepted and reflected every forwarded frame back to
    /// its sender; one device named twice (also through two vdevs' `iface=`) is refused at load.
    #[test]
    fn the_same_port_twice_is_refused() {
        for (ports, dev) in [
            (r#"["ta", "ta"]"#, "ta"),
            (
                r#"["net_af_packet0,iface=ta", "net_af_packet1,iface=ta"]"#,
                "ta",
            ),
        ] {
            let s = Settings::from_toml(&FILE.replace(
                r#"["net_af_packet0,iface=ta", "net_af_packet1,iface=tb"]"#,
                ports,
            ))
            .unwrap();
            assert_eq!(
                s.validate().unwrap_err().to_string(),
                format!(
                    "[io] ports name {dev:?} twice: a bump in the wire needs two different ports (one \
                     port as both would send every frame it forwards back out where it came in)"
                ),
                "{ports}"
            );
        }
        let s = Settings::from_toml(&FILE.replace("iface=tb", "iface=tc")).unwrap();
        s.validate().unwrap();
    }

    #[test]
    fn cores_one_per_worker_and_allowed() {
        let with = |extra: &str| {
            Settings::from_toml(&FILE.replace("count = 2\n", &format!("count = 2\n{extra}\n")))
                .unwrap()
        };
        let s = with("cores = [1, 2]");
        s.validate().unwrap();
        assert_eq!(s.daemon.workers.cores, vec![1, 2]);
        s.check_cores(&[0, 1, 2, 3]).unwrap();
        let e = s.check_cores(&[0, 1]).unwrap_err().to_string();
        assert!(e.contains("core 2 is not one"), "{e}");
        let e = with("cores = [1]").validate().unwrap_err().to_string();
        assert!(e.contains("1 cores for 2 workers"), "{e}");
        let s = Settings::from_toml(&FILE.replace("eal_args", "core = 7\neal_args")).unwrap();
        let e = s.validate().unwrap_err().to_string();
        assert!(e.contains("[io] core: there is no I/O thread"), "{e}");
    }
}
