//! The test network: three namespaces made for one run and removed with it.
//!
//! ```text
//!  reporter ns            translator ns                      collector ns
//!  r0 198.18.0.10 ─veth─ ta  [dta-translator]  tb ─veth─ c0 198.18.0.2 (02:00:00:00:00:02)
//!                        tm 198.19.0.1 ───────── veth ───── cm 198.19.0.2 (control, HTTP)
//! ```
//!
//! `ta` and `tb` carry no address: the translator owns them (a bump in the wire, answering ARP for
//! 198.18.0.1 itself), and the kernel must not answer RoCE frames with ICMP. The management link carries
//! the control channel and the HTTP endpoints.

use anyhow::{bail, Result};

use crate::netns::Netns;

/// Collector data-path address.
pub const COLLECTOR_IP: &str = "198.18.0.2";
/// Collector MAC (its config and its interface agree).
pub const COLLECTOR_MAC: &str = "02:00:00:00:00:02";
/// Reporter address.
pub const REPORTER_IP: &str = "198.18.0.10";
/// Translator address (answered by the translator's ARP, never configured on an interface).
pub const TRANSLATOR_IP: &str = "198.18.0.1";
/// Collector management address (control and HTTP).
pub const COLLECTOR_MGMT: &str = "198.19.0.2";
/// Translator management address (metrics).
pub const TRANSLATOR_MGMT: &str = "198.19.0.1";

/// The three namespaces; dropping removes them and their links.
#[derive(Debug)]
pub struct Topology {
    /// Reporter side.
    pub reporter: Netns,
    /// Translator.
    pub translator: Netns,
    /// Collector.
    pub collector: Netns,
}

impl Topology {
    /// Creates the namespaces `<prefix>r`, `<prefix>t`, `<prefix>c` and wires them.
    pub fn create(prefix: &str) -> Result<Self> {
        Self::build(prefix, false)
    }

    /// As [`create`](Self::create), with the collector's side (`c0`, `cm`) in this process's own (init)
    /// namespace instead of `<prefix>c`: Soft-RoCE (rxe) receives RoCEv2 only there. Deleting the
    /// translator's namespace deletes those links with their peers.
    pub fn create_with_collector_here(prefix: &str) -> Result<Self> {
        Self::build(prefix, true)
    }

    fn build(prefix: &str, collector_here: bool) -> Result<Self> {
        // Leftovers of a run that was killed (same prefix) would make `ip netns add` fail.
        for s in ["r", "t", "c"] {
            let _ = crate::netns::ip(&["netns", "del", &format!("{prefix}{s}")]);
        }
        let t = Topology {
            reporter: Netns::create(&format!("{prefix}r"))?,
            translator: Netns::create(&format!("{prefix}t"))?,
            collector: if collector_here {
                Netns::init()
            } else {
                Netns::create(&format!("{prefix}c"))?
            },
        };
        let (r, tr, c) = (t.reporter.name(), t.translator.name(), t.collector.name());
        t.reporter.ip(&[
            "link", "add", "r0", "type", "veth", "peer", "name", "ta", "netns", tr,
        ])?;
        t.collector.ip(&[
            "link", "add", "c0", "type", "veth", "peer", "name", "tb", "netns", tr,
        ])?;
        t.collector.ip(&[
            "link", "add", "cm", "type", "veth", "peer", "name", "tm", "netns", tr,
        ])?;
        t.reporter
            .ip(&["link", "set", "r0", "address", "02:00:00:00:00:0a"])?;
        t.reporter
            .ip(&["addr", "add", &format!("{REPORTER_IP}/24"), "dev", "r0"])?;
        t.collector
            .ip(&["link", "set", "c0", "address", COLLECTOR_MAC])?;
        t.collector
            .ip(&["addr", "add", &format!("{COLLECTOR_IP}/24"), "dev", "c0"])?;
        t.collector
            .ip(&["addr", "add", &format!("{COLLECTOR_MGMT}/24"), "dev", "cm"])?;
        t.translator
            .ip(&["addr", "add", &format!("{TRANSLATOR_MGMT}/24"), "dev", "tm"])?;
        for (ns, dev) in [
            (&t.reporter, "r0"),
            (&t.collector, "c0"),
            (&t.collector, "cm"),
        ] {
            ns.ip(&["link", "set", dev, "up"])?;
        }
        for dev in ["ta", "tb", "tm"] {
            t.translator.ip(&["link", "set", dev, "up"])?;
        }
        let _ = (r, c);
        Ok(t)
    }
}

/// A topology, or why the caller should skip: `Ok(None)` with the reason printed as SKIP, unless
/// DTA_REQUIRE_NETNS=1, which turns the inability into an error so CI cannot pass by skipping.
pub fn topology_or_skip(prefix: &str) -> Result<Option<Topology>> {
    match Topology::create(prefix) {
        Ok(t) => Ok(Some(t)),
        Err(e) => {
            if std::env::var("DTA_REQUIRE_NETNS").as_deref() == Ok("1") {
                bail!("DTA_REQUIRE_NETNS=1 but the test network cannot be created: {e:#}");
            }
            eprintln!("SKIP: cannot create network namespaces (needs root and iproute2): {e:#}");
            Ok(None)
        }
    }
}
