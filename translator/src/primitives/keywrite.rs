//! Key-Write: N WRITE ONLY frames per report, each an entry `checksum(key) LE ‖ data` at the slot of
//! copy n.

use dta_protocol::dta::{KeyWriteRepr, Opcode};
use dta_protocol::hash::key_checksum;
use dta_protocol::layout::{Geometry, Region, KEY_WRITE_CHECKSUM_LEN};
use dta_protocol::roce::crc_table::{placement_hash0_from_checksum, placement_hash5};

use super::{FlushMode, Outcome, Primitive, Sink, Timed};
use crate::collector::Regions;
use crate::counters::{primitive_tag, DropReason};
use crate::time::Instant;
use dta_rc::frames::{Op, Payload, INLINE_PAYLOAD};
use dta_rc::requester::Requester;

/// A Key-Write report with its key's checksum, computed once by the engine, which also routes on it.
#[derive(Debug, Clone, Copy)]
pub struct KeyWriteReport<'r> {
    /// The report.
    pub repr: KeyWriteRepr<'r>,
    /// `key_checksum(repr.key)`.
    pub checksum: u32,
}

/// Key-Write as a [`Primitive`]: stateless, every report is written at once.
#[derive(Debug, Clone, Copy, Default)]
pub struct KeyWrite;

impl Primitive for KeyWrite {
    type Report<'r> = KeyWriteReport<'r>;

    fn region<'g>(&self, regions: &'g Regions, _: &KeyWriteReport<'_>) -> Option<&'g Region> {
        regions.key_write.as_ref()
    }

    fn max_wrs(&self, r: &KeyWriteReport<'_>) -> usize {
        usize::from(r.repr.redundancy)
    }

    fn handle(
        &mut self,
        _: Instant,
        r: &KeyWriteReport<'_>,
        region: &Region,
        out: &mut Sink<'_>,
    ) -> Result<Outcome, DropReason> {
        handle_with_checksum(&r.repr, r.checksum, region, out.qp).map(|()| Outcome::Accepted)
    }
}

impl Timed for KeyWrite {
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    fn flush(&mut self, _: Instant, _: FlushMode, _: &Regions, _: &mut Sink<'_>) {}

    /// Stateless: every report is written when it is handled.
    fn held_reports(&self) -> u64 {
        0
    }
}

/// Queues the N writes of `r` into `region`. The caller has checked the queue has room for N.
pub fn handle(r: &KeyWriteRepr, region: &Region, qp: &mut Requester) -> Result<(), DropReason> {
    handle_with_checksum(r, key_checksum(r.key), region, qp)
}

/// [`handle`] with the key's checksum (`key_checksum(r.key)`) already computed, by a caller that also
/// routed on it: the checksum is computed once per report, not once per copy and again for routing.
pub fn handle_with_checksum(
    r: &KeyWriteRepr,
    checksum: u32,
    region: &Region,
    qp: &mut Requester,
) -> Result<(), DropReason> {
    Placement::new(region)
        .ok_or(DropReason::NoRegion)?
        .write(r, checksum, qp)
}

/// A Key-Write region's values that every report needs, read out of its geometry once (when the engine
/// learns the collector's regions) instead of per report: [`handle_with_checksum`] is `Placement::new`
/// then [`write`](Self::write), so both paths run the same code.
#[derive(Debug, Clone, Copy)]
pub struct Placement {
    va: u64,
    rkey: u32,
    /// `slots - 1` (slots are a power of two).
    mask: u64,
    /// Entry size in bytes.
    size: u64,
    /// Entry size as a length, at most [`INLINE_PAYLOAD`] when `data_len` is not `usize::MAX`.
    len: usize,
    n_max: u8,
    /// Data bytes per entry; `usize::MAX`, which no report's data matches, when an entry does not fit a
    /// work request's inline payload: then every report is refused as a geometry mismatch, by the same
    /// one compare per report that checks the data's length.
    data_len: usize,
}

impl Placement {
    /// The placement of a Key-Write region; `None` for a region of another kind.
    pub fn new(region: &Region) -> Option<Self> {
        let Geometry::KeyWrite(g) = region.geometry else {
            return None;
        };
        let len = g.entry_size() as usize;
        Some(Placement {
            va: region.va,
            rkey: region.rkey,
            mask: g.slots() - 1,
            size: u64::from(g.entry_size()),
            len,
            n_max: g.n_max(),
            data_len: if len <= INLINE_PAYLOAD {
                g.data_len()
            } else {
                usize::MAX
            },
        })
    }

    /// Queues the N writes of `r`, whose key's checksum is `checksum`. The caller has checked the queue
    /// has room for N.
    #[inline(always)]
    pub fn write(
        &self,
        r: &KeyWriteRepr,
        checksum: u32,
        qp: &mut Requester,
    ) -> Result<(), DropReason> {
        self.write_with::<false>(r, checksum, qp)
    }

    /// [`write`](Self::write) with N = 1 and N = 2, the common redundancies, each its own unrolled
    /// code (N a constant: no loop, each copy's placement table at a fixed address): N = 2 took ~16
    /// instructions fewer a report, N = 1 ~4. For the engine's one out-of-line Key-Write call; inlined
    /// into the receive loop, the larger code moved the other reports' register allocation.
    #[inline(always)]
    pub fn write_unrolled(
        &self,
        r: &KeyWriteRepr,
        checksum: u32,
        qp: &mut Requester,
    ) -> Result<(), DropReason> {
        self.write_with::<true>(r, checksum, qp)
    }

    /// [`write`](Self::write), or [`write_unrolled`](Self::write_unrolled) when `UNROLL`.
    #[inline(always)]
    fn write_with<const UNROLL: bool>(
        &self,
        r: &KeyWriteRepr,
        checksum: u32,
        qp: &mut Requester,
    ) -> Result<(), DropReason> {
        if r.redundancy > self.n_max || r.data.len() != self.data_len {
            return Err(DropReason::GeometryMismatch);
        }
        let len = self.len;
        // The layout of `KeyWriteGeometry::encode_entry`, with the checksum given (a test checks they
        // agree). `len` fits the buffer (`data_len` matched) and is the checksum and the data.
        let mut entry = [0u8; INLINE_PAYLOAD];
        entry[..KEY_WRITE_CHECKSUM_LEN].copy_from_slice(&checksum.to_le_bytes());
        put_data(&mut entry[KEY_WRITE_CHECKSUM_LEN..len], r.data);
        self.push_copies::<UNROLL>(r.redundancy, r.key, checksum, entry, len, qp);
        Ok(())
    }

    /// This placement as one whose entries hold `D` data bytes, if they do.
    pub fn sized<const D: usize>(self) -> Option<SizedPlacement<D>> {
        (self.data_len == D).then_some(SizedPlacement(self))
    }

    /// Queues the `redundancy` copies of the entry `entry[..len]` (at most [`INLINE_PAYLOAD`] bytes) of
    /// key `key`, whose checksum is `checksum`: the end of [`write`](Self::write) and
    /// [`SizedPlacement::write`].
    #[inline(always)]
    fn push_copies<const UNROLL: bool>(
        &self,
        redundancy: u8,
        key: u32,
        checksum: u32,
        entry: [u8; INLINE_PAYLOAD],
        len: usize,
        qp: &mut Requester,
    ) {
        // The entry moves in as the payload's inline buffer, the payload made by `push_n_with` once it
        // has the ring slot, so that it is written there rather than kept on the stack across the ring's
        // growth check (`len` fits the buffer, so `from_array` always gives it and the copy is never made).
        let payload =
            || Payload::from_array(entry, len).unwrap_or_else(|| Payload::from_slice(&entry));
        // `g.offset(key, n)` through the table CRCs; copy 0 continues the checksum's CRC (it hashes the
        // same key bytes with the same polynomial, then n = 0). A test checks both against the layout.
        // All N ring slots taken at once (one growth check and length update), each copy written in its
        // slot.
        let copy = |n| {
            let h = if n == 0 {
                placement_hash0_from_checksum(checksum)
            } else {
                placement_hash5(key, n)
            };
            Op::Write {
                va: self.va_of(h),
                rkey: self.rkey,
                payload: payload(),
            }
        };
        match redundancy {
            1 if UNROLL => qp.push_n_with(primitive_tag(Opcode::KeyWrite), 1, copy),
            2 if UNROLL => qp.push_n_with(primitive_tag(Opcode::KeyWrite), 2, copy),
            n => qp.push_n_with(primitive_tag(Opcode::KeyWrite), n, copy),
        }
    }
}

impl Placement {
    /// The address of the slot that placement hash `h` picks.
    #[inline(always)]
    fn va_of(&self, h: u32) -> u64 {
        self.va + (u64::from(h) & self.mask) * self.size
    }
}

/// A [`Placement`] whose entries hold `D` data bytes ([`Placement::sized`] checked it once), for a
/// caller that writes many reports of D data bytes (the engine's run of Key-Write reports): the entry's
/// length is a constant, and no length check, dispatch or inline-length check is left per report.
#[derive(Debug, Clone, Copy)]
pub struct SizedPlacement<const D: usize>(Placement);

impl<const D: usize> SizedPlacement<D> {
    /// [`Placement::write_unrolled`] of a report whose data is `data` (its `data`, as an array): the
    /// same check of N and the same work requests.
    #[inline(always)]
    pub fn write(
        &self,
        r: &KeyWriteRepr,
        data: &[u8; D],
        checksum: u32,
        qp: &mut Requester,
    ) -> Result<(), DropReason> {
        const { assert!(KEY_WRITE_CHECKSUM_LEN + D <= INLINE_PAYLOAD) };
        let p = &self.0;
        if r.redundancy > p.n_max {
            return Err(DropReason::GeometryMismatch);
        }
        let mut entry = [0u8; INLINE_PAYLOAD];
        entry[..KEY_WRITE_CHECKSUM_LEN].copy_from_slice(&checksum.to_le_bytes());
        entry[KEY_WRITE_CHECKSUM_LEN..KEY_WRITE_CHECKSUM_LEN + D].copy_from_slice(data);
        let len = KEY_WRITE_CHECKSUM_LEN + D;
        p.push_copies::<true>(r.redundancy, r.key, checksum, entry, len, qp);
        Ok(())
    }
}

/// `to.copy_from_slice(data)` (same lengths), with the Key-Write data sizes (4, 12, 28 bytes) copied as
/// fixed-size arrays: a copy of a known length is a few moves inline, one of a run-time length a call to
/// `memcpy`.
#[inline]
fn put_data(to: &mut [u8], data: &[u8]) {
    if let (Ok(t), Ok(d)) = (
        <&mut [u8; 4]>::try_from(&mut *to),
        <&[u8; 4]>::try_from(data),
    ) {
        *t = *d;
    } else if let (Ok(t), Ok(d)) = (
        <&mut [u8; 12]>::try_from(&mut *to),
        <&[u8; 12]>::try_from(data),
    ) {
        *t = *d;
    } else {
        to.copy_from_slice(data);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{RateConfig, RequesterConfig};
    use crate::counters::Counters;
    use dta_protocol::layout::KeyWriteGeometry;
    use dta_protocol::roce::{Extension, ROCEV2_UDP_PORT};
    use dta_protocol::udp::UdpEndpoints;
    use dta_rc::frames::FrameBuilder;
    use dta_rc::requester::RequesterParams;

    /// A placement is sized only as its entries' data size: 4, 12 or 28 bytes for entries of 8, 16 or 32.
    #[test]
    fn a_placement_is_sized_only_as_its_data() {
        for (entry, d) in [(8u32, 4usize), (16, 12), (32, 28)] {
            let region = Region {
                id: 0,
                va: 0x1000,
                rkey: 1,
                geometry: Geometry::KeyWrite(KeyWriteGeometry::new(64, entry, 2).unwrap()),
            };
            let p = Placement::new(&region).unwrap();
            assert_eq!(p.sized::<4>().is_some(), d == 4, "entry {entry}");
            assert_eq!(p.sized::<12>().is_some(), d == 12, "entry {entry}");
            assert_eq!(p.sized::<28>().is_some(), d == 28, "entry {entry}");
        }
    }

    /// The table CRCs of the hot path place every copy where the layout says, for many keys and every N.
    #[test]
    fn addresses_match_the_layout() {
        let g = KeyWriteGeometry::new(1 << 26, 16, 8).unwrap();
        let region = Region {
            id: 0,
            va: 0x7f00_0000_0000,
            rkey: 7,
            geometry: Geometry::KeyWrite(g),
        };
        let ep = UdpEndpoints::new([2; 6], [3; 6], [1; 4], [2; 4], 1, ROCEV2_UDP_PORT);
        let params = RequesterParams {
            cfg: RequesterConfig::default(),
            rate: RateConfig::default(),
            max_atomics: 16,
            start_psn: 0,
        };
        let mut qp = Requester::new(params, FrameBuilder::new(ep, 0x11), Instant(0));
        let (mut c, mut out) = (Counters::default(), Vec::new());
        let data = [9u8; 12];
        for i in 0..2000u32 {
            let key = i.wrapping_mul(0x9E37_79B1) ^ i >> 3;
            let r = KeyWriteRepr {
                redundancy: 8,
                key,
                data: &data,
            };
            handle(&r, &region, &mut qp).unwrap();
            for n in 0..8 {
                assert!(qp.poll_transmit(Instant(0), &mut c, &mut out));
                let f = dta_protocol::roce::FrameRepr::parse(&out).unwrap();
                let Extension::Reth(h) = f.ext else {
                    panic!("not a WRITE")
                };
                assert_eq!(h.va, region.va + g.offset(key, n), "key {key} copy {n}");
            }
            qp.assume_delivered();
        }
    }

    #[test]
    fn entries_match_the_layout_encoder() {
        for entry_size in [8u32, 16, 32] {
            let g = KeyWriteGeometry::new(1 << 10, entry_size, 4).unwrap();
            let region = Region {
                id: 0,
                va: 0x1000,
                rkey: 7,
                geometry: Geometry::KeyWrite(g),
            };
            let ep = UdpEndpoints::new(
                [2, 0, 0, 0, 0, 1],
                [2, 0, 0, 0, 0, 2],
                [198, 18, 0, 1],
                [198, 18, 0, 2],
                49152,
                ROCEV2_UDP_PORT,
            );
            let params = RequesterParams {
                cfg: RequesterConfig::default(),
                rate: RateConfig::default(),
                max_atomics: 16,
                start_psn: 0,
            };
            let mut qp = Requester::new(params, FrameBuilder::new(ep, 0x11), Instant(0));
            let data: Vec<u8> = (0..g.data_len() as u8).collect();
            let r = KeyWriteRepr {
                redundancy: 3,
                key: 0xdead_beef,
                data: &data,
            };
            handle(&r, &region, &mut qp).unwrap();
            let mut want = vec![0u8; entry_size as usize];
            g.encode_entry(r.key, &data, &mut want).unwrap();
            let (mut c, mut out) = (Counters::default(), Vec::new());
            for n in 0..3 {
                assert!(qp.poll_transmit(Instant(0), &mut c, &mut out));
                let f = dta_protocol::roce::FrameRepr::parse(&out).unwrap();
                let Extension::Reth(h) = f.ext else {
                    panic!("not a WRITE")
                };
                assert_eq!(h.va, 0x1000 + g.offset(r.key, n));
                assert_eq!(f.payload, &want[..]);
            }
            assert!(!qp.poll_transmit(Instant(0), &mut c, &mut out));
        }
    }
}
