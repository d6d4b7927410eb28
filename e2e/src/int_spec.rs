//! An INT report encoder written from the specifications' field lists, independent of dta-protocol's INT
//! code: every header is packed bit field by bit field as the specification draws it, and inner packets are
//! built with etherparse. The translator's INT tests and the end-to-end INT workload use it, so what the
//! translator parses was not produced by its own emitter.
//!
//! * v0.5 as `stratum/fabric-tna` emits it (`p4src/shared/header.p4`): `report_fixed_header_t` (ver 4,
//!   nproto 4, d q f 3, rsvd 15, hw_id 6, seq_no 32, ig_tstamp 32), `common_report_header_t` (switch_id 32,
//!   pad 7 + ig_port 9, pad 7 + eg_port 9, pad 3 + queue_id 5), then `local_report_header_t` (pad 5 +
//!   queue_occupancy 19, eg_tstamp 32) or `drop_report_header_t` (drop_reason 8, pad 16).
//! * v2.0 (`telemetry_report.mdk`): group header (ver 4, hw_id 6, seq 22, node_id 32), individual report
//!   header (RepType 4, InType 4, Report Length 8, MD Length 8, D Q F I, rsvd 4), INT main contents
//!   (RepMdBits 16, Domain Specific ID 16, DSMdBits 16, DSMdStatus 16), metadata, inner contents.
//! * INT 2.1 (`INT.mdk`) over UDP: shim (type 4, NPT 2, rsvd 2, length 8 = words after the shim, original
//!   destination port 16 for NPT 1), MD header (ver 4, D E M 3, rsvd 12, HopML 5, remaining hop count 8,
//!   instruction bitmap 16, domain specific id 16, DS instruction 16, DS flags 16), stack newest first.
//! * ARP (RFC 826) for an inner packet that is not IP: hardware type 16, protocol type 16, hardware and
//!   protocol address lengths 8 + 8, opcode 16, sender MAC 48, sender IP 32, target MAC 48, target IP 32.

use etherparse::PacketBuilder;

/// Packs `(value, bits)` fields, most significant bit first, as the specifications draw them.
///
/// # Panics
/// When a value does not fit its width or the fields are not whole bytes (a bug in the caller's table).
pub fn pack(fields: &[(u64, u32)]) -> Vec<u8> {
    let (mut out, mut acc, mut n) = (Vec::new(), 0u128, 0u32);
    for &(v, w) in fields {
        assert!(w == 64 || v < 1 << w, "{v:#x} does not fit {w} bits");
        acc = (acc << w) | u128::from(v);
        n += w;
        while n >= 8 {
            n -= 8;
            out.push((acc >> n) as u8);
            acc &= (1 << n) - 1;
        }
    }
    assert_eq!(n, 0, "fields are not whole bytes");
    out
}

/// A flow's IPv4/UDP addressing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flow {
    /// Source address.
    pub src: [u8; 4],
    /// Destination address.
    pub dst: [u8; 4],
    /// UDP source port.
    pub sport: u16,
    /// UDP destination port.
    pub dport: u16,
}

/// The flow's packet as a switch mirrors it: Ethernet/IPv4/UDP with TTL `ttl` and 8 payload bytes.
pub fn inner(f: &Flow, ttl: u8) -> Vec<u8> {
    let mut out = Vec::new();
    PacketBuilder::ethernet2([2, 0, 0, 0, 0, 0xA], [2, 0, 0, 0, 0, 0xB])
        .ipv4(f.src, f.dst, ttl)
        .udp(f.sport, f.dport)
        .write(&mut out, &[0xEE; 8])
        .expect("a fixed-size packet builds");
    out
}

/// What one switch says in a v0.5 switch-local report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Local {
    /// Switch id.
    pub switch: u32,
    /// Hardware id (6 bits).
    pub hw_id: u8,
    /// Sequence number.
    pub seq: u32,
    /// Q flag.
    pub congested: bool,
    /// Ingress timestamp.
    pub ig_ts: u32,
    /// Egress timestamp.
    pub eg_ts: u32,
    /// Queue id (5 bits) and occupancy (19 bits).
    pub queue: (u8, u32),
    /// Ingress port (9 bits).
    pub ig_port: u16,
    /// Egress port (9 bits).
    pub eg_port: u16,
}

/// fabric-tna's v0.5 switch-local report (next protocol 2) carrying `inner`.
pub fn v05_local(l: &Local, inner: &[u8]) -> Vec<u8> {
    let mut p = pack(&[
        (0, 4), // ver
        (2, 4), // nproto: switch-local
        (0, 1), // d
        (u64::from(l.congested), 1),
        (1, 1), // f
        (0, 15),
        (u64::from(l.hw_id), 6),
        (u64::from(l.seq), 32),
        (u64::from(l.ig_ts), 32),
        (u64::from(l.switch), 32),
        (0, 7),
        (u64::from(l.ig_port), 9),
        (0, 7),
        (u64::from(l.eg_port), 9),
        (0, 3),
        (u64::from(l.queue.0), 5),
        (0, 5),
        (u64::from(l.queue.1), 19),
        (u64::from(l.eg_ts), 32),
    ]);
    p.extend_from_slice(inner);
    p
}

/// What one switch says in a v0.5 drop report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Drop {
    /// Switch id.
    pub switch: u32,
    /// Hardware id (6 bits).
    pub hw_id: u8,
    /// Sequence number.
    pub seq: u32,
    /// Ingress timestamp.
    pub ig_ts: u32,
    /// Drop reason.
    pub reason: u8,
    /// Queue id (5 bits).
    pub queue: u8,
    /// Ingress port (9 bits).
    pub ig_port: u16,
    /// Egress port (9 bits).
    pub eg_port: u16,
}

/// fabric-tna's v0.5 drop report (next protocol 1) carrying `inner`.
pub fn v05_drop(d: &Drop, inner: &[u8]) -> Vec<u8> {
    let mut p = pack(&[
        (0, 4),
        (1, 4), // nproto: drop
        (1, 1), // d
        (0, 1),
        (0, 1),
        (0, 15),
        (u64::from(d.hw_id), 6),
        (u64::from(d.seq), 32),
        (u64::from(d.ig_ts), 32),
        (u64::from(d.switch), 32),
        (0, 7),
        (u64::from(d.ig_port), 9),
        (0, 7),
        (u64::from(d.eg_port), 9),
        (0, 3),
        (u64::from(d.queue), 5),
        (u64::from(d.reason), 8),
        (0, 16),
    ]);
    p.extend_from_slice(inner);
    p
}

/// A switch's ARP request for `target` from `sender`, as it would mirror it: Ethernet (type 0x0806) and
/// RFC 826's fields, no IP header anywhere.
pub fn arp(sender: [u8; 4], target: [u8; 4]) -> Vec<u8> {
    let ip = |a: [u8; 4]| u64::from(u32::from_be_bytes(a));
    pack(&[
        (0xFFFF_FFFF_FFFF, 48), // destination: broadcast
        (0x0200_0000_000A, 48), // source
        (0x0806, 16),           // EtherType: ARP
        (1, 16),                // hardware type: Ethernet
        (0x0800, 16),           // protocol type: IPv4
        (6, 8),
        (4, 8),
        (1, 16), // request
        (0x0200_0000_000A, 48),
        (ip(sender), 32),
        (0, 48),
        (ip(target), 32),
    ])
}

/// One hop of an INT-MD stack: node id, hop latency, queue id and occupancy (instruction bits 0, 2, 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MdHop {
    /// Node id.
    pub node: u32,
    /// Hop latency.
    pub latency: u32,
    /// Queue id and 24-bit occupancy.
    pub queue: (u8, u32),
}

/// The flow's packet carrying an INT 2.1 stack over UDP (shim NPT 1: the flow's own destination port in
/// the shim, `int_port` in the UDP header), `hops` oldest first (the stack holds them newest first).
pub fn int_md_packet(f: &Flow, int_port: u16, ttl: u8, hops: &[MdHop]) -> Vec<u8> {
    int_md_packet_with(f, int_port, ttl, hops, &[])
}

/// [`int_md_packet`] with the flow's own UDP payload, `payload`, after the stack (whatever a tenant
/// sends, report-shaped bytes included).
pub fn int_md_packet_with(
    f: &Flow,
    int_port: u16,
    ttl: u8,
    hops: &[MdHop],
    payload: &[u8],
) -> Vec<u8> {
    let per_hop = 3u64;
    let mut md = pack(&[
        (1, 4), // shim type: INT-MD
        (1, 2), // NPT 1
        (0, 2),
        (3 + per_hop * hops.len() as u64, 8), // words after the shim
        (u64::from(f.dport), 16),
        (2, 4), // MD header version 2
        (0, 3),
        (0, 12),
        (per_hop, 5), // HopML
        (8u64.saturating_sub(hops.len() as u64), 8),
        (0b1011 << 12, 16), // node id, hop latency, queue
        (0, 16),
        (0, 16),
        (0, 16),
    ]);
    for h in hops.iter().rev() {
        md.extend(pack(&[
            (u64::from(h.node), 32),
            (u64::from(h.latency), 32),
            (u64::from(h.queue.0), 8),
            (u64::from(h.queue.1), 24),
        ]));
    }
    md.extend_from_slice(payload);
    let mut out = Vec::new();
    PacketBuilder::ethernet2([2, 0, 0, 0, 0, 0xA], [2, 0, 0, 0, 0, 0xB])
        .ipv4(f.src, f.dst, ttl)
        .udp(f.sport, int_port)
        .write(&mut out, &md)
        .expect("a bounded packet builds");
    out
}

/// One v2.0 individual INT report: RepMdBits, the metadata they select (already laid out), the D and Q
/// flags, and the inner Ethernet frame (padded to whole words here).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Individual {
    /// RepMdBits.
    pub bits: u16,
    /// The metadata bytes.
    pub md: Vec<u8>,
    /// D flag.
    pub dropped: bool,
    /// Q flag.
    pub congested: bool,
    /// The inner frame.
    pub inner: Vec<u8>,
}

/// The individual report header's type and length fields where they are not an INT report's own:
/// another RepType (2 is IOAM, 3-15 reserved), another InType (6-15 reserved), or a Report Length other
/// than the words present (0xFF: "to the end of the UDP payload").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// RepType (4 bits).
    pub rep_type: u8,
    /// InType (4 bits).
    pub in_type: u8,
    /// Report Length as written; `None`: the words that follow.
    pub report_length: Option<u8>,
}

impl Default for Header {
    /// An INT report of an Ethernet frame, its length the words that follow.
    fn default() -> Self {
        Header {
            rep_type: 1,
            in_type: 3,
            report_length: None,
        }
    }
}

/// One v2.0 individual report of `r` with header fields `h`: the first word, for RepType 1 the INT main
/// contents and metadata (for any other RepType, `r.md` as uninterpreted main contents), then the inner
/// frame padded to whole words.
pub fn v2_individual(r: &Individual, h: Header) -> Vec<u8> {
    let mut inner = r.inner.clone();
    inner.resize(inner.len().div_ceil(4) * 4, 0);
    let main = if h.rep_type == 1 { 8 } else { 0 };
    let words = (main + r.md.len() + inner.len()) / 4;
    let mut p = pack(&[
        (u64::from(h.rep_type), 4),
        (u64::from(h.in_type), 4),
        (u64::from(h.report_length.unwrap_or(words as u8)), 8),
        ((r.md.len() / 4) as u64, 8),
        (u64::from(r.dropped), 1),
        (u64::from(r.congested), 1),
        (1, 1),
        (0, 1),
        (0, 4),
    ]);
    assert!(
        h.report_length.is_some() || words < 0xFF,
        "{words} words need Report Length 0xFF"
    );
    if h.rep_type == 1 {
        p.extend(pack(&[(u64::from(r.bits), 16), (0, 16), (0, 16), (0, 16)]));
    }
    p.extend_from_slice(&r.md);
    p.extend_from_slice(&inner);
    p
}

/// A v2.0 packet: the group header of `node` (hardware id 5) with sequence number `seq`, then the
/// individual reports `reports` as [`v2_individual`] wrote them.
pub fn v2_group_of(node: u32, seq: u32, reports: &[Vec<u8>]) -> Vec<u8> {
    let mut p = pack(&[(2, 4), (5, 6), (u64::from(seq), 22), (u64::from(node), 32)]);
    for r in reports {
        p.extend_from_slice(r);
    }
    p
}

/// A v2.0 packet of INT reports of Ethernet frames: the group header of `node` (hardware id 5) with
/// sequence number `seq`, then `reports`.
pub fn v2_group(node: u32, seq: u32, reports: &[Individual]) -> Vec<u8> {
    let r: Vec<Vec<u8>> = reports
        .iter()
        .map(|r| v2_individual(r, Header::default()))
        .collect();
    v2_group_of(node, seq, &r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packs_msb_first() {
        assert_eq!(
            pack(&[(1, 4), (2, 4), (0xABC, 12), (0xD, 4)]),
            [0x12, 0xAB, 0xCD]
        );
    }

    /// The specification's first example's individual report (RepType 1, InType 4, Report Length 14,
    /// MD Length 2, F) has this first word.
    #[test]
    fn individual_header_word() {
        let r = Individual {
            bits: 0b0101 << 12,
            md: vec![0; 8],
            inner: vec![0; 40],
            ..Individual::default()
        };
        let h = Header {
            in_type: 4,
            ..Header::default()
        };
        assert_eq!(v2_individual(&r, h)[..4], [0x14, 14, 2, 0x20]);
        let ioam = Header {
            rep_type: 2,
            in_type: 4,
            report_length: Some(0xFF),
        };
        assert_eq!(v2_individual(&r, ioam)[..4], [0x24, 0xFF, 2, 0x20]);
    }

    /// ARP over Ethernet is 14 + 28 bytes, EtherType 0x0806.
    #[test]
    fn arp_is_42_bytes() {
        let a = arp([10, 0, 0, 1], [10, 0, 0, 2]);
        assert_eq!((a.len(), &a[12..14]), (42, &[0x08, 0x06][..]));
    }

    /// fabric-tna's fixed header is 12 bytes, common 9, local 7, drop 3 (header.p4's sizes).
    #[test]
    fn v05_sizes_match_fabric_tna() {
        assert_eq!(v05_local(&Local::default(), &[]).len(), 12 + 9 + 7);
        assert_eq!(v05_drop(&Drop::default(), &[]).len(), 12 + 9 + 3);
    }
}
