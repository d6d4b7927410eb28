//! Linux Soft-RoCE (rxe) as the collector's RDMA device: the RoCEv2 responder the kernel ships, which
//! judges the translator's frames. Made for one run and removed with it: the rxe link on the collector's
//! veth, and the netem impairment (both directions: the link's egress carries rxe's responses, an ifb
//! device carries its ingress, the translator's requests, because the translator's AF_PACKET socket
//! bypasses its own qdisc).

use std::collections::BTreeMap;

use anyhow::{Context, Result};

use crate::netns::run;

/// An rxe device on a network interface of this (init) namespace.
#[derive(Debug)]
pub struct Rxe {
    /// The RDMA device name (`rxe0`).
    pub device: String,
    /// Its network interface.
    pub netdev: String,
    ifb: Option<String>,
}

impl Rxe {
    /// Loads `rdma_rxe` and creates `device` on `netdev`.
    pub fn create(device: &str, netdev: &str) -> Result<Self> {
        run("modprobe", &["rdma_rxe"]).context("loading rdma_rxe (Soft-RoCE)")?;
        run(
            "rdma",
            &["link", "add", device, "type", "rxe", "netdev", netdev],
        )?;
        Ok(Rxe {
            device: device.to_string(),
            netdev: netdev.to_string(),
            ifb: None,
        })
    }

    /// The port's hardware counters (`/sys/class/infiniband/<dev>/ports/1/hw_counters/*`).
    pub fn counters(&self) -> Result<BTreeMap<String, u64>> {
        let dir = format!("/sys/class/infiniband/{}/ports/1/hw_counters", self.device);
        let mut out = BTreeMap::new();
        for entry in std::fs::read_dir(&dir).with_context(|| format!("reading {dir}"))? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(entry.path())?;
            if let Ok(v) = text.trim().parse::<u64>() {
                out.insert(name, v);
            }
        }
        Ok(out)
    }

    /// netem `loss` and `reorder` (percent) with 1 ms delay on both directions of the collector's link.
    pub fn impair(&mut self, loss: f64, reorder: f64) -> Result<()> {
        let netem = |dev: &str| -> Result<()> {
            run(
                "tc",
                &[
                    "qdisc",
                    "replace",
                    "dev",
                    dev,
                    "root",
                    "netem",
                    "loss",
                    &format!("{loss}%"),
                    "delay",
                    "1ms",
                    "reorder",
                    &format!("{reorder}%"),
                ],
            )
            .map(drop)
        };
        // Responses: the link's egress.
        netem(&self.netdev)?;
        // Requests: the link's ingress, redirected through an ifb device whose egress has the netem.
        let ifb = format!("ifb{}", self.device.trim_start_matches("rxe"));
        run("modprobe", &["ifb", "numifbs=0"])?;
        run("ip", &["link", "add", &ifb, "type", "ifb"])?;
        self.ifb = Some(ifb.clone());
        run("ip", &["link", "set", &ifb, "up"])?;
        run(
            "tc",
            &[
                "qdisc",
                "add",
                "dev",
                &self.netdev,
                "handle",
                "ffff:",
                "ingress",
            ],
        )?;
        run(
            "tc",
            &[
                "filter",
                "add",
                "dev",
                &self.netdev,
                "parent",
                "ffff:",
                "matchall",
                "action",
                "mirred",
                "egress",
                "redirect",
                "dev",
                &ifb,
            ],
        )?;
        netem(&ifb)
    }

    /// What netem did on each direction (`tc -s qdisc`), for the run's report.
    pub fn impairment_stats(&self) -> String {
        let mut s = String::new();
        for dev in std::iter::once(self.netdev.as_str()).chain(self.ifb.as_deref()) {
            if let Ok(out) = run("tc", &["-s", "qdisc", "show", "dev", dev]) {
                for line in out.lines().filter(|l| !l.trim().is_empty()) {
                    s.push_str(&format!("  {dev}: {}\n", line.trim()));
                }
            }
        }
        s
    }

    /// Removes the impairment.
    pub fn clear_impairment(&mut self) {
        let _ = run("tc", &["qdisc", "del", "dev", &self.netdev, "root"]);
        let _ = run("tc", &["qdisc", "del", "dev", &self.netdev, "ingress"]);
        if let Some(ifb) = self.ifb.take() {
            let _ = run("ip", &["link", "del", &ifb]);
        }
    }
}

impl Drop for Rxe {
    fn drop(&mut self) {
        self.clear_impairment();
        if let Err(e) = run("rdma", &["link", "delete", &self.device]) {
            eprintln!("cleanup: {e:#}");
        }
    }
}

/// Kernel log lines about iCRC (rxe drops a frame with a bad iCRC and logs a rate-limited warning).
pub fn icrc_warnings() -> Result<Vec<String>> {
    let log = run("dmesg", &[])?;
    Ok(log
        .lines()
        .filter(|l| l.to_ascii_lowercase().contains("icrc"))
        .map(str::to_string)
        .collect())
}
