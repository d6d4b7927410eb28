//! Packet I/O backends behind one burst interface.
//!
//! Every backend moves frames in bursts between the wire (or a file, or a queue) and a caller-owned
//! [`FrameBatch`] of reusable slots: [`RxBurst::recv_burst`] appends received frames, [`TxBurst::send_burst`]
//! sends the frames of a batch. A sans-IO engine reads input frames as `&[u8]` from one batch and writes its
//! output frames in place into another with [`FrameBatch::push_with`]; after start-up nothing allocates.
//!
//! Backends:
//! - [`dpdk`] (feature `dpdk`, on by default): EAL, mempools, ports with RSS queue pairs; each
//!   [`dpdk::DpdkQueue`] is an endpoint for one worker thread, with zero-copy `send_in_place`/`recv_in_place`
//!   besides the batch interface. Our own bindings to Debian's DPDK 22.11 (build.rs, csrc/dpdk_shim.h).
//! - [`AfPacket`]: a raw socket on a named interface, for hosts without DPDK and the collector's software
//!   responder.
//! - [`PcapSource`] / [`PcapSink`]: replay and record pcap files (Ethernet link type).
//! - [`memory::pair`]: two endpoints joined by bounded queues, for tests.
//!
//! Per-frame trouble (a full queue, an oversize frame) is counted in [`RxStats`] / [`TxStats`], never an
//! error; [`NetioError`] is for failures of the endpoint itself, with the call and object named.

#[cfg(target_os = "linux")]
pub mod affinity;
#[cfg(target_os = "linux")]
pub mod afpacket;
mod batch;
mod burst;
#[cfg(feature = "dpdk")]
pub mod dpdk;
mod error;
mod kind;
pub mod memory;
mod pcap;
#[cfg(target_os = "linux")]
pub mod port;

#[cfg(target_os = "linux")]
pub use afpacket::{AfPacket, AfPacketConfig, VLAN_TAG_LEN};
pub use batch::{FrameBatch, DEFAULT_SLOT_SIZE, JUMBO_SLOT_SIZE};
pub use burst::{RxBurst, RxStats, TxBurst, TxStats};
pub use error::NetioError;
pub use kind::IoKind;
pub use memory::MemoryPort;
pub use pcap::{PcapSink, PcapSource, PCAP_SNAPLEN};
#[cfg(target_os = "linux")]
pub use port::{OpenPort, PollPort};
