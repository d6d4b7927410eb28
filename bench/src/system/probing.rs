//! The sender's process and one probe: a run at a rate, counted at every stage.

use super::*;

pub(super) struct Run<'a> {
    pub(super) o: &'a Opts,
    pub(super) bin: PathBuf,
    pub(super) sender_sock: String,
    pub(super) collector_sock: String,
    /// The sender and the JSON lines asked of it so far.
    pub(super) sender: Option<(Proc, usize)>,
    pub(super) sender_starts: usize,
    /// Whether the sender yields its CPU while catching up (`--pace-yield`): yes beside the translator,
    /// which sleeps when idle; no beside testpmd, whose forwarding lcore never sleeps and, given the CPU
    /// at each yield, kept it for its whole time slice (the sender then sent 91,000 frames/s whatever
    /// the target).
    pub(super) sender_yields: bool,
}

impl Run<'_> {
    /// A memif vdev's devargs: `net_memif<index>` in `role` on abstract socket `sock`, with the ring size.
    pub(super) fn memif(&self, index: u8, role: &str, sock: &str) -> String {
        let mut v = format!("net_memif{index},role={role},socket={sock},id=0");
        if let Some(r) = self.o.memif_rsize {
            v.push_str(&format!(",rsize={r}"));
        }
        if let Some(b) = self.o.memif_bsize {
            v.push_str(&format!(",bsize={b}"));
        }
        v
    }

    pub(super) fn eal(&self, cpu: usize, mem_mb: u32, role: &str) -> (String, String) {
        let prefix = file_prefix(role);
        (
            format!(
                "-l {cpu} {} -m {mem_mb} --no-pci --file-prefix {prefix} --log-level=warning --no-telemetry",
                self.o.mem
            ),
            prefix,
        )
    }

    /// Starts the sender (`dta-pktgen --commands`: one process and one memif link for every probe of
    /// a phase, since a memif peer that goes away while the other side polls can crash it) and runs a
    /// first short run at 200,000/s for `warm` seconds. The memif client's connect can fail while the
    /// server's process is busy (testpmd's forwarding lcore shares its CPU with the thread that accepts):
    /// such a start is tried again, up to 3 times.
    pub(super) fn start_sender(&mut self, warm: f64) -> Result<Value> {
        for attempt in 1.. {
            self.stop_sender();
            self.sender_starts += 1;
            let name = format!("pktgen-{}", self.sender_starts);
            let (eal, prefix) = self.eal(self.o.sender_cpu, 256, "g");
            let mut cmd = Command::new(self.bin.join("dta-pktgen"));
            cmd.args(["--workload", "keywrite", "--redundancy", "1", "--commands"])
                .arg("--pace-sleep")
                .args(self.sender_yields.then_some("--pace-yield"))
                .arg("--dpdk")
                .arg(self.memif(0, "client", &self.sender_sock))
                .arg("--eal")
                .arg(eal);
            let p = Proc::start(&name, cmd, self.o.sender_cpu, &self.o.dir, Some(prefix))?;
            self.sender = Some((p, 0));
            match self.send(Some(200_000.0), warm) {
                Err(e) if attempt < 3 => {
                    let log = std::fs::read_to_string(self.o.dir.join(format!("{name}.log")))
                        .unwrap_or_default();
                    if !log.contains("Failed to connect socket") {
                        return Err(e);
                    }
                    eprintln!("system: {name}: the memif client could not connect; trying again");
                    std::thread::sleep(Duration::from_millis(300));
                }
                r => return r,
            }
        }
        unreachable!()
    }

    /// One run of the sender: `secs` at `rate` (paced, sleeping between bursts so that the collector
    /// sharing its CPU runs) or unpaced; its JSON line.
    pub(super) fn send(&mut self, rate: Option<f64>, secs: f64) -> Result<Value> {
        let (p, lines) = self.sender.as_mut().context("no sender")?;
        let name = p.name.clone();
        writeln!(
            p.stdin().context("the sender's stdin")?,
            "{:.0} {secs}",
            rate.unwrap_or(0.0)
        )
        .with_context(|| format!("{name}: writing a command"))?;
        *lines += 1;
        let want = *lines;
        let out = self.o.dir.join(format!("{name}.out"));
        // EAL start-up without hugepages and the memif link (up to 10 s) before the first.
        let limit = Duration::from_secs_f64(secs + 30.0);
        let start = Instant::now();
        loop {
            let text = std::fs::read_to_string(&out).unwrap_or_default();
            if text.ends_with('\n') {
                if let Some(l) = text.lines().nth(want - 1) {
                    return serde_json::from_str(l).with_context(|| format!("{name}: {l:?}"));
                }
            }
            p.check_running()?;
            if start.elapsed() > limit {
                bail!("{name}: no answer in {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Ends the sender: end of input, then up to 5 s to exit.
    pub(super) fn stop_sender(&mut self) {
        if let Some((mut p, _)) = self.sender.take() {
            p.close_stdin();
            if !matches!(p.wait_for(Duration::from_secs(5)), Ok(true)) {
                p.stop(libc::SIGTERM, Duration::from_secs(2));
            }
        }
    }

    /// One probe; `pids` the translator's and the collector's, for their CPU time and preemptions over
    /// the sender's run.
    pub(super) fn probe(
        &mut self,
        ep: &Endpoints,
        rate: Option<f64>,
        pids: [u32; 2],
    ) -> Result<Probe> {
        let before = ep.settle(Duration::from_secs(2))?;
        let t0 = Instant::now();
        let cpu0 = pids.map(cpu_and_preemptions);
        let s = self.send(rate, self.o.secs)?;
        let cpu1 = pids.map(cpu_and_preemptions);
        let wall = t0.elapsed().as_secs_f64();
        let after = ep.settle(Duration::from_secs(3))?;
        let d = |f: fn(&Counters) -> u64| f(&after).saturating_sub(f(&before));
        let p = Probe {
            target_pps: rate.unwrap_or(0.0),
            sent: s["sent"].as_u64().unwrap_or(0),
            sender_secs: s["elapsed_s"].as_f64().unwrap_or(0.0),
            sender_dropped: s["dropped"].as_u64().unwrap_or(0),
            taken: d(|c| c.taken),
            report_drops: d(|c| c.report_drops),
            qp_errors: d(|c| c.qp_errors),
            translator_rx_missed: d(|c| c.translator_rx_missed),
            translator_tx_dropped: d(|c| c.translator_tx_dropped),
            retransmitted: d(|c| c.retransmitted),
            collector_rx_missed: d(|c| c.collector_rx_missed),
            written: d(|c| c.written),
            translator_cpu_share: (cpu1[0].0 - cpu0[0].0) / wall,
            collector_cpu_share: (cpu1[1].0 - cpu0[1].0) / wall,
            translator_preempted: cpu1[0].1.saturating_sub(cpu0[0].1),
            collector_preempted: cpu1[1].1.saturating_sub(cpu0[1].1),
        };
        eprintln!(
            "system: {} -> sent {:.3} M/s, written {:.3} M/s, preempted t {} c {}, {} ({})",
            rate.map_or("unpaced".to_string(), |r| format!("{:.3} M/s", r / 1e6)),
            p.sender_pps() / 1e6,
            p.written_per_s() / 1e6,
            p.translator_preempted,
            p.collector_preempted,
            if p.lossless() { "lossless" } else { "lossy" },
            p.stage()
        );
        Ok(p)
    }
}
