//! The `mmsghdr`/`iovec` arrays of one endpoint's bursts, and the `PACKET_AUXDATA` control messages that
//! carry the VLAN tag the kernel took off a received frame.

/// `PACKET_AUXDATA` (linux/if_packet.h): the socket option, and `struct tpacket_auxdata` with the bits of
/// `tp_status` that say a VLAN tag was taken off (libc has neither).
pub(super) const PACKET_AUXDATA: libc::c_int = 8;
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
pub(super) struct Messages {
    pub(super) hdrs: Vec<libc::mmsghdr>,
    iovs: Vec<libc::iovec>,
    /// One control buffer per message, for the receive path's `PACKET_AUXDATA`.
    ctrl: Vec<Control>,
}

// SAFETY: see the type's comment: the pointers are only meaningful during one system call made by the owner.
unsafe impl Send for Messages {}

impl Messages {
    pub(super) fn new(n: usize) -> Self {
        // SAFETY: mmsghdr and iovec are plain C structs for which all-zero is a valid value.
        Messages {
            hdrs: vec![unsafe { std::mem::zeroed() }; n],
            iovs: vec![unsafe { std::mem::zeroed() }; n],
            ctrl: vec![[0; 8]; n],
        }
    }

    /// As [`set`](Self::set), with message `k`'s control buffer attached (receiving).
    pub(super) fn set_rx(&mut self, k: usize, base: *mut u8, len: usize) {
        self.set(k, base, len);
        let hdr = &mut self.hdrs[k].msg_hdr;
        hdr.msg_control = self.ctrl[k].as_mut_ptr().cast();
        hdr.msg_controllen = std::mem::size_of::<Control>() as _;
    }

    /// The VLAN tag (TPID, TCI) the kernel took off received message `k`, from its `PACKET_AUXDATA`.
    pub(super) fn vlan_tag(&self, k: usize) -> Option<(u16, u16)> {
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
    pub(super) fn set(&mut self, k: usize, base: *mut u8, len: usize) {
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
