//! The five workloads, each with a model of exactly what the collector's memory must answer afterwards.
//! The models replay the writes in send order with the collector's own layout functions (one worker, one
//! QP per collector, and an in-order responder make the memory a deterministic function of the reports),
//! so a check is "every query answers what the model says", plus "the model finds every key" so a layout
//! that loses keys to collisions fails loudly instead of weakening the test.
//!
//! One file a workload (`key_write`, `key_increment`, `append`, `postcard`, `sketch`), each beside the
//! model it checks against; `regions` holds the run's regions and sizes, `common` what they share.

mod append;
mod common;
mod key_increment;
mod key_write;
mod postcard;
mod regions;
mod sketch;

pub use append::{append, append_from, append_wrapping};
pub(crate) use common::mix;
pub use common::{Verify, Workload};
pub use key_increment::key_increment;
pub use key_write::{dart_key_write, key_write, key_write_n, DART_KEY_BASE};
pub use postcard::postcard;
pub use regions::{
    collector_regions, int_lists, translator_engine_sections, APPEND_ENTRIES, APPEND_LIST,
    APPEND_WRAP_ENTRIES, APPEND_WRAP_LIST, INT_DROP_LISTS, INT_LIST_ENTRIES, INT_QUEUE_LISTS, KI_N,
    KI_SLOTS, KW_N, KW_SLOTS, PC_CHUNKS, PC_HOPS, PC_N, PC_UNIVERSE, SKETCH_COLUMNS, SKETCH_ID,
    SKETCH_REPORTERS, SKETCH_ROWS,
};
pub use sketch::{sketch, sketch_merged};
