//! The arena: every region in one mapping, each preceded and followed by an unused guard gap, plus the
//! table from R_Key to region. The responder resolves `(R_Key, VA, length)` through [`Arena::resolve`]
//! before touching memory, so a request can only ever reach the bytes of the one region its key names.

use std::collections::HashSet;
use std::io::Read;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

use dta_protocol::control::AppendHead;
use dta_protocol::layout::{AppendGeometry, Geometry, Region, RegionKind};

use super::persist::{self, Layout, Opened};
use super::Mapping;
use crate::error::{Error, Result};

/// Bytes left unused before each region and after the last one. Tests fill them with a pattern and check
/// that no request ever changed them.
pub const GUARD_LEN: usize = 64;
/// Regions start on this alignment: a cache line, and a multiple of 8 for atomics.
const REGION_ALIGN: usize = 64;

/// One region and where its bytes are in the arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegionSlot {
    /// The region as advertised: id, VA, R_Key and geometry.
    pub region: Region,
    /// Byte offset of the region in the arena's mapping.
    pub offset: usize,
}

impl RegionSlot {
    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.region.len() as usize
    }
    /// Always false: geometries are never empty.
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// The regions' memory and their table.
#[derive(Debug)]
pub struct Arena {
    mapping: RwLock<Mapping>,
    slots: Vec<RegionSlot>,
}

fn align_up(x: usize, to: usize) -> usize {
    x.div_ceil(to) * to
}

impl Arena {
    /// Lays out `regions` (id and geometry each) with guard gaps, maps the memory (hugepages when
    /// available) and assigns soft-backend R_Keys.
    pub fn new(regions: &[(u32, Geometry)]) -> Result<Self> {
        Self::build(regions, 0, Mapping::new)
    }

    /// As [`new`](Self::new) on ordinary pages without a warning (tests and small tools).
    pub fn new_normal(regions: &[(u32, Geometry)]) -> Result<Self> {
        Self::build(regions, 0, |len| Mapping::normal(len, false))
    }

    /// As [`new`](Self::new) in a shared mapping of the file at `path` (on hugetlbfs, hugepages of its
    /// mount), whose bytes outlive the process: a file made for the same layout keeps its regions'
    /// contents, one made for another layout is refused with the difference, and `fresh` starts from
    /// zeroed regions whatever the file held. The arena's bytes begin with the file's header, which no
    /// region covers. The file stays locked while the arena lives.
    pub fn with_memory_file(
        regions: &[(u32, Geometry)],
        path: &std::path::Path,
        fresh: bool,
    ) -> Result<(Self, Opened)> {
        let layout = Layout::new(regions, GUARD_LEN, REGION_ALIGN);
        let mut opened = Opened::Created;
        let arena = Self::build(regions, layout.header_len(), |len| {
            let (mapping, o) = persist::open(path, &layout, len, fresh)?;
            opened = o;
            Ok(mapping)
        })?;
        Ok((arena, opened))
    }

    /// Lays the regions out after `prefix` bytes that no region covers (the memory file's header).
    fn build(
        regions: &[(u32, Geometry)],
        prefix: usize,
        map: impl FnOnce(usize) -> Result<Mapping>,
    ) -> Result<Self> {
        let mut offsets = Vec::with_capacity(regions.len());
        let mut end = prefix;
        for (_, g) in regions {
            let len = usize::try_from(g.len())
                .map_err(|_| Error::Config(format!("region of {} bytes is too large", g.len())))?;
            let start = align_up(end + GUARD_LEN, REGION_ALIGN);
            offsets.push(start);
            end = start
                .checked_add(len)
                .ok_or_else(|| Error::Config("regions do not fit in the address space".into()))?;
        }
        let mapping = map(end + GUARD_LEN)?;
        let base = mapping.addr();
        let rkeys = soft_rkeys(regions.len());
        let slots = regions
            .iter()
            .zip(offsets)
            .enumerate()
            .map(|(i, (&(id, geometry), offset))| RegionSlot {
                region: Region {
                    id,
                    va: base + offset as u64,
                    rkey: rkeys[i],
                    geometry,
                },
                offset,
            })
            .collect();
        Ok(Arena {
            mapping: RwLock::new(mapping),
            slots,
        })
    }

    /// The region table.
    pub fn slots(&self) -> &[RegionSlot] {
        &self.slots
    }

    /// The regions as the control channel advertises them.
    pub fn regions(&self) -> Vec<Region> {
        self.slots.iter().map(|s| s.region).collect()
    }

    /// The head word (`total_entries_written`) of every Append list, as its header holds it now: what a
    /// welcome tells a translator, so that it continues each list instead of rewinding it to entry 0.
    pub fn append_heads(&self) -> Vec<AppendHead> {
        let mem = self.read();
        let bytes = mem.as_slice();
        self.slots
            .iter()
            .filter(|s| matches!(s.region.geometry, Geometry::Append(_)))
            .filter_map(|s| {
                let head = AppendGeometry::decode_head(bytes.get(s.offset..)?)?;
                Some(AppendHead {
                    list: s.region.id,
                    head,
                })
            })
            .collect()
    }

    /// Replaces the R_Key of region `index` (the ibverbs backend learns keys from `ibv_reg_mr`).
    pub fn set_rkey(&mut self, index: usize, rkey: u32) {
        if let Some(s) = self.slots.get_mut(index) {
            s.region.rkey = rkey;
        }
    }

    /// Shared access for queries. A poisoned lock only means a panicking writer; the bytes are still
    /// memory a query may read, so recover the guard.
    pub fn read(&self) -> RwLockReadGuard<'_, Mapping> {
        self.mapping.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Exclusive access for the software responder.
    pub fn write(&self) -> RwLockWriteGuard<'_, Mapping> {
        self.mapping.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The first region of `kind` with `id` (any id when `None`). [`Arena::find_geometry`] also hands out
    /// the region's geometry, typed.
    pub fn find(&self, kind: RegionKind, id: Option<u32>) -> Result<&RegionSlot> {
        self.slots
            .iter()
            .find(|s| s.region.geometry.kind() == kind && id.map_or(true, |i| s.region.id == i))
            .ok_or(Error::NoRegion { kind, id })
    }
}

/// `n` distinct, non-zero R_Keys that cannot be guessed from each other or from earlier runs: a ChaCha20
/// stream seeded from the OS (`/dev/urandom`). An R_Key is the only thing besides QPN and PSN that an
/// off-path sender has to guess, so the software backend does not hand out 0x1000, 0x1001, ... as it
/// used to (ibverbs keys come from the device). Where the OS has no randomness device the seed falls back
/// to the clock, the process id and the address of a stack variable, with a warning.
fn soft_rkeys(n: usize) -> Vec<u32> {
    let mut seed = [0u8; 32];
    let from_os = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut seed));
    if let Err(e) = from_os {
        log::warn!("/dev/urandom: {e}; R_Keys are seeded from the clock and are guessable");
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        seed[..16].copy_from_slice(&nanos.to_le_bytes());
        seed[16..20].copy_from_slice(&std::process::id().to_le_bytes());
        let here = std::ptr::addr_of!(seed) as usize as u64;
        seed[24..].copy_from_slice(&here.to_le_bytes());
    }
    let mut rng = ChaCha20Rng::from_seed(seed);
    let mut seen = HashSet::with_capacity(n);
    let mut keys = Vec::with_capacity(n);
    while keys.len() < n {
        let k = rng.next_u32();
        if k != 0 && seen.insert(k) {
            keys.push(k);
        }
    }
    keys
}

/// Resolves `(rkey, va, len)` to an offset range in the arena, or says why not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolve {
    /// The range lies inside the region that `rkey` names.
    Ok(usize),
    /// No region has that R_Key.
    BadRkey,
    /// The range leaves the region.
    OutOfBounds,
}

/// Looks `rkey` up in `slots` and checks that `[va, va + len)` lies inside that region.
pub fn resolve(slots: &[RegionSlot], rkey: u32, va: u64, len: u64) -> Resolve {
    let Some(slot) = slots.iter().find(|s| s.region.rkey == rkey) else {
        return Resolve::BadRkey;
    };
    if !slot.region.contains(va, len) {
        return Resolve::OutOfBounds;
    }
    // contains() guarantees va >= region.va and va + len <= region end, so this cannot wrap.
    Resolve::Ok(slot.offset + (va - slot.region.va) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dta_protocol::layout::{KeyWriteGeometry, SketchGeometry};

    fn arena() -> Arena {
        Arena::new_normal(&[
            (
                0,
                Geometry::KeyWrite(KeyWriteGeometry::new(256, 8, 4).unwrap()),
            ),
            (3, Geometry::Sketch(SketchGeometry::new(2, 3).unwrap())),
        ])
        .unwrap()
    }

    #[test]
    fn lays_out_regions_with_guards() {
        let a = arena();
        let s = a.slots();
        assert_eq!(s[0].offset, 64);
        assert_eq!(s[0].len(), 2048);
        // 64 + 2048 = 2112, plus a 64-byte guard = 2176, already 64-aligned.
        assert_eq!(s[1].offset, 2176);
        assert_eq!(s[1].len(), 24);
        assert_eq!(s[1].region.va - s[0].region.va, 2112);
        assert_ne!(s[0].region.rkey, s[1].region.rkey);
        assert!(a.read().as_slice().len() >= 2176 + 24 + 64);
        assert_eq!(a.find(RegionKind::Sketch, Some(3)).unwrap().offset, 2176);
        assert!(matches!(
            a.find(RegionKind::Sketch, Some(4)),
            Err(Error::NoRegion {
                kind: RegionKind::Sketch,
                id: Some(4)
            })
        ));
        assert!(a.find(RegionKind::KeyWrite, None).is_ok());
        let (slot, g) = a.find_geometry::<SketchGeometry>(Some(3)).unwrap();
        assert_eq!((slot.offset, g.len()), (2176, 24));
        assert!(a
            .find_geometry::<dta_protocol::layout::AppendGeometry>(None)
            .is_err());
    }

    #[test]
    fn resolve_checks_key_and_bounds() {
        let a = arena();
        let s = a.slots();
        let va = s[0].region.va;
        let (kw, sk) = (s[0].region.rkey, s[1].region.rkey);
        let unknown = (1..).find(|k| *k != kw && *k != sk).unwrap();
        assert_eq!(resolve(s, kw, va, 8), Resolve::Ok(64));
        assert_eq!(resolve(s, kw, va + 2040, 8), Resolve::Ok(64 + 2040));
        assert_eq!(resolve(s, kw, va + 2041, 8), Resolve::OutOfBounds);
        assert_eq!(resolve(s, kw, va - 1, 1), Resolve::OutOfBounds);
        assert_eq!(resolve(s, kw, u64::MAX - 3, 8), Resolve::OutOfBounds);
        assert_eq!(resolve(s, unknown, va, 8), Resolve::BadRkey);
        // The sketch's key does not reach the Key-Write region, even though both live in one mapping.
        assert_eq!(resolve(s, sk, va, 8), Resolve::OutOfBounds);
    }

    #[test]
    fn rkeys_are_unique_nonzero_and_unpredictable() {
        let regions: Vec<(u32, Geometry)> = (0..64)
            .map(|i| (i, Geometry::Sketch(SketchGeometry::new(1, 2).unwrap())))
            .collect();
        let keys = |a: &Arena| a.regions().iter().map(|r| r.rkey).collect::<Vec<u32>>();
        let (a, b) = (
            keys(&Arena::new_normal(&regions).unwrap()),
            keys(&Arena::new_normal(&regions).unwrap()),
        );
        for k in [&a, &b] {
            assert_eq!(k.iter().collect::<HashSet<_>>().len(), 64, "unique: {k:x?}");
            assert!(!k.contains(&0));
        }
        // Not a sequence: the old keys were 0x1000 + i, one apart.
        assert!(
            a.windows(2)
                .filter(|w| w[1].wrapping_sub(w[0]) == 1)
                .count()
                < 4,
            "{a:x?}"
        );
        assert!(!a.contains(&0x1000), "{a:x?}");
        // Two arenas (two runs) do not share keys: 64 keys of 32 random bits almost never collide.
        assert!(
            a.iter().filter(|k| b.contains(k)).count() <= 1,
            "{a:x?} {b:x?}"
        );
    }
}
