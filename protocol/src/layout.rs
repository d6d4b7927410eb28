//! Collector memory layouts (DESIGN.md section 3): the geometry of each region kind, shared by the
//! translator (which computes where to write) and the collector (which allocates and queries).
//!
//! Byte order in collector memory:
//! * Key-Write checksum: little-endian (the reference collector compares it as an x86 `u32`).
//! * Key-Write, Append data: the report's bytes as received.
//! * Key-Increment counters: the collector's host order; the RDMA NIC (or the software responder) does
//!   the FETCH_ADD on a native `u64`, so on x86 this is little-endian.
//! * Postcarding cells and Sketch counters: big-endian, as a switch emits a `bit<32>` (the reference
//!   collector reads postcard cells with `ntohl`).
//! * Append head word: `total_entries_written` as a little-endian `u64`.
//!
//! (Over 500 lines: one geometry per region kind, each with its address arithmetic and its checks,
//! sharing `GeometryError` and the `Region` they make.)

use serde::{Deserialize, Serialize};

use crate::dta::N_MAX;
// The table CRCs: the same values as `crate::hash` (proptests in `crc_table`), a fraction of the cost.
use crate::hash::key_checksum;
use crate::roce::crc_table::{placement, POSTCARD_TABLES};

mod kind;
pub use kind::{Geometry, KindGeometry, RegionKind};

/// A geometry that cannot be laid out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {region} geometry: {field} = {value} ({why})")]
pub struct GeometryError {
    /// Region kind.
    pub region: &'static str,
    /// Offending field.
    pub field: &'static str,
    /// Its value.
    pub value: u64,
    /// What it must be instead.
    pub why: &'static str,
}

fn check(
    ok: bool,
    region: &'static str,
    field: &'static str,
    value: u64,
    why: &'static str,
) -> Result<(), GeometryError> {
    if ok {
        Ok(())
    } else {
        Err(GeometryError {
            region,
            field,
            value,
            why,
        })
    }
}

fn check_slots(region: &'static str, field: &'static str, v: u64) -> Result<(), GeometryError> {
    check(
        v.is_power_of_two() && v <= 1 << 40,
        region,
        field,
        v,
        "a power of two up to 2^40",
    )
}

fn check_n(region: &'static str, n: u8) -> Result<(), GeometryError> {
    check((1..=N_MAX).contains(&n), region, "n_max", n.into(), "1..=8")
}

/// Key-Write: `slots` entries of `entry_size` bytes; entry = checksum (LE) ‖ data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "KeyWriteRaw")]
pub struct KeyWriteGeometry {
    slots: u64,
    entry_size: u32,
    n_max: u8,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyWriteRaw {
    slots: u64,
    entry_size: u32,
    n_max: u8,
}

impl TryFrom<KeyWriteRaw> for KeyWriteGeometry {
    type Error = GeometryError;
    fn try_from(r: KeyWriteRaw) -> Result<Self, GeometryError> {
        Self::new(r.slots, r.entry_size, r.n_max)
    }
}

/// Bytes of the checksum at the start of each Key-Write entry.
pub const KEY_WRITE_CHECKSUM_LEN: usize = 4;

impl KeyWriteGeometry {
    /// Checks and builds a geometry: `slots` a power of two, `entry_size` 8, 16 or 32, `n_max` 1..=8.
    pub fn new(slots: u64, entry_size: u32, n_max: u8) -> Result<Self, GeometryError> {
        check_slots("Key-Write", "slots", slots)?;
        check(
            matches!(entry_size, 8 | 16 | 32),
            "Key-Write",
            "entry_size",
            entry_size.into(),
            "8, 16 or 32",
        )?;
        check_n("Key-Write", n_max)?;
        Ok(KeyWriteGeometry {
            slots,
            entry_size,
            n_max,
        })
    }
    /// Number of slots.
    pub const fn slots(&self) -> u64 {
        self.slots
    }
    /// Bytes per entry.
    pub const fn entry_size(&self) -> u32 {
        self.entry_size
    }
    /// Bytes of data per entry (entry size minus the checksum).
    pub const fn data_len(&self) -> usize {
        self.entry_size as usize - KEY_WRITE_CHECKSUM_LEN
    }
    /// Largest redundancy the region serves.
    pub const fn n_max(&self) -> u8 {
        self.n_max
    }
    /// Region size in bytes.
    pub const fn len(&self) -> u64 {
        self.slots * self.entry_size as u64
    }
    /// Always false: a geometry has at least one slot.
    pub const fn is_empty(&self) -> bool {
        false
    }
    /// Slot of copy `n` of `key`.
    #[inline]
    pub fn slot(&self, key: u32, n: u8) -> u64 {
        placement(key, n, self.slots)
    }
    /// Byte offset of copy `n` of `key` in the region.
    #[inline]
    pub fn offset(&self, key: u32, n: u8) -> u64 {
        self.slot(key, n) * u64::from(self.entry_size)
    }
    /// Writes the entry for `key` and `data` (exactly [`data_len`](Self::data_len) bytes) into `out`.
    /// Returns `None` when the lengths do not fit.
    pub fn encode_entry(&self, key: u32, data: &[u8], out: &mut [u8]) -> Option<()> {
        if data.len() != self.data_len() || out.len() < self.entry_size as usize {
            return None;
        }
        out[..KEY_WRITE_CHECKSUM_LEN].copy_from_slice(&key_checksum(key).to_le_bytes());
        out[KEY_WRITE_CHECKSUM_LEN..self.entry_size as usize].copy_from_slice(data);
        Some(())
    }
    /// Splits an entry into its checksum and data.
    pub fn decode_entry<'a>(&self, entry: &'a [u8]) -> Option<(u32, &'a [u8])> {
        let e = entry.get(..self.entry_size as usize)?;
        Some((
            u32::from_le_bytes([e[0], e[1], e[2], e[3]]),
            &e[KEY_WRITE_CHECKSUM_LEN..],
        ))
    }
}

/// Key-Increment: `slots` native `u64` counters, 8-byte aligned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "KeyIncrementRaw")]
pub struct KeyIncrementGeometry {
    slots: u64,
    n_max: u8,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyIncrementRaw {
    slots: u64,
    n_max: u8,
}

impl TryFrom<KeyIncrementRaw> for KeyIncrementGeometry {
    type Error = GeometryError;
    fn try_from(r: KeyIncrementRaw) -> Result<Self, GeometryError> {
        Self::new(r.slots, r.n_max)
    }
}

/// Bytes per Key-Increment counter.
pub const COUNTER_LEN: u64 = 8;

impl KeyIncrementGeometry {
    /// Checks and builds a geometry: `slots` a power of two, `n_max` 1..=8.
    pub fn new(slots: u64, n_max: u8) -> Result<Self, GeometryError> {
        check_slots("Key-Increment", "slots", slots)?;
        check_n("Key-Increment", n_max)?;
        Ok(KeyIncrementGeometry { slots, n_max })
    }
    /// Number of counters.
    pub const fn slots(&self) -> u64 {
        self.slots
    }
    /// Largest redundancy the region serves.
    pub const fn n_max(&self) -> u8 {
        self.n_max
    }
    /// Region size in bytes.
    pub const fn len(&self) -> u64 {
        self.slots * COUNTER_LEN
    }
    /// Always false.
    pub const fn is_empty(&self) -> bool {
        false
    }
    /// Byte offset of counter copy `n` of `key`: 8 · slot, so always 8-byte aligned.
    #[inline]
    pub fn offset(&self, key: u32, n: u8) -> u64 {
        placement(key, n, self.slots) * COUNTER_LEN
    }
}

/// Postcarding: `chunks` chunks of [`CHUNK_STRIDE`] bytes, each `hops` big-endian cells then zero padding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "PostcardRaw")]
pub struct PostcardGeometry {
    chunks: u64,
    hops: u8,
    n_max: u8,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PostcardRaw {
    chunks: u64,
    hops: u8,
    n_max: u8,
}

impl TryFrom<PostcardRaw> for PostcardGeometry {
    type Error = GeometryError;
    fn try_from(r: PostcardRaw) -> Result<Self, GeometryError> {
        Self::new(r.chunks, r.hops, r.n_max)
    }
}

/// Bytes per Postcarding chunk: 8 cells of 4 bytes.
pub const CHUNK_STRIDE: usize = 32;
/// Bytes per Postcarding cell.
pub const CELL_LEN: usize = 4;
/// Most hops a chunk holds.
pub const MAX_HOPS: u8 = (CHUNK_STRIDE / CELL_LEN) as u8;

impl PostcardGeometry {
    /// Checks and builds a geometry: `chunks` a power of two, `hops` (B) 1..=8, `n_max` 1..=8.
    pub fn new(chunks: u64, hops: u8, n_max: u8) -> Result<Self, GeometryError> {
        check_slots("Postcarding", "chunks", chunks)?;
        check(
            (1..=MAX_HOPS).contains(&hops),
            "Postcarding",
            "hops",
            hops.into(),
            "1..=8",
        )?;
        check_n("Postcarding", n_max)?;
        Ok(PostcardGeometry {
            chunks,
            hops,
            n_max,
        })
    }
    /// Number of chunks.
    pub const fn chunks(&self) -> u64 {
        self.chunks
    }
    /// Path length B: cells used per chunk.
    pub const fn hops(&self) -> u8 {
        self.hops
    }
    /// Largest number of chunk copies per flow.
    pub const fn n_max(&self) -> u8 {
        self.n_max
    }
    /// Region size in bytes.
    pub const fn len(&self) -> u64 {
        self.chunks * CHUNK_STRIDE as u64
    }
    /// Always false.
    pub const fn is_empty(&self) -> bool {
        false
    }
    /// Byte offset of chunk copy `n` of flow `key`.
    #[inline]
    pub fn offset(&self, key: u32, n: u8) -> u64 {
        placement(key, n, self.chunks) * CHUNK_STRIDE as u64
    }
    /// The chunk for flow `key` whose hop `i` (0-based) saw `values[i]`; hops beyond `values` up to B hold
    /// the blank value, cells beyond B are zero.
    pub fn encode_chunk(&self, key: u32, values: &[u32]) -> [u8; CHUNK_STRIDE] {
        let mut all = [crate::hash::POSTCARD_BLANK; MAX_HOPS as usize];
        for (a, &v) in all.iter_mut().zip(values) {
            *a = v;
        }
        self.encode_chunk_of(key, &all)
    }

    /// [`encode_chunk`](Self::encode_chunk) of a full row of values (hop `i + 1` saw `values[i]`; those
    /// beyond B are ignored), as a flow cache holds them: no copy into a row first.
    ///
    /// All cells come from one pass over [`POSTCARD_TABLES`] (the eight hop checksums at once, constants
    /// folded, entries byte-swapped so the chunk is stored as whole words); they equal
    /// `postcard_cell(key, hop, v).to_be_bytes()` (a test compares with that former encoder).
    #[inline]
    pub fn encode_chunk_of(
        &self,
        key: u32,
        values: &[u32; MAX_HOPS as usize],
    ) -> [u8; CHUNK_STRIDE] {
        let cells = POSTCARD_TABLES.cells_swapped(key, values, usize::from(self.hops));
        let mut chunk = [0u8; CHUNK_STRIDE];
        for (out, cell) in chunk.chunks_exact_mut(CELL_LEN).zip(cells) {
            out.copy_from_slice(&cell.to_le_bytes());
        }
        chunk
    }
}

/// Append: a 64-byte header, then a ring of `entries` entries of `entry_size` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "AppendRaw")]
pub struct AppendGeometry {
    entries: u64,
    entry_size: u32,
    batch_size: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AppendRaw {
    entries: u64,
    entry_size: u32,
    batch_size: u32,
}

impl TryFrom<AppendRaw> for AppendGeometry {
    type Error = GeometryError;
    fn try_from(r: AppendRaw) -> Result<Self, GeometryError> {
        Self::new(r.entries, r.entry_size, r.batch_size)
    }
}

/// Bytes of the Append list header; `total_entries_written` is its first 8 bytes.
pub const APPEND_HEADER_LEN: u64 = 64;

impl AppendGeometry {
    /// Checks and builds a geometry: `batch_size` 1, 2, 4, 8 or 16; `entries` a non-zero multiple of it;
    /// `entry_size` 1..=1024.
    pub fn new(entries: u64, entry_size: u32, batch_size: u32) -> Result<Self, GeometryError> {
        check(
            matches!(batch_size, 1 | 2 | 4 | 8 | 16),
            "Append",
            "batch_size",
            batch_size.into(),
            "1, 2, 4, 8 or 16",
        )?;
        check(
            entries > 0 && entries % u64::from(batch_size) == 0 && entries <= 1 << 40,
            "Append",
            "entries",
            entries,
            "a non-zero multiple of the batch size, up to 2^40",
        )?;
        check(
            (1..=1024).contains(&entry_size),
            "Append",
            "entry_size",
            entry_size.into(),
            "1..=1024",
        )?;
        Ok(AppendGeometry {
            entries,
            entry_size,
            batch_size,
        })
    }
    /// Ring capacity in entries.
    pub const fn entries(&self) -> u64 {
        self.entries
    }
    /// Bytes per entry.
    pub const fn entry_size(&self) -> u32 {
        self.entry_size
    }
    /// Entries per full batch write.
    pub const fn batch_size(&self) -> u32 {
        self.batch_size
    }
    /// Region size in bytes.
    pub const fn len(&self) -> u64 {
        APPEND_HEADER_LEN + self.entries * self.entry_size as u64
    }
    /// Always false.
    pub const fn is_empty(&self) -> bool {
        false
    }
    /// Byte offset of the entry with absolute index `index` (the count of entries written before it).
    /// Because the capacity is a multiple of the batch size, a batch that starts at a batch boundary never
    /// straddles the end of the ring.
    #[inline]
    pub fn entry_offset(&self, index: u64) -> u64 {
        APPEND_HEADER_LEN + (index % self.entries) * u64::from(self.entry_size)
    }
    /// The header's head word for `total_entries_written`.
    pub const fn encode_head(total_entries_written: u64) -> [u8; 8] {
        total_entries_written.to_le_bytes()
    }
    /// Reads the head word from the start of a list region.
    pub fn decode_head(region: &[u8]) -> Option<u64> {
        let h = region.get(..8)?;
        Some(u64::from_le_bytes([
            h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7],
        ]))
    }
}

/// Sketch: `columns` columns of `rows` big-endian `u32` counters; column `c` starts at `4 · rows · c`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "SketchRaw")]
pub struct SketchGeometry {
    rows: u32,
    columns: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SketchRaw {
    rows: u32,
    columns: u32,
}

impl TryFrom<SketchRaw> for SketchGeometry {
    type Error = GeometryError;
    fn try_from(r: SketchRaw) -> Result<Self, GeometryError> {
        Self::new(r.rows, r.columns)
    }
}

/// Bytes per sketch counter.
pub const SKETCH_COUNTER_LEN: u64 = 4;

impl SketchGeometry {
    /// Checks and builds a geometry: `rows` 1..=255 (the report's row count is 8 bits), `columns`
    /// 1..=65536 (the report's column index is 16 bits).
    pub fn new(rows: u32, columns: u32) -> Result<Self, GeometryError> {
        check(
            (1..=255).contains(&rows),
            "Sketch",
            "rows",
            rows.into(),
            "1..=255",
        )?;
        check(
            (1..=65536).contains(&columns),
            "Sketch",
            "columns",
            columns.into(),
            "1..=65536",
        )?;
        Ok(SketchGeometry { rows, columns })
    }
    /// Counters per column.
    pub const fn rows(&self) -> u32 {
        self.rows
    }
    /// Number of columns.
    pub const fn columns(&self) -> u32 {
        self.columns
    }
    /// Bytes per column.
    pub const fn column_len(&self) -> u64 {
        self.rows as u64 * SKETCH_COUNTER_LEN
    }
    /// Region size in bytes.
    pub const fn len(&self) -> u64 {
        self.columns as u64 * self.column_len()
    }
    /// Always false.
    pub const fn is_empty(&self) -> bool {
        false
    }
    /// Byte offset of column `column`.
    #[inline]
    pub const fn column_offset(&self, column: u32) -> u64 {
        column as u64 * self.column_len()
    }
}

/// A registered region as the collector advertises it: where it is and how it is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Region {
    /// List id for Append, sketch id for sketches, 0 otherwise.
    pub id: u32,
    /// Virtual address of the first byte, as RETH and AtomicETH carry it.
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
    /// Layout; the region is exactly `geometry.len()` bytes.
    pub geometry: Geometry,
}

impl Region {
    /// Length in bytes.
    pub const fn len(&self) -> u64 {
        self.geometry.len()
    }
    /// Always false.
    pub const fn is_empty(&self) -> bool {
        false
    }
    /// Whether `[va, va + len)` lies inside the region (overflow-safe).
    pub fn contains(&self, va: u64, len: u64) -> bool {
        va >= self.va
            && va
                .checked_add(len)
                .is_some_and(|end| end <= self.va.saturating_add(self.len()))
    }
}

#[cfg(test)]
mod tests;
