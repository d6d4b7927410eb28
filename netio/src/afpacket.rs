//! AF_PACKET raw sockets on a named interface: for hosts without DPDK and for the collector's software responder.
//!
//! One non-blocking socket per endpoint; bursts go through `recvmmsg`/`sendmmsg`, one system call per burst,
//! straight into and out of the caller's batch slots. The message arrays are allocated once at open.
//!
//! **VLAN tags.** Linux strips an 802.1Q/802.1ad tag from a received frame before a packet socket sees it
//! (the device's VLAN offload, or the stack's own `skb_vlan_untag`) and hands it apart, in the
//! `PACKET_AUXDATA` control message. A bump in the wire that forwarded the frame as read would send it on
//! untagged, and a responder would take a tagged frame for an untagged one. So every socket asks for the
//! auxdata and puts the tag back where it was on the wire, right after the source MAC: a frame in a batch
//! is the frame as it arrived, tag included, as DPDK delivers it.

use std::cell::Cell;
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

use crate::{batch::now_ns, FrameBatch, NetioError, RxBurst, RxStats, TxBurst, TxStats};

/// How an [`AfPacket`] endpoint is opened.
#[derive(Clone, Debug)]
pub struct AfPacketConfig {
    /// Receive frames for any destination MAC: a bump in the wire and a responder answering for an address
    /// that is not the interface's need it.
    pub promiscuous: bool,
    /// Socket receive buffer in bytes (set with SO_RCVBUFFORCE when root, so beyond `rmem_max`); it absorbs
    /// bursts between two `recv_burst` calls.
    pub rcvbuf: usize,
    /// Socket send buffer in bytes.
    pub sndbuf: usize,
    /// Most frames moved by one system call.
    pub max_burst: usize,
    /// Join PACKET_FANOUT group `n` in hash mode: the sockets of one group on one interface share its frames,
    /// the kernel keeping each flow (its addresses and ports) on one socket. One socket per worker thread.
    pub fanout: Option<u16>,
}

impl AfPacketConfig {
    /// A daemon's port (the translator's and the collector's software responder's), moving at most
    /// `max_burst` frames per call: promiscuous, because a bump in the wire forwards frames for every MAC
    /// and reports are addressed to the collector, and the responder answers for its configured MAC, which
    /// need not be the interface's; a 32 MiB receive buffer, so that report bursts, or a translator's
    /// burst of a full window per QP, fit while the loop is busy; an 8 MiB send buffer.
    pub fn daemon(max_burst: usize) -> Self {
        AfPacketConfig {
            promiscuous: true,
            rcvbuf: 32 << 20,
            sndbuf: 8 << 20,
            max_burst,
            fanout: None,
        }
    }
}

impl Default for AfPacketConfig {
    fn default() -> Self {
        AfPacketConfig {
            promiscuous: true,
            rcvbuf: 8 << 20,
            sndbuf: 4 << 20,
            max_burst: 64,
            fanout: None,
        }
    }
}

/// `PACKET_AUXDATA` (linux/if_packet.h): the socket option, and `struct tpacket_auxdata` with the bits of
/// `tp_status` that say a VLAN tag was taken off (libc has neither).
const PACKET_AUXDATA: libc::c_int = 8;
const TP_STATUS_VLAN_VALID: u32 = 1 << 4;
const TP_STATUS_VLAN_TPID_VALID: u32 = 1 << 6;
/// The 802.1Q TPID, for a kernel that gives the TCI without the TPID (before Linux 3.14).
const ETH_P_8021Q: u16 = 0x8100;
/// Bytes of one VLAN tag (TPID and TCI).
pub const VLAN_TAG_LEN: usize = 4;

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct TpacketAuxdata {
    tp_status: u32,
    tp_len: u32,
    tp_snaplen: u32,
    tp_mac: u16,
    tp_net: u16,
    tp_vlan_tci: u16,
    tp_vlan_tpid: u16,
}

/// Room for one control message per received frame: `CMSG_SPACE(sizeof(struct tpacket_auxdata))` is 40
/// bytes on 64-bit Linux; 64, in u64s so that the buffer is aligned for a `cmsghdr`.
type Control = [u64; 8];

/// The `mmsghdr`/`iovec` arrays handed to the kernel. They hold raw pointers, rewritten before every call to
/// point into the batch of that call and never dereferenced after it, so moving them across threads is sound.
struct Messages {
    hdrs: Vec<libc::mmsghdr>,
    iovs: Vec<libc::iovec>,
    /// One control buffer per message, for the receive path's `PACKET_AUXDATA`.
    ctrl: Vec<Control>,
}

// SAFETY: see the type's comment: the pointers are only meaningful during one system call made by the owner.
unsafe impl Send for Messages {}

impl Messages {
    fn new(n: usize) -> Self {
        // SAFETY: mmsghdr and iovec are plain C structs for which all-zero is a valid value.
        Messages {
            hdrs: vec![unsafe { std::mem::zeroed() }; n],
            iovs: vec![unsafe { std::mem::zeroed() }; n],
            ctrl: vec![[0; 8]; n],
        }
    }

    /// As [`set`](Self::set), with message `k`'s control buffer attached (receiving).
    fn set_rx(&mut self, k: usize, base: *mut u8, len: usize) {
        self.set(k, base, len);
        let hdr = &mut self.hdrs[k].msg_hdr;
        hdr.msg_control = self.ctrl[k].as_mut_ptr().cast();
        hdr.msg_controllen = std::mem::size_of::<Control>() as _;
    }

    /// The VLAN tag (TPID, TCI) the kernel took off received message `k`, from its `PACKET_AUXDATA`.
    fn vlan_tag(&self, k: usize) -> Option<(u16, u16)> {
        let hdr = &self.hdrs[k].msg_hdr;
        // SAFETY: the kernel filled `msg_control` (our buffer `ctrl[k]`, alive) with `msg_controllen` bytes
        // of well-formed control messages; the CMSG_* helpers stay within them, and the data is read
        // unaligned, at its length checked against the message's.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(hdr);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_PACKET
                    && (*c).cmsg_type == PACKET_AUXDATA
                    && (*c).cmsg_len as usize
                        >= libc::CMSG_LEN(std::mem::size_of::<TpacketAuxdata>() as u32) as usize
                {
                    let aux = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<TpacketAuxdata>());
                    if aux.tp_status & TP_STATUS_VLAN_VALID == 0 {
                        return None;
                    }
                    let tpid = match aux.tp_status & TP_STATUS_VLAN_TPID_VALID {
                        0 => ETH_P_8021Q,
                        _ => aux.tp_vlan_tpid,
                    };
                    return Some((tpid, aux.tp_vlan_tci));
                }
                c = libc::CMSG_NXTHDR(hdr, c);
            }
        }
        None
    }

    /// Points message `k` at `len` bytes from `base`.
    fn set(&mut self, k: usize, base: *mut u8, len: usize) {
        self.iovs[k] = libc::iovec {
            iov_base: base.cast(),
            iov_len: len,
        };
        // SAFETY: all-zero msghdr is valid (no name, no control data).
        let mut hdr: libc::msghdr = unsafe { std::mem::zeroed() };
        hdr.msg_iov = &mut self.iovs[k];
        hdr.msg_iovlen = 1;
        self.hdrs[k] = libc::mmsghdr {
            msg_hdr: hdr,
            msg_len: 0,
        };
    }
}

/// A raw socket bound to one interface, receiving every frame that arrives on it (not the ones it sends).
pub struct AfPacket {
    fd: OwnedFd,
    ifname: String,
    ifindex: u32,
    mac: [u8; 6],
    msgs: Messages,
    rx_stats: RxStats,
    tx_stats: TxStats,
    /// Kernel drops read so far (`PACKET_STATISTICS` resets on every read, so they are summed here).
    missed: Cell<u64>,
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

fn would_block(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EAGAIN) | Some(libc::EINTR) | Some(libc::ENOBUFS)
    )
}

impl RxBurst for AfPacket {
    fn recv_burst(&mut self, batch: &mut FrameBatch) -> Result<usize, NetioError> {
        let n = batch.free().min(self.msgs.hdrs.len());
        if n == 0 {
            return Ok(0);
        }
        let base = batch.len();
        let slot_size = batch.slot_size();
        for k in 0..n {
            let p = batch.slot_ptr(base + k);
            self.msgs.set_rx(k, p, slot_size);
        }
        // MSG_TRUNC makes msg_len the frame's real length, so an oversize frame is recognised, not cut.
        // SAFETY: n messages, each pointing at one whole free slot of `batch`, which outlives the call.
        let r = unsafe {
            libc::recvmmsg(
                self.fd.as_raw_fd(),
                self.msgs.hdrs.as_mut_ptr(),
                n as u32,
                libc::MSG_DONTWAIT | libc::MSG_TRUNC,
                std::ptr::null_mut(),
            )
        };
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if would_block(&e) {
                return Ok(0);
            }
            return Err(NetioError::io(
                format!("AF_PACKET {}: recvmmsg", self.ifname),
                e,
            ));
        }
        // One clock read per burst: the frames of a burst arrived within microseconds of each other.
        let stamp = now_ns();
        let mut kept = base;
        for k in 0..r as usize {
            let mut len = self.msgs.hdrs[k].msg_len as usize;
            let truncated = self.msgs.hdrs[k].msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
            let tag = self.msgs.vlan_tag(k);
            let wire_len = len + tag.map_or(0, |_| VLAN_TAG_LEN);
            // Over the slot (a jumbo frame into standard slots), or too short to hold a tag after the MACs.
            if truncated || wire_len > slot_size || (tag.is_some() && len < 12) {
                self.rx_stats.dropped += 1;
                continue;
            }
            if kept != base + k {
                batch.move_slot(base + k, kept, len);
            }
            if let Some((tpid, tci)) = tag {
                let slot = batch.slot_mut(kept);
                slot.copy_within(12..len, 12 + VLAN_TAG_LEN);
                slot[12..14].copy_from_slice(&tpid.to_be_bytes());
                slot[14..16].copy_from_slice(&tci.to_be_bytes());
                len = wire_len;
            }
            batch.set_frame(kept, len, stamp);
            kept += 1;
            self.rx_stats.frames += 1;
            self.rx_stats.bytes += len as u64;
        }
        batch.set_len(kept);
        Ok(kept - base)
    }

    fn rx_stats(&self) -> RxStats {
        RxStats {
            missed: self.kernel_drops(),
            ..self.rx_stats
        }
    }
}

impl TxBurst for AfPacket {
    fn send_burst(&mut self, batch: &FrameBatch) -> Result<usize, NetioError> {
        let mut i = 0;
        let mut sent = 0;
        while i < batch.len() {
            let n = (batch.len() - i).min(self.msgs.hdrs.len());
            for k in 0..n {
                let f = batch.frame(i + k);
                // The kernel only reads from a send iovec; the cast to *mut is what iovec's type demands.
                self.msgs.set(k, f.as_ptr().cast_mut(), f.len());
            }
            // SAFETY: n messages pointing at frames of `batch`, which outlives the call.
            let r = unsafe {
                libc::sendmmsg(
                    self.fd.as_raw_fd(),
                    self.msgs.hdrs.as_mut_ptr(),
                    n as u32,
                    libc::MSG_DONTWAIT,
                )
            };
            if r > 0 {
                for k in 0..r as usize {
                    self.tx_stats.bytes += batch.frame(i + k).len() as u64;
                }
                self.tx_stats.frames += r as u64;
                sent += r as usize;
                i += r as usize;
                continue;
            }
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                // The socket buffer or the device queue is full: the rest of the burst is dropped, as a full
                // NIC ring would drop it.
                Some(libc::EAGAIN) | Some(libc::ENOBUFS) => {
                    self.tx_stats.dropped += (batch.len() - i) as u64;
                    break;
                }
                // This frame alone is unsendable (too long for the MTU, shorter than a header): skip it.
                Some(libc::EMSGSIZE) | Some(libc::EINVAL) => {
                    log::debug!(
                        "AF_PACKET {}: dropped a {}-byte frame: {e}",
                        self.ifname,
                        batch.frame(i).len()
                    );
                    self.tx_stats.dropped += 1;
                    i += 1;
                }
                _ => {
                    return Err(NetioError::io(
                        format!("AF_PACKET {}: sendmmsg", self.ifname),
                        e,
                    ))
                }
            }
        }
        Ok(sent)
    }

    fn tx_stats(&self) -> TxStats {
        self.tx_stats
    }
}
