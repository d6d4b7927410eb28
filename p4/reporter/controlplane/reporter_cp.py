"""Control plane for the dta P4 reporter (p4/reporter/dta_reporter.p4).

Plain functions compute the table entries and mirror sessions (tested in p4/tests without a switch);
`load(bfrt, entries)` writes them with bfrt_python inside `bfshell -b`. bfrt is never imported here.
"""
import ipaddress

DTA_OP_KEYWRITE = 0x01
DTA_OP_APPEND = 0x02
DTA_OP_KEYINCREMENT = 0x03
DTA_OP_POSTCARD = 0x04
RANDOM_MAX = 0xFFFF
QDEPTH_MAX = (1 << 19) - 1
# a mirrored copy keeps Ethernet + IPv4 (+ the 24-byte INT shim); the egress writes the report after it
TRUNC_NO_SHIM = 14 + 20
TRUNC_SHIM = 14 + 20 + 24


def probability_to_count(p):
    """How many of the 65536 random values sample with probability p (0..1)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"probability {p} outside [0, 1]")
    return round(p * (RANDOM_MAX + 1))


def sample_ranges(kw_probability, pc_probability):
    """Entries of tbl_sample (range match on a 16-bit random number): [0, a) samples both kinds,
    [a, b) only the more likely one, where a and b are the two counts."""
    kw, pc = probability_to_count(kw_probability), probability_to_count(pc_probability)
    lo, hi = min(kw, pc), max(kw, pc)
    out = []
    if lo > 0:
        out.append({"key": {"ig_md.rand_val": (0, lo - 1)}, "action": "set_sample", "data": {"kw": 1, "pc": 1}})
    if hi > lo:
        out.append({"key": {"ig_md.rand_val": (lo, hi - 1)}, "action": "set_sample",
                    "data": {"kw": int(kw > pc), "pc": int(pc > kw)}})
    return out


def qdepth_range(threshold):
    """tbl_event_config range: queue depths strictly above the threshold (cells)."""
    if not 0 <= threshold < QDEPTH_MAX:
        raise ValueError(f"queue depth threshold {threshold} outside [0, {QDEPTH_MAX})")
    return (threshold + 1, QDEPTH_MAX)


def mirror_sessions(collector_idx, port, base=1):
    """Two sessions per collector, both to the port towards it: without and with the INT shim."""
    sid = base + 2 * collector_idx
    return [{"sid": sid, "port": port, "max_pkt_len": TRUNC_NO_SHIM},
            {"sid": sid + 1, "port": port, "max_pkt_len": TRUNC_SHIM}]


def compute_entries(cfg):
    """cfg: {"switch_id", "switch_mac", "switch_ip", "ki_threshold", "kw_probability", "pc_probability",
    "collectors": [{"ip", "next_hop_mac", "port", "udp_src_port", "redundancy"}],
    "report_collector": {opcode name: collector index}, "routes": [{"prefix", "port", "sink"}],
    "host_ports": [...], "queue_events": [{"port", "threshold", "collector", "list_id"}]}"""
    if not 1 <= cfg["ki_threshold"] <= 0x7FFF:
        raise ValueError("ki_threshold must be 1..32767 (the stateful ALU compares signed 16-bit)")
    out = {"tbl_switch_config": {"action": "set_thresholds",
                                 "data": {"switch_id": cfg["switch_id"], "ki_threshold_": cfg["ki_threshold"]}},
           "tbl_sample": sample_ranges(cfg["kw_probability"], cfg["pc_probability"]),
           "tbl_forward": [], "tbl_port_role": [], "tbl_collector": [], "tbl_collector_info": [],
           "tbl_event_config": [], "mirror_sessions": []}
    for r in cfg["routes"]:
        net = ipaddress.IPv4Network(r["prefix"])
        out["tbl_forward"].append({"key": {"hdr.ipv4.dst_addr": (int(net.network_address), net.prefixlen)},
                                   "action": "forward", "data": {"port": r["port"], "is_sink": int(r["sink"])}})
    for p in cfg.get("host_ports", []):
        out["tbl_port_role"].append({"key": {"ig_intr_md.ingress_port": p}, "action": "set_port_role",
                                     "data": {"is_source": 1}})
    for idx, c in enumerate(cfg["collectors"]):
        if not 1 <= c.get("redundancy", 1) <= 8:
            raise ValueError("redundancy must be 1..8")
        out["tbl_collector_info"].append({
            "key": {"hdr.mirror_md.collector_idx": idx}, "action": "set_collector_info",
            "data": {"switch_mac": int(cfg["switch_mac"].replace(":", ""), 16),
                     "next_hop_mac": int(c["next_hop_mac"].replace(":", ""), 16),
                     "switch_ip": int(ipaddress.IPv4Address(cfg["switch_ip"])),
                     "collector_ip": int(ipaddress.IPv4Address(c["ip"])),
                     "udp_src_port": c["udp_src_port"], "redundancy_": c.get("redundancy", 1)}})
        out["mirror_sessions"] += mirror_sessions(idx, c["port"])
    names = {"keywrite": DTA_OP_KEYWRITE, "keyincrement": DTA_OP_KEYINCREMENT, "postcard": DTA_OP_POSTCARD}
    for name, cidx in sorted(cfg["report_collector"].items()):
        s = mirror_sessions(cidx, cfg["collectors"][cidx]["port"])
        out["tbl_collector"].append({"key": {"ig_md.report_type": names[name]}, "action": "set_collector",
                                     "data": {"collector_idx": cidx, "session_no_shim": s[0]["sid"],
                                              "session_shim": s[1]["sid"]}})
    for q in cfg.get("queue_events", []):
        s = mirror_sessions(q["collector"], cfg["collectors"][q["collector"]]["port"])
        out["tbl_event_config"].append({
            "key": {"eg_intr_md.egress_port": q["port"], "eg_intr_md.enq_qdepth": qdepth_range(q["threshold"])},
            "action": "over_threshold",
            "data": {"collector_idx": q["collector"], "list_id": q["list_id"],
                     "session_no_shim_": s[0]["sid"], "session_shim_": s[1]["sid"]}})
    return out


def load(bfrt, entries, pipe="pipe"):  # pragma: no cover - needs a switch
    p4 = getattr(bfrt.dta_reporter, pipe)
    ing, eg = p4.RepIngress, p4.RepEgress
    ing.report_select.tbl_switch_config.set_default_with_set_thresholds(**entries["tbl_switch_config"]["data"])
    targets = {"tbl_sample": ing.report_select.tbl_sample, "tbl_forward": ing.forward.tbl_forward,
               "tbl_port_role": ing.forward.tbl_port_role, "tbl_collector": ing.report_select.tbl_collector,
               "tbl_collector_info": eg.report_build.tbl_collector_info,
               "tbl_event_config": eg.queue_event.tbl_event_config}
    for name, table in targets.items():
        for e in entries[name]:
            args = {}
            for k, v in e["key"].items():
                f = k.split(".")[-1]
                if isinstance(v, tuple) and name == "tbl_forward":
                    args[f], args[f + "_p_length"] = v
                elif isinstance(v, tuple):
                    args[f + "_start"], args[f + "_end"] = v
                else:
                    args[f] = v
            args.update(e["data"])
            getattr(table, "add_with_" + e["action"])(**args)
    for s in entries["mirror_sessions"]:
        bfrt.mirror.cfg.add_with_normal(sid=s["sid"], session_enable=True, direction="BOTH", ucast_egress_port=s["port"],
                                        ucast_egress_port_valid=True, max_pkt_len=s["max_pkt_len"])
    bfrt.complete_operations()
