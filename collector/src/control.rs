//! The control server (DESIGN.md section 6): TCP, one JSON object per line. A translator says hello with
//! its addresses and QPs; the collector checks version and token, opens one responder QP per translator
//! QP through a [`QpOpener`] (the software responder or the ibverbs backend), and answers with a welcome
//! that lists every region. A bad hello gets a refusal with a reason and the connection is closed.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use dta_protocol::control::{
    CollectorMessage, Hello, Refusal, ResponderQp, TranslatorMessage, Welcome, CONTROL_VERSION,
};
use dta_protocol::layout::Region;

use crate::error::{Error, Result};

/// Longest line accepted: a hello with thousands of QPs fits; a stream without newlines does not grow
/// memory without bound.
const MAX_LINE: u64 = 1 << 20;
/// A peer that sends nothing for this long is disconnected.
const READ_TIMEOUT: Duration = Duration::from_secs(30);
/// How often the accept loop checks for shutdown.
const POLL: Duration = Duration::from_millis(50);

/// Opens the collector's side of the translator's QPs: the backend-specific part of a handshake.
pub trait QpOpener: Send + Sync {
    /// Creates (or re-creates) one connected responder QP per translator QP, in order.
    fn open(&self, hello: &Hello) -> std::result::Result<Vec<ResponderQp>, String>;
}

/// What the collector advertises in every welcome.
#[derive(Debug, Clone)]
pub struct Advertised {
    /// The shared token a hello must carry.
    pub token: String,
    /// The collector's MAC.
    pub mac: [u8; 6],
    /// The collector's IPv4 address.
    pub ip: [u8; 4],
    /// Atomics in flight per QP.
    pub max_dest_rd_atomic: u32,
    /// Largest payload per packet.
    pub path_mtu: u32,
    /// Every region.
    pub regions: Vec<Region>,
}

/// A running control server; stops when dropped or on [`stop`](Self::stop).
pub struct ControlServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl ControlServer {
    /// Binds `addr` (required: there is no default of every interface) and serves in a background thread.
    pub fn start(addr: SocketAddr, ad: Advertised, opener: Arc<dyn QpOpener>) -> Result<Self> {
        let listener = TcpListener::bind(addr)
            .map_err(|e| Error::io(format!("binding control port {addr}"), e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::io("control port address", e))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| Error::io("control port non-blocking", e))?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let ad = Arc::new(ad);
        let thread = std::thread::Builder::new()
            .name("dta-control".into())
            .spawn(move || accept_loop(listener, flag, ad, opener))
            .map_err(|e| Error::io("spawning the control thread", e))?;
        log::info!("control server on {addr}");
        Ok(ControlServer {
            addr,
            stop,
            thread: Some(thread),
        })
    }

    /// The bound address (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting and waits for the accept thread.
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

fn accept_loop(
    listener: TcpListener,
    stop: Arc<AtomicBool>,
    ad: Arc<Advertised>,
    opener: Arc<dyn QpOpener>,
) {
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, peer)) => {
                let (ad, opener) = (ad.clone(), opener.clone());
                let spawned = std::thread::Builder::new()
                    .name("dta-control-conn".into())
                    .spawn(move || {
                        if let Err(e) = serve_connection(stream, &ad, opener.as_ref()) {
                            log::warn!("control connection from {peer}: {e}");
                        }
                    });
                if let Err(e) = spawned {
                    log::error!("cannot serve control connection from {peer}: {e}");
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(POLL),
            Err(e) => {
                log::warn!("control accept: {e}");
                std::thread::sleep(POLL);
            }
        }
    }
}

/// Answers hellos on one connection until EOF or a refusal. A translator may say hello again on the same
/// connection to re-establish its QPs after an error.
fn serve_connection(
    stream: TcpStream,
    ad: &Advertised,
    opener: &dyn QpOpener,
) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(READ_TIMEOUT))?;
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = String::new();
        let n = (&mut reader).take(MAX_LINE).read_line(&mut line)?;
        if n == 0 {
            return Ok(());
        }
        let (reply, keep) = match answer(&line, ad, opener) {
            Ok(w) => (CollectorMessage::Welcome(w), true),
            Err(error) => {
                log::warn!("refusing translator: {error}");
                let r = Refusal {
                    version: CONTROL_VERSION,
                    error,
                };
                (CollectorMessage::Refusal(r), false)
            }
        };
        let mut text = serde_json::to_string(&reply).map_err(std::io::Error::other)?;
        text.push('\n');
        writer.write_all(text.as_bytes())?;
        if !keep {
            return Ok(());
        }
    }
}

/// Checks a hello line and builds the welcome, or says why not.
pub fn answer(
    line: &str,
    ad: &Advertised,
    opener: &dyn QpOpener,
) -> std::result::Result<Welcome, String> {
    if !line.ends_with('\n') && line.len() as u64 >= MAX_LINE {
        return Err(format!("hello longer than {MAX_LINE} bytes"));
    }
    // The version is checked before the rest of the schema, so that a peer of another version learns that,
    // not that its fields look malformed to us.
    let value: serde_json::Value =
        serde_json::from_str(line).map_err(|e| format!("malformed JSON: {e}"))?;
    match value.get("version").and_then(|v| v.as_u64()) {
        Some(v) if v == u64::from(CONTROL_VERSION) => {}
        Some(v) => {
            return Err(format!(
                "control protocol version {v} is not supported; this collector speaks version {CONTROL_VERSION}"
            ))
        }
        None => return Err("hello has no numeric \"version\" field".into()),
    }
    let TranslatorMessage::Hello(hello) =
        serde_json::from_value(value).map_err(|e| format!("malformed hello: {e}"))?;
    if !token_eq(hello.token.as_bytes(), ad.token.as_bytes()) {
        return Err(
            "wrong token: the translator's control token does not match the collector's".into(),
        );
    }
    if let Some(q) = hello
        .qps
        .iter()
        .find(|q| q.qpn > 0xFF_FFFF || q.start_psn > 0xFF_FFFF)
    {
        return Err(format!(
            "QPN {:#x} or start PSN {:#x} does not fit in 24 bits",
            q.qpn, q.start_psn
        ));
    }
    let qps = opener.open(&hello)?;
    Ok(Welcome {
        version: CONTROL_VERSION,
        mac: ad.mac,
        ip: ad.ip,
        qps,
        max_dest_rd_atomic: ad.max_dest_rd_atomic,
        path_mtu: ad.path_mtu,
        regions: ad.regions.clone(),
    })
}

/// Compares tokens in time independent of where they differ.
fn token_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
