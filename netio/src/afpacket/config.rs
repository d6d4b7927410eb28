//! How an endpoint is opened: promiscuity, socket buffers, burst size.

/// How an [`AfPacket`](super::AfPacket) endpoint is opened.
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
