"""Control plane for the dta P4 translator (p4/translator/dta_translator.p4).

The table-entry computation is plain functions over plain data (`compute_entries`), tested without a switch
(p4/tests). `load(bfrt, entries)` writes them through Tofino's bfrt_python; `main()` runs inside
`bfshell -b translator_cp.py` (or `bfrt_python`) and asks the collector's control channel (DESIGN.md section
6, see channel.py) for the region metadata. bfrt is only imported inside the switch's Python.

Region kinds (must match translator/types.p4): KEYWRITE 1, APPEND 2 (entries), KEYINC 3, POSTCARD 4,
APPEND_HDR 9 (the list header).
"""
import ipaddress
import struct
import zlib

KIND_KEYWRITE = 1
KIND_APPEND = 2
KIND_KEYINC = 3
KIND_POSTCARD = 4
KIND_APPEND_HDR = 9

N_MAX = 8
APPEND_HEADER_BYTES = 64
POSTCARD_CHUNK_BYTES = 32
BTH_OP_WRITE_ONLY = 0x0A
BTH_OP_FETCH_ADD = 0x14
ROCEV2_PORT = 4791

# compile-time configuration of the P4 program (defaults of include/define.p4)
DEFAULT_BUILD = {"kw_data_bytes": 4, "append_batch": 4, "postcard_hops": 5}

# the region kinds the collector announces, as named on the control channel
CHANNEL_KINDS = {"keywrite": KIND_KEYWRITE, "keyincrement": KIND_KEYINC, "append": KIND_APPEND,
                 "postcard": KIND_POSTCARD}


# ---------------------------------------------------------------- hashing helpers (same math as the P4)
def key_le(key):
    return struct.pack("<I", key)


def slot(key, n, slots):
    """Key-Write / Key-Increment slot and Postcarding chunk: crc32(key_le || n) & (S - 1)."""
    return zlib.crc32(key_le(key) + bytes([n])) & (slots - 1)


def mac_bytes(mac):
    return bytes(int(b, 16) for b in mac.split(":"))


def mac_int(mac):
    return int.from_bytes(mac_bytes(mac), "big")


def ip_int(ip):
    return int(ipaddress.IPv4Address(ip))


# ---------------------------------------------------------------- frames and the iCRC
def tail_len(kind, build=DEFAULT_BUILD):
    """Bytes from BTH byte 8 (AckReq/PSN) to the end of the payload: what the P4 hashes per frame."""
    if kind == KIND_KEYWRITE:
        return 4 + 16 + 4 + build["kw_data_bytes"]
    if kind == KIND_KEYINC:
        return 4 + 28
    if kind == KIND_APPEND:
        return 4 + 16 + 4 * build["append_batch"]
    if kind == KIND_APPEND_HDR:
        return 4 + 16 + 8
    if kind == KIND_POSTCARD:
        return 4 + 16 + POSTCARD_CHUNK_BYTES
    raise ValueError(f"unknown region kind {kind}")


def ip_total_len(kind, build=DEFAULT_BUILD):
    # IPv4 20 + UDP 8 + BTH bytes 0..7 + tail + iCRC 4
    return 20 + 8 + 8 + tail_len(kind, build) + 4


def frame_prefix(kind, src_ip, dst_ip, udp_src_port, dest_qp, build=DEFAULT_BUILD):
    """IPv4 + UDP + BTH bytes 0..7 exactly as the P4 egress writes them (TrRdmaCraft.frame)."""
    total = ip_total_len(kind, build)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, (0 << 2) | 2, total, 0, 0x4000, 64, 17, 0,
                     ipaddress.IPv4Address(src_ip).packed, ipaddress.IPv4Address(dst_ip).packed)
    ip = ip[:10] + struct.pack("!H", ipv4_checksum(ip)) + ip[12:]
    udp = struct.pack("!HHHH", udp_src_port, ROCEV2_PORT, total - 20, 0)
    opcode = BTH_OP_FETCH_ADD if kind == KIND_KEYINC else BTH_OP_WRITE_ONLY
    # SE 0, MigReq 1, PadCnt 0, TVer 0; P_Key 0xFFFF; FECN/BECN/reserved 0; dest QP
    bth8 = struct.pack("!BBH", opcode, 0x40, 0xFFFF) + struct.pack("!I", dest_qp & 0xFFFFFF)
    return ip + udp + bth8


def ipv4_checksum(hdr):
    s = 0
    for i in range(0, len(hdr), 2):
        if i == 10:
            continue
        s += (hdr[i] << 8) | hdr[i + 1]
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def roce_icrc(ip_to_payload_end):
    """The RoCEv2 iCRC of DESIGN.md section 4 over a frame from its IPv4 header to the end of the payload
    (IPv4 without options): 8 bytes of 0xFF, then the masked headers, then the rest. Returns the CRC value;
    the wire carries it little-endian."""
    b = bytearray(ip_to_payload_end)
    b[1] = 0xFF                 # TOS
    b[8] = 0xFF                 # TTL
    b[10:12] = b"\xff\xff"      # IPv4 header checksum
    b[26:28] = b"\xff\xff"      # UDP checksum
    b[28 + 4] = 0xFF            # BTH byte 4 (FECN, BECN, reserved)
    return zlib.crc32(b"\xff" * 8 + bytes(b))


def icrc_prefix_constant(kind, src_ip, dst_ip, udp_src_port, dest_qp, build=DEFAULT_BUILD):
    """K of TrIcrc: the iCRC of the frame with its tail all zero. icrc(frame) = K ^ crc0(tail)."""
    return roce_icrc(frame_prefix(kind, src_ip, dst_ip, udp_src_port, dest_qp, build)
                     + bytes(tail_len(kind, build)))


# ---------------------------------------------------------------- multicast groups
def mcast_group_id(collector_idx, n):
    """Group for n copies (1..N_MAX) on collector collector_idx's port."""
    if not 1 <= n <= N_MAX:
        raise ValueError(f"copies {n} outside 1..{N_MAX}")
    return 1 + collector_idx * 16 + (n - 1)


def mcast_groups(collector_idx, port):
    """One group per N with N nodes on the collector port carrying RIDs 0..N-1 (egress_rid = copy index)."""
    groups = []
    for n in range(1, N_MAX + 1):
        nodes = [{"node_id": collector_idx * 256 + n * 16 + j, "rid": j, "ports": [port]} for j in range(n)]
        groups.append({"group_id": mcast_group_id(collector_idx, n), "nodes": nodes})
    return groups


# ---------------------------------------------------------------- the whole set of entries
def _pow2(x, what):
    if x <= 0 or x & (x - 1):
        raise ValueError(f"{what} {x} is not a power of two")
    return x


def compute_entries(answer, local, build=DEFAULT_BUILD):
    """All table entries, multicast groups and register values for one collector.

    answer: the collector's control-channel answer (DESIGN.md section 6), a dict:
        {"mac", "ip", "qpns": [...], "max_dest_rd_atomic", "regions": [{"kind", "id", "va", "rkey", "length",
         "geometry": {"slots" | "entries" | "chunks", "entry_size", "n_max", "batch_size", "chunk_stride",
                      "copies"}}]}
    local: this translator's side: {"collector_idx", "collector_port", "mac", "ip", "qpns": [virtual QPNs],
        "psns": [starting PSNs], "udp_src_ports": [...], "postcard_copies" (optional, default 1)}
    Region i uses QP i mod len(qpns) (Key-Increment regions first get a QP of their own when there are
    enough). Raises ValueError when the answer does not fit the compiled program.
    """
    cidx = local["collector_idx"]
    port = local["collector_port"]
    if len(answer["qpns"]) != len(local["qpns"]):
        raise ValueError("collector and translator disagree on the number of QPs")
    nqp = len(answer["qpns"])
    regions = sorted(answer["regions"], key=lambda r: (CHANNEL_KINDS[r["kind"]] != KIND_KEYINC,
                                                      CHANNEL_KINDS[r["kind"]], r.get("id", 0)))
    if answer.get("max_dest_rd_atomic", 0) <= 0 and any(r["kind"] == "keyincrement" for r in regions):
        raise ValueError("collector QPs accept no atomics (max_dest_rd_atomic = 0) but a Key-Increment "
                         "region is configured")

    out = {"tbl_collector": [], "tbl_copies": [], "tbl_list": [], "tbl_qpn": [], "tbl_region": [],
           "reg_psn": [], "mcast_groups": mcast_groups(cidx, port)}
    postcard_copies = local.get("postcard_copies", 1)
    out["tbl_collector"].append({
        "key": {"hdr.ipv4.dst_addr": ip_int(answer["ip"])},
        "action": "collector",
        "data": {"collector_idx": cidx, "port": port,
                 "mcast_append_hdr": mcast_group_id(cidx, 2),
                 "mcast_postcard": mcast_group_id(cidx, postcard_copies)}})
    n_max = max([r["geometry"].get("n_max", N_MAX) for r in regions
                 if r["kind"] in ("keywrite", "keyincrement")] or [N_MAX])
    if n_max > N_MAX:
        raise ValueError(f"n_max {n_max} above {N_MAX}")
    for n in range(1, n_max + 1):
        out["tbl_copies"].append({"key": {"ig_md.collector_idx": cidx, "ig_md.redundancy": n},
                                  "action": "copies", "data": {"grp": mcast_group_id(cidx, n)}})
    for q in range(nqp):
        out["tbl_qpn"].append({"key": {"hdr.bth.dest_qp": local["qpns"][q]}, "action": "our_qp",
                               "data": {"qp_idx": q, "collector_port": port}})
        out["reg_psn"].append({"index": q, "value": local["psns"][q] & 0xFFFFFF})

    def region_entry(kind, list_idx, qp, rkey, base, mask):
        dest_qp = answer["qpns"][qp]
        sport = local["udp_src_ports"][qp]
        return {"key": {"hdr.bridge.collector_idx": cidx, "eg_md.region_kind": kind,
                        "hdr.bridge.list_idx": list_idx},
                "action": "set_region",
                "data": {"qp_idx": qp, "dest_qp": dest_qp, "rkey": rkey, "base": base, "slot_mask": mask,
                         "icrc_k": icrc_prefix_constant(kind, local["ip"], answer["ip"], sport, dest_qp, build),
                         "udp_src_port": sport, "src_mac": mac_int(local["mac"]),
                         "dst_mac": mac_int(answer["mac"]), "src_ip": ip_int(local["ip"]),
                         "dst_ip": ip_int(answer["ip"])}}

    list_idx = 0
    for i, r in enumerate(regions):
        kind = CHANNEL_KINDS[r["kind"]]
        g = r["geometry"]
        qp = i % nqp
        if kind == KIND_KEYWRITE:
            if g["entry_size"] != 4 + build["kw_data_bytes"]:
                raise ValueError(f"Key-Write entry size {g['entry_size']} but the program writes "
                                 f"{4 + build['kw_data_bytes']}")
            slots = _pow2(g["slots"], "slot count")
            if slots * g["entry_size"] > r["length"]:
                raise ValueError("Key-Write region shorter than its slots")
            out["tbl_region"].append(region_entry(kind, 0, qp, r["rkey"], r["va"], slots - 1))
        elif kind == KIND_KEYINC:
            slots = _pow2(g["slots"], "slot count")
            if r["va"] % 8:
                raise ValueError("Key-Increment region not 8-byte aligned")
            if slots * 8 > r["length"]:
                raise ValueError("Key-Increment region shorter than its slots")
            out["tbl_region"].append(region_entry(kind, 0, qp, r["rkey"], r["va"], slots - 1))
        elif kind == KIND_POSTCARD:
            chunks = _pow2(g["chunks"], "chunk count")
            if g.get("chunk_stride", POSTCARD_CHUNK_BYTES) != POSTCARD_CHUNK_BYTES:
                raise ValueError("chunk stride must be 32")
            if g.get("hops", build["postcard_hops"]) != build["postcard_hops"]:
                raise ValueError("path length B differs from the compiled POSTCARD_HOPS")
            out["tbl_region"].append(region_entry(kind, 0, qp, r["rkey"], r["va"], chunks - 1))
        elif kind == KIND_APPEND:
            entries, batch = g["entries"], build["append_batch"]
            if g.get("entry_size", 4) != 4:
                raise ValueError("the P4 translator supports 4-byte Append entries only")
            if g.get("batch_size", batch) != batch or entries % batch:
                raise ValueError(f"Append list {r['id']}: {entries} entries, batch {g.get('batch_size')}, "
                                 f"program batch {batch}")
            if APPEND_HEADER_BYTES + 4 * entries > r["length"]:
                raise ValueError("Append region shorter than header + entries")
            out["tbl_list"].append({"key": {"ig_md.collector_idx": cidx, "hdr.dta_append.list_id": r["id"]},
                                    "action": "set_list",
                                    "data": {"list_idx": list_idx, "last_head": entries - batch}})
            out["tbl_region"].append(region_entry(KIND_APPEND, list_idx, qp, r["rkey"],
                                                  r["va"] + APPEND_HEADER_BYTES, 0))
            out["tbl_region"].append(region_entry(KIND_APPEND_HDR, list_idx, qp, r["rkey"], r["va"], 0))
            list_idx += 1
        else:
            raise ValueError(f"unsupported region kind {r['kind']}")
    return out


# ---------------------------------------------------------------- writing to the switch
def load(bfrt, entries, pipe="pipe"):  # pragma: no cover - needs a switch
    """Write `entries` (from compute_entries) with bfrt_python's object API."""
    p4 = getattr(bfrt.dta_translator, pipe)
    ing, eg = p4.TrIngress, p4.TrEgress
    tables = {
        "tbl_collector": ing.tbl_collector,
        "tbl_copies": ing.kv_copies.tbl_copies,
        "tbl_list": ing.append_batch.tbl_list,
        "tbl_qpn": ing.roce_response.tbl_qpn,
        "tbl_region": eg.craft.tbl_region,
    }
    for name, table in tables.items():
        for e in entries[name]:
            args = {k.split(".")[-1]: v for k, v in e["key"].items()}
            args.update(e["data"])
            getattr(table, "add_with_" + e["action"])(**args)
    for r in entries["reg_psn"]:
        eg.craft.reg_psn.mod(REGISTER_INDEX=r["index"], f1=r["value"])
    pre = bfrt.pre
    for g in entries["mcast_groups"]:
        for node in g["nodes"]:
            pre.node.add(MULTICAST_NODE_ID=node["node_id"], MULTICAST_RID=node["rid"],
                         MULTICAST_LAG_ID=[], DEV_PORT=node["ports"])
        pre.mgid.add(MGID=g["group_id"], MULTICAST_NODE_ID=[n["node_id"] for n in g["nodes"]],
                     MULTICAST_NODE_L1_XID_VALID=[False] * len(g["nodes"]),
                     MULTICAST_NODE_L1_XID=[0] * len(g["nodes"]))
    bfrt.complete_operations()


def main():  # pragma: no cover - needs a switch
    import json
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import channel
    cfg_path = os.environ.get("DTA_TRANSLATOR_CONFIG", "translator_p4.json")
    with open(cfg_path) as f:
        local = json.load(f)
    answer = channel.request_regions(local["collector_control"], local["token"], local)
    entries = compute_entries(answer, local, local.get("build", DEFAULT_BUILD))
    import bfrt_python_globals  # noqa: F401  (only inside bfshell; see README)


if __name__ == "__main__":  # pragma: no cover
    try:
        bfrt  # noqa: F821  (defined by bfshell -b)
    except NameError:
        raise SystemExit("run inside bfshell: bfshell -b p4/translator/controlplane/translator_cp.py")
