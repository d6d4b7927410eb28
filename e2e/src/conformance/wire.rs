//! A raw Ethernet port (AF_PACKET) on an interface of a named network namespace, and the ARP answers for
//! the address our crafted frames come from (it is on no kernel interface).

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// Runs `f` with the calling thread in network namespace `name` (`ip netns add` names it), then returns
/// to the namespace it was in. Sockets keep the namespace they were created in.
pub fn in_netns<T>(name: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let home = File::open("/proc/thread-self/ns/net").context("opening our network namespace")?;
    let path = format!("/var/run/netns/{name}");
    let target = File::open(&path).with_context(|| format!("opening {path}"))?;
    // SAFETY: both descriptors are open namespace files.
    if unsafe { libc::setns(target.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        bail!("setns({path}): {}", io::Error::last_os_error());
    }
    let out = f();
    // SAFETY: as above; returning home must not fail silently, or later sockets land in the wrong place.
    if unsafe { libc::setns(home.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        bail!(
            "setns back to our namespace: {}",
            io::Error::last_os_error()
        );
    }
    out
}

/// A raw socket bound to one interface, seeing every frame that arrives there.
pub struct RawPort {
    fd: OwnedFd,
    /// The port's MAC and the IPv4 address we answer ARP for.
    mac: [u8; 6],
    ip: [u8; 4],
}

const ETH_P_ALL: u16 = 0x0003;
const ETH_P_ARP: u16 = 0x0806;
/// `PACKET_IGNORE_OUTGOING` (Linux 4.20): do not hand our own transmissions back to us.
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;

impl RawPort {
    /// Opens a raw socket on interface `ifname` of the current namespace, sending as `mac` / `ip`.
    pub fn open(ifname: &str, mac: [u8; 6], ip: [u8; 4]) -> Result<Self> {
        let cname = std::ffi::CString::new(ifname).context("interface name")?;
        // SAFETY: cname is NUL-terminated.
        let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) };
        if ifindex == 0 {
            bail!("no interface {ifname}: {}", io::Error::last_os_error());
        }
        // SAFETY: plain socket call.
        let raw = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                i32::from(ETH_P_ALL.to_be()),
            )
        };
        if raw < 0 {
            bail!("AF_PACKET socket: {}", io::Error::last_os_error());
        }
        // SAFETY: raw is a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let one: libc::c_int = 1;
        // SAFETY: a valid int option. Failure only means older kernels; recv() filters outgoing frames too.
        unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_PACKET,
                PACKET_IGNORE_OUTGOING,
                &one as *const _ as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
        // SAFETY: all-zero is a valid sockaddr_ll.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = ETH_P_ALL.to_be();
        sll.sll_ifindex = ifindex as i32;
        // SAFETY: sll is a valid sockaddr_ll of the size passed.
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                &sll as *const _ as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            bail!("binding to {ifname}: {}", io::Error::last_os_error());
        }
        Ok(RawPort { fd, mac, ip })
    }

    /// Sends one frame.
    pub fn send(&self, frame: &[u8]) -> Result<()> {
        // SAFETY: frame is a valid buffer of its length.
        let n = unsafe {
            libc::send(
                self.fd.as_raw_fd(),
                frame.as_ptr() as *const libc::c_void,
                frame.len(),
                0,
            )
        };
        if n < 0 || n as usize != frame.len() {
            bail!("sending a frame: {}", io::Error::last_os_error());
        }
        Ok(())
    }

    /// Receives the next frame that is not ARP (answered on the way) until `deadline`.
    pub fn recv_until(&self, buf: &mut [u8], deadline: Instant) -> Result<Option<usize>> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            let mut pfd = libc::pollfd {
                fd: self.fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            let ms = left.as_millis().clamp(1, 60_000) as libc::c_int;
            // SAFETY: one valid pollfd.
            let rc = unsafe { libc::poll(&mut pfd, 1, ms) };
            if rc < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                bail!("poll: {e}");
            }
            if rc == 0 {
                continue;
            }
            // SAFETY: all-zero is a valid sockaddr_ll.
            let mut from: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            let mut flen = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
            // SAFETY: buf and from are valid for the lengths passed.
            let n = unsafe {
                libc::recvfrom(
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr() as *mut libc::c_void,
                    buf.len(),
                    0,
                    &mut from as *mut _ as *mut libc::sockaddr,
                    &mut flen,
                )
            };
            if n < 0 {
                bail!("recvfrom: {}", io::Error::last_os_error());
            }
            if from.sll_pkttype == libc::PACKET_OUTGOING {
                continue;
            }
            let n = n as usize;
            if self.answer_arp(&buf[..n])? {
                continue;
            }
            return Ok(Some(n));
        }
    }

    /// Drops whatever is queued (answering ARP), so that a step only sees its own responses.
    pub fn drain(&self) -> Result<()> {
        let mut buf = [0u8; 2048];
        while self
            .recv_until(&mut buf, Instant::now() + Duration::from_millis(1))?
            .is_some()
        {}
        Ok(())
    }

    /// Answers an ARP request for our address; true when the frame was ARP.
    fn answer_arp(&self, f: &[u8]) -> Result<bool> {
        if f.len() < 42 || f[12..14] != ETH_P_ARP.to_be_bytes() {
            return Ok(false);
        }
        // Ethernet/IPv4 request (oper 1) for our IP.
        if f[14..22] == [0, 1, 8, 0, 6, 4, 0, 1] && f[38..42] == self.ip {
            let mut r = [0u8; 42];
            r[0..6].copy_from_slice(&f[22..28]);
            r[6..12].copy_from_slice(&self.mac);
            r[12..14].copy_from_slice(&ETH_P_ARP.to_be_bytes());
            r[14..22].copy_from_slice(&[0, 1, 8, 0, 6, 4, 0, 2]);
            r[22..28].copy_from_slice(&self.mac);
            r[28..32].copy_from_slice(&self.ip);
            r[32..42].copy_from_slice(&f[22..32]);
            self.send(&r)?;
        }
        Ok(true)
    }
}
