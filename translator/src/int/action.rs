//! What an INT report asks the engine to write: [`Action`]s, each standing for the DTA report the
//! engine routes and hands to a primitive like it.

use smallvec::SmallVec;

use dta_protocol::int::mapping::{DropEvent, HopRecord, QueueEvent};

/// One write an INT report asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Hop `hop` of flow `flow` is switch `node`.
    Postcard {
        /// The flow's key.
        flow: u32,
        /// 1-based hop.
        hop: u8,
        /// Path length: the stack's for a sink report, the fabric's for a per-hop report placed by the
        /// topology, else the configured one (a bound).
        path_len: u8,
        /// Whether `path_len` is the path's length (a sink report, a topology placement), not a bound.
        length_known: bool,
        /// The switch's node id.
        node: u32,
    },
    /// Hop `hop` of flow `flow` saw `record`.
    Hop {
        /// The flow's key.
        flow: u32,
        /// 1-based hop.
        hop: u8,
        /// What the switch measured.
        record: HopRecord,
    },
    /// One drop at `node` for `reason`.
    DropCount {
        /// The switch.
        node: u32,
        /// Its reason code.
        reason: u8,
    },
    /// A drop event for the drop list.
    DropEvent(DropEvent),
    /// A queue event for the queue list.
    QueueEvent(QueueEvent),
}

/// The actions of one UDP payload (a sink report of 8 hops needs 16, plus events).
pub type Actions = SmallVec<[Action; 20]>;
