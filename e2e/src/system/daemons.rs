//! The daemons' processes: started, waited for, stopped, killed and restarted (the collector with its
//! memory in a file, the translator, a twin of it behind the second path).

use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::config::{METRICS_PORT, RXE_DEVICE};
use super::System;
use crate::bins::bin;
use crate::netns::Netns;
use crate::procs::Proc;
use crate::send::{Metrics, Sender};
use crate::topo::{self, Topology};

impl System {
    /// Stops the collector with SIGTERM (its exporter drains the lists, reads a last epoch and closes
    /// its files) and returns its final summary: the non-zero counters after that drain.
    pub fn stop_collector(&mut self) -> Result<String> {
        let mut c = self
            .collector
            .take()
            .context("the collector is not running")?;
        c.terminate(Duration::from_secs(60))
    }

    /// Kills the collector as a crash would.
    pub fn kill_collector(&mut self) {
        if let Some(mut c) = self.collector.take() {
            c.kill();
        }
    }

    /// Starts the collector again (new process, new memory).
    pub fn restart_collector(&mut self) -> Result<()> {
        self.kill_collector();
        self.collector = Some(start_collector(
            &self.topo,
            &self.dir,
            &self.pids,
            self.backend,
        )?);
        Ok(())
    }

    /// Restarts the collector with its regions in `file` (`[collector] memory_file`): from then on a
    /// collector restart, or a crash, keeps every region's contents.
    pub fn keep_collector_memory_in(&mut self, file: &std::path::Path) -> Result<()> {
        let cfg = self.dir.join("collector.toml");
        let text = std::fs::read_to_string(&cfg)?;
        anyhow::ensure!(
            text.starts_with("[collector]\n") && !text.contains("memory_file"),
            "unexpected collector configuration:\n{text}"
        );
        let text = text.replacen(
            "[collector]\n",
            &format!("[collector]\nmemory_file = \"{}\"\n", file.display()),
            1,
        );
        std::fs::write(&cfg, text)?;
        self.restart_collector()
    }

    /// Stops the translator with SIGTERM (a clean stop) and starts it again with the same configuration:
    /// a new process with nothing of the old one's state. Returns the old one's final summary.
    pub fn restart_translator(&mut self) -> Result<String> {
        let summary = self.stop_translator()?;
        // The reporter's socket and its neighbour entry stay: the translator is a bump in the wire.
        let (translator, metrics) = spawn_translator(
            &self.topo.translator,
            &self.dir,
            "translator",
            topo::TRANSLATOR_MGMT,
            &self.pids,
        )?;
        (self.translator, self.metrics) = (translator, metrics);
        Ok(summary)
    }

    /// Stops the translator with SIGTERM and returns its final summary.
    pub fn stop_translator(&mut self) -> Result<String> {
        self.translator.terminate(Duration::from_secs(20))
    }

    /// Replaces the second translator (of a `translators: 2` run) with a twin of the first: the first's
    /// configuration, its address and QPNs included, behind the second path, with its metrics on the
    /// second's management address. A collector refuses the twin while the first lives, so this waits
    /// for its metrics endpoint, not for it to run. Its log is `twin.log`.
    pub fn start_twin(&mut self) -> Result<()> {
        let s = self.second.as_mut().context("no second translator")?;
        s.translator.terminate(Duration::from_secs(20))?;
        let first = std::fs::read_to_string(self.dir.join("translator.toml"))?;
        let bind = |mgmt: &str| format!("bind = \"{mgmt}:{METRICS_PORT}\"");
        let twin = first.replace(&bind(topo::TRANSLATOR_MGMT), &bind(topo::TRANSLATOR2_MGMT));
        anyhow::ensure!(
            twin != first,
            "the first translator's metrics bind not found"
        );
        let cfg = self.dir.join("twin.toml");
        std::fs::write(&cfg, twin)?;
        let mut twin = Proc::spawn(
            "twin",
            s.path.translator.name(),
            &bin("dta-translator")?,
            &["run", "--config", cfg.to_str().context("path")?],
            &self.dir.join("twin.log"),
        )?;
        self.pids
            .lock()
            .map_err(|_| anyhow::anyhow!("poisoned"))?
            .push(twin.pid());
        twin.wait_line("metrics listening", Duration::from_secs(60))?;
        s.translator = twin;
        Ok(())
    }
}

/// Starts a translator in `ns` with `<name>.toml` from `dir`, waits until it runs, resolves the
/// collector's MAC from `reporter` through it and opens the reporter's sender.
pub(super) fn start_translator(
    ns: &Netns,
    reporter: &Netns,
    dir: &std::path::Path,
    name: &str,
    mgmt: &str,
    reporter_ip: &str,
    pids: &Mutex<Vec<u32>>,
) -> Result<(Proc, Metrics, Sender)> {
    let (translator, metrics) = spawn_translator(ns, dir, name, mgmt, pids)?;
    // Resolve the collector's MAC through the bump before sending: the reporter's kernel queues only a
    // handful of datagrams while ARP is unresolved and drops the rest.
    resolve_collector(reporter)
        .with_context(|| format!("ARP from the reporter to the collector through {name}"))?;
    let sender = Sender::open(
        reporter.name(),
        format!("{reporter_ip}:40041").parse()?,
        format!("{}:40040", topo::COLLECTOR_IP).parse()?,
    )?;
    Ok((translator, metrics, sender))
}

/// Starts translator `name` (configuration `{name}.toml` in `dir`) and waits until it runs.
fn spawn_translator(
    ns: &Netns,
    dir: &std::path::Path,
    name: &str,
    mgmt: &str,
    pids: &Mutex<Vec<u32>>,
) -> Result<(Proc, Metrics)> {
    let cfg = dir.join(format!("{name}.toml"));
    let mut translator = Proc::spawn(
        name,
        ns.name(),
        &bin("dta-translator")?,
        &["run", "--config", cfg.to_str().context("path")?],
        &dir.join(format!("{name}.log")),
    )?;
    pids.lock()
        .map_err(|_| anyhow::anyhow!("poisoned"))?
        .push(translator.pid());
    translator.wait_line("translator running", Duration::from_secs(60))?;
    let metrics = Metrics {
        ns: ns.name().to_string(),
        addr: format!("{mgmt}:{METRICS_PORT}").parse()?,
    };
    Ok((translator, metrics))
}

pub(super) fn start_collector(
    topo: &Topology,
    dir: &std::path::Path,
    pids: &Mutex<Vec<u32>>,
    backend: &str,
) -> Result<Proc> {
    let cfg = dir.join("collector.toml");
    let mut args = vec![
        "serve",
        "--backend",
        backend,
        "--config",
        cfg.to_str().context("path")?,
    ];
    if backend == "ibverbs" {
        args.extend(["--device", RXE_DEVICE]);
    }
    let mut p = Proc::spawn(
        "collector",
        topo.collector.name(),
        &bin("dta-collector")?,
        &args,
        &dir.join("collector.log"),
    )?;
    if let Ok(mut v) = pids.lock() {
        v.push(p.pid());
    }
    p.wait_line("control listening", Duration::from_secs(30))?;
    Ok(p)
}

/// Sends one datagram to the discard port (the translator forwards it like any foreign frame) and waits
/// until the reporter's kernel has learnt the collector's MAC.
fn resolve_collector(reporter: &Netns) -> Result<()> {
    let to: SocketAddr = format!("{}:9", topo::COLLECTOR_IP).parse()?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        reporter.run_in(move || -> Result<()> {
            let s = std::net::UdpSocket::bind("0.0.0.0:0")?;
            s.send_to(b"arp", to)?;
            Ok(())
        })??;
        std::thread::sleep(Duration::from_millis(100));
        let out = std::process::Command::new("ip")
            .args(["-n", reporter.name(), "neigh", "show", topo::COLLECTOR_IP])
            .output()?;
        if String::from_utf8_lossy(&out.stdout).contains(topo::COLLECTOR_MAC) {
            return Ok(());
        }
    }
    anyhow::bail!("the collector's MAC was not learnt within 10 s")
}
