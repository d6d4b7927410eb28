//! The memory file: the arena as a shared mapping of a file (`[collector] memory_file`), so that the
//! regions outlive the collector's process. A restart, or a crash, finds the bytes where the translator
//! wrote them; only the R_Keys and VAs are new, and the welcome hands those out as after any restart.
//!
//! The file starts with a header that records the layout it was made for: a restart with other regions
//! would read one structure's bytes as another's, so a layout that differs is refused with the first
//! difference named, unless the collector is told to start fresh (`--fresh-memory`). The header lies
//! before the first region's guard gap: no R_Key reaches it, and no query reads it.
//!
//! ```text
//! 0   8  magic "DTAREGS\0"   (written last when the file is made: a file cut short at creation has none)
//! 8   4  format version, little-endian
//! 12  4  length J of the layout text
//! 16  8  arena length the layout needs (header included), little-endian
//! 24  J  the layout: JSON {"guard":64,"align":64,"regions":[{"id":3,"kind":"append",...}, ...]}
//! ```

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

use dta_protocol::layout::Geometry;
use serde::{Deserialize, Serialize};

use super::Mapping;
use crate::error::{Error, Result};

const MAGIC: [u8; 8] = *b"DTAREGS\0";
const VERSION: u32 = 1;
/// Bytes of the header before the layout text.
const FIXED: usize = 24;
/// A layout text longer than this is no header of ours (a configuration has at most a few hundred
/// regions); it keeps a corrupt length from allocating gigabytes.
const MAX_LAYOUT: usize = 1 << 20;

/// How the regions' memory was found at start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opened {
    /// A new (or empty) file: the regions start zeroed.
    Created,
    /// The file held the same layout: its bytes are kept.
    Kept,
    /// Told to start fresh: whatever the file held is gone and the regions start zeroed.
    Reset,
}

/// One region as the header records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct FileRegion {
    id: u32,
    #[serde(flatten)]
    geometry: Geometry,
}

/// The layout the header records: the regions in order and the gaps the arena puts around them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Layout {
    guard: usize,
    align: usize,
    regions: Vec<FileRegion>,
}

impl Layout {
    pub(super) fn new(regions: &[(u32, Geometry)], guard: usize, align: usize) -> Self {
        Layout {
            guard,
            align,
            regions: regions
                .iter()
                .map(|&(id, geometry)| FileRegion { id, geometry })
                .collect(),
        }
    }

    fn text(&self) -> Vec<u8> {
        // Serialising plain structs of integers and enums cannot fail.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Bytes the header takes, rounded up to `align` (the arena starts its first guard gap there).
    pub(super) fn header_len(&self) -> usize {
        (FIXED + self.text().len()).div_ceil(self.align) * self.align
    }

    /// Why `self` (the configuration) cannot use memory laid out as `file`, or `None` when it can.
    fn difference(&self, file: &Layout) -> Option<String> {
        if (self.guard, self.align) != (file.guard, file.align) {
            return Some(format!(
                "the file's regions are {} bytes apart on {}-byte alignment, this collector lays them \
                 out {} bytes apart on {}-byte alignment",
                file.guard, file.align, self.guard, self.align
            ));
        }
        let n = self.regions.len().max(file.regions.len());
        (0..n).find_map(|i| {
            let (ours, theirs) = (self.regions.get(i), file.regions.get(i));
            (ours != theirs).then(|| {
                format!(
                    "region {} of the layout: the file holds {}, the configuration has {}",
                    i + 1,
                    describe(theirs),
                    describe(ours)
                )
            })
        })
    }
}

fn describe(r: Option<&FileRegion>) -> String {
    match r {
        None => "no region".into(),
        Some(r) => format!(
            "{} {} {}",
            r.geometry.kind(),
            r.id,
            serde_json::to_string(&r.geometry).unwrap_or_default()
        ),
    }
}

fn file_error(path: &Path, message: impl Into<String>) -> Error {
    Error::MemoryFile {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

/// What to say after a refusal: how to get going again.
const WAY_OUT: &str =
    "start with --fresh-memory to discard its contents and lay out the configured \
                       regions, or set [collector] memory_file to another path";

/// Opens (or makes) the memory file at `path` for `layout`, whose arena needs `len` bytes (header
/// included), and maps it shared. Its bytes are kept when its header records the same layout; `fresh`
/// discards them whatever it holds. The file is locked (`flock`) for as long as the mapping lives: a
/// second collector on the same file is refused instead of writing over the first one's regions.
pub(super) fn open(
    path: &Path,
    layout: &Layout,
    len: usize,
    fresh: bool,
) -> Result<(Mapping, Opened)> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
        .map_err(|e| file_error(path, format!("cannot open it: {e}")))?;
    // SAFETY: flock on a descriptor this function owns.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let e = io::Error::last_os_error();
        return Err(file_error(
            path,
            if e.kind() == io::ErrorKind::WouldBlock {
                "another collector holds it (locked); two collectors on one memory file would write \
                 over each other's regions"
                    .to_string()
            } else {
                format!("cannot lock it: {e}")
            },
        ));
    }
    let size = file
        .metadata()
        .map_err(|e| file_error(path, format!("cannot stat it: {e}")))?
        .len();
    let (map_len, pages) =
        Mapping::file_len(&file, len).map_err(|e| file_error(path, e.to_string()))?;
    let opened = if size == 0 {
        Opened::Created
    } else if fresh {
        Opened::Reset
    } else {
        check_header(&file, path, layout, len, size)?;
        if size < map_len as u64 {
            // The layout matched but the file is shorter than its mapping (copied from another file
            // system with smaller pages): growing it adds zeroes past the arena, never inside it.
            file.set_len(map_len as u64).map_err(|e| {
                file_error(path, format!("cannot extend it to {map_len} bytes: {e}"))
            })?;
        }
        Opened::Kept
    };
    if opened != Opened::Kept {
        // Truncating to 0 first gives back every old page, so the regions start zeroed as anonymous
        // memory does.
        file.set_len(0)
            .and_then(|()| file.set_len(map_len as u64))
            .map_err(|e| file_error(path, format!("cannot size it to {map_len} bytes: {e}")))?;
    }
    let mut mapping = Mapping::shared_file(file, map_len, pages).map_err(|e| {
        file_error(
            path,
            format!("cannot map {map_len} bytes of it: {e} (on hugetlbfs: are enough hugepages reserved?)"),
        )
    })?;
    if opened != Opened::Kept {
        write_header(mapping.as_mut_slice(), layout, len);
    }
    Ok((mapping, opened))
}

/// Checks that the file at `path` (of `size` bytes) was made for `layout` with an arena of `len` bytes.
fn check_header(file: &File, path: &Path, layout: &Layout, len: usize, size: u64) -> Result<()> {
    let read = |at: u64, buf: &mut [u8]| {
        file.read_exact_at(buf, at)
            .map_err(|e| file_error(path, format!("cannot read its header: {e}")))
    };
    let not_ours = || {
        file_error(
            path,
            format!(
                "it holds no dta-collector regions header (another file, or its creation was \
                 interrupted); {WAY_OUT}"
            ),
        )
    };
    if size < FIXED as u64 {
        return Err(not_ours());
    }
    let mut fixed = [0u8; FIXED];
    read(0, &mut fixed)?;
    if fixed[..8] != MAGIC {
        return Err(not_ours());
    }
    let word =
        |at: usize| u32::from_le_bytes([fixed[at], fixed[at + 1], fixed[at + 2], fixed[at + 3]]);
    let version = word(8);
    if version != VERSION {
        return Err(file_error(
            path,
            format!(
                "its header is format version {version}, this collector reads version {VERSION}; \
                 {WAY_OUT}"
            ),
        ));
    }
    let text_len = word(12) as usize;
    if text_len > MAX_LAYOUT || (FIXED + text_len) as u64 > size {
        return Err(not_ours());
    }
    let mut text = vec![0u8; text_len];
    read(FIXED as u64, &mut text)?;
    let theirs: Layout = serde_json::from_slice(&text).map_err(|e| {
        file_error(
            path,
            format!("its header's layout cannot be read ({e}); {WAY_OUT}"),
        )
    })?;
    if let Some(why) = layout.difference(&theirs) {
        return Err(file_error(
            path,
            format!("it holds regions laid out for another configuration: {why}; {WAY_OUT}"),
        ));
    }
    let mut arena_len = [0u8; 8];
    arena_len.copy_from_slice(&fixed[16..24]);
    let arena_len = u64::from_le_bytes(arena_len);
    // The same layout always needs the same length; another one means the arena's rules changed.
    if arena_len != len as u64 {
        return Err(file_error(
            path,
            format!("its arena is {arena_len} bytes, this collector lays the same regions out in {len}; {WAY_OUT}"),
        ));
    }
    Ok(())
}

/// Writes the header into the mapping's first bytes, the magic last: a collector stopped halfway leaves
/// a file that says it is not ours (hugetlbfs files take no `write(2)`, so this goes through the mapping).
fn write_header(mem: &mut [u8], layout: &Layout, len: usize) {
    let text = layout.text();
    mem[8..12].copy_from_slice(&VERSION.to_le_bytes());
    mem[12..16].copy_from_slice(&(text.len() as u32).to_le_bytes());
    mem[16..24].copy_from_slice(&(len as u64).to_le_bytes());
    mem[FIXED..FIXED + text.len()].copy_from_slice(&text);
    mem[..8].copy_from_slice(&MAGIC);
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use dta_protocol::layout::{AppendGeometry, KeyWriteGeometry};

    use super::*;
    use crate::memory::{Arena, GUARD_LEN};

    /// A path in the temporary directory, removed on drop.
    struct TempFile(PathBuf);

    impl TempFile {
        fn new(name: &str) -> Self {
            let p = std::env::temp_dir().join(format!("dta-memfile-{}-{name}", std::process::id()));
            let _ = std::fs::remove_file(&p);
            TempFile(p)
        }
    }

    impl Drop for TempFile {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    fn layout(entries: u64) -> Vec<(u32, Geometry)> {
        vec![
            (
                0,
                Geometry::KeyWrite(KeyWriteGeometry::new(256, 8, 4).unwrap()),
            ),
            (
                3,
                Geometry::Append(AppendGeometry::new(entries, 4, 16).unwrap()),
            ),
        ]
    }

    const TEXT: &str = r#"{"guard":64,"align":64,"regions":[{"id":0,"kind":"key_write","slots":256,"entry_size":8,"n_max":4},{"id":3,"kind":"append","entries":1024,"entry_size":4,"batch_size":16}]}"#;

    #[test]
    fn header_records_the_layout_before_the_first_guard() {
        let f = TempFile::new("header");
        let (arena, opened) = Arena::with_memory_file(&layout(1024), &f.0, false).unwrap();
        assert_eq!(opened, Opened::Created);
        // 24 fixed bytes and the 171 of the text, rounded up to 64; then the first region's guard gap.
        assert_eq!(TEXT.len(), 171);
        let s = arena.slots();
        assert_eq!(s[0].offset, 256 + GUARD_LEN);
        // 320 + 2048 = 2368, a guard: the Append region at 2432 (its 64-byte header, then the ring).
        assert_eq!(s[1].offset, 2432);
        let end = 2432 + 64 + 1024 * 4 + GUARD_LEN;
        let mem = arena.read();
        assert!(mem.is_file());
        assert_eq!(mem.as_slice().len(), end.div_ceil(4096) * 4096);
        let h = &mem.as_slice()[..24 + TEXT.len()];
        assert_eq!(&h[..8], b"DTAREGS\0");
        assert_eq!(h[8..12], 1u32.to_le_bytes());
        assert_eq!(h[12..16], (TEXT.len() as u32).to_le_bytes());
        assert_eq!(h[16..24], (end as u64).to_le_bytes());
        assert_eq!(std::str::from_utf8(&h[24..]).unwrap(), TEXT);
        assert!(mem.as_slice()[24 + TEXT.len()..].iter().all(|&b| b == 0));
    }

    #[test]
    fn reopening_keeps_the_regions_bytes_and_append_heads() {
        let f = TempFile::new("reopen");
        let rkeys = {
            let (arena, _) = Arena::with_memory_file(&layout(1024), &f.0, false).unwrap();
            let (kw, ap) = (arena.slots()[0].offset, arena.slots()[1].offset);
            let mut mem = arena.write();
            let m = mem.as_mut_slice();
            m[kw + 8..kw + 16].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
            m[ap..ap + 8].copy_from_slice(&AppendGeometry::encode_head(3000));
            m[ap + 64..ap + 68].copy_from_slice(&[0xca, 0xfe, 0xf0, 0x0d]);
            drop(mem);
            arena.regions().iter().map(|r| r.rkey).collect::<Vec<_>>()
        };
        // The process's memory is gone; the file's is not.
        let (arena, opened) = Arena::with_memory_file(&layout(1024), &f.0, false).unwrap();
        assert_eq!(opened, Opened::Kept);
        let (kw, ap) = (arena.slots()[0].offset, arena.slots()[1].offset);
        let mem = arena.read();
        assert_eq!(mem.as_slice()[kw + 8..kw + 16], [1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(mem.as_slice()[ap + 64..ap + 68], [0xca, 0xfe, 0xf0, 0x0d]);
        drop(mem);
        let heads = arena.append_heads();
        assert_eq!(heads.len(), 1);
        assert_eq!((heads[0].list, heads[0].head), (3, 3000));
        // New R_Keys, as after any restart: a translator learns them from the welcome.
        let now: Vec<u32> = arena.regions().iter().map(|r| r.rkey).collect();
        assert!(
            now.iter().all(|k| !rkeys.contains(k)),
            "{now:x?} {rkeys:x?}"
        );
    }

    #[test]
    fn another_layout_is_refused_unless_told_to_start_fresh() {
        let f = TempFile::new("layout");
        {
            let (arena, _) = Arena::with_memory_file(&layout(1024), &f.0, false).unwrap();
            let kw = arena.slots()[0].offset;
            arena.write().as_mut_slice()[kw] = 0x55;
        }
        let e = Arena::with_memory_file(&layout(2048), &f.0, false).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "memory file {}: it holds regions laid out for another configuration: region 2 of the \
                 layout: the file holds append 3 {{\"kind\":\"append\",\"entries\":1024,\"entry_size\":4,\
                 \"batch_size\":16}}, the configuration has append 3 {{\"kind\":\"append\",\"entries\":2048,\
                 \"entry_size\":4,\"batch_size\":16}}; start with --fresh-memory to discard its contents \
                 and lay out the configured regions, or set [collector] memory_file to another path",
                f.0.display()
            )
        );
        let fewer = &layout(1024)[..1];
        let e = Arena::with_memory_file(fewer, &f.0, false).unwrap_err();
        assert!(
            e.to_string().contains(
                "region 2 of the layout: the file holds append 3 {\"kind\":\"append\",\"entries\":1024,\
                 \"entry_size\":4,\"batch_size\":16}, the configuration has no region;"
            ),
            "{e}"
        );
        // The refusals left the file as it was.
        let (arena, opened) = Arena::with_memory_file(&layout(1024), &f.0, false).unwrap();
        assert_eq!(opened, Opened::Kept);
        let kw = arena.slots()[0].offset;
        assert_eq!(arena.read().as_slice()[kw], 0x55);
        drop(arena);
        // Told to: the new layout, zeroed.
        let (arena, opened) = Arena::with_memory_file(&layout(2048), &f.0, true).unwrap();
        assert_eq!(opened, Opened::Reset);
        let kw = arena.slots()[0].offset;
        let mem = arena.read();
        assert!(mem.as_slice()[kw..].iter().all(|&b| b == 0));
        drop(mem);
        drop(arena);
        let (_, opened) = Arena::with_memory_file(&layout(2048), &f.0, false).unwrap();
        assert_eq!(opened, Opened::Kept);
    }

    #[test]
    fn a_foreign_file_and_a_second_collector_are_refused() {
        let f = TempFile::new("foreign");
        std::fs::write(&f.0, b"not a memory file at all, just text").unwrap();
        let e = Arena::with_memory_file(&layout(1024), &f.0, false).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "memory file {}: it holds no dta-collector regions header (another file, or its \
                 creation was interrupted); start with --fresh-memory to discard its contents and lay \
                 out the configured regions, or set [collector] memory_file to another path",
                f.0.display()
            )
        );
        assert_eq!(
            std::fs::read(&f.0).unwrap(),
            b"not a memory file at all, just text"
        );
        let (_first, opened) = Arena::with_memory_file(&layout(1024), &f.0, true).unwrap();
        assert_eq!(opened, Opened::Reset);
        let e = Arena::with_memory_file(&layout(1024), &f.0, false).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "memory file {}: another collector holds it (locked); two collectors on one memory \
                 file would write over each other's regions",
                f.0.display()
            )
        );
    }
}
