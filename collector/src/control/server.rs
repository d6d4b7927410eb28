//! The running control server: binds, serves in a background thread, and stops.

use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::accept::accept_loop;
use super::shared::Shared;
use super::slots::Slots;
use super::{Advertised, ControlLimits, QpOpener, QpStats, QpTable};
use crate::error::{Error, Result};

/// A running control server; stops when dropped or on [`stop`](Self::stop).
pub struct ControlServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    slots: Arc<Slots>,
    shared: Arc<Shared>,
}

impl ControlServer {
    /// Binds `addr` (required: there is no default of every interface) and serves in a background thread
    /// with the default [`ControlLimits`].
    pub fn start(addr: SocketAddr, ad: Advertised, opener: Arc<dyn QpOpener>) -> Result<Self> {
        Self::start_with(addr, ad, opener, ControlLimits::default())
    }

    /// As [`start`](Self::start) with explicit limits.
    pub fn start_with(
        addr: SocketAddr,
        ad: Advertised,
        opener: Arc<dyn QpOpener>,
        limits: ControlLimits,
    ) -> Result<Self> {
        let listener = TcpListener::bind(addr)
            .map_err(|e| Error::io(format!("binding control port {addr}"), e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::io("control port address", e))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| Error::io("control port non-blocking", e))?;
        let stop = Arc::new(AtomicBool::new(false));
        let slots = Arc::new(Slots::default());
        let shared = Arc::new(Shared {
            ad,
            opener,
            limits,
            stop: stop.clone(),
            slots: slots.clone(),
            table: Mutex::new(QpTable::default()),
            qp_stats: Arc::new(QpStats::default()),
            next_lease: AtomicU64::new(1),
        });
        let server = shared.clone();
        let thread = std::thread::Builder::new()
            .name("dta-control".into())
            .spawn(move || accept_loop(listener, server))
            .map_err(|e| Error::io("spawning the control thread", e))?;
        log::info!(
            "control server on {addr} (at most {} connections, {} per address; hello within {:?}, \
             at most {} bytes; at most {} QPs per hello, {} in all, a closed connection's kept {:?})",
            limits.max_connections,
            limits.max_per_address,
            limits.hello_deadline,
            limits.max_hello,
            limits.qps.per_hello,
            limits.qps.total,
            limits.qps.grace
        );
        Ok(ControlServer {
            addr,
            stop,
            thread: Some(thread),
            slots,
            shared,
        })
    }

    /// The bound address (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Connections being served now.
    pub fn connections(&self) -> usize {
        self.slots.lock().total
    }

    /// The QP table's counters (open, reclaimed, refused), for metrics.
    pub fn qp_stats(&self) -> Arc<QpStats> {
        self.shared.qp_stats.clone()
    }

    /// Stops accepting and waits for the accept thread. Connection threads end at their deadline.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        self.stop();
    }
}
