//! `serve`: builds the arena, the chosen backend, the control server, the HTTP API and (for the software
//! backend on a port) the responder's I/O loop, and keeps them running together.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::backend::soft::SoftOpener;
use crate::config::Config;
use crate::control::{Advertised, ControlServer, QpOpener};
use crate::engine::QueryEngine;
use crate::error::{Error, Result};
use crate::http::HttpServer;
use crate::io_loop;
use crate::memory::{Arena, Opened};
use crate::metrics::Metrics;
use crate::port;
use crate::responder::{Responder, ResponderConfig};
use crate::signals::{StopSignals, Taken};

/// Which backend serves the regions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The software RoCEv2 responder.
    Soft,
    /// A real RDMA device through libibverbs.
    Ibverbs,
}

/// A running collector; everything stops when it is dropped.
pub struct Running {
    /// The HTTP API, when configured.
    pub http: Option<HttpServer>,
    /// The control server, when configured.
    pub control: Option<ControlServer>,
    stop: Arc<AtomicBool>,
    io: Option<JoinHandle<Result<()>>>,
    metrics: Arc<Metrics>,
    /// The history exporter, when `[export]` is configured; stopped (lists drained, files closed)
    /// before the arena goes.
    #[cfg(feature = "export")]
    export: Option<crate::export::Exporter>,
    // The ibverbs device must outlive nothing but the arena it registered; it lives in the opener.
    _opener: Arc<dyn QpOpener>,
}

impl Running {
    /// Runs until a stop signal (its name is returned) or the end of the I/O loop (its error, if any).
    /// SIGHUP is logged and ignored; SIGUSR1 prints the counters so far (stdout, as at a stop).
    pub fn wait_for_stop(&mut self, signals: &StopSignals) -> Result<Option<&'static str>> {
        loop {
            match signals.wait(std::time::Duration::from_millis(200)) {
                Some(Taken::Stop(sig)) => return Ok(Some(sig)),
                Some(Taken::Hangup) => log::warn!(
                    "SIGHUP ignored: the collector has nothing to reload; it keeps running with its \
                     regions (stop it with SIGTERM)"
                ),
                Some(Taken::User1) => {
                    let summary = self.summary();
                    log::info!("SIGUSR1: the counters so far\n{summary}");
                    println!("dta-collector counters on SIGUSR1");
                    print!("{summary}");
                }
                None => {}
            }
            if self.io.as_ref().is_some_and(JoinHandle::is_finished) {
                if let Some(t) = self.io.take() {
                    t.join()
                        .unwrap_or_else(|_| Err(Error::Rdma("the I/O loop panicked".into())))?;
                }
                return Ok(None);
            }
        }
    }

    /// The non-zero counters and gauges of `/metrics`, one per line: what a stopped collector prints.
    pub fn summary(&self) -> String {
        let idle = crate::http::HttpStats::default();
        let http = self.http.as_ref().map_or(&idle, HttpServer::stats);
        self.metrics
            .render(http)
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter(|l| {
                l.rsplit(' ')
                    .next()
                    .is_some_and(|v| v.parse::<f64>() != Ok(0.0))
            })
            .map(|l| format!("  {l}\n"))
            .collect()
    }
}

impl Running {
    /// Stops the I/O loop, then the exporter (its last drain and epoch counted in the metrics, which
    /// stay readable for [`summary`](Self::summary)). Dropping does the same; a second call does nothing.
    pub fn shutdown(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.io.take() {
            let _ = t.join();
        }
        // After the I/O loop: nothing writes any more, so the last drain exports every entry.
        #[cfg(feature = "export")]
        if let Some(e) = self.export.as_mut() {
            e.stop();
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Starts the collector. `interface` is the software responder's AF_PACKET interface; `None` serves the
/// control channel and queries only.
pub fn start(
    config: &Config,
    backend: Backend,
    interface: Option<&str>,
    device: Option<&str>,
) -> Result<Running> {
    let layout = config.region_layout();
    let c = &config.collector;
    let metrics = Arc::new(Metrics::default());
    let stop = Arc::new(AtomicBool::new(false));
    let mut io = None;
    // The software responder answers from the configured MAC; a NIC answers from its own.
    let mut mac = c.mac.octets();
    let (arena, opener): (Arc<Arena>, Arc<dyn QpOpener>) = match backend {
        Backend::Ibverbs => {
            let (arena, opener, nic_mac) = ibverbs_backend(config, &layout, device)?;
            mac = nic_mac;
            (arena, opener)
        }
        Backend::Soft => {
            let arena = Arc::new(make_arena(config, &layout)?);
            let rc = ResponderConfig {
                max_dest_rd_atomic: c.max_dest_rd_atomic,
                path_mtu: c.path_mtu,
                local_ip: Some(c.ip.octets()),
                local_mac: Some(c.mac.octets()),
                vlan: c.vlan,
            };
            let responder = Arc::new(Mutex::new(Responder::new(rc, arena.slots().to_vec())));
            if let Some(ifname) = interface {
                let mut port = port::open(c.io, ifname, &c.eal_args)?;
                let (r, a, m, s) = (
                    responder.clone(),
                    arena.clone(),
                    metrics.clone(),
                    stop.clone(),
                );
                let faults = config.faults;
                let (c_io, eal_args) = (c.io, c.eal_args.clone());
                if faults.is_active() {
                    log::warn!("fault injection on: {faults:?}");
                }
                io = Some(
                    std::thread::Builder::new()
                        .name("dta-responder".into())
                        .spawn(move || {
                            register_io_thread(c_io, eal_args);
                            io_loop::run(&mut port, &r, &a, faults, &m, &s)
                        })
                        .map_err(|e| Error::io("spawning the I/O thread", e))?,
                );
                log::info!("software responder on {ifname} ({:?}) for {}", c.io, c.ip);
            }
            (arena, Arc::new(SoftOpener::new(responder)))
        }
    };
    let control = match &config.control {
        Some(cc) => {
            if cc.token.is_empty() {
                return Err(Error::Config("control token is empty".into()));
            }
            let ad = Advertised {
                token: cc.token.clone(),
                mac,
                ip: c.ip.octets(),
                max_dest_rd_atomic: c.max_dest_rd_atomic,
                path_mtu: c.path_mtu,
                regions: arena.regions(),
                memory: Some(arena.clone()),
            };
            let server = ControlServer::start(cc.bind, ad, opener.clone())?;
            metrics.publish_control(server.qp_stats());
            Some(server)
        }
        None => None,
    };
    let http = match &config.http {
        Some(h) => {
            let engine = Arc::new(QueryEngine::new(arena.clone(), config, metrics.clone())?);
            Some(HttpServer::start(h.bind, engine, metrics.clone())?)
        }
        None => None,
    };
    #[cfg(feature = "export")]
    let export = match &config.export {
        Some(_) => Some(crate::export::Exporter::start(
            arena.clone(),
            config,
            metrics.export.clone(),
        )?),
        None => None,
    };
    #[cfg(not(feature = "export"))]
    if config.export.is_some() {
        return Err(Error::Config(
            "[export] is configured but this build has no exporter (feature `export` off)".into(),
        ));
    }
    Ok(Running {
        http,
        control,
        stop,
        io,
        metrics,
        #[cfg(feature = "export")]
        export,
        _opener: opener,
    })
}

/// The regions' memory: anonymous (hugepages when there are some), or the `[collector] memory_file`,
/// whose contents a restart keeps.
fn make_arena(config: &Config, layout: &[(u32, dta_protocol::layout::Geometry)]) -> Result<Arena> {
    let c = &config.collector;
    let Some(path) = &c.memory_file else {
        return Arena::new(layout);
    };
    let (arena, opened) = Arena::with_memory_file(layout, path, c.fresh_memory)?;
    let (len, pages) = {
        let m = arena.read();
        (m.as_slice().len(), m.pages())
    };
    let what = match opened {
        Opened::Created => "created: regions start zeroed",
        Opened::Kept => "same layout: regions keep their contents",
        Opened::Reset => "--fresh-memory: its contents discarded, regions start zeroed",
    };
    log::info!(
        "regions in memory file {} ({len} bytes on {pages:?} pages), {what}",
        path.display()
    );
    if opened == Opened::Kept {
        for h in arena.append_heads() {
            log::info!("append list {} continues at head {}", h.list, h.head);
        }
    }
    Ok(arena)
}

/// The ibverbs backend: the device, the regions registered on it, and the MAC its responses come from.
type VerbsBackend = (Arc<Arena>, Arc<dyn QpOpener>, [u8; 6]);

#[cfg(feature = "ibverbs")]
fn ibverbs_backend(
    config: &Config,
    layout: &[(u32, dta_protocol::layout::Geometry)],
    device: Option<&str>,
) -> Result<VerbsBackend> {
    use crate::backend::ibverbs::{netdev_mac, IbvDevice};
    use crate::backend::{register_arena, roce_v2_gid, QpSettings, Verbs, VerbsOpener};
    // Open the device first: without one, fail before allocating gigabytes of hugepages.
    let mut dev = IbvDevice::open(device)?;
    let c = &config.collector;
    // Responses must leave from the GID the translator addresses, the IPv4-mapped RoCE v2 entry of our
    // address, and from its network device's MAC, which the welcome advertises.
    let gid = roce_v2_gid(&dev.gid_table()?, c.ip)?;
    let sgid_index = u8::try_from(gid.index).map_err(|_| {
        Error::Rdma(format!(
            "the RoCE v2 GID of {} is at index {}, beyond the 255 a QP's address vector can name",
            c.ip, gid.index
        ))
    })?;
    let (ifname, mac) = netdev_mac(gid.ifindex)?;
    let mac_text = dta_protocol::MacAddr(mac);
    if c.mac.octets() != mac {
        log::warn!(
            "[collector] mac = {} is not the RDMA device's: responses come from {ifname}'s {mac_text}, \
             which the translator is told",
            c.mac
        );
    }
    log::info!("RoCE v2 source GID {gid} on {ifname} ({mac_text})");
    // A kept memory file is registered like fresh memory: the device hands out new R_Keys, which the
    // welcome carries as after any restart.
    let mut arena = make_arena(config, layout)?;
    register_arena(&mut dev, &mut arena)?;
    let settings = QpSettings {
        path_mtu: c.path_mtu,
        max_dest_rd_atomic: c.max_dest_rd_atomic.min(255) as u8,
        sgid_index,
    };
    Ok((
        Arc::new(arena),
        Arc::new(VerbsOpener::new(dev, settings)),
        mac,
    ))
}

#[cfg(not(feature = "ibverbs"))]
fn ibverbs_backend(
    _config: &Config,
    _layout: &[(u32, dta_protocol::layout::Geometry)],
    _device: Option<&str>,
) -> Result<VerbsBackend> {
    Err(Error::Rdma(
        "this build has no ibverbs support (feature `ibverbs` off); use --backend soft".into(),
    ))
}

/// The addresses a started collector listens on, for the first lines of `serve`'s output.
pub fn listening(r: &Running) -> Vec<(&'static str, SocketAddr)> {
    let mut v = Vec::new();
    if let Some(h) = &r.http {
        v.push(("http", h.local_addr()));
    }
    if let Some(c) = &r.control {
        v.push(("control", c.local_addr()));
    }
    v
}

/// Gives a DPDK I/O thread an lcore id (per-lcore mempool caches); AF_PACKET needs nothing.
fn register_io_thread(kind: crate::port::IoKind, eal_args: Vec<String>) {
    #[cfg(feature = "dpdk")]
    if kind == crate::port::IoKind::Dpdk {
        // The EAL was initialised when the port opened; an error here only costs the mbuf cache.
        if let Ok(eal) = dta_netio::dpdk::eal_init(eal_args) {
            if let Err(e) = dta_netio::dpdk::register_thread(eal) {
                log::warn!("DPDK thread registration: {e}");
            }
        }
    }
    #[cfg(not(feature = "dpdk"))]
    let _ = (kind, eal_args);
}
