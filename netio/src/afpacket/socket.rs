//! The socket: opened and bound to an interface with its options, its addresses and kernel drops.

use std::cell::Cell;
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

use crate::{NetioError, RxStats, TxStats};

use super::config::AfPacketConfig;
use super::messages::{Messages, PACKET_AUXDATA};

/// A raw socket bound to one interface, receiving every frame that arrives on it (not the ones it sends).
pub struct AfPacket {
    pub(super) fd: OwnedFd,
    pub(super) ifname: String,
    ifindex: u32,
    mac: [u8; 6],
    pub(super) msgs: Messages,
    pub(super) rx_stats: RxStats,
    pub(super) tx_stats: TxStats,
    /// Kernel drops read so far (`PACKET_STATISTICS` resets on every read, so they are summed here).
    pub(super) missed: Cell<u64>,
}

fn setsockopt<T>(fd: &OwnedFd, level: i32, name: i32, value: &T) -> std::io::Result<()> {
    // SAFETY: `value` points to a live T of the size passed.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (value as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Sets a socket buffer size, forcing past the sysctl limit when allowed (root) and settling for the limit
/// otherwise: a smaller buffer only means more drops under load, not a failure.
fn set_buffer(fd: &OwnedFd, force: i32, plain: i32, bytes: usize) -> std::io::Result<()> {
    let v = bytes.min(i32::MAX as usize) as libc::c_int;
    setsockopt(fd, libc::SOL_SOCKET, force, &v)
        .or_else(|_| setsockopt(fd, libc::SOL_SOCKET, plain, &v))
}

impl AfPacket {
    /// Opens a raw socket on `ifname` (in the calling thread's network namespace).
    pub fn open(ifname: &str, config: &AfPacketConfig) -> Result<Self, NetioError> {
        if ifname.is_empty() || ifname.len() >= libc::IFNAMSIZ {
            return Err(NetioError::Config(format!(
                "interface name {ifname:?} must have 1 to {} bytes",
                libc::IFNAMSIZ - 1
            )));
        }
        if config.max_burst == 0 || config.max_burst > 1024 {
            return Err(NetioError::Config(format!(
                "AF_PACKET max_burst {} must be within 1..=1024",
                config.max_burst
            )));
        }
        let cname = CString::new(ifname).map_err(|_| {
            NetioError::Config(format!("interface name {ifname:?} contains a NUL byte"))
        })?;
        // SAFETY: cname is a valid C string.
        let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) };
        if ifindex == 0 {
            return Err(NetioError::last_os(format!("interface {ifname}")));
        }
        // Protocol 0: the socket receives nothing until bind, so no frame of another interface slips in.
        // SAFETY: plain system call; the result is checked.
        let raw = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                0,
            )
        };
        if raw < 0 {
            return Err(NetioError::last_os(format!(
                "AF_PACKET socket for {ifname}"
            )));
        }
        // SAFETY: raw is a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let ctx = |what: &str| format!("AF_PACKET {ifname}: {what}");

        // Without this the socket also sees every frame it (or anyone) sends on the interface.
        setsockopt(
            &fd,
            libc::SOL_PACKET,
            libc::PACKET_IGNORE_OUTGOING,
            &1 as &libc::c_int,
        )
        .map_err(|e| NetioError::io(ctx("PACKET_IGNORE_OUTGOING (needs Linux 4.20)"), e))?;
        // The VLAN tag the kernel strips comes back in a control message (see the module's comment).
        setsockopt(&fd, libc::SOL_PACKET, PACKET_AUXDATA, &1 as &libc::c_int)
            .map_err(|e| NetioError::io(ctx("PACKET_AUXDATA"), e))?;
        set_buffer(&fd, libc::SO_RCVBUFFORCE, libc::SO_RCVBUF, config.rcvbuf)
            .map_err(|e| NetioError::io(ctx("SO_RCVBUF"), e))?;
        set_buffer(&fd, libc::SO_SNDBUFFORCE, libc::SO_SNDBUF, config.sndbuf)
            .map_err(|e| NetioError::io(ctx("SO_SNDBUF"), e))?;
        // Frames we send go straight to the driver: a raw injector has no use for the qdisc. Best effort.
        if let Err(e) = setsockopt(
            &fd,
            libc::SOL_PACKET,
            libc::PACKET_QDISC_BYPASS,
            &1 as &libc::c_int,
        ) {
            log::debug!("{}: {e}", ctx("PACKET_QDISC_BYPASS"));
        }

        // SAFETY: all-zero sockaddr_ll is valid; the fields that matter are set below.
        let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
        addr.sll_ifindex = ifindex as i32;
        // SAFETY: addr is a valid sockaddr_ll of the size passed.
        let r = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&addr as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(NetioError::last_os(ctx("bind")));
        }
        if config.promiscuous {
            // SAFETY: all-zero packet_mreq is valid.
            let mut mreq: libc::packet_mreq = unsafe { std::mem::zeroed() };
            mreq.mr_ifindex = ifindex as i32;
            mreq.mr_type = libc::PACKET_MR_PROMISC as u16;
            setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_ADD_MEMBERSHIP, &mreq)
                .map_err(|e| NetioError::io(ctx("promiscuous mode"), e))?;
        }
        if let Some(group) = config.fanout {
            // The group id in the low 16 bits, the mode in the high ones (linux/if_packet.h).
            let arg = libc::c_int::from(group) | ((libc::PACKET_FANOUT_HASH as libc::c_int) << 16);
            setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_FANOUT, &arg)
                .map_err(|e| NetioError::io(ctx(&format!("PACKET_FANOUT group {group}")), e))?;
        }
        let mac =
            hardware_address(&fd, &cname).map_err(|e| NetioError::io(ctx("SIOCGIFHWADDR"), e))?;
        Ok(AfPacket {
            fd,
            ifname: ifname.to_owned(),
            ifindex,
            mac,
            msgs: Messages::new(config.max_burst),
            rx_stats: RxStats::default(),
            tx_stats: TxStats::default(),
            missed: Cell::new(0),
        })
    }

    /// Frames the kernel dropped because the socket's receive buffer was full, since the socket opened.
    /// Reading resets the kernel's counter, so the total is kept here; if the read fails (it does not for
    /// a packet socket) the last total stands.
    pub fn kernel_drops(&self) -> u64 {
        let mut st = libc::tpacket_stats {
            tp_packets: 0,
            tp_drops: 0,
        };
        let mut len = std::mem::size_of::<libc::tpacket_stats>() as libc::socklen_t;
        // SAFETY: `st` and `len` are live and describe a tpacket_stats, as PACKET_STATISTICS expects.
        let r = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                (&mut st as *mut libc::tpacket_stats).cast(),
                &mut len,
            )
        };
        if r == 0 {
            self.missed.set(self.missed.get() + u64::from(st.tp_drops));
        }
        self.missed.get()
    }

    /// The interface's name.
    pub fn ifname(&self) -> &str {
        &self.ifname
    }

    /// The interface's index in its namespace.
    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    /// The interface's MAC address (the source address for frames a responder originates).
    pub fn mac(&self) -> [u8; 6] {
        self.mac
    }

    /// Waits up to `timeout` for a frame to be receivable; `Ok(false)` on timeout. Lets a responder sleep
    /// instead of spinning when idle.
    pub fn wait_readable(&self, timeout: Duration) -> Result<bool, NetioError> {
        let mut pfd = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: one valid pollfd.
        let r = unsafe { libc::poll(&mut pfd, 1, ms) };
        match r {
            0 => Ok(false),
            r if r > 0 => Ok(true),
            _ if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {
                Ok(false)
            }
            _ => Err(NetioError::last_os(format!(
                "AF_PACKET {}: poll",
                self.ifname
            ))),
        }
    }
}

impl AsRawFd for AfPacket {
    /// The socket, for callers that wait on several endpoints with their own poll/epoll loop.
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.fd.as_raw_fd()
    }
}

fn hardware_address(fd: &OwnedFd, name: &CString) -> std::io::Result<[u8; 6]> {
    // SAFETY: all-zero ifreq is valid; the name fits (checked by the caller) and stays NUL-terminated.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(name.as_bytes()) {
        *dst = *src as libc::c_char;
    }
    // SAFETY: SIOCGIFHWADDR reads ifr_name and writes ifr_hwaddr of this ifreq.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), libc::SIOCGIFHWADDR, &mut req) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the ioctl succeeded, so the hwaddr member of the union is the one written.
    let sa = unsafe { req.ifr_ifru.ifru_hwaddr };
    let mut mac = [0u8; 6];
    for (dst, src) in mac.iter_mut().zip(sa.sa_data.iter()) {
        *dst = *src as u8;
    }
    Ok(mac)
}
