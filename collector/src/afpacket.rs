//! The software responder's I/O loop over an AF_PACKET socket on a named interface: receive a frame, pass
//! it through fault injection and the sans-IO responder, send the response. Nothing protocol-related
//! happens here.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::memory::Arena;
use crate::metrics::Metrics;
use crate::responder::{FaultConfig, FaultInjector, Outcome, Responder, RESPONSE_MAX};

/// How long a receive waits before the loop checks for shutdown and flushes held frames.
const RECV_TIMEOUT: Duration = Duration::from_millis(100);
/// How often counters are published to the metrics.
const PUBLISH_EVERY: Duration = Duration::from_millis(200);
/// Largest frame received (jumbo frames included).
const MAX_FRAME: usize = 9216;

/// A raw packet socket bound to one interface.
pub struct PacketSocket {
    fd: OwnedFd,
}

impl PacketSocket {
    /// Opens an AF_PACKET socket on `interface` (needs CAP_NET_RAW).
    pub fn open(interface: &str) -> Result<Self> {
        let name = CString::new(interface)
            .map_err(|_| Error::Config(format!("bad interface name {interface:?}")))?;
        // SAFETY: name is a valid NUL-terminated string.
        let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
        if index == 0 {
            return Err(Error::io(
                format!("interface {interface}"),
                io::Error::last_os_error(),
            ));
        }
        let proto = (libc::ETH_P_ALL as u16).to_be();
        // SAFETY: plain socket(2) call.
        let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, i32::from(proto)) };
        if raw < 0 {
            return Err(Error::io(
                format!("AF_PACKET socket on {interface} (needs CAP_NET_RAW)"),
                io::Error::last_os_error(),
            ));
        }
        // SAFETY: raw is a fresh descriptor that we own from here on.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: all-zero is a valid sockaddr_ll; the fields that matter are set below.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = proto;
        sll.sll_ifindex = index as i32;
        // SAFETY: sll is a valid sockaddr_ll of the given length.
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&sll as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        if rc < 0 {
            return Err(Error::io(
                format!("binding to {interface}"),
                io::Error::last_os_error(),
            ));
        }
        let tv = libc::timeval {
            tv_sec: 0,
            tv_usec: RECV_TIMEOUT.as_micros() as libc::suseconds_t,
        };
        // SAFETY: tv is a valid timeval for SO_RCVTIMEO.
        let rc = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&tv as *const libc::timeval).cast(),
                std::mem::size_of::<libc::timeval>() as u32,
            )
        };
        if rc < 0 {
            return Err(Error::io("SO_RCVTIMEO", io::Error::last_os_error()));
        }
        Ok(PacketSocket { fd })
    }

    /// Receives one frame that arrived from the wire (our own transmissions, which a packet socket also
    /// sees, are skipped). `Ok(None)` on timeout.
    pub fn recv(&self, buf: &mut [u8]) -> Result<Option<usize>> {
        loop {
            // SAFETY: all-zero sockaddr_ll is valid; recvfrom fills it.
            let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            let mut len = std::mem::size_of::<libc::sockaddr_ll>() as u32;
            // SAFETY: buf and sll are valid for the lengths given.
            let n = unsafe {
                libc::recvfrom(
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    0,
                    (&mut sll as *mut libc::sockaddr_ll).cast(),
                    &mut len,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                return match e.kind() {
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => Ok(None),
                    io::ErrorKind::Interrupted => continue,
                    _ => Err(Error::io("recvfrom", e)),
                };
            }
            if sll.sll_pkttype == libc::PACKET_OUTGOING {
                continue;
            }
            return Ok(Some(n as usize));
        }
    }

    /// Sends one frame.
    pub fn send(&self, frame: &[u8]) -> Result<()> {
        // SAFETY: frame is valid for its length.
        let n = unsafe { libc::send(self.fd.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
        if n < 0 {
            return Err(Error::io("send", io::Error::last_os_error()));
        }
        Ok(())
    }
}

/// Runs the responder on `socket` until `stop` is set.
pub fn run(
    socket: &PacketSocket,
    responder: &Mutex<Responder>,
    arena: &Arena,
    faults: FaultConfig,
    metrics: &Metrics,
    stop: &AtomicBool,
) -> Result<()> {
    let mut injector = FaultInjector::new(faults);
    let mut buf = vec![0u8; MAX_FRAME];
    let mut deliver = Vec::new();
    let mut out = [0u8; RESPONSE_MAX];
    let mut last_publish = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        match socket.recv(&mut buf)? {
            Some(n) => injector.push(&buf[..n], &mut deliver),
            None => injector.flush(&mut deliver),
        }
        if !deliver.is_empty() {
            let mut r = responder.lock().unwrap_or_else(|e| e.into_inner());
            let mut mem = arena.write();
            for frame in deliver.drain(..) {
                if let Outcome::Respond(n) = r.handle(&frame, mem.as_mut_slice(), &mut out) {
                    if let Err(e) = socket.send(&out[..n]) {
                        log::warn!("sending a response: {e}");
                    }
                }
            }
        }
        if last_publish.elapsed() >= PUBLISH_EVERY {
            let r = responder.lock().unwrap_or_else(|e| e.into_inner());
            metrics.publish_responder(r.stats(), injector.counts());
            last_publish = Instant::now();
        }
    }
    Ok(())
}
