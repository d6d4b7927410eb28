//! An anonymous, zeroed memory mapping: 1 GiB hugepages, else 2 MiB hugepages, else ordinary pages; or a
//! shared mapping of a file (hugetlbfs, tmpfs or any file system) whose bytes outlive the process.
//!
//! RDMA NICs translate addresses page by page, so large pages keep their translation caches from missing
//! when writes land all over a multi-gigabyte region (the DTA paper's collector uses 1 GiB pages).

use std::io;
use std::ptr::NonNull;

use crate::error::{Error, Result};

/// Which pages back a mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageKind {
    /// 1 GiB hugepages.
    Huge1G,
    /// 2 MiB hugepages.
    Huge2M,
    /// Ordinary pages.
    Normal,
}

impl PageKind {
    /// Page size in bytes.
    pub const fn size(self) -> usize {
        match self {
            PageKind::Huge1G => 1 << 30,
            PageKind::Huge2M => 2 << 20,
            PageKind::Normal => 4096,
        }
    }
}

/// An owned mapping, unmapped on drop.
#[derive(Debug)]
pub struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
    pages: PageKind,
    /// The file behind a shared file mapping. Kept open because it holds the `flock` that keeps a second
    /// collector off the same memory; the lock goes with the descriptor when the mapping is dropped.
    file: Option<std::fs::File>,
}

// SAFETY: the mapping is plain memory owned by this value; access is governed by the usual `&`/`&mut` rules.
unsafe impl Send for Mapping {}
// SAFETY: as above; shared access only reads.
unsafe impl Sync for Mapping {}

// MAP_HUGE_SHIFT encodings of the page size (log2 of the size, shifted by 26).
const MAP_HUGE_1GB: libc::c_int = 30 << libc::MAP_HUGE_SHIFT;
const MAP_HUGE_2MB: libc::c_int = 21 << libc::MAP_HUGE_SHIFT;

fn round_up(len: usize, to: usize) -> usize {
    len.div_ceil(to) * to
}

/// `statfs(2)`'s magic number of hugetlbfs, whose files are backed by hugepages of the mount's page size.
const HUGETLBFS_MAGIC: i64 = 0x9584_58f6;

/// The page size a file's mappings use: the mount's hugepage size on hugetlbfs, else ordinary pages.
fn file_pages(file: &std::fs::File) -> io::Result<PageKind> {
    use std::os::fd::AsRawFd;
    // SAFETY: statfs is plain data the kernel fills in; the descriptor is open for the call's duration.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::fstatfs(file.as_raw_fd(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // f_type's integer type differs between libc targets; the magic fits every one of them.
    #[allow(clippy::unnecessary_cast)]
    let fs_type = st.f_type as i64;
    if fs_type != HUGETLBFS_MAGIC {
        return Ok(PageKind::Normal);
    }
    // On hugetlbfs f_bsize is the hugepage size of the mount.
    #[allow(clippy::unnecessary_cast)]
    match st.f_bsize as u64 {
        b if b == PageKind::Huge1G.size() as u64 => Ok(PageKind::Huge1G),
        b if b == PageKind::Huge2M.size() as u64 => Ok(PageKind::Huge2M),
        b => Err(io::Error::other(format!(
            "hugetlbfs with {b}-byte pages (only 2 MiB and 1 GiB pages are supported)"
        ))),
    }
}

fn try_map(len: usize, extra_flags: libc::c_int) -> io::Result<NonNull<u8>> {
    // SAFETY: an anonymous private mapping at an address the kernel picks touches no existing memory.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | extra_flags,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    NonNull::new(p.cast()).ok_or_else(|| io::Error::other("mmap returned null"))
}

impl Mapping {
    /// Maps at least `len` bytes (rounded up to the page size), trying 1 GiB, then 2 MiB hugepages, then
    /// ordinary pages with a warning. Anonymous mappings are zero-filled by the kernel.
    pub fn new(len: usize) -> Result<Self> {
        let len = len.max(1);
        for (pages, flags) in [
            (PageKind::Huge1G, libc::MAP_HUGETLB | MAP_HUGE_1GB),
            (PageKind::Huge2M, libc::MAP_HUGETLB | MAP_HUGE_2MB),
        ] {
            // A 1 GiB page for a few kilobytes of regions would waste memory that hugepage pools rarely have.
            if pages == PageKind::Huge1G && len < PageKind::Huge2M.size() {
                continue;
            }
            let rounded = round_up(len, pages.size());
            match try_map(rounded, flags) {
                Ok(ptr) => {
                    log::info!("regions: {rounded} bytes on {pages:?} pages");
                    return Ok(Mapping {
                        ptr,
                        len: rounded,
                        pages,
                        file: None,
                    });
                }
                Err(e) => log::debug!("no {pages:?} pages for {rounded} bytes: {e}"),
            }
        }
        Self::normal(len, true)
    }

    /// Maps `len` bytes on ordinary pages; `warn` logs that hugepages were unavailable.
    pub fn normal(len: usize, warn: bool) -> Result<Self> {
        let rounded = round_up(len.max(1), PageKind::Normal.size());
        let ptr = try_map(rounded, 0).map_err(|source| Error::Map {
            len: rounded,
            source,
        })?;
        if warn {
            log::warn!(
                "regions: no hugepages available, using {rounded} bytes of ordinary pages \
                 (an RDMA NIC will miss its address-translation cache more often)"
            );
        }
        Ok(Mapping {
            ptr,
            len: rounded,
            pages: PageKind::Normal,
            file: None,
        })
    }

    /// The length a shared mapping of `file` needs to hold `len` bytes: rounded up to the file system's
    /// page size (a hugetlbfs file only takes whole hugepages), and which pages those are.
    pub fn file_len(file: &std::fs::File, len: usize) -> io::Result<(usize, PageKind)> {
        let pages = file_pages(file)?;
        Ok((round_up(len.max(1), pages.size()), pages))
    }

    /// Maps the first `len` bytes of `file` shared (`len` from [`file_len`](Self::file_len); the file
    /// must be at least that long): writes go to the file's pages, which outlive this process, and a
    /// later mapping of the same file sees them. `file` is kept open (and with it any lock on it) until
    /// the mapping is dropped.
    pub fn shared_file(file: std::fs::File, len: usize, pages: PageKind) -> io::Result<Self> {
        use std::os::fd::AsRawFd;
        // SAFETY: a shared mapping of an open file at an address the kernel picks touches no existing
        // memory; the caller sized the file to at least `len` bytes, so no access past its end faults.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(p.cast()).ok_or_else(|| io::Error::other("mmap returned null"))?;
        Ok(Mapping {
            ptr,
            len,
            pages,
            file: Some(file),
        })
    }

    /// Whether this is a shared mapping of a file (its bytes outlive the process).
    pub fn is_file(&self) -> bool {
        self.file.is_some()
    }

    /// Which pages back this mapping.
    pub fn pages(&self) -> PageKind {
        self.pages
    }

    /// Start address.
    pub fn addr(&self) -> u64 {
        self.ptr.as_ptr() as u64
    }

    /// The whole mapping.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr..ptr+len is a live mapping owned by self, initialised by the kernel (zeroed, or the
        // file's bytes).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The whole mapping, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in as_slice, and &mut self gives exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// Raw start pointer, for registering the memory with an RDMA device.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: ptr and len are exactly what mmap returned and nothing borrows the mapping any more.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_zeroed_memory_rounded_to_pages() {
        let mut m = Mapping::new(10_000).unwrap();
        assert!(m.as_slice().len() >= 10_000);
        assert_eq!(m.as_slice().len() % m.pages().size(), 0);
        assert!(m.as_slice().iter().all(|&b| b == 0));
        m.as_mut_slice()[9_999] = 7;
        assert_eq!(m.as_slice()[9_999], 7);
        assert_eq!(m.addr() % 4096, 0);
    }

    #[test]
    fn normal_pages_round_to_4k() {
        let m = Mapping::normal(1, false).unwrap();
        assert_eq!(m.as_slice().len(), 4096);
        assert_eq!(m.pages(), PageKind::Normal);
    }
}
