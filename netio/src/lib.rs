//! Packet I/O backends behind one burst interface.
//!
//! Every backend moves frames in bursts between the wire (or a file, or a queue) and a caller-owned
//! [`FrameBatch`] of reusable slots: [`RxBurst::recv_burst`] appends received frames, [`TxBurst::send_burst`]
//! sends the frames of a batch. A sans-IO engine reads input frames as `&[u8]` from one batch and writes its
//! output frames in place into another with [`FrameBatch::push_with`]; after start-up nothing allocates.
//!
//! Backends: [`memory::pair`] (tests), [`PcapSource`] / [`PcapSink`] (files).

#[cfg(target_os = "linux")]
pub mod afpacket;
mod batch;
mod burst;
#[cfg(feature = "dpdk")]
pub mod dpdk;
mod error;
pub mod memory;
mod pcap;

#[cfg(target_os = "linux")]
pub use afpacket::{AfPacket, AfPacketConfig};
pub use batch::{FrameBatch, DEFAULT_SLOT_SIZE};
pub use burst::{RxBurst, RxStats, TxBurst, TxStats};
pub use error::NetioError;
pub use memory::MemoryPort;
pub use pcap::{PcapSink, PcapSource, PCAP_SNAPLEN};
