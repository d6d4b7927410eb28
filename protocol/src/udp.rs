//! Ethernet II / IPv4 / UDP framing: the envelope of DTA reports, DTA NACKs and RoCEv2 packets alike,
//! emitted through `etherparse` and parsed at fixed offsets by one parse ([`UdpView`]) that a test checks
//! against etherparse's.
//!
//! Frames are untagged (no 802.1Q); a bump-in-the-wire deployment with VLANs passes tagged frames through
//! untouched. IPv4 options are accepted on input and never emitted.

use etherparse::{EtherType, Ethernet2Header, IpDscp, IpEcn, IpNumber, Ipv4Header, UdpHeader};

use crate::error::check_room;
use crate::refusal::{ensure, Explain, Quiet, Refusal};
use crate::{Error, Result};

/// Ethernet II header length.
pub const ETH_HEADER_LEN: usize = Ethernet2Header::LEN;
/// IPv4 header length without options (dta never emits options).
pub const IPV4_HEADER_LEN: usize = Ipv4Header::MIN_LEN;
/// UDP header length.
pub const UDP_HEADER_LEN: usize = UdpHeader::LEN;
/// Ethernet + IPv4 + UDP, as emitted.
pub const HEADERS_LEN: usize = ETH_HEADER_LEN + IPV4_HEADER_LEN + UDP_HEADER_LEN;

/// EtherType of IPv4.
pub const ETHERTYPE_IPV4: u16 = EtherType::IPV4.0;
/// EtherType of ARP.
pub const ETHERTYPE_ARP: u16 = EtherType::ARP.0;

/// Byte offsets of the envelope fields that code reading raw frames needs: the iCRC masks some of them and
/// steering reads the EtherType before any parse. Each is relative to the start of its own header; the
/// tests below check them against what `etherparse` writes.
pub mod offset {
    use core::ops::Range;

    /// Destination MAC, in the Ethernet II header.
    pub const ETH_DST: Range<usize> = 0..6;
    /// Source MAC, in the Ethernet II header.
    pub const ETH_SRC: Range<usize> = 6..12;
    /// EtherType, in the Ethernet II header.
    pub const ETH_TYPE: Range<usize> = 12..14;
    /// IPv4 version (high nibble) and IHL in 32-bit words (low nibble).
    pub const IPV4_VERSION_IHL: usize = 0;
    /// IPv4 TOS (DSCP and ECN).
    pub const IPV4_TOS: usize = 1;
    /// IPv4 total length.
    pub const IPV4_TOTAL_LEN: Range<usize> = 2..4;
    /// IPv4 identification.
    pub const IPV4_ID: Range<usize> = 4..6;
    /// IPv4 flags (reserved, DF, MF) and fragment offset.
    pub const IPV4_FLAGS_FRAGMENT: Range<usize> = 6..8;
    /// IPv4 TTL.
    pub const IPV4_TTL: usize = 8;
    /// IPv4 protocol.
    pub const IPV4_PROTOCOL: usize = 9;
    /// IPv4 header checksum.
    pub const IPV4_CHECKSUM: Range<usize> = 10..12;
    /// IPv4 source address.
    pub const IPV4_SRC: Range<usize> = 12..16;
    /// IPv4 destination address.
    pub const IPV4_DST: Range<usize> = 16..20;
    /// UDP source port.
    pub const UDP_SRC_PORT: Range<usize> = 0..2;
    /// UDP destination port.
    pub const UDP_DST_PORT: Range<usize> = 2..4;
    /// UDP length (header and payload).
    pub const UDP_LEN: Range<usize> = 4..6;
    /// UDP checksum.
    pub const UDP_CHECKSUM: Range<usize> = 6..8;
}

pub mod at;

/// The EtherType of an Ethernet II frame, or `None` if the frame is too short to have one. A cheap test
/// for code that must tell ARP from IP before (or instead of) parsing.
#[inline]
pub fn ether_type(frame: &[u8]) -> Option<u16> {
    frame
        .get(offset::ETH_TYPE)
        .map(|b| u16::from_be_bytes([b[0], b[1]]))
}

/// IPv4 flags and fragment offset less DF: MF and the offset, either of which makes a fragment.
const FRAGMENT_BITS: u16 = 0x3FFF;
/// IPv4 version 4 with IHL 5: a header without options.
const IPV4_NO_OPTIONS: u8 = 0x45;

/// The `N` bytes of `b` at `r`, a constant range of `N` bytes (the length check then folds away).
#[inline(always)]
fn bytes<const N: usize>(b: &[u8], r: core::ops::Range<usize>) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[r]);
    a
}

/// The big-endian `u16` of `b` at `r`, a constant range of 2 bytes.
#[inline(always)]
fn be16(b: &[u8], r: core::ops::Range<usize>) -> u16 {
    u16::from_be_bytes(bytes(b, r))
}

/// The ECN code point ECT(0), `10`, which RoCEv2 senders use so that switches can mark congestion.
pub const ECN_ECT0: u8 = 0b10;

/// Addresses and IPv4 settings of one UDP flow: everything about a frame's envelope but its length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UdpEndpoints {
    /// Ethernet source.
    pub src_mac: [u8; 6],
    /// Ethernet destination.
    pub dst_mac: [u8; 6],
    /// IPv4 source.
    pub src_ip: [u8; 4],
    /// IPv4 destination.
    pub dst_ip: [u8; 4],
    /// UDP source port.
    pub src_port: u16,
    /// UDP destination port.
    pub dst_port: u16,
    /// DSCP, 6 bits.
    pub dscp: u8,
    /// ECN, 2 bits.
    pub ecn: u8,
    /// IPv4 identification. Frames are sent with DF, so it may stay constant per flow (RFC 6864).
    pub ip_id: u16,
    /// IPv4 TTL.
    pub ttl: u8,
}

impl UdpEndpoints {
    /// Endpoints with the defaults of DESIGN.md section 4: DSCP 0, ECN ECT(0), ID 0, TTL 64.
    pub const fn new(
        src_mac: [u8; 6],
        dst_mac: [u8; 6],
        src_ip: [u8; 4],
        dst_ip: [u8; 4],
        src_port: u16,
        dst_port: u16,
    ) -> Self {
        UdpEndpoints {
            src_mac,
            dst_mac,
            src_ip,
            dst_ip,
            src_port,
            dst_port,
            dscp: 0,
            ecn: ECN_ECT0,
            ip_id: 0,
            ttl: 64,
        }
    }

    /// The same flow in the other direction (addresses and ports swapped, settings kept).
    pub const fn reversed(&self) -> Self {
        UdpEndpoints {
            src_mac: self.dst_mac,
            dst_mac: self.src_mac,
            src_ip: self.dst_ip,
            dst_ip: self.src_ip,
            src_port: self.dst_port,
            dst_port: self.src_port,
            ..*self
        }
    }

    /// Writes Ethernet, IPv4 (DF, correct header checksum) and UDP (checksum 0) headers for a UDP payload of
    /// `payload_len` bytes into the first [`HEADERS_LEN`] bytes of `buf`.
    pub fn emit_headers(&self, buf: &mut [u8], payload_len: usize) -> Result<()> {
        check_room(buf, HEADERS_LEN)?;
        let too_big = || Error::InvalidField {
            header: "UDP",
            field: "payload length",
            value: payload_len as u64,
        };
        let udp_len = u16::try_from(payload_len + UDP_HEADER_LEN).map_err(|_| too_big())?;
        let eth = Ethernet2Header {
            source: self.src_mac,
            destination: self.dst_mac,
            ether_type: EtherType::IPV4,
        };
        let mut ip = Ipv4Header::new(udp_len, self.ttl, IpNumber::UDP, self.src_ip, self.dst_ip)
            .map_err(|_| too_big())?;
        ip.dscp = IpDscp::try_new(self.dscp).map_err(|_| Error::InvalidField {
            header: "IPv4",
            field: "dscp",
            value: self.dscp.into(),
        })?;
        ip.ecn = IpEcn::try_new(self.ecn).map_err(|_| Error::InvalidField {
            header: "IPv4",
            field: "ecn",
            value: self.ecn.into(),
        })?;
        ip.identification = self.ip_id;
        ip.dont_fragment = true;
        ip.header_checksum = ip.calc_header_checksum();
        let udp = UdpHeader {
            source_port: self.src_port,
            destination_port: self.dst_port,
            length: udp_len,
            checksum: 0,
        };
        buf[..ETH_HEADER_LEN].copy_from_slice(&eth.to_bytes());
        buf[ETH_HEADER_LEN..ETH_HEADER_LEN + IPV4_HEADER_LEN].copy_from_slice(&ip.to_bytes());
        buf[ETH_HEADER_LEN + IPV4_HEADER_LEN..HEADERS_LEN].copy_from_slice(&udp.to_bytes());
        Ok(())
    }

    /// Writes a whole frame: headers, then `payload`. Returns the frame length.
    pub fn emit_frame(&self, buf: &mut [u8], payload: &[u8]) -> Result<usize> {
        let len = HEADERS_LEN + payload.len();
        check_room(buf, len)?;
        self.emit_headers(buf, payload.len())?;
        buf[HEADERS_LEN..len].copy_from_slice(payload);
        Ok(len)
    }
}

/// A received Ethernet/IPv4/UDP frame: its endpoints and its UDP payload, bounded by the UDP length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpFrame<'a> {
    /// Addresses, ports and IPv4 settings as received.
    pub endpoints: UdpEndpoints,
    /// Offset of the IPv4 header in the frame.
    pub ip_offset: usize,
    /// Offset of the UDP payload in the frame.
    pub payload_offset: usize,
    /// The UDP payload.
    pub payload: &'a [u8],
}

impl<'a> UdpFrame<'a> {
    /// Parses an untagged Ethernet II / IPv4 / UDP frame. Anything else (ARP, IPv6, VLAN tags, TCP, IPv4
    /// fragments, lengths that do not fit) is `Error::NotRoce` with a reason, so callers can forward it
    /// untouched. It is [`UdpView`]'s parse with the reasons, and the rest of the envelope (MACs, TOS, ID,
    /// TTL) read after it; a test checks it against etherparse's reading of the same frames.
    pub fn parse(frame: &'a [u8]) -> Result<Self> {
        let view = UdpView::checked::<Explain>(frame)?;
        view.frame(frame).ok_or(IPV4_MALFORMED)
    }
}

/// A frame [`UdpView::parse_common`] leaves to [`UdpView::parse`] (IPv4 options, short frames, other
/// EtherTypes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Uncommon;

/// The refusal of an IPv4 header that is cut, not version 4, shorter than 5 words, or whose total length
/// is shorter than its header or longer than the frame.
const IPV4_MALFORMED: Error = Error::NotRoce("malformed or truncated IPv4 header");
/// The refusal of a UDP header that does not fit the IPv4 payload, or a UDP length that does not.
const UDP_MALFORMED: Error = Error::NotRoce("malformed or truncated UDP header");

/// The fields of a received Ethernet/IPv4/UDP frame that the translator's per-report path reads: the
/// addresses, the ports and the UDP payload. [`frame`](Self::frame) gives the whole [`UdpFrame`], so
/// callers that need the rest of the envelope (MACs, TOS, TTL) build it only then.
///
/// This is the one parse of the envelope ([`UdpFrame::parse`] is this parse with reasons): its checks are
/// etherparse's (EtherType IPv4, IPv4 version, IHL ≥ 5, header and total length within the frame, no
/// fragment, protocol UDP, UDP header and length within the IPv4 payload, a UDP length of 0 meaning "to
/// the end of the IPv4 payload" as etherparse reads it), at fixed offsets (callgrind put etherparse's
/// slices at ~155 instructions a report). IPv4 without options, the frame every sender emits, is the
/// same body with the header length a constant ([`parse_common`](Self::parse_common)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpView<'a> {
    /// IPv4 source.
    pub src_ip: [u8; 4],
    /// IPv4 destination.
    pub dst_ip: [u8; 4],
    /// UDP source port.
    pub src_port: u16,
    /// UDP destination port.
    pub dst_port: u16,
    /// Offset of the UDP payload in the frame.
    pub payload_offset: usize,
    /// The UDP payload.
    pub payload: &'a [u8],
}

impl<'a> UdpView<'a> {
    /// The view of a UDP frame; `None` for anything [`UdpFrame::parse`] refuses.
    #[inline]
    pub fn parse(frame: &'a [u8]) -> Option<Self> {
        match Self::parse_common(frame) {
            Ok(v) => v,
            Err(Uncommon) => Self::general(frame),
        }
    }

    /// [`parse`](Self::parse) of the common frame (IPv4 without options, at least the headers long): the
    /// result, or `Err(Uncommon)` for a frame that only the general case can tell about (call `parse`
    /// then). For callers that keep the common case apart from the rest.
    #[inline(always)]
    pub fn parse_common(frame: &'a [u8]) -> core::result::Result<Option<Self>, Uncommon> {
        let Some(h) = frame.first_chunk::<HEADERS_LEN>() else {
            return Err(Uncommon);
        };
        // EtherType IPv4, then version 4 with IHL 5 (TOS, the next byte, is free). Compared as a 16-bit and
        // an 8-bit field, each against an immediate: a masked 32-bit compare kept its mask and value in
        // two registers across the engine's whole receive loop, which then spilled others.
        if be16(h, at::ETH_TYPE) != ETHERTYPE_IPV4 || h[at::IPV4_VERSION_IHL] != IPV4_NO_OPTIONS {
            return Err(Uncommon);
        }
        let Some(ip) = h.first_chunk::<{ ETH_HEADER_LEN + IPV4_HEADER_LEN }>() else {
            return Err(Uncommon);
        };
        Ok(Self::datagram::<Quiet>(frame, ip, IPV4_HEADER_LEN).ok())
    }

    /// The frames [`parse_common`](Self::parse_common) leaves: IPv4 options, short or odd frames.
    #[cold]
    fn general(frame: &'a [u8]) -> Option<Self> {
        Self::checked::<Quiet>(frame).ok()
    }

    /// Any frame: the Ethernet header, EtherType, IPv4 version and IHL, then
    /// [`datagram`](Self::datagram) with the IPv4 header's length.
    #[inline]
    pub(crate) fn checked<M: Refusal>(frame: &'a [u8]) -> core::result::Result<Self, M::Err> {
        let Some(eth) = frame.first_chunk::<ETH_HEADER_LEN>() else {
            return Err(M::refuse(|| Error::Truncated {
                header: "Ethernet",
                needed: ETH_HEADER_LEN,
                available: frame.len(),
            }));
        };
        ensure::<M>(be16(eth, at::ETH_TYPE) == ETHERTYPE_IPV4, || {
            Error::NotRoce("not IPv4")
        })?;
        let Some(ip) = frame.first_chunk::<{ ETH_HEADER_LEN + IPV4_HEADER_LEN }>() else {
            return Err(M::refuse(|| IPV4_MALFORMED));
        };
        let version_ihl = ip[at::IPV4_VERSION_IHL];
        let ihl = usize::from(version_ihl & 0x0F) * 4;
        ensure::<M>(version_ihl >> 4 == 4 && ihl >= IPV4_HEADER_LEN, || {
            IPV4_MALFORMED
        })?;
        Self::datagram::<M>(frame, ip, ihl)
    }

    /// The rest of the parse once the EtherType, version and IHL passed: `ip` is the frame's Ethernet
    /// header and fixed IPv4 header, `ihl` the IPv4 header's length in bytes (at least 20; a constant 20
    /// from [`parse_common`](Self::parse_common), where every bounds check below folds away).
    #[inline(always)]
    fn datagram<M: Refusal>(
        frame: &'a [u8],
        ip: &[u8; ETH_HEADER_LEN + IPV4_HEADER_LEN],
        ihl: usize,
    ) -> core::result::Result<Self, M::Err> {
        // Flags and fragment offset (no fragment: only DF may be set), TTL (free), protocol UDP; fields
        // against immediates rather than one masked word.
        ensure::<M>(
            be16(ip, at::IPV4_FLAGS_FRAGMENT) & FRAGMENT_BITS == 0,
            || Error::NotRoce("IPv4 fragment"),
        )?;
        ensure::<M>(ip[at::IPV4_PROTOCOL] == IpNumber::UDP.0, || {
            Error::NotRoce("not UDP")
        })?;
        let ip_end = at::IPV4 + usize::from(be16(ip, at::IPV4_TOTAL_LEN));
        let udp_at = at::IPV4 + ihl;
        let payload_at = udp_at + UDP_HEADER_LEN;
        // Which length is wrong, once one is: the IPv4 total (shorter than its header, or past the frame),
        // else the UDP header or length (not within the IPv4 payload).
        let why = || match ip_end < udp_at || ip_end > frame.len() {
            true => IPV4_MALFORMED,
            false => UDP_MALFORMED,
        };
        let Some(udp) = frame.get(udp_at..payload_at) else {
            return Err(M::refuse(why));
        };
        let udp_end = match usize::from(be16(udp, offset::UDP_LEN)) {
            // etherparse reads a UDP length of 0 as "to the end of the IPv4 payload".
            0 => ip_end,
            n => udp_at + n,
        };
        // The UDP length within the IPv4 total length, the total within the frame; the UDP header within
        // the UDP length (a length of at least 8, or 0 with a total that holds both headers) is the
        // payload's range below (`udp_end >= payload_at`). Together these are etherparse's checks of the
        // total (at least the header, at most the frame) and of the UDP header and length, in two compares
        // and a range (`length_fields_agree_exhaustively`).
        ensure::<M>(udp_end <= ip_end && ip_end <= frame.len(), why)?;
        let Some(payload) = frame.get(payload_at..udp_end) else {
            return Err(M::refuse(why));
        };
        Ok(UdpView {
            src_ip: bytes(ip, at::IPV4_SRC),
            dst_ip: bytes(ip, at::IPV4_DST),
            src_port: be16(udp, offset::UDP_SRC_PORT),
            dst_port: be16(udp, offset::UDP_DST_PORT),
            payload_offset: payload_at,
            payload,
        })
    }

    /// The view of a parsed frame.
    pub fn of(f: &UdpFrame<'a>) -> Self {
        UdpView {
            src_ip: f.endpoints.src_ip,
            dst_ip: f.endpoints.dst_ip,
            src_port: f.endpoints.src_port,
            dst_port: f.endpoints.dst_port,
            payload_offset: f.payload_offset,
            payload: f.payload,
        }
    }

    /// The whole [`UdpFrame`] of `frame`, the frame this view was parsed from: what
    /// [`UdpFrame::parse`] returns for it. `None` only for another frame.
    pub fn frame(&self, frame: &'a [u8]) -> Option<UdpFrame<'a>> {
        let h = frame.get(..ETH_HEADER_LEN + IPV4_HEADER_LEN)?;
        let ip = &h[ETH_HEADER_LEN..];
        Some(UdpFrame {
            endpoints: UdpEndpoints {
                src_mac: bytes(h, offset::ETH_SRC),
                dst_mac: bytes(h, offset::ETH_DST),
                src_ip: self.src_ip,
                dst_ip: self.dst_ip,
                src_port: self.src_port,
                dst_port: self.dst_port,
                dscp: ip[offset::IPV4_TOS] >> 2,
                ecn: ip[offset::IPV4_TOS] & 0b11,
                ip_id: be16(ip, offset::IPV4_ID),
                ttl: ip[offset::IPV4_TTL],
            },
            ip_offset: ETH_HEADER_LEN,
            payload_offset: self.payload_offset,
            payload: self.payload,
        })
    }
}

#[cfg(test)]
mod tests;
