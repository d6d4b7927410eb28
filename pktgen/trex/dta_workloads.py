"""DTA report workloads in Python/scapy: the same frames as `dta-pktgen` for the same parameters.

The DTA headers are defined here from DESIGN.md section 2, not from the Rust code. Random choices use
SplitMix64 in the order `pktgen/src/workload.rs` documents, so frame 0 (the TRex profiles' base packet) is
byte-identical to dta-pktgen's first frame; later frames vary through TRex's field engine instead.

No TRex import here: the profiles (dta_*.py beside this file) import trex_stl_lib only inside get_streams.
"""
from scapy.fields import BitField, ByteField, FieldListField, IntField, LongField, ShortField, StrLenField
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Packet

MASK64 = (1 << 64) - 1
OPCODES = {"keywrite": 1, "append": 2, "keyincrement": 3, "postcard": 4, "sketch": 5}


class DTABaseSeq(Packet):
    name = "DTABaseSeq"
    fields_desc = [ByteField("opcode", 1), ByteField("seqnum", 0), BitField("immediate", 0, 1),
                   BitField("retransmit", 0, 1), BitField("reserved", 0, 6)]


class DTABaseCompact(Packet):
    name = "DTABaseCompact"
    fields_desc = [ByteField("opcode", 1), BitField("immediate", 0, 1), BitField("retransmit", 0, 1),
                   BitField("reserved", 0, 6)]


class DTAKeyWrite(Packet):
    name = "DTAKeyWrite"
    fields_desc = [ByteField("redundancy", 1), IntField("key", 0), StrLenField("data", b"")]


class DTAAppend(Packet):
    name = "DTAAppend"
    fields_desc = [IntField("list_id", 0), StrLenField("data", b"")]


class DTAKeyIncrement(Packet):
    name = "DTAKeyIncrement"
    fields_desc = [ByteField("redundancy", 1), IntField("key", 0), LongField("counter", 0)]


class DTAPostcard(Packet):
    name = "DTAPostcard"
    fields_desc = [IntField("key", 0), ByteField("hop", 1), IntField("data", 0)]


class DTASketch(Packet):
    name = "DTASketch"
    fields_desc = [ByteField("sketch_id", 0), ByteField("op", 0), ShortField("reporter_id", 0),
                   ShortField("column", 0), ByteField("rows", 0), ByteField("reserved", 0),
                   FieldListField("counters", [], IntField("", 0), count_from=lambda p: p.rows)]


# Defaults: dta-pktgen's command-line defaults.
DEFAULTS = dict(seed=1, keys=1_000_000, key_base=0, dist="uniform", zipf_s=1.1, redundancy=2,
                keywrite_data_len=4, append_entry_len=4, header="seq", k=8, counter=1, sketch_id=0,
                sketch_op="sum", sketch_rows=4, sketch_columns=1024, sketch_reporters=1,
                src_mac="02:00:00:00:00:09", dst_mac="02:00:00:00:00:01", src_ip="10.0.0.9",
                dst_ip="198.18.0.2", src_port=40041, dst_port=40040)


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & MASK64

    def next_u64(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def below(self, n):
        return self.next_u64() % max(n, 1)

    def unit(self):
        return (self.next_u64() >> 11) * (1.0 / (1 << 53))


class KeyDist:
    def __init__(self, p):
        self.base, self.n = p["key_base"], max(p["keys"], 1)
        self.cdf = None
        if p["dist"] == "zipf":
            import bisect
            self._bisect = bisect.bisect_right
            total, self.cdf = 0.0, []
            for r in range(self.n):
                total += 1.0 / (float(r) + 1.0) ** p["zipf_s"]
                self.cdf.append(total)

    def sample(self, rng):
        if self.cdf is None:
            r = rng.below(self.n)
        else:
            r = min(self._bisect(self.cdf, rng.unit() * self.cdf[-1]), self.n - 1)
        return (self.base + r) & 0xFFFFFFFF


class FatTree:
    """IDs 1-based: cores, then aggregation switches pod by pod, then edge switches pod by pod."""

    def __init__(self, k):
        self.k, self.h = k, k // 2
        self.cores = self.h * self.h

    def core(self, c):
        return 1 + c

    def agg(self, p, a):
        return 1 + self.cores + p * self.h + a

    def edge(self, p, e):
        return 1 + self.cores + self.k * self.h + p * self.h + e

    def id_ranges(self):
        """(edge, agg, core) ID ranges, inclusive, for the field engine."""
        return ((self.edge(0, 0), self.edge(self.k - 1, self.h - 1)),
                (self.agg(0, 0), self.agg(self.k - 1, self.h - 1)),
                (self.core(0), self.core(self.cores - 1)))

    def path(self, rng):
        ps = rng.below(self.k)
        pd = (ps + 1 + rng.below(self.k - 1)) % self.k
        es, ed, a, j = rng.below(self.h), rng.below(self.h), rng.below(self.h), rng.below(self.h)
        return [self.edge(ps, es), self.agg(ps, a), self.core(a * self.h + j), self.agg(pd, a),
                self.edge(pd, ed)]


def params(defaults=None, **overrides):
    """`defaults` (DEFAULTS unless given) with `overrides`, refusing names it does not have."""
    p = dict(DEFAULTS if defaults is None else defaults)
    unknown = set(overrides) - set(p)
    if unknown:
        raise ValueError("unknown parameters: %s" % sorted(unknown))
    p.update(overrides)
    return p


def report_layers(workload, p, rng, index, dist, tree, flow):
    """The sub-header of frame `index`, drawing from `rng` as workload.rs does. Returns (opcode name, layer)."""
    if workload == "mix":
        workload = ("keywrite", "keyincrement", "append")[rng.below(3)]
    if workload == "keywrite":
        key = dist.sample(rng)
        path = tree.path(rng)
        d = p["keywrite_data_len"]
        data = b"".join(s.to_bytes(4, "big") for s in path[: d // 4]).ljust(d, b"\0")
        return workload, DTAKeyWrite(redundancy=p["redundancy"], key=key, data=data)
    if workload == "keyincrement":
        return workload, DTAKeyIncrement(redundancy=p["redundancy"], key=dist.sample(rng), counter=p["counter"])
    if workload == "append":
        lst = dist.sample(rng)
        e = p["append_entry_len"]
        data = index.to_bytes(8, "big")[-e:].rjust(e, b"\0")
        return workload, DTAAppend(list_id=lst, data=data)
    if workload == "postcard":
        hop = index % 5
        if hop == 0:
            flow[:] = [dist.sample(rng), tree.path(rng)]
        return workload, DTAPostcard(key=flow[0], hop=hop + 1, data=flow[1][hop])
    if workload == "sketch":
        reporters = max(p["sketch_reporters"], 1)
        counters = [rng.below(1024) for _ in range(max(p["sketch_rows"], 1))]
        return workload, DTASketch(sketch_id=p["sketch_id"], op=0 if p["sketch_op"] == "sum" else 1,
                                   reporter_id=index % reporters,
                                   column=(index // reporters) % max(p["sketch_columns"], 1),
                                   rows=len(counters), counters=counters)
    raise ValueError("unknown workload %r" % workload)


def frames(workload, count, **overrides):
    """The first `count` frames of a workload, as scapy packets."""
    p = params(**overrides)
    rng, dist, tree = SplitMix64(p["seed"]), KeyDist(p), FatTree(p["k"])
    seqs, flow, out = {}, [0, [0] * 5], []
    for i in range(count):
        name, sub = report_layers(workload, p, rng, i, dist, tree, flow)
        op = OPCODES[name]
        seq = seqs.get(op, 0)
        seqs[op] = (seq + 1) % 256
        base = (DTABaseSeq(opcode=op, seqnum=seq) if p["header"] == "seq" else DTABaseCompact(opcode=op))
        out.append(Ether(src=p["src_mac"], dst=p["dst_mac"]) /
                   IP(src=p["src_ip"], dst=p["dst_ip"], flags="DF", ttl=64, id=0, tos=0) /
                   UDP(sport=p["src_port"], dport=p["dst_port"], chksum=0) / base / sub)
    return out


def base_packet(workload, **overrides):
    """Frame 0: the TRex base packet."""
    return frames(workload, 1, **overrides)[0]


def base_len(p):
    return 3 if p["header"] == "seq" else 2


HEADERS = 14 + 20 + 8
