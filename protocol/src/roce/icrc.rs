//! The RoCEv2 invariant CRC (IBA annex A17.3.3), which the reference translator never computes.
//!
//! CRC-32/ISO-HDLC (zlib's) over: 8 bytes of `0xFF` standing in for the LRH; the IPv4 header with TOS, TTL
//! and header checksum set to all ones; the UDP header with its checksum set to `0xFFFF`; the BTH with its
//! byte 4 (FECN, BECN, reserved) set to `0xFF`; then everything after the BTH up to the iCRC, pad included.
//! The result goes on the wire as the CRC's little-endian bytes.
//!
//! Frames here are untagged Ethernet II carrying IPv4. The end of the RoCE packet comes from the IPv4
//! total length, so Ethernet padding after it is ignored.
//!
//! [`IcrcPrefix`] caches the CRC state over every byte up to the BTH's AckReq/PSN word. For one QP and
//! one frame shape (opcode and length) those bytes never change, so a packet then costs only the CRC of its
//! last bytes: 4 bytes of AckReq and PSN, the extension header and the payload.

use crate::roce::crc_table::CRC32_ISO_HDLC;
use crate::roce::short_crc::{Crc32Short, TailCrc, Write8, WRITE8_LEN};
use crate::roce::{bth, ICRC_LEN};
use crate::udp::{
    offset, ETHERTYPE_IPV4, ETH_HEADER_LEN as ETH_LEN, HEADERS_LEN, IPV4_HEADER_LEN,
    UDP_HEADER_LEN as UDP_LEN,
};
use crate::{Error, Result};

/// The LRH stand-in: 8 bytes of all ones ahead of the IPv4 header.
const LRH_LEN: usize = 8;
/// Longest IPv4 header: IHL is 4 bits of 32-bit words.
const IPV4_MAX_HEADER_LEN: usize = 15 * 4;

/// Where the RoCE parts of an Ethernet frame are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Offsets {
    pub(super) ip: usize,
    pub(super) udp: usize,
    pub(super) bth: usize,
    /// Offset of the iCRC, i.e. the end of the covered bytes.
    pub(super) icrc: usize,
}

pub(super) fn locate(frame: &[u8]) -> Result<Offsets> {
    if frame.len() < ETH_LEN + IPV4_HEADER_LEN {
        return Err(Error::Truncated {
            header: "Ethernet/IPv4",
            needed: ETH_LEN + IPV4_HEADER_LEN,
            available: frame.len(),
        });
    }
    if frame[offset::ETH_TYPE] != ETHERTYPE_IPV4.to_be_bytes() {
        return Err(Error::NotRoce("EtherType is not IPv4"));
    }
    let ip = ETH_LEN;
    let version_ihl = frame[ip + offset::IPV4_VERSION_IHL];
    if version_ihl >> 4 != 4 {
        return Err(Error::NotRoce("IP version is not 4"));
    }
    let ihl = usize::from(version_ihl & 0x0F) * 4;
    if ihl < IPV4_HEADER_LEN {
        return Err(Error::NotRoce("IPv4 IHL below 5"));
    }
    let tl = &frame[ip + offset::IPV4_TOTAL_LEN.start..ip + offset::IPV4_TOTAL_LEN.end];
    let total = usize::from(u16::from_be_bytes([tl[0], tl[1]]));
    let end = ip + total;
    let udp = ip + ihl;
    let bth = udp + UDP_LEN;
    let needed = bth + bth::HEADER_LEN + ICRC_LEN;
    if end > frame.len() {
        return Err(Error::Truncated {
            header: "IPv4 packet",
            needed: end,
            available: frame.len(),
        });
    }
    if total < ihl {
        return Err(Error::InvalidField {
            header: "IPv4",
            field: "total length",
            value: total as u64,
        });
    }
    if end < needed {
        return Err(Error::Truncated {
            header: "RoCEv2 packet",
            needed,
            available: end,
        });
    }
    Ok(Offsets {
        ip,
        udp,
        bth,
        icrc: end - ICRC_LEN,
    })
}

/// Longest masked pseudo-header: the LRH stand-in, a 60-byte IPv4 header, UDP and a whole BTH.
const MAX_PSEUDO_HEADER: usize = LRH_LEN + IPV4_MAX_HEADER_LEN + UDP_LEN + bth::HEADER_LEN;

/// Feeds the invariant header bytes from the IPv4 header up to (not including) `bth + upto` into `h`.
///
/// The masked copy is assembled on the stack and hashed in one call: crc32fast's folding path only pays
/// off on longer inputs, and a dozen tiny updates cost several times more than one.
fn hash_masked_headers(h: &mut crc32fast::Hasher, frame: &[u8], o: &Offsets, upto: usize) {
    let mut buf = [0u8; MAX_PSEUDO_HEADER];
    let ip_len = o.udp - o.ip;
    let n = LRH_LEN + ip_len + UDP_LEN + upto;
    buf[..LRH_LEN].fill(0xFF);
    buf[LRH_LEN..n].copy_from_slice(&frame[o.ip..o.bth + upto]);
    // The variant fields, all set to ones: IPv4 TOS, TTL and header checksum; UDP checksum; BTH byte 4
    // (FECN, BECN, reserved).
    let ip = LRH_LEN;
    let udp = ip + ip_len;
    let bth = udp + UDP_LEN;
    for at in [
        ip + offset::IPV4_TOS,
        ip + offset::IPV4_TTL,
        ip + offset::IPV4_CHECKSUM.start,
        ip + offset::IPV4_CHECKSUM.start + 1,
        udp + offset::UDP_CHECKSUM.start,
        udp + offset::UDP_CHECKSUM.start + 1,
        bth + bth::FECN_BECN_OFFSET,
    ] {
        buf[at] = 0xFF;
    }
    h.update(&buf[..n]);
}

/// The CRC of `h`'s bytes and then `rest`, for [`compute`] (every RoCE response is verified with it).
/// crc32fast takes 16-byte blocks at a time but a tail below 16 bytes one byte at a time; the slice-by-4
/// table of [`crc_table`](super::crc_table) takes that tail a word at a time. Measured with callgrind: a
/// little better for the 12 bytes after an ATOMIC ACKNOWLEDGE's BTH, worse for the 28 after a Key-Write
/// frame's PSN word (so [`IcrcPrefix::finish`] does not use it).
#[inline]
fn finish(mut h: crc32fast::Hasher, rest: &[u8]) -> u32 {
    let blocks = rest.len() & !15;
    if blocks > 0 {
        h.update(&rest[..blocks]);
    }
    !CRC32_ISO_HDLC.update(!h.finalize(), &rest[blocks..])
}

/// Computes the iCRC of an Ethernet/IPv4/UDP/BTH frame whose last 4 bytes (per the IPv4 total length)
/// are the iCRC slot. The slot's content is ignored.
pub fn compute(frame: &[u8]) -> Result<u32> {
    let o = locate(frame)?;
    Ok(compute_at(frame, &o))
}

/// The CRC (crc32fast's value) after the LRH stand-in (8 bytes of `0xFF`), so a frame's CRC starts from
/// it instead of hashing those 8 bytes every time (a test checks the value).
pub(super) const LRH_CRC: u32 = 0x2144_df1c;
/// The masked headers of a frame without IPv4 options: IPv4, UDP and BTH.
const PLAIN_HEADERS_LEN: usize = IPV4_HEADER_LEN + UDP_LEN + bth::HEADER_LEN;
/// Covered bytes after the BTH that the plain path hashes in one piece with the headers: every response
/// (an ACK's 4, an ATOMIC ACKNOWLEDGE's 12, a CNP's 16) and small requests.
const SHORT_TAIL: usize = 24;
/// Where the variant fields sit in the plain masked headers (offsets from the IPv4 header): IPv4 TOS, TTL
/// and header checksum, UDP checksum, BTH byte 4.
pub(crate) const PLAIN_MASKED: [usize; 7] = [
    offset::IPV4_TOS,
    offset::IPV4_TTL,
    offset::IPV4_CHECKSUM.start,
    offset::IPV4_CHECKSUM.start + 1,
    IPV4_HEADER_LEN + offset::UDP_CHECKSUM.start,
    IPV4_HEADER_LEN + offset::UDP_CHECKSUM.start + 1,
    IPV4_HEADER_LEN + UDP_LEN + bth::FECN_BECN_OFFSET,
];

pub(super) fn compute_at(frame: &[u8], o: &Offsets) -> u32 {
    let rest = &frame[o.bth + bth::HEADER_LEN..o.icrc];
    if o.udp - o.ip == IPV4_HEADER_LEN && rest.len() <= SHORT_TAIL {
        // Every RoCE response: a fixed-size masked copy of headers and tail, hashed in one call from the
        // state after the LRH (the general path zeroes a buffer for the longest IPv4 header and hashes the
        // tail apart), through the short-message CRC (crc32fast takes inputs below 64 bytes bytewise).
        let mut buf = [0u8; PLAIN_HEADERS_LEN + SHORT_TAIL];
        buf[..PLAIN_HEADERS_LEN].copy_from_slice(&frame[o.ip..o.bth + bth::HEADER_LEN]);
        let n = PLAIN_HEADERS_LEN + rest.len();
        buf[PLAIN_HEADERS_LEN..n].copy_from_slice(rest);
        for at in PLAIN_MASKED {
            buf[at] = 0xFF;
        }
        return !Crc32Short::detect().update(!LRH_CRC, &buf[..n]);
    }
    let mut h = crc32fast::Hasher::new();
    hash_masked_headers(&mut h, frame, o, bth::HEADER_LEN);
    finish(h, &frame[o.bth + bth::HEADER_LEN..o.icrc])
}

/// The iCRC a frame carries (little-endian on the wire).
pub fn carried(frame: &[u8]) -> Result<u32> {
    let o = locate(frame)?;
    Ok(carried_at(frame, &o))
}

pub(super) fn carried_at(frame: &[u8], o: &Offsets) -> u32 {
    let c = &frame[o.icrc..o.icrc + ICRC_LEN];
    u32::from_le_bytes([c[0], c[1], c[2], c[3]])
}

/// Checks a frame's iCRC (the frame is located once for both the computed and the carried value: this
/// runs on every RoCE response).
pub fn verify(frame: &[u8]) -> Result<()> {
    let o = locate(frame)?;
    let computed = compute_at(frame, &o);
    let carried = carried_at(frame, &o);
    if computed == carried {
        Ok(())
    } else {
        Err(Error::IcrcMismatch { carried, computed })
    }
}

/// Computes and writes a frame's iCRC into its last 4 bytes (per the IPv4 total length).
pub fn fill(frame: &mut [u8]) -> Result<u32> {
    let crc = compute(frame)?;
    let o = locate(frame)?;
    frame[o.icrc..o.icrc + ICRC_LEN].copy_from_slice(&crc.to_le_bytes());
    Ok(crc)
}

/// The CRC state over a frame's invariant header bytes up to the BTH's AckReq/PSN word.
///
/// Build one per QP and frame shape from a template frame; [`IcrcPrefix::finish`] then gives the iCRC of
/// any frame that has the same bytes up to that word (same addresses, ports, IPv4 ID, lengths, opcode,
/// pad count and QP), hashing only what follows.
#[derive(Clone, Debug)]
pub struct IcrcPrefix {
    state: crc32fast::Hasher,
    /// Offset of the AckReq/PSN word in the frame.
    resume_at: usize,
    /// Offset of the iCRC in the template (where its tail ends).
    icrc_at: usize,
    /// The tail from the PSN word to the iCRC in the template (every frame of its shape has as long a
    /// one): for the carry-less path, which is off (`finish_long` then) for tails over `SHORT_TAIL_MAX`.
    tail: TailCrc,
    /// The raw register the prefix state reaches over the tail's length in zero bytes: a frame's register
    /// is this XORed with its tail's own (linear) part.
    zeros: u32,
}

/// Longest tail [`IcrcPrefix::finish`] folds through [`Crc32Short`]: one 16-byte block a step is fewer
/// instructions than crc32fast's set-up below this, and crc32fast's four lanes are quicker on more.
const SHORT_TAIL_MAX: usize = 128;

impl IcrcPrefix {
    /// Hashes the invariant part of `template`.
    pub fn new(template: &[u8]) -> Result<Self> {
        let o = locate(template)?;
        let mut state = crc32fast::Hasher::new();
        hash_masked_headers(&mut state, template, &o, bth::ACK_PSN_OFFSET);
        let resume_at = o.bth + bth::ACK_PSN_OFFSET;
        let tail_len = o.icrc - resume_at;
        let zeros = Crc32Short::zeros(!state.clone().finalize(), tail_len);
        let short = if tail_len <= SHORT_TAIL_MAX {
            Crc32Short::detect()
        } else {
            Crc32Short::table_only()
        };
        let tail = TailCrc::new(short, tail_len);
        Ok(IcrcPrefix {
            state,
            resume_at,
            icrc_at: o.icrc,
            tail,
            zeros,
        })
    }

    /// The iCRC of `frame`, which must share the template's prefix bytes and total length; `icrc_at`
    /// is the offset of its iCRC slot (the frame length for frames without Ethernet padding, minus 4).
    #[inline]
    pub fn finish(&self, frame: &[u8], icrc_at: usize) -> u32 {
        match frame.get(..icrc_at) {
            Some(covered) => self.finish_covered(covered),
            None => self.finish_long(frame, icrc_at),
        }
    }

    /// The iCRC of a frame whose covered bytes (up to its iCRC slot) are `covered`.
    #[inline]
    fn finish_covered(&self, covered: &[u8]) -> u32 {
        if covered.len() == self.icrc_at {
            // The template's tail length: the prefix's zeros and the tail's linear part (the bytes
            // before the tail that `clmul_linear` may read are masked out there).
            if let Some(r) = self.tail.clmul_linear(covered) {
                return !(self.zeros ^ r);
            }
        }
        self.finish_long(covered, covered.len())
    }

    /// [`finish`](Self::finish) through crc32fast: tails too long for [`TailCrc`], CPUs without the
    /// carry-less multiply, and frames of another length (out of line, so the common path saves few
    /// registers).
    #[inline(never)]
    fn finish_long(&self, frame: &[u8], icrc_at: usize) -> u32 {
        let mut h = self.state.clone();
        h.update(&frame[self.resume_at..icrc_at]);
        h.finalize()
    }

    /// Writes the iCRC into the last 4 bytes of `frame` (a frame without Ethernet padding).
    #[inline]
    pub fn fill(&self, frame: &mut [u8]) -> u32 {
        let at = frame.len() - ICRC_LEN;
        let (covered, slot) = frame.split_at_mut(at);
        let crc = self.finish_covered(covered);
        slot.copy_from_slice(&crc.to_le_bytes());
        crc
    }

    /// The builder of `template`'s frames as [`Write8`] does them, for an RDMA WRITE ONLY of 8 payload
    /// bytes without IPv4 options (this prefix's template): `None` for another template, or without the
    /// carry-less multiply.
    pub fn write8(&self, template: &[u8]) -> Option<Write8> {
        let o = locate(template).ok()?;
        let ok = o.bth == HEADERS_LEN
            && template.get(o.bth) == Some(&bth::BthOpcode::RdmaWriteOnly.code())
            && o.icrc == WRITE8_LEN - ICRC_LEN
            && template.len() == WRITE8_LEN
            && self.resume_at == o.bth + bth::ACK_PSN_OFFSET
            && self.icrc_at == o.icrc;
        ok.then(|| Write8::new(template, self.zeros)).flatten()
    }

    /// [`fill`](Self::fill) of the `frame_len`-byte frame at the start of every room, for a burst of
    /// frames of this prefix's shape: one call, whose carry-less fold runs in its own loop (a call per
    /// frame made the builder's loop spill and reload its registers around it). Rooms shorter than
    /// `frame_len` are skipped: a caller builds frames only into rooms that hold them.
    pub fn fill_all(&self, rooms: &mut [&mut [u8]], frame_len: usize) {
        let icrc_at = frame_len.wrapping_sub(ICRC_LEN);
        if frame_len >= ICRC_LEN
            && icrc_at == self.icrc_at
            && self.tail.fill_many(rooms, icrc_at, self.zeros)
        {
            return;
        }
        for room in rooms.iter_mut() {
            if let Some(frame) = room.get_mut(..frame_len) {
                if frame.len() >= ICRC_LEN {
                    self.fill(frame);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
