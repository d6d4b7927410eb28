//! The collector regions and translator sections of a run, and the sizes every workload is built for.

/// Key-Write region: 2^20 slots of 8 bytes, reports with N = 4.
pub const KW_SLOTS: u64 = 1 << 20;
/// Key-Write redundancy used by the reports.
pub const KW_N: u8 = 4;
/// Key-Increment region: 2^18 counters, N = 2.
pub const KI_SLOTS: u64 = 1 << 18;
/// Key-Increment redundancy.
pub const KI_N: u8 = 2;
/// Postcarding: 2^18 chunks, 5 hops, 4 copies.
pub const PC_CHUNKS: u64 = 1 << 18;
/// Postcarding copies (translator `postcard.redundancy` and region `n_max`).
pub const PC_N: u8 = 4;
/// Hops per path.
pub const PC_HOPS: u8 = 5;
/// Switch ids are 1..=64.
pub const PC_UNIVERSE: u32 = 64;
/// The Append list.
pub const APPEND_LIST: u32 = 3;
/// Its capacity (holds every entry of a run, so all can be read back in order).
pub const APPEND_ENTRIES: u64 = 1 << 17;
/// A small Append list that a run wraps many times.
pub const APPEND_WRAP_LIST: u32 = 4;
/// Its capacity.
pub const APPEND_WRAP_ENTRIES: u64 = 1024;
/// The sketch.
pub const SKETCH_ID: u8 = 1;
/// Sketch rows.
pub const SKETCH_ROWS: u32 = 4;
/// Sketch columns.
pub const SKETCH_COLUMNS: u32 = 1024;
/// Reporters merged per column (translator `sketch.reporters`).
pub const SKETCH_REPORTERS: u16 = 4;

/// Append lists of drop events: one per translator worker (two at most here; one worker uses the first).
pub const INT_DROP_LISTS: [u32; 2] = [10, 12];
/// Append lists of queue events, likewise.
pub const INT_QUEUE_LISTS: [u32; 2] = [11, 13];
/// Entries of each INT list.
pub const INT_LIST_ENTRIES: u64 = 1 << 14;

/// The collector regions an INT run adds (16-byte events).
pub fn int_lists() -> String {
    INT_DROP_LISTS
        .iter()
        .chain(&INT_QUEUE_LISTS)
        .map(|id| {
            format!(
                "\n[[region]]\nkind = \"append\"\nid = {id}\nentries = {INT_LIST_ENTRIES}\nentry_size = 16\nbatch_size = 16\n"
            )
        })
        .collect()
}

/// The collector's regions for these workloads, as its TOML; with `int`, 16-byte Key-Write entries (INT's
/// 12-byte hop records) and the INT event lists.
pub fn collector_regions(int: bool) -> String {
    let kw_entry = if int { 16 } else { 8 };
    let lists = if int { int_lists() } else { String::new() };
    format!(
        r#"
[postcarding]
ranges = [[1, {PC_UNIVERSE}]]

[[region]]
kind = "key_write"
slots = {KW_SLOTS}
entry_size = {kw_entry}
n_max = {KW_N}

[[region]]
kind = "key_increment"
slots = {KI_SLOTS}
n_max = {KI_N}

[[region]]
kind = "postcarding"
chunks = {PC_CHUNKS}
hops = {PC_HOPS}
n_max = {PC_N}

[[region]]
kind = "append"
id = {APPEND_LIST}
entries = {APPEND_ENTRIES}
entry_size = 4
batch_size = 16

[[region]]
kind = "append"
id = {APPEND_WRAP_LIST}
entries = {APPEND_WRAP_ENTRIES}
entry_size = 4
batch_size = 16

[[region]]
kind = "sketch"
id = {SKETCH_ID}
merge = "sum"
rows = {SKETCH_ROWS}
columns = {SKETCH_COLUMNS}
{lists}"#
    )
}

/// The translator's engine sections these workloads rely on.
pub fn translator_engine_sections() -> String {
    format!(
        r#"
[requester]
queue_capacity = 65536

[key_increment]
coalesce_us = 200

# A flow's five postcards arrive back to back; a long idle timeout keeps a slow (debug) translator from
# writing a flow in two halves, which the query would rightly reject.
[postcard]
hops = {PC_HOPS}
redundancy = {PC_N}
idle_timeout_us = 2000000

[sketch]
reporters = {SKETCH_REPORTERS}
"#
    )
}
