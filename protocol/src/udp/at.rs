//! Frame offsets of the envelope of an untagged Ethernet II frame carrying IPv4 without options and UDP,
//! the only envelope dta emits and the one its fast paths take: each is the start of its header plus the
//! field's offset in [`super::offset`], computed here rather than restated (a test reads every one from a
//! frame `etherparse` wrote).

use core::ops::Range;

use super::{offset, ETH_HEADER_LEN, IPV4_HEADER_LEN, UDP_HEADER_LEN};

/// `r` moved `by` bytes on: a header-relative field range made frame-relative.
pub const fn shift(r: Range<usize>, by: usize) -> Range<usize> {
    r.start + by..r.end + by
}

/// Where the IPv4 header starts.
pub const IPV4: usize = ETH_HEADER_LEN;
/// Where the UDP header starts (IPv4 without options).
pub const UDP: usize = IPV4 + IPV4_HEADER_LEN;
/// Where the UDP payload starts: [`super::HEADERS_LEN`].
pub const PAYLOAD: usize = UDP + UDP_HEADER_LEN;

/// Destination MAC.
pub const ETH_DST: Range<usize> = offset::ETH_DST;
/// Source MAC.
pub const ETH_SRC: Range<usize> = offset::ETH_SRC;
/// EtherType.
pub const ETH_TYPE: Range<usize> = offset::ETH_TYPE;

/// IPv4 version and IHL.
pub const IPV4_VERSION_IHL: usize = IPV4 + offset::IPV4_VERSION_IHL;
/// IPv4 TOS (DSCP and ECN).
pub const IPV4_TOS: usize = IPV4 + offset::IPV4_TOS;
/// IPv4 total length.
pub const IPV4_TOTAL_LEN: Range<usize> = shift(offset::IPV4_TOTAL_LEN, IPV4);
/// IPv4 identification.
pub const IPV4_ID: Range<usize> = shift(offset::IPV4_ID, IPV4);
/// IPv4 flags and fragment offset.
pub const IPV4_FLAGS_FRAGMENT: Range<usize> = shift(offset::IPV4_FLAGS_FRAGMENT, IPV4);
/// IPv4 TTL.
pub const IPV4_TTL: usize = IPV4 + offset::IPV4_TTL;
/// IPv4 protocol.
pub const IPV4_PROTOCOL: usize = IPV4 + offset::IPV4_PROTOCOL;
/// IPv4 header checksum.
pub const IPV4_CHECKSUM: Range<usize> = shift(offset::IPV4_CHECKSUM, IPV4);
/// IPv4 source address.
pub const IPV4_SRC: Range<usize> = shift(offset::IPV4_SRC, IPV4);
/// IPv4 destination address.
pub const IPV4_DST: Range<usize> = shift(offset::IPV4_DST, IPV4);

/// UDP source port.
pub const UDP_SRC_PORT: Range<usize> = shift(offset::UDP_SRC_PORT, UDP);
/// UDP destination port.
pub const UDP_DST_PORT: Range<usize> = shift(offset::UDP_DST_PORT, UDP);
/// UDP length.
pub const UDP_LEN: Range<usize> = shift(offset::UDP_LEN, UDP);
/// UDP checksum.
pub const UDP_CHECKSUM: Range<usize> = shift(offset::UDP_CHECKSUM, UDP);
const _: () = assert!(PAYLOAD == super::HEADERS_LEN);
