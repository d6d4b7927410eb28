"""INT report workloads in Python/scapy: the same frames as `dta-pktgen --workload int-v05 | int-v2`.

The INT headers are defined here from the specifications' field lists (fabric-tna's `header.p4` for v0.5,
`telemetry_report.mdk` for v2.0, `INT.mdk` for the INT-MD shim and header), not from the Rust code. Random
choices follow the order `pktgen/src/int.rs` documents on `IntGenerator`, so frame 0 (the TRex profiles'
base packet) is byte-identical to dta-pktgen's first frame; later frames vary through TRex's field engine.

No TRex import here: the profiles (dta_int_v05.py, dta_int_v2.py) import trex_stl_lib only in get_streams.
"""
from scapy.fields import BitField, ByteField, IntField, ShortField, StrLenField
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw

import dta_workloads as w

INT_PORT = 32766
INT_MD_PORT = 5000
DROP_REASONS = (71, 80, 89)
CONGESTED = 40000
INNER_PAYLOAD = 8


class FixedV05(Packet):
    """fabric-tna report_fixed_header_t (12 bytes)."""
    name = "INTFixedV05"
    fields_desc = [BitField("ver", 0, 4), BitField("nproto", 2, 4), BitField("d", 0, 1), BitField("q", 0, 1),
                   BitField("f", 0, 1), BitField("rsvd", 0, 15), BitField("hw_id", 0, 6), IntField("seq_no", 0),
                   IntField("ig_tstamp", 0)]


class CommonV05(Packet):
    """fabric-tna common_report_header_t (9 bytes): ports and queue padded to whole bytes."""
    name = "INTCommonV05"
    fields_desc = [IntField("switch_id", 0), BitField("pad1", 0, 7), BitField("ig_port", 0, 9),
                   BitField("pad2", 0, 7), BitField("eg_port", 0, 9), BitField("pad3", 0, 3),
                   BitField("queue_id", 0, 5)]


class LocalV05(Packet):
    """fabric-tna local_report_header_t (7 bytes)."""
    name = "INTLocalV05"
    fields_desc = [BitField("pad", 0, 5), BitField("queue_occupancy", 0, 19), IntField("eg_tstamp", 0)]


class DropV05(Packet):
    """fabric-tna drop_report_header_t (3 bytes)."""
    name = "INTDropV05"
    fields_desc = [ByteField("drop_reason", 0), ShortField("pad", 0)]


class GroupV2(Packet):
    """Telemetry Report v2.0 group header (8 bytes)."""
    name = "INTGroupV2"
    fields_desc = [BitField("ver", 2, 4), BitField("hw_id", 0, 6), BitField("seq_no", 0, 22), IntField("node_id", 0)]


class IndividualV2(Packet):
    """Telemetry Report v2.0 individual report header and INT main contents (12 bytes)."""
    name = "INTIndividualV2"
    fields_desc = [BitField("rep_type", 1, 4), BitField("in_type", 3, 4), ByteField("report_length", 0),
                   ByteField("md_length", 0), BitField("d", 0, 1), BitField("q", 0, 1), BitField("f", 0, 1),
                   BitField("i", 0, 1), BitField("rsvd", 0, 4), ShortField("rep_md_bits", 0),
                   ShortField("domain_specific_id", 0), ShortField("ds_md_bits", 0), ShortField("ds_md_status", 0)]


class ShimMD(Packet):
    """INT 2.1 shim for INT over UDP (4 bytes); NPT 1 carries the original UDP destination port."""
    name = "INTShim"
    fields_desc = [BitField("type", 1, 4), BitField("npt", 1, 2), BitField("r", 0, 2), ByteField("length", 0),
                   ShortField("udp_dport", 0)]


class HeaderMD(Packet):
    """INT 2.1 INT-MD header (12 bytes)."""
    name = "INTMDHeader"
    fields_desc = [BitField("ver", 2, 4), BitField("d", 0, 1), BitField("e", 0, 1), BitField("m", 0, 1),
                   BitField("r", 0, 12), BitField("hop_ml", 0, 5), ByteField("remaining_hop_count", 0),
                   ShortField("instructions", 0), ShortField("domain_specific_id", 0),
                   ShortField("ds_instruction", 0), ShortField("ds_flags", 0)]


class HopMD(Packet):
    """One hop's metadata for instructions node id, hop latency and queue (bits 0, 2, 3)."""
    name = "INTHop"
    fields_desc = [IntField("node_id", 0), IntField("hop_latency", 0), ByteField("queue_id", 0),
                   BitField("occupancy", 0, 24)]


DEFAULTS = dict(seed=1, keys=1_000_000, key_base=0, dist="uniform", zipf_s=1.1, k=8, drop_per_mille=0,
                src_mac="02:00:00:00:00:09", dst_mac="02:00:00:00:00:01", src_ip="10.0.0.9",
                dst_ip="198.18.0.2", src_port=40041)


def params(**overrides):
    return w.params(DEFAULTS, **overrides)


def flow_tuple(flow):
    """A flow's 5-tuple from its index, as pktgen/src/int.rs derives it."""
    f = flow.to_bytes(4, "big")
    return ("10.%d.%d.%d" % (f[1], f[2], f[3]), "10.200.%d.%d" % (f[3], f[2]), 10000 + flow % 50000,
            443 if flow % 2 == 0 else 80)


def inner(flow, ttl, dport, payload):
    src, dst, sport, _ = flow_tuple(flow)
    return (Ether(src="02:00:00:00:00:0a", dst="02:00:00:00:00:0b") /
            IP(src=src, dst=dst, flags="DF", ttl=ttl, id=0, tos=0) / UDP(sport=sport, dport=dport, chksum=0) /
            Raw(payload))


def envelope(p):
    return (Ether(src=p["src_mac"], dst=p["dst_mac"]) /
            IP(src=p["src_ip"], dst=p["dst_ip"], flags="DF", ttl=64, id=0, tos=0) /
            UDP(sport=p["src_port"], dport=INT_PORT, chksum=0))


def first_frame(kind, **overrides):
    """Frame 0 of the workload, drawing as IntGenerator does."""
    p = params(**overrides)
    rng, dist, tree = w.SplitMix64(p["seed"]), w.KeyDist(p), w.FatTree(p["k"])
    flow = dist.sample(rng)
    path = tree.path(rng)
    if kind == "int_v05":
        occupancy = rng.below(50000)
        dropped = rng.below(1000) < p["drop_per_mille"]
        fixed = FixedV05(nproto=1 if dropped else 2, d=int(dropped), q=int(not dropped and occupancy > CONGESTED),
                         f=int(not dropped), hw_id=2 if dropped else 1, seq_no=1, ig_tstamp=0)
        common = CommonV05(switch_id=path[0], ig_port=1, eg_port=2, queue_id=0)
        if dropped:
            body = DropV05(drop_reason=DROP_REASONS[rng.below(len(DROP_REASONS))])
        else:
            body = LocalV05(queue_occupancy=occupancy, eg_tstamp=100 + occupancy // 100)
        pkt = inner(flow, 63, flow_tuple(flow)[3], bytes(INNER_PAYLOAD))
        return envelope(p) / fixed / common / body / Raw(bytes(pkt))
    if kind == "int_v2":
        hops = []
        for h in range(5):
            occupancy = rng.below(50000)
            hops.append((path[h], 200 + occupancy // 50, occupancy))
        stack = b"".join(bytes(HopMD(node_id=n, hop_latency=l, queue_id=1, occupancy=o)) for n, l, o in reversed(hops[:4]))
        md = (ShimMD(length=3 + 3 * 4, udp_dport=flow_tuple(flow)[3]) /
              HeaderMD(hop_ml=3, remaining_hop_count=4, instructions=0xB000))
        pkt = bytes(inner(flow, 59, INT_MD_PORT, bytes(md) + stack + bytes(INNER_PAYLOAD)))
        pkt += bytes(-len(pkt) % 4)
        sink, latency, occupancy = hops[4]
        meta = latency.to_bytes(4, "big") + ((2 << 24) | occupancy).to_bytes(4, "big")
        ind = IndividualV2(report_length=(8 + len(meta) + len(pkt)) // 4, md_length=len(meta) // 4,
                           q=int(occupancy > CONGESTED), f=1, rep_md_bits=0x3000)
        return envelope(p) / GroupV2(hw_id=5, seq_no=1, node_id=sink) / ind / Raw(meta + pkt)
    raise ValueError("unknown INT workload %r" % kind)


HEADERS = w.HEADERS


def streams(kind, pps=1000.0, **overrides):
    """One stream: frame 0 as the base packet, and field-engine variables for what changes per frame (the
    report's sequence number, the switch, the flow's source address). TRex has no SplitMix64: later frames
    follow the same ranges, not the same sequence."""
    from trex_stl_lib.api import STLPktBuilder, STLStream, STLTXCont, STLVM

    p = params(**overrides)
    tree = w.FatTree(p["k"])
    (_, e1), _, (c0, _) = tree.id_ranges()
    vm = STLVM()

    def add(name, lo, hi, size, op, offset):
        vm.var(name=name, min_value=lo, max_value=hi, size=size, op=op)
        vm.write(fv_name=name, pkt_offset=offset)

    if kind == "int_v05":
        add("seq", 0, 0xFFFFFFFF, 4, "inc", HEADERS + 4)
        add("switch", c0, e1, 4, "random", HEADERS + 12)
        # The reported packet's source address: 12 + 9 + 7 bytes of report headers, then Ethernet, IPv4 at 12.
        add("flow", 0, 0xFFFFFF, 3, "random", HEADERS + 28 + 14 + 13)
    else:
        # The low 16 bits of the 22-bit sequence number, the sink's node id.
        add("seq", 0, 0xFFFF, 2, "inc", HEADERS + 2)
        add("node", c0, e1, 4, "random", HEADERS + 4)
        add("flow", 0, 0xFFFFFF, 3, "random", HEADERS + 8 + 12 + 8 + 14 + 13)
    return [STLStream(packet=STLPktBuilder(pkt=first_frame(kind, **overrides), vm=vm), mode=STLTXCont(pps=pps))]
