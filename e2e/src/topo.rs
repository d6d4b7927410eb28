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

/// Second translator's address (the pair topology).
pub const TRANSLATOR2_IP: &str = "198.18.0.3";
/// Second reporter's address.
pub const REPORTER2_IP: &str = "198.18.0.11";
/// Second translator's management address (metrics; control through the collector's 198.19.1.2).
pub const TRANSLATOR2_MGMT: &str = "198.19.1.1";

/// The second path of the pair topology: another reporter and another translator (bump in the wire)
/// into the same collector, whose data links are then bridged (`br0` carries its address and MAC).
///
/// ```text
///  reporter ns  r0 198.18.0.10 ─ ta [translator 1 ns] tb ─ c0 ┐
///                                                              br0 198.18.0.2 (collector ns)
///  reporter2 ns r0 198.18.0.11 ─ ta [translator 2 ns] tb ─ c1 ┘
///                                   tm 198.19.1.1 ───────── cm2 198.19.1.2
/// ```
#[derive(Debug)]
pub struct SecondPath {
    /// Second reporter.
    pub reporter: Netns,
    /// Second translator.
    pub translator: Netns,
}

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

impl Topology {
    /// Adds a second reporter and translator into the same collector: the collector's data links are
    /// bridged (the responder then listens on `br0`, which takes over the collector's address and MAC).
    pub fn add_second_path(&self, prefix: &str) -> Result<SecondPath> {
        for s in ["s", "u"] {
            let _ = crate::netns::ip(&["netns", "del", &format!("{prefix}{s}")]);
        }
        let p = SecondPath {
            reporter: Netns::create(&format!("{prefix}s"))?,
            translator: Netns::create(&format!("{prefix}u"))?,
        };
        let (r2, t2) = (p.reporter.name(), p.translator.name());
        let c = &self.collector;
        p.reporter.ip(&[
            "link", "add", "r0", "type", "veth", "peer", "name", "ta", "netns", t2,
        ])?;
        c.ip(&[
            "link", "add", "c1", "type", "veth", "peer", "name", "tb", "netns", t2,
        ])?;
        c.ip(&[
            "link", "add", "cm2", "type", "veth", "peer", "name", "tm", "netns", t2,
        ])?;
        p.reporter
            .ip(&["link", "set", "r0", "address", "02:00:00:00:00:0b"])?;
        p.reporter
            .ip(&["addr", "add", &format!("{REPORTER2_IP}/24"), "dev", "r0"])?;
        // The collector's address and MAC move from c0 to a bridge over both data links.
        c.ip(&["addr", "del", &format!("{COLLECTOR_IP}/24"), "dev", "c0"])?;
        c.ip(&["link", "set", "c0", "address", "02:00:00:00:00:12"])?;
        c.ip(&["link", "add", "br0", "type", "bridge"])?;
        c.ip(&["link", "set", "br0", "address", COLLECTOR_MAC])?;
        c.ip(&["addr", "add", &format!("{COLLECTOR_IP}/24"), "dev", "br0"])?;
        for dev in ["c0", "c1"] {
            c.ip(&["link", "set", dev, "master", "br0"])?;
            c.ip(&["link", "set", dev, "up"])?;
        }
        c.ip(&["link", "set", "br0", "up"])?;
        c.ip(&["addr", "add", "198.19.1.2/24", "dev", "cm2"])?;
        c.ip(&["link", "set", "cm2", "up"])?;
        p.translator.ip(&[
            "addr",
            "add",
            &format!("{TRANSLATOR2_MGMT}/24"),
            "dev",
            "tm",
        ])?;
        p.reporter.ip(&["link", "set", "r0", "up"])?;
        for dev in ["ta", "tb", "tm"] {
            p.translator.ip(&["link", "set", dev, "up"])?;
        }
        // The collector's control port is on its first management address.
        p.translator.ip(&[
            "route",
            "add",
            &format!("{COLLECTOR_MGMT}/32"),
            "via",
            "198.19.1.2",
        ])?;
        let _ = r2;
        Ok(p)
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
