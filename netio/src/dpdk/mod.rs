//! DPDK backend through dta's own bindings to Debian's DPDK 22.11 (see build.rs and csrc/dpdk_shim.h).
//!
//! [`eal_init`] once per process with EAL arguments passed through verbatim, then [`Port::open`] on a device
//! name (a PCI address or a vdev such as `net_ring0`) returns one [`DpdkQueue`] per queue pair, each an
//! [`RxBurst`](crate::RxBurst) + [`TxBurst`](crate::TxBurst) to move to its own worker thread.

mod burst;
mod eal;
mod error;
pub(crate) mod ffi;
mod free;
mod guard;
mod mbuf;
mod mempool;
mod port;
mod queue;
mod ring;
mod shared;

pub use burst::MbufBurst;
pub use eal::{eal_init, register_thread, Eal};
pub use guard::pmd_faults;
pub use mempool::Mempool;
pub use port::{frame_room, Port, PortConfig, PortStats};
pub use queue::DpdkQueue;
pub use ring::{attach_ring, handoff, HandoffRx, HandoffTx};
