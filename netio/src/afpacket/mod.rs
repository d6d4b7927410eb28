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
//!
//! One job a file: `config` (how an endpoint is opened), `socket` (the socket and its options),
//! `messages` (the message arrays and the auxdata) and `burst` (receiving and sending bursts).

mod burst;
mod config;
mod messages;
mod socket;

pub use config::AfPacketConfig;
pub use messages::VLAN_TAG_LEN;
pub use socket::AfPacket;
