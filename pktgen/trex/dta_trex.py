"""TRex STL streams for the DTA workloads: the base packet from dta_workloads (byte-identical to dta-pktgen's
first frame) plus field-engine variables for the fields that change from frame to frame.

TRex's field engine has no Zipf and no SplitMix64, so frames after the first follow the same ranges (uniform
keys, fat-tree switch-ID ranges, sequential seqnums and event numbers), not the same sequence.
"""
import dta_workloads as w


def _offsets(p):
    """Offset of the sub-header in the frame."""
    return w.HEADERS + w.base_len(p)


def _vars(workload, p, add):
    """Calls add(name, lo, hi, size, op, offset) for every varying field of `workload`."""
    sub = _offsets(p)
    if p["header"] == "seq":
        add("seqnum", 0, 255, 1, "inc", w.HEADERS + 1)
    lo, hi = p["key_base"], min(p["key_base"] + max(p["keys"], 1) - 1, 0xFFFFFFFF)
    tree = w.FatTree(p["k"])
    (e0, e1), (a0, a1), (c0, c1) = tree.id_ranges()
    if workload == "keywrite":
        add("key", lo, hi, 4, "random", sub + 1)
        hops = [(e0, e1), (a0, a1), (c0, c1), (a0, a1), (e0, e1)]
        for j, (l, h) in enumerate(hops[: p["keywrite_data_len"] // 4]):
            add("hop%d" % (j + 1), l, h, 4, "random", sub + 5 + 4 * j)
    elif workload == "keyincrement":
        add("key", lo, hi, 4, "random", sub + 1)
    elif workload == "append":
        add("list", lo, hi, 4, "random", sub)
        if p["append_entry_len"] >= 4:
            add("event", 0, 0xFFFFFFFF, 4, "inc", sub + 4 + p["append_entry_len"] - 4)
    elif workload == "postcard":
        add("key", lo, hi, 4, "random", sub)
        add("hop", 1, 5, 1, "inc", sub + 4)
        add("switch", c0, e1, 4, "random", sub + 5)
    elif workload == "sketch":
        add("column", 0, max(p["sketch_columns"], 1) - 1, 2, "inc", sub + 4)
        for r in range(max(p["sketch_rows"], 1)):
            add("row%d" % r, 0, 1023, 4, "random", sub + 8 + 4 * r)
    else:
        raise ValueError("unknown workload %r" % workload)


def streams(workload, pps=1000.0, **overrides):
    """The streams of a workload. For `mix`, one stream per primitive at a third of the rate each; the first
    is the primitive of the mix's frame 0, with that frame as its base packet."""
    from trex_stl_lib.api import STLPktBuilder, STLStream, STLTXCont, STLVM

    p = w.params(**overrides)

    def stream(kind, pkt, rate):
        vm = STLVM()

        def add(name, lo, hi, size, op, offset):
            vm.var(name=name, min_value=lo, max_value=hi, size=size, op=op)
            vm.write(fv_name=name, pkt_offset=offset)

        _vars(kind, p, add)
        return STLStream(packet=STLPktBuilder(pkt=pkt, vm=vm), mode=STLTXCont(pps=rate))

    if workload != "mix":
        return [stream(workload, w.base_packet(workload, **overrides), pps)]
    first = w.base_packet("mix", **overrides)
    names = {1: "keywrite", 3: "keyincrement", 2: "append"}
    kind0 = names[bytes(first)[w.HEADERS]]
    kinds = [kind0] + [k for k in ("keywrite", "keyincrement", "append") if k != kind0]
    return [stream(k, first if i == 0 else w.base_packet(k, **overrides), pps / 3.0)
            for i, k in enumerate(kinds)]
