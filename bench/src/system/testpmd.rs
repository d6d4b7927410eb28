//! testpmd io-fwd in the translator's place over the same memif vdevs, the collector the sink: what the
//! transport carries on the whole-system layout, searched the same way.

use super::*;

/// testpmd io-fwd in the translator's place over the same vdevs, the collector the sink (it counts the
/// frames and discards them): the same search, lossless meaning every frame sent reached the collector.
#[derive(Debug, Default, Serialize)]
pub struct Testpmd {
    /// The sender unpaced: frames delivered to the collector per second.
    pub saturation_delivered_per_s: f64,
    /// The highest target rate found lossless through testpmd (0 if none).
    pub lossless_pps: f64,
    /// The lowest target rate found lossy.
    pub lossy_pps: f64,
    /// Where frames were lost at that rate: testpmd's receive ring (the sender's TX found it full), or
    /// after it (its TX to the collector, or the collector's ring).
    pub lossy_stage: String,
    /// Each probe: target rate, frames sent, sender drops, frames delivered.
    pub probes: Vec<TestpmdProbe>,
}

/// One testpmd probe.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TestpmdProbe {
    pub target_pps: f64,
    pub sent: u64,
    pub sender_secs: f64,
    pub sender_dropped: u64,
    pub delivered: u64,
    pub lossless: bool,
}

impl TestpmdProbe {
    /// Every frame sent reached the collector, none was refused, and the sender offered the target
    /// rate: one that fell more than 3 % short did not offer what the probe says (as in [`Probe`]).
    fn is_lossless(&self) -> bool {
        let offered = self.sent as f64 / self.sender_secs.max(1e-9);
        let short = self.target_pps > 0.0 && offered < 0.97 * self.target_pps;
        self.sent > 0 && !short && self.sender_dropped == 0 && self.delivered == self.sent
    }
}

/// Most testpmd search probes after its unpaced one.
pub(super) const TESTPMD_PROBES: usize = 6;

pub(super) fn search(r: &mut Run, ep: &Endpoints, tp: &Path, deadline: Instant) -> Result<Testpmd> {
    let o = r.o;
    let cpu = o.translator_cpu;
    let prefix = file_prefix("p");
    let mut cmd = Command::new(tp);
    // Main lcore (stats only) and the forwarding lcore both on the translator's CPU.
    cmd.arg(format!("--lcores=0@{cpu},1@{cpu}"))
        .args(o.mem.split_whitespace())
        .args(["-m", "512", "--no-pci", "--file-prefix", &prefix])
        .arg(format!("--vdev={}", r.memif(0, "server", &r.sender_sock)))
        .arg(format!(
            "--vdev={}",
            r.memif(1, "client", &r.collector_sock)
        ))
        .args(["--log-level=warning", "--no-telemetry", "--"])
        .args([
            "--forward-mode=io",
            "--stats-period",
            "1",
            "--nb-cores=1",
            // Enough to fill both 16,384-slot rings of `--memif-rsize 14` and the bursts in flight.
            "--total-num-mbufs=65536",
        ]);
    let mut p = Proc::start("testpmd", cmd, cpu, &o.dir, Some(prefix))?;
    let log = o.dir.join("testpmd.out");
    wait_until("testpmd forwarding", Duration::from_secs(30), || {
        p.check_running()?;
        Ok(std::fs::read_to_string(&log)?.contains("Rx-pps"))
    })?;
    // Its link to the collector up before the sender starts.
    std::thread::sleep(Duration::from_millis(500));
    eprintln!("system: testpmd io-fwd over the same memif vdevs");
    r.sender_yields = false;
    r.start_sender(0.1)?;
    let mut probe = |rate: Option<f64>| -> Result<TestpmdProbe> {
        let before = ep.settle(Duration::from_secs(1))?;
        let s = r.send(rate, o.secs)?;
        let after = ep.settle(Duration::from_secs(2))?;
        let sent = s["sent"].as_u64().unwrap_or(0);
        let sender_dropped = s["dropped"].as_u64().unwrap_or(0);
        let delivered = after
            .collector_rx_frames
            .saturating_sub(before.collector_rx_frames);
        let t = TestpmdProbe {
            target_pps: rate.unwrap_or(0.0),
            sent,
            sender_secs: s["elapsed_s"].as_f64().unwrap_or(0.0),
            sender_dropped,
            delivered,
            lossless: false,
        };
        let t = TestpmdProbe {
            lossless: t.is_lossless(),
            ..t
        };
        eprintln!(
            "system: testpmd {} -> sent {sent}, sender drops {sender_dropped}, delivered {delivered}",
            rate.map_or("unpaced".to_string(), |r| format!("{:.3} M/s", r / 1e6)),
        );
        Ok(t)
    };
    let sat = probe(None)?;
    let sat_delivered = if sat.sender_secs > 0.0 {
        sat.delivered as f64 / sat.sender_secs
    } else {
        0.0
    };
    let mut probes = vec![sat];
    let sender_max = probes[0].sent as f64 / probes[0].sender_secs.max(1e-9);
    let mut search = Search::new(sender_max, Some(sat_delivered), 0.1, 10_000.0);
    while probes.len() <= TESTPMD_PROBES && Instant::now() < deadline {
        let Some(rate) = search.next() else { break };
        let t = probe(Some(rate))?;
        search.record(rate, t.lossless);
        probes.push(t);
    }
    r.stop_sender();
    p.stop(libc::SIGINT, Duration::from_secs(3));
    let lossy = probes
        .iter()
        .filter(|t| !t.lossless)
        .min_by(|a, b| a.target_pps.total_cmp(&b.target_pps));
    let lossy_stage = match lossy {
        None => "none".to_string(),
        Some(t) if t.sender_dropped > 0 => {
            "testpmd: its receive ring was full (the sender's memif TX dropped)".to_string()
        }
        Some(_) => "after testpmd: its TX to the collector, or the collector's ring".to_string(),
    };
    Ok(Testpmd {
        saturation_delivered_per_s: sat_delivered,
        lossless_pps: search.lossless(),
        lossy_pps: search.lossy(),
        lossy_stage,
        probes,
    })
}

#[cfg(test)]
mod tests {
    use super::TestpmdProbe;

    fn probe(target: f64, sent: u64, secs: f64, dropped: u64, delivered: u64) -> TestpmdProbe {
        TestpmdProbe {
            target_pps: target,
            sent,
            sender_secs: secs,
            sender_dropped: dropped,
            delivered,
            lossless: false,
        }
    }

    #[test]
    fn a_testpmd_probe_is_lossless_only_at_the_rate_it_says() {
        // Every frame delivered at the target rate.
        assert!(probe(2e6, 2_000_000, 1.0, 0, 2_000_000).is_lossless());
        // 3 % short is still the rate; more is not (the yielding sender beside testpmd sent 91,000/s).
        assert!(probe(2e6, 1_940_000, 1.0, 0, 1_940_000).is_lossless());
        assert!(!probe(2e6, 1_939_000, 1.0, 0, 1_939_000).is_lossless());
        assert!(!probe(13.2e6, 90_869, 1.0, 0, 90_869).is_lossless());
        // One frame refused or not delivered, or nothing sent.
        assert!(!probe(2e6, 2_000_000, 1.0, 1, 1_999_999).is_lossless());
        assert!(!probe(2e6, 2_000_000, 1.0, 0, 1_999_999).is_lossless());
        assert!(!probe(0.0, 0, 1.0, 0, 0).is_lossless());
        // Unpaced: no target to fall short of.
        assert!(probe(0.0, 5_000_000, 1.0, 0, 5_000_000).is_lossless());
    }
}
