//! The truncated inner packet of a report: the flow's 5-tuple, its TTL (from which a per-hop report's hop
//! can be derived) and, in a sink's report, the INT-MD stack it carries.
//!
//! Ethernet (with VLAN tags), IPv4 and IPv6 (with extension headers) are read by `etherparse` in its lax
//! mode, which accepts a packet cut short of its stated length, as every report's inner packet is. The
//! common case (untagged Ethernet, IPv4 without an authentication header) is read at fixed offsets first,
//! with the same lax rules: etherparse's slicing cost ~600 instructions a report (callgrind, INT bench),
//! and a property test checks the two agree. The L4
//! ports are the first four bytes of the TCP or UDP header, read directly: a truncated TCP header still
//! names its ports.

use std::net::IpAddr;

use etherparse::{LaxNetSlice, LaxSlicedPacket};

use crate::error::Error;
use crate::field::get_u16;
use crate::int::md::{IntMdRepr, NextProtocol};
use crate::Result;

/// IP protocol numbers the flow key reads ports for.
const TCP: u8 = 6;
const UDP: u8 = 17;
const UDP_HEADER_LEN: usize = 8;

const H: &str = "INT inner packet";

/// Where the inner packet starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// An Ethernet frame.
    Ethernet,
    /// An IPv4 or IPv6 packet (the version nibble tells which).
    Ip,
}

/// How INT-MD is recognised in the inner packet.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IntDetect {
    /// INT over UDP: the UDP destination port that announces the shim.
    pub udp_port: Option<u16>,
    /// INT after the L4 header: the DSCP value (6 bits) that marks it, and the mask of the DSCP bits that
    /// carry the mark.
    pub dscp: Option<(u8, u8)>,
}

/// A flow's 5-tuple.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FlowKey {
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// IP protocol (the original one when INT over UDP hid it).
    pub protocol: u8,
    /// Source port (0 for protocols without ports).
    pub src_port: u16,
    /// Destination port (0 for protocols without ports).
    pub dst_port: u16,
}

/// What the inner packet says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct InnerRepr<'a> {
    /// The flow.
    pub flow: FlowKey,
    /// IPv4 TTL or IPv6 hop limit as the reporting switch saw it.
    pub ttl: u8,
    /// The INT-MD headers and stack, when the packet carries them.
    pub int_md: Option<IntMdRepr<'a>>,
}

fn ports(l4: &[u8]) -> Option<(u16, u16)> {
    (l4.len() >= 4).then(|| (get_u16(&l4[0..2]), get_u16(&l4[2..4])))
}

impl<'a> InnerRepr<'a> {
    /// Parses the inner packet.
    pub fn parse(start: Start, bytes: &'a [u8], detect: IntDetect) -> Result<Self> {
        let net = match fast_ipv4(start, bytes) {
            Some(n) => n,
            None => sliced(start, bytes)?,
        };
        Self::from_network(net, detect)
    }

    fn from_network(net: Network<'a>, detect: IntDetect) -> Result<Self> {
        let Network {
            src,
            dst,
            ttl,
            dscp,
            protocol,
            l4,
        } = net;
        let (mut src_port, mut dst_port) = match protocol {
            TCP | UDP => ports(l4).ok_or(Error::Truncated {
                header: H,
                needed: 4,
                available: l4.len(),
            })?,
            _ => (0, 0),
        };
        let mut flow_protocol = protocol;
        let mut int_md = None;
        if protocol == UDP && detect.udp_port == Some(dst_port) && l4.len() >= UDP_HEADER_LEN {
            // INT over UDP: the shim follows this UDP header; the original L4 header follows the stack.
            let (md, after) = IntMdRepr::parse(&l4[UDP_HEADER_LEN..])?;
            match md.next {
                NextProtocol::UdpPort(port) => dst_port = port,
                NextProtocol::IpProtocol(p) => {
                    flow_protocol = p;
                    let (s, d) = match p {
                        TCP | UDP => ports(after).ok_or(Error::Truncated {
                            header: H,
                            needed: 4,
                            available: after.len(),
                        })?,
                        _ => (0, 0),
                    };
                    (src_port, dst_port) = (s, d);
                }
                NextProtocol::AfterL4 => {}
            }
            int_md = Some(md);
        } else if let Some((value, mask)) = detect.dscp {
            // INT after the L4 header, announced by DSCP: the shim follows the TCP or UDP header.
            let l4_len = match protocol {
                UDP => Some(UDP_HEADER_LEN),
                TCP if l4.len() > 12 => Some(usize::from(l4[12] >> 4) * 4),
                _ => None,
            };
            if dscp & mask == value & mask {
                if let Some(n) = l4_len.filter(|&n| n >= 8 && l4.len() >= n) {
                    int_md = Some(IntMdRepr::parse(&l4[n..])?.0);
                }
            }
        }
        Ok(InnerRepr {
            flow: FlowKey {
                src,
                dst,
                protocol: flow_protocol,
                src_port,
                dst_port,
            },
            ttl,
            int_md,
        })
    }
}

/// The network layer's part of the flow, and what follows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Network<'a> {
    src: IpAddr,
    dst: IpAddr,
    ttl: u8,
    dscp: u8,
    protocol: u8,
    l4: &'a [u8],
}

/// IPv4 protocol number of the authentication header, which etherparse unwraps (left to it).
const AUTH: u8 = 51;
const ETHERNET_LEN: usize = 14;
const IPV4_MIN_LEN: usize = 20;

/// The common case read at fixed offsets: untagged Ethernet (or a bare packet) carrying IPv4 without an
/// authentication header, with etherparse's lax rules (a stated total length below the header or beyond
/// the bytes present falls back to the bytes present). `None` leaves the packet to [`sliced`], which
/// reads everything else (VLAN tags, IPv6, AH) and produces the errors. A test checks both agree.
fn fast_ipv4(start: Start, bytes: &[u8]) -> Option<Network<'_>> {
    let ip = match start {
        Start::Ethernet => {
            if bytes.len() < ETHERNET_LEN || bytes[12..14] != [0x08, 0x00] {
                return None;
            }
            &bytes[ETHERNET_LEN..]
        }
        Start::Ip => bytes,
    };
    if ip.len() < IPV4_MIN_LEN || ip[0] >> 4 != 4 {
        return None;
    }
    let header_len = usize::from(ip[0] & 0x0F) * 4;
    if header_len < IPV4_MIN_LEN || ip.len() < header_len || ip[9] == AUTH {
        return None;
    }
    let total = usize::from(get_u16(&ip[2..4]));
    let l4 = if total < header_len || total > ip.len() {
        &ip[header_len..]
    } else {
        &ip[header_len..total]
    };
    let addr = |at: usize| IpAddr::from([ip[at], ip[at + 1], ip[at + 2], ip[at + 3]]);
    Some(Network {
        src: addr(12),
        dst: addr(16),
        ttl: ip[8],
        dscp: ip[1] >> 2,
        protocol: ip[9],
        l4,
    })
}

/// Any packet, through etherparse's lax slicing.
fn sliced(start: Start, bytes: &[u8]) -> Result<Network<'_>> {
    let sliced = match start {
        Start::Ethernet => LaxSlicedPacket::from_ethernet(bytes).map_err(|_| Error::Truncated {
            header: H,
            needed: 14,
            available: bytes.len(),
        })?,
        Start::Ip => LaxSlicedPacket::from_ip(bytes).map_err(|_| Error::InvalidField {
            header: H,
            field: "IP header",
            value: bytes.first().map_or(0, |b| u64::from(b >> 4)),
        })?,
    };
    let (src, dst, ttl, dscp, payload) = match &sliced.net {
        Some(LaxNetSlice::Ipv4(v4)) => {
            let h = v4.header();
            (
                IpAddr::V4(h.source_addr()),
                IpAddr::V4(h.destination_addr()),
                h.ttl(),
                h.dcp().value(),
                v4.payload(),
            )
        }
        Some(LaxNetSlice::Ipv6(v6)) => {
            let h = v6.header();
            (
                IpAddr::V6(h.source_addr()),
                IpAddr::V6(h.destination_addr()),
                h.hop_limit(),
                h.traffic_class() >> 2,
                v6.payload(),
            )
        }
        _ => {
            return Err(Error::InvalidField {
                header: H,
                field: "network layer",
                value: 0,
            })
        }
    };
    Ok(Network {
        src,
        dst,
        ttl,
        dscp,
        protocol: payload.ip_number.0,
        l4: payload.payload,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::int::test_bits::pack;
    use std::net::Ipv4Addr;

    fn ipv4(proto: u8, ttl: u8, dscp: u8, total_len: u16) -> Vec<u8> {
        pack(&[
            (4, 4),
            (5, 4),
            (u64::from(dscp), 6),
            (0, 2),
            (u64::from(total_len), 16),
            (0, 32),
            (u64::from(ttl), 8),
            (u64::from(proto), 8),
            (0, 16),
            (0x0A00_0001, 32),
            (0x0A00_0102, 32),
        ])
    }

    #[test]
    fn truncated_tcp_behind_ethernet_and_vlan() {
        let mut f = pack(&[
            (0x0200_0000_0001, 48),
            (0x0200_0000_0002, 48),
            (0x8100, 16),
            (10, 16),
            (0x0800, 16),
        ]);
        // The IPv4 header says 1500 bytes; 4 bytes of TCP are present.
        f.extend(ipv4(TCP, 62, 0, 1500));
        f.extend(pack(&[(40000, 16), (443, 16)]));
        let r = InnerRepr::parse(Start::Ethernet, &f, IntDetect::default()).unwrap();
        assert_eq!(
            r.flow,
            FlowKey {
                src: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
                dst: IpAddr::V4(Ipv4Addr::new(10, 0, 1, 2)),
                protocol: TCP,
                src_port: 40000,
                dst_port: 443
            }
        );
        assert_eq!(r.ttl, 62);
        assert!(r.int_md.is_none());
    }

    #[test]
    fn int_over_udp_gives_the_original_flow() {
        // The report spec's example: IPv4, UDP to the INT port, shim with IP proto 6, 2 hops, then TCP.
        let mut p = ipv4(UDP, 60, 0, 100);
        p.extend(pack(&[(5555, 16), (6000, 16), (80, 16), (0, 16)]));
        p.extend(pack(&[
            (1, 4),
            (2, 2),
            (0, 2),
            (5, 8),
            (0, 8),
            (6, 8),
            (2, 4),
            (0, 15),
            (1, 5),
            (6, 8),
            (0x8000, 16),
            (0, 48),
            (22, 32),
            (11, 32),
        ]));
        p.extend(pack(&[(1234, 16), (80, 16)]));
        let detect = IntDetect {
            udp_port: Some(6000),
            dscp: None,
        };
        let r = InnerRepr::parse(Start::Ip, &p, detect).unwrap();
        assert_eq!(
            (r.flow.protocol, r.flow.src_port, r.flow.dst_port),
            (TCP, 1234, 80)
        );
        let md = r.int_md.unwrap();
        let nodes: Vec<_> = md.hops().map(|h| h.node_id.unwrap()).collect();
        assert_eq!(nodes, vec![22, 11]);
        // Without the INT port configured it is an ordinary UDP flow.
        let r = InnerRepr::parse(Start::Ip, &p, IntDetect::default()).unwrap();
        assert_eq!((r.flow.protocol, r.flow.dst_port), (UDP, 6000));
        assert!(r.int_md.is_none());
    }

    #[test]
    fn int_after_tcp_marked_by_dscp() {
        let mut p = ipv4(TCP, 64, 0x17, 200);
        // A 20-byte TCP header (data offset 5), then the shim (NPT 0) and one hop with a node id.
        p.extend(pack(&[
            (1, 16),
            (2, 16),
            (0, 64),
            (5, 4),
            (0, 12),
            (0, 32),
            (0, 16),
        ]));
        p.extend(pack(&[
            (1, 4),
            (0, 2),
            (0, 2),
            (4, 8),
            (0, 16),
            (2, 4),
            (0, 15),
            (1, 5),
            (7, 8),
            (0x8000, 16),
            (0, 48),
            (99, 32),
        ]));
        let detect = IntDetect {
            udp_port: None,
            dscp: Some((0x01, 0x01)),
        };
        let r = InnerRepr::parse(Start::Ip, &p, detect).unwrap();
        assert_eq!((r.flow.src_port, r.flow.dst_port), (1, 2));
        assert_eq!(r.int_md.unwrap().hops().next().unwrap().node_id, Some(99));
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(InnerRepr::parse(Start::Ip, &[0x45, 0, 0], IntDetect::default()).is_err());
        assert!(InnerRepr::parse(Start::Ethernet, &[0; 10], IntDetect::default()).is_err());
        // TCP with fewer than 4 bytes of header: no ports.
        let mut p = ipv4(TCP, 64, 0, 60);
        p.extend([0, 1]);
        assert!(InnerRepr::parse(Start::Ip, &p, IntDetect::default()).is_err());
    }
}

#[cfg(test)]
mod fast_path {
    use super::*;
    use proptest::prelude::*;

    /// An Ethernet/IPv4 packet with `ihl`, `total_len`, `proto`, options and payload as given, then
    /// mutated at `flips` (offset, xor) and cut to `cut` bytes: every field the fast path reads or checks.
    fn packet(
        ethertype: u16,
        first: u8,
        total_len: u16,
        proto: u8,
        body: &[u8],
        flips: &[(usize, u8)],
        cut: usize,
    ) -> Vec<u8> {
        let mut p = vec![2, 0, 0, 0, 0, 0xB, 2, 0, 0, 0, 0, 0xA];
        p.extend_from_slice(&ethertype.to_be_bytes());
        p.extend_from_slice(&[first, 0xB8]);
        p.extend_from_slice(&total_len.to_be_bytes());
        p.extend_from_slice(&[0, 0, 0x40, 0, 61, proto, 0, 0, 10, 1, 2, 3, 10, 4, 5, 6]);
        p.extend_from_slice(body);
        for &(at, x) in flips {
            if let Some(b) = p.get_mut(at % 64) {
                *b ^= x;
            }
        }
        p.truncate(cut);
        p
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        /// Wherever the fast path answers, etherparse answers the same; and parse() as a whole equals
        /// the etherparse-only parse, errors included.
        #[test]
        fn fast_path_agrees_with_etherparse(
            ethertype in prop_oneof![Just(0x0800u16), Just(0x86DD), Just(0x8100), any::<u16>()],
            first in prop_oneof![Just(0x45u8), Just(0x46), Just(0x4F), Just(0x44), any::<u8>()],
            total_len in prop_oneof![Just(0u16), Just(20), Just(28), Just(40), any::<u16>()],
            proto in prop_oneof![Just(6u8), Just(17), Just(51), any::<u8>()],
            body in proptest::collection::vec(any::<u8>(), 0..80),
            flips in proptest::collection::vec((0usize..64, any::<u8>()), 0..3),
            cut in 0usize..140,
            ip_start in any::<bool>(),
            udp_port in prop_oneof![Just(None), Just(Some(5000u16))],
        ) {
            let eth = packet(ethertype, first, total_len, proto, &body, &flips, cut);
            let (start, bytes) = if ip_start {
                (Start::Ip, eth.get(14..).unwrap_or(&[]))
            } else {
                (Start::Ethernet, &eth[..])
            };
            if let Some(fast) = fast_ipv4(start, bytes) {
                prop_assert_eq!(Ok(fast), sliced(start, bytes));
            }
            let detect = IntDetect { udp_port, dscp: Some((0x2E, 0x3F)) };
            let slow = sliced(start, bytes).and_then(|n| InnerRepr::from_network(n, detect));
            let whole = InnerRepr::parse(start, bytes, detect);
            prop_assert_eq!(whole.is_ok(), slow.is_ok());
            if let (Ok(a), Ok(b)) = (whole, slow) {
                prop_assert_eq!(a, b);
            }
        }
    }

    #[test]
    fn the_common_case_takes_the_fast_path() {
        let p = packet(
            0x0800,
            0x45,
            36,
            17,
            &[0x1F, 0x90, 0, 80, 0, 16, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8],
            &[],
            200,
        );
        let n = fast_ipv4(Start::Ethernet, &p).expect("fast path");
        assert_eq!((n.ttl, n.protocol, n.dscp, n.l4.len()), (61, 17, 0x2E, 16));
        // A VLAN tag, or an authentication header, goes to etherparse.
        assert!(fast_ipv4(
            Start::Ethernet,
            &packet(0x8100, 0x45, 36, 17, &[0; 16], &[], 200)
        )
        .is_none());
        assert!(fast_ipv4(
            Start::Ethernet,
            &packet(0x0800, 0x45, 36, 51, &[0; 16], &[], 200)
        )
        .is_none());
    }
}
