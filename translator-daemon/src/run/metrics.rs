//! Prometheus metrics of the running translator (OpenMetrics text through prometheus-client, families in
//! [`families`]), summed over workers at scrape time, and the counter summary printed at shutdown. Workers
//! publish snapshots; this module only reads them.

mod families;
mod per_node;
#[cfg(test)]
mod tests;

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use anyhow::{anyhow, Result};
use dta_httpd::openmetrics::{exposition, CONTENT_TYPE};
use dta_httpd::{Config, Limits, Request, Response, Server};
use dta_protocol::dta::Opcode;
use dta_translator::{Counters, DropReason};
use prometheus_client::registry::Registry;

use super::control::ControlCounters;
/// Per port: name and counters, for metrics.
pub type PortStats = Vec<(String, dta_netio::RxStats, dta_netio::TxStats)>;
use super::worker::{PlaneCounters, Snapshot};

/// Everything the exporter reads.
#[derive(Clone)]
pub struct Sources {
    /// One snapshot per worker.
    pub workers: Arc<Mutex<Vec<Snapshot>>>,
    /// The ports' names (and counters of none but the workers' queues, which the snapshots hold).
    pub ports: Arc<Mutex<PortStats>>,
    /// One per collector.
    pub control: Vec<Arc<ControlCounters>>,
}

/// The `primitive` label of each per-primitive counter slot (dta-protocol's one list of primitives).
const PRIMITIVES: [&str; Opcode::COUNT] = {
    let mut names = [""; Opcode::COUNT];
    let mut i = 0;
    while i < Opcode::COUNT {
        names[i] = Opcode::ALL[i].label();
        i += 1;
    }
    names
};

/// Engine counters summed over workers, and the restart counts.
pub struct Totals {
    /// Summed counters.
    pub c: Counters,
    /// Reports lost to collector restarts (and to collectors back with unusable memory).
    pub lost_on_restart: u64,
    /// QP re-establishments applied by workers.
    pub reestablished: u64,
    /// Collector restarts workers started over from.
    pub restarts: u64,
    /// Reports not written when the workers stopped.
    pub abandoned_at_stop: u64,
}

impl Totals {
    /// Sums the workers' counters (at scrape time: workers only publish their own snapshots).
    pub fn of(snaps: &[Snapshot]) -> Totals {
        let mut t = Totals {
            c: Counters::default(),
            lost_on_restart: 0,
            reestablished: 0,
            restarts: 0,
            abandoned_at_stop: 0,
        };
        for s in snaps {
            t.c += &s.counters;
            t.lost_on_restart += s.lost_on_restart;
            t.reestablished += s.reestablished;
            t.restarts += s.restarts;
            t.abandoned_at_stop += s.abandoned_at_stop;
        }
        t
    }
}

impl Sources {
    /// The workers' latest snapshots.
    fn snapshots(&self) -> Vec<Snapshot> {
        self.workers.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Sums the workers' counters.
    pub fn totals(&self) -> Totals {
        Totals::of(&self.snapshots())
    }

    /// A registry holding the translator's families under `dta_translator_`, read at every scrape.
    pub fn registry(&self) -> Registry {
        let mut registry = Registry::with_prefix("dta_translator");
        registry.register_collector(Box::new(families::Families(
            self.clone(),
            Default::default(),
        )));
        registry
    }

    /// The lines printed at shutdown.
    pub fn summary(&self) -> String {
        let t = self.totals();
        let c = &t.c;
        let mut s = String::new();
        let _ = writeln!(s, "dta-translator summary");
        let _ = writeln!(
            s,
            "  reports in            {}",
            c.reports_in.iter().sum::<u64>()
        );
        for (p, (n, ops)) in PRIMITIVES.iter().zip(c.reports_in.iter().zip(&c.ops_out)) {
            if *n > 0 || *ops > 0 {
                let _ = writeln!(s, "    {p:<20} {n} reports, {ops} RDMA ops");
            }
        }
        let _ = writeln!(s, "  RoCE frames out       {}", c.roce_frames_out);
        let _ = writeln!(s, "  retransmitted frames  {}", c.retransmitted_frames);
        let _ = writeln!(
            s,
            "    after timeouts / sequence NAKs  {} / {}",
            c.retransmit_timeouts, c.nak_psn_sequence
        );
        let _ = writeln!(s, "  ACKs / atomic ACKs    {} / {}", c.acks, c.atomic_acks);
        let _ = writeln!(s, "  DTA NACKs sent        {}", c.dta_nacks_sent);
        let _ = writeln!(s, "  reports dropped       {}", c.drops.iter().sum::<u64>());
        for r in DropReason::ALL {
            if c.dropped(r) > 0 {
                let _ = writeln!(s, "    {:<20} {}", r.label(), c.dropped(r));
            }
        }
        let _ = writeln!(s, "  QP errors             {}", c.qp_errors);
        let _ = writeln!(
            s,
            "  collector restarts    {}",
            self.control
                .iter()
                .map(|c| c.restarts.load(Ordering::Relaxed))
                .sum::<u64>()
        );
        let _ = writeln!(s, "  reports lost (restart) {}", t.lost_on_restart);
        let _ = writeln!(s, "  reports lost (stop)   {}", t.abandoned_at_stop);
        let p = self.plane();
        let _ = writeln!(s, "  frames forwarded      {}", p.forwarded);
        let _ = writeln!(s, "  frames handed off     {}", p.handed_off);
        let _ = writeln!(s, "  worker backlog drops  {}", p.handoff_full);
        let _ = writeln!(s, "  startup drops         {}", p.startup_drops);
        s
    }
}

impl Sources {
    /// The data path's counters, summed over the workers.
    pub fn plane(&self) -> PlaneCounters {
        let mut t = PlaneCounters::default();
        if let Ok(all) = self.workers.lock() {
            for s in all.iter() {
                t += s.plane;
            }
        }
        t
    }

    /// Per port counters: the sum of every worker's queue of each port (a DPDK device's misses are read
    /// by its queue 0 only, an AF_PACKET socket's by itself).
    pub fn port_totals(&self) -> PortStats {
        let mut ports = self.ports.lock().map(|p| p.clone()).unwrap_or_default();
        if let Ok(all) = self.workers.lock() {
            for snap in all.iter() {
                for ((_, rx, tx), (qrx, qtx)) in ports.iter_mut().zip(&snap.ports) {
                    *rx += *qrx;
                    *tx += *qtx;
                }
            }
        }
        ports
    }
}

/// The metrics HTTP server, `dta-httpd`'s bounded server answering `GET /metrics` with the families of
/// [`Sources::registry`] and the server's own counters as `dta_translator_http_*`; stops when dropped.
pub struct MetricsServer {
    _server: Server,
    /// The bound address.
    pub addr: SocketAddr,
}

impl MetricsServer {
    /// Serves `GET /metrics` on `addr`, within the default HTTP limits.
    pub fn start(addr: SocketAddr, sources: Sources) -> Result<Self> {
        Self::start_with(addr, sources, Limits::default())
    }

    fn start_with(addr: SocketAddr, sources: Sources, limits: Limits) -> Result<Self> {
        let listener = std::net::TcpListener::bind(addr)
            .map_err(|e| anyhow!("binding the metrics endpoint on {addr}: {e}"))?;
        let addr = listener.local_addr()?;
        let config = Config {
            name: "dta-metrics".into(),
            limits,
            refusal: dta_httpd::plain_refusal,
        };
        let registry = sources.registry();
        let server = Server::start(listener, config, move |req: &Request| match req.target() {
            "/metrics" => Response::new(
                200,
                CONTENT_TYPE,
                exposition(&registry, req.stats(), "dta_translator"),
            ),
            other => Response::new(
                404,
                "text/plain; charset=utf-8",
                format!("no such endpoint {other}; try /metrics\n"),
            ),
        })?;
        Ok(MetricsServer {
            _server: server,
            addr,
        })
    }
}
