//! Telemetry Report v2.0 (p4lang/p4-applications `telemetry/specs/telemetry_report.mdk`).
//!
//! Group header, 8 bytes, once per packet: `ver:4 (= 2), hw_id:6, sequence number:22, node id:32`.
//!
//! Individual report header, 4 bytes, then `Report Length` more 4-byte words:
//!
//! | field         | bits | notes |
//! |---------------|------|-------|
//! | RepType       | 4    | 0 inner only, 1 INT, 2 IOAM (format not yet defined) |
//! | InType        | 4    | 0 none, 1 TLV, 2 domain-specific extension data, 3 Ethernet, 4 IPv4, 5 IPv6 |
//! | Report Length | 8    | words after this first one; 0xFF: to the end of the UDP payload, and no report after it |
//! | MD Length     | 8    | words of metadata (baseline + domain specific) |
//! | D, Q, F, I    | 4    | dropped, congested queue, tracked flow, intermediate report |
//! | Rsvd          | 4    | |
//!
//! For RepType 1 the main contents follow, 8 bytes: `RepMdBits:16, Domain Specific ID:16, DSMdBits:16,
//! DSMdStatus:16`, then `MD Length` words: the baseline metadata `RepMdBits` selects (see
//! [`metadata`](super::metadata)) and the domain-specific metadata. The inner contents (a truncated packet
//! for InType 3-5) fill the rest of the report. Several individual reports may share one packet.
//!
//! A group is walked by Report Length alone, so a report whose contents this module does not read (an
//! IOAM report, a reserved RepType or InType, metadata that lies about its length) is an error for that
//! report only: the next one starts where its Report Length says. Only a Report Length that runs past the
//! packet ends the walk, since nothing then says where the next report starts. Report Length 0xFF (the
//! specification's 2020-10-08 revision: "a length greater than or equal to 0xFF, extending to the end of
//! the UDP payload, i.e. there are no subsequent individual reports") ends the group: the bytes after 255
//! words are still this report's inner packet, never more reports, or a tenant could forge telemetry by
//! placing report-shaped bytes in its own payload.

use crate::contract::{f, FieldSpec};
use crate::error::{check_len, check_room, Error};
use crate::field::{get_u16, get_u32, set_u16, set_u32, Field};
use crate::int::metadata::{self, Bitmap, Metadata};
use crate::Result;

mod field {
    use super::Field;
    pub const VER_HW_SEQ: Field = 0..4;
    pub const NODE_ID: Field = 4..8;

    pub const TYPES: usize = 0;
    pub const REPORT_LEN: usize = 1;
    pub const MD_LEN: usize = 2;
    pub const FLAGS: usize = 3;

    pub const REP_MD_BITS: Field = 0..2;
    pub const DOMAIN_ID: Field = 2..4;
    pub const DS_MD_BITS: Field = 4..6;
    pub const DS_MD_STATUS: Field = 6..8;
}

/// Length of the group header.
pub const GROUP_LEN: usize = 8;
/// Length of the individual report header's first word.
pub const INDIVIDUAL_LEN: usize = 4;
/// Length of the INT main contents before the metadata.
pub const INT_MAIN_LEN: usize = 8;
/// The version this module reads.
pub const VERSION: u8 = 2;
/// Largest sequence number (22 bits).
pub const SEQ_MASK: u32 = (1 << 22) - 1;
/// The Report Length that means "to the end of the UDP payload".
pub const REPORT_LEN_TO_END: u8 = 0xFF;

/// Field table of the group header.
pub const LAYOUT_GROUP: &[FieldSpec] = &[
    f("ver", 4),
    f("hw_id", 6),
    f("seq_no", 22),
    f("node_id", 32),
];
/// Field table of the individual report header's first word.
pub const LAYOUT_INDIVIDUAL: &[FieldSpec] = &[
    f("rep_type", 4),
    f("in_type", 4),
    f("report_length", 8),
    f("md_length", 8),
    f("d", 1),
    f("q", 1),
    f("f", 1),
    f("i", 1),
    f("rsvd", 4),
];
/// Field table of the INT main contents.
pub const LAYOUT_INT_MAIN: &[FieldSpec] = &[
    f("rep_md_bits", 16),
    f("domain_specific_id", 16),
    f("ds_md_bits", 16),
    f("ds_md_status", 16),
];

/// Individual report type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RepType {
    /// No main contents: only the inner contents.
    InnerOnly,
    /// INT main contents.
    Int,
}

/// What the inner contents are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InType {
    /// Nothing.
    None,
    /// TLVs.
    Tlv,
    /// Domain-specific extension data.
    DomainSpecific,
    /// A truncated Ethernet frame.
    Ethernet,
    /// A truncated IPv4 packet.
    Ipv4,
    /// A truncated IPv6 packet.
    Ipv6,
}

impl InType {
    fn from_code(c: u8) -> Option<Self> {
        Some(match c {
            0 => InType::None,
            1 => InType::Tlv,
            2 => InType::DomainSpecific,
            3 => InType::Ethernet,
            4 => InType::Ipv4,
            5 => InType::Ipv6,
            _ => return None,
        })
    }
    /// The wire code.
    pub const fn code(self) -> u8 {
        match self {
            InType::None => 0,
            InType::Tlv => 1,
            InType::DomainSpecific => 2,
            InType::Ethernet => 3,
            InType::Ipv4 => 4,
            InType::Ipv6 => 5,
        }
    }
}

/// The group header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GroupRepr {
    /// Hardware id (6 bits).
    pub hw_id: u8,
    /// Sequence number (22 bits), per (node, hw_id).
    pub seq_no: u32,
    /// Node id.
    pub node_id: u32,
}

/// The INT main contents of an individual report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IntMainRepr<'a> {
    /// Which baseline metadata is present.
    pub rep_md_bits: u16,
    /// INT domain.
    pub domain_specific_id: u16,
    /// Which domain-specific metadata is present.
    pub ds_md_bits: u16,
    /// Domain-specific metadata status.
    pub ds_md_status: u16,
    /// The baseline metadata.
    pub metadata: Metadata,
    /// The domain-specific metadata (the rest of `MD Length`), uninterpreted.
    pub ds_metadata: &'a [u8],
}

/// One individual report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IndividualRepr<'a> {
    /// Report type and, for INT, its main contents.
    pub int: Option<IntMainRepr<'a>>,
    /// What `inner` holds.
    pub in_type: InType,
    /// Dropped.
    pub dropped: bool,
    /// Congested queue.
    pub congested: bool,
    /// Tracked flow.
    pub tracked_flow: bool,
    /// Intermediate report (a transit hop's, INT-MD).
    pub intermediate: bool,
    /// The inner contents.
    pub inner: &'a [u8],
}

impl IndividualRepr<'_> {
    /// The report type.
    pub fn rep_type(&self) -> RepType {
        if self.int.is_some() {
            RepType::Int
        } else {
            RepType::InnerOnly
        }
    }
}

const H_GROUP: &str = "INT v2.0 group header";
const H_IND: &str = "INT v2.0 individual report";

impl GroupRepr {
    /// Parses the group header at the start of a UDP payload; returns it and the individual reports.
    pub fn parse(bytes: &[u8]) -> Result<(GroupRepr, Reports<'_>)> {
        check_len(H_GROUP, bytes, GROUP_LEN)?;
        let w = get_u32(&bytes[field::VER_HW_SEQ]);
        let ver = (w >> 28) as u8;
        if ver != VERSION {
            return Err(Error::InvalidField {
                header: H_GROUP,
                field: "ver",
                value: ver.into(),
            });
        }
        let g = GroupRepr {
            hw_id: ((w >> 22) & 0x3F) as u8,
            seq_no: w & SEQ_MASK,
            node_id: get_u32(&bytes[field::NODE_ID]),
        };
        Ok((
            g,
            Reports {
                rest: &bytes[GROUP_LEN..],
            },
        ))
    }

    /// Writes the group header into the first [`GROUP_LEN`] bytes of `buf`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        check_room(buf, GROUP_LEN)?;
        let w = u32::from(VERSION) << 28
            | u32::from(self.hw_id & 0x3F) << 22
            | (self.seq_no & SEQ_MASK);
        set_u32(&mut buf[field::VER_HW_SEQ], w);
        set_u32(&mut buf[field::NODE_ID], self.node_id);
        Ok(())
    }
}

/// The individual reports of a packet, in order, each delimited by its Report Length. A report whose
/// contents cannot be read is an error for it alone and the walk goes on; a Report Length that runs past
/// the packet is an error that ends the walk (nothing says where a next report would start).
#[derive(Debug, Clone)]
pub struct Reports<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Reports<'a> {
    type Item = Result<IndividualRepr<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        match span(self.rest) {
            Ok(len) => {
                let (this, rest) = self.rest.split_at(len);
                self.rest = rest;
                Some(IndividualRepr::parse_span(this))
            }
            Err(e) => {
                self.rest = &[];
                Some(Err(e))
            }
        }
    }
}

/// The bytes the individual report at the start of `bytes` spans, from its Report Length alone.
fn span(bytes: &[u8]) -> Result<usize> {
    check_len(H_IND, bytes, INDIVIDUAL_LEN)?;
    let words = bytes[field::REPORT_LEN];
    if words == REPORT_LEN_TO_END {
        return Ok(bytes.len());
    }
    let len = INDIVIDUAL_LEN + 4 * usize::from(words);
    check_len(H_IND, bytes, len)?;
    Ok(len)
}

impl<'a> IndividualRepr<'a> {
    /// Parses one individual report at the start of `bytes`; returns it and the bytes it spans (all of
    /// `bytes` for Report Length 0xFF).
    pub fn parse(bytes: &'a [u8]) -> Result<(Self, usize)> {
        let len = span(bytes)?;
        Ok((Self::parse_span(&bytes[..len])?, len))
    }

    /// Parses the report that spans exactly `bytes` (its Report Length already checked by [`span`]).
    fn parse_span(bytes: &'a [u8]) -> Result<Self> {
        check_len(H_IND, bytes, INDIVIDUAL_LEN)?;
        let rep_type = bytes[field::TYPES] >> 4;
        let in_code = bytes[field::TYPES] & 0x0F;
        let md_words = usize::from(bytes[field::MD_LEN]);
        let flags = bytes[field::FLAGS];
        let len = bytes.len();
        let body = &bytes[INDIVIDUAL_LEN..];
        let in_type = InType::from_code(in_code).ok_or(Error::InvalidField {
            header: H_IND,
            field: "in_type",
            value: in_code.into(),
        })?;
        let (int, inner) = match rep_type {
            0 => (None, body),
            1 => {
                let md_len = 4 * md_words;
                if INT_MAIN_LEN + md_len > body.len() {
                    return Err(Error::LengthMismatch {
                        header: H_IND,
                        expected: INDIVIDUAL_LEN + INT_MAIN_LEN + md_len,
                        actual: len,
                    });
                }
                let rep_md_bits = get_u16(&body[field::REP_MD_BITS]);
                metadata::check_fits(H_IND, rep_md_bits, md_words)?;
                let md = &body[INT_MAIN_LEN..INT_MAIN_LEN + md_len];
                let (m, used) = Metadata::parse(rep_md_bits, Bitmap::ReportMd, md)?;
                let main = IntMainRepr {
                    rep_md_bits,
                    domain_specific_id: get_u16(&body[field::DOMAIN_ID]),
                    ds_md_bits: get_u16(&body[field::DS_MD_BITS]),
                    ds_md_status: get_u16(&body[field::DS_MD_STATUS]),
                    metadata: m,
                    ds_metadata: &md[used..],
                };
                (Some(main), &body[INT_MAIN_LEN + md_len..])
            }
            other => {
                return Err(Error::InvalidField {
                    header: H_IND,
                    field: "rep_type",
                    value: other.into(),
                })
            }
        };
        Ok(IndividualRepr {
            int,
            in_type,
            dropped: flags & 0x80 != 0,
            congested: flags & 0x40 != 0,
            tracked_flow: flags & 0x20 != 0,
            intermediate: flags & 0x10 != 0,
            inner,
        })
    }
}

/// Writes an INT individual report (RepType 1) with the given baseline metadata bytes (already laid out
/// in bit order, as [`metadata`](super::metadata) describes) and inner contents. The inner contents are
/// padded with zeros to a whole word. Returns the bytes written. A report of 255 words or more is written
/// with Report Length 0xFF ("to the end of the UDP payload"), so it must be the group's last. For
/// encoders and tests; the translator only parses.
#[allow(clippy::too_many_arguments)]
pub fn emit_int_report(
    buf: &mut [u8],
    in_type: InType,
    flags: (bool, bool, bool, bool),
    rep_md_bits: u16,
    domain_specific_id: u16,
    metadata_bytes: &[u8],
    inner: &[u8],
) -> Result<usize> {
    if metadata_bytes.len() != metadata::length(rep_md_bits) {
        return Err(Error::LengthMismatch {
            header: H_IND,
            expected: metadata::length(rep_md_bits),
            actual: metadata_bytes.len(),
        });
    }
    let inner_words = inner.len().div_ceil(4);
    let md_words = metadata_bytes.len() / 4;
    let words = INT_MAIN_LEN / 4 + md_words + inner_words;
    let report_len = words.min(usize::from(REPORT_LEN_TO_END)) as u8;
    let len = INDIVIDUAL_LEN + 4 * words;
    check_room(buf, len)?;
    buf[..len].fill(0);
    buf[field::TYPES] = 1 << 4 | in_type.code();
    buf[field::REPORT_LEN] = report_len;
    buf[field::MD_LEN] = md_words as u8;
    let (d, q, fl, i) = flags;
    buf[field::FLAGS] = u8::from(d) << 7 | u8::from(q) << 6 | u8::from(fl) << 5 | u8::from(i) << 4;
    let body = &mut buf[INDIVIDUAL_LEN..len];
    set_u16(&mut body[field::REP_MD_BITS], rep_md_bits);
    set_u16(&mut body[field::DOMAIN_ID], domain_specific_id);
    body[INT_MAIN_LEN..INT_MAIN_LEN + metadata_bytes.len()].copy_from_slice(metadata_bytes);
    let at = INT_MAIN_LEN + metadata_bytes.len();
    body[at..at + inner.len()].copy_from_slice(inner);
    Ok(len)
}

#[cfg(test)]
mod tests;
