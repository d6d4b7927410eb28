"""Control plane for the dta P4 translator (p4/translator/dta_translator.p4).

The table-entry computation is a plain function of the collector's Welcome (`compute_entries`), tested
without a switch (p4/tests). `load(bfrt, entries)` writes them through Tofino's bfrt_python; `main()` runs
inside `bfshell -b translator_cp.py` and talks to the collector's control channel (DESIGN.md section 6) with
`request_welcome`. bfrt is only imported inside the switch's Python.

Control channel (dta-protocol's protocol/src/control.rs), one JSON object per line over TCP:
  hello   {"type": "hello", "version": 1, "token": "...", "mac": [6 ints], "ip": [4 ints], "gid": [16 ints],
           "qps": [{"qpn": .., "start_psn": ..}]}
  welcome {"type": "welcome", "version": 1, "mac": [..], "ip": [..], "qps": [{"qpn": .., "peer_qpn": ..}],
           "max_dest_rd_atomic": .., "path_mtu": .., "regions": [{"id": .., "va": .., "rkey": ..,
           "geometry": {"kind": "key_write", "slots": .., "entry_size": .., "n_max": ..}}, ...]}
  geometry kinds: key_write {slots, entry_size, n_max}, key_increment {slots, n_max},
                  postcarding {chunks, hops, n_max}, append {entries, entry_size, batch_size},
                  sketch {rows, columns}
  refusal {"type": "refusal", "version": 1, "error": "..."}

Region kinds (must match translator/types.p4): KEYWRITE 1, APPEND 2, KEYINC 3, POSTCARD 4, SKETCH 5.
"""
import ipaddress
import json
import socket
import struct
import zlib

CONTROL_VERSION = 1
CONTROL_PORT = 40050

KIND_KEYWRITE = 1
KIND_APPEND = 2
KIND_KEYINC = 3
KIND_POSTCARD = 4
KIND_SKETCH = 5

N_MAX = 8              # redundancy on the wire is 1..N_MAX (DTA_N_MAX); multicast groups exist for all of them
# dta-protocol's PLACEMENT_POLYNOMIALS (protocol/src/hash.rs), normal form: copy n of a key is placed with its
# own CRC-32 polynomial (define.p4 PLACEMENT_POLY_n). Copy 0 is zlib's CRC-32.
PLACEMENT_POLYNOMIALS = (0x04C11DB7, 0xA833982B, 0xD419CC15, 0xBA0DC66B,
                         0xB39E201D, 0x725243AB, 0xD8046B21, 0x63A4CD11)
APPEND_HEADER_BYTES = 64
POSTCARD_CHUNK_BYTES = 32
BTH_OP_WRITE_ONLY = 0x0A
BTH_OP_FETCH_ADD = 0x14
ROCEV2_PORT = 4791
MAX_QPS = 256
MAX_LISTS = 1024

# compile-time configuration of the P4 program (defaults of include/define.p4; n_max = TR_N_MAX: the copies whose
# placement polynomial the egress has, 8 by default, 4 with -DTR_N_MAX=4). Profiles (define.p4): the default
# build serves Key-Write, Key-Increment and Append; postcarding = -DTR_POSTCARDING adds Postcarding; sketch =
# -DTR_SKETCH adds Sketch-Merge; append = False for -DTR_NO_APPEND (Append left out).
# sketch_rows = SKETCH_ROWS (counters per column), sketch_columns = SKETCH_COLUMNS (columns of all sketches in the
# row registers), sketch_reporter_slots = SKETCH_REPORTER_SLOTS ((sketch, reporter) slots of the order check).
DEFAULT_BUILD = {"kw_data_bytes": 4, "append_batch": 4, "postcard_hops": 5, "postcarding": False, "sketch": False,
                 "append": True, "n_max": 8, "sketch_rows": 4, "sketch_columns": 32768,
                 "sketch_reporter_slots": 4096}
POSTCARDING_BUILD = dict(DEFAULT_BUILD, postcarding=True)
SKETCH_BUILD = dict(DEFAULT_BUILD, sketch=True)
SKETCH_MAX_COLUMNS = 32768   # the order check compares columns as signed 16-bit differences


def has_append(build):
    """Append is compiled in unless built with -DTR_NO_APPEND (define.p4 TR_APPEND)."""
    return build.get("append", True)


def serves(build, kind):
    """Whether a program built with `build` writes regions of `kind` (else their reports are dropped and counted)."""
    if kind == KIND_APPEND:
        return has_append(build)
    if kind == KIND_POSTCARD:
        return bool(build.get("postcarding"))
    if kind == KIND_SKETCH:
        return bool(build.get("sketch"))
    return kind in (KIND_KEYWRITE, KIND_KEYINC)

# geometry kinds on the control channel -> region kinds of the P4 program
CHANNEL_KINDS = {"key_write": KIND_KEYWRITE, "key_increment": KIND_KEYINC, "append": KIND_APPEND,
                 "postcarding": KIND_POSTCARD, "sketch": KIND_SKETCH}


# ---------------------------------------------------------------- hashing helpers (same math as the P4)
def key_le(key):
    return struct.pack("<I", key)


def _reflect32(x):
    return int(f"{x:032b}"[::-1], 2)


def _crc_table(poly):
    rpoly = _reflect32(poly)
    table = []
    for b in range(256):
        c = b
        for _ in range(8):
            c = (c >> 1) ^ (rpoly if c & 1 else 0)
        table.append(c)
    return table


_PLACEMENT_TABLES = [_crc_table(q) for q in PLACEMENT_POLYNOMIALS]


def placement_hash(key, n):
    """dta-protocol's placement_hash: CRC-32 with copy n's polynomial PLACEMENT_POLYNOMIALS[n] (reflected in
    and out, init and xorout 0xFFFFFFFF) over key_le || n:8. Copy 0 is zlib's CRC-32. The P4 egress computes
    the same with one Hash per polynomial (TrRdmaCraft, define.p4 PLACEMENT_POLY_n)."""
    if not 0 <= n < len(PLACEMENT_POLYNOMIALS):
        raise ValueError(f"copy {n} outside 0..{len(PLACEMENT_POLYNOMIALS) - 1}")
    table = _PLACEMENT_TABLES[n]
    crc = 0xFFFFFFFF
    for byte in key_le(key) + bytes([n]):
        crc = (crc >> 8) ^ table[(crc ^ byte) & 0xFF]
    return crc ^ 0xFFFFFFFF


def slot(key, n, slots):
    """Key-Write / Key-Increment slot and Postcarding chunk of copy n: placement_hash(key, n) & (S - 1)."""
    return placement_hash(key, n) & (slots - 1)


def mac_int(mac):
    """[6 ints] (the control channel's form) -> 48-bit integer."""
    if len(mac) != 6:
        raise ValueError(f"MAC {mac} is not 6 bytes")
    return int.from_bytes(bytes(mac), "big")


def ip_int(ip):
    """[4 ints] -> 32-bit integer."""
    if len(ip) != 4:
        raise ValueError(f"IPv4 address {ip} is not 4 bytes")
    return int.from_bytes(bytes(ip), "big")


def ip_str(ip):
    return str(ipaddress.IPv4Address(bytes(ip)))


def bswap32(x):
    return int.from_bytes(x.to_bytes(4, "big"), "little")


# ---------------------------------------------------------------- frames and the iCRC
def tail_len(kind, build=DEFAULT_BUILD):
    """Bytes from BTH byte 8 (AckReq/PSN) to the end of the payload: what the P4 hashes per frame."""
    if kind == KIND_KEYWRITE:
        return 4 + 16 + 4 + build["kw_data_bytes"]
    if kind == KIND_KEYINC:
        return 4 + 28
    if kind == KIND_APPEND:
        return 4 + 16 + 4 * build["append_batch"]
    if kind == KIND_POSTCARD:
        return 4 + 16 + POSTCARD_CHUNK_BYTES
    if kind == KIND_SKETCH:
        return 4 + 16 + 4 * build["sketch_rows"]
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


def compute_entries(welcome, hello, site, build=DEFAULT_BUILD):
    """All table entries, multicast groups and register values for one collector.

    welcome: the collector's Welcome (control.rs), as decoded from JSON.
    hello: the Hello this translator sent (its MAC, IP and QPs with their starting PSNs).
    site: this switch's side: {"collector_idx", "collector_port", and optionally "qp_base" (first QP index of
        this collector in the PSN register, default 0), "list_base" (first Append list index, default 0),
        "sketch_reporters" (reporters merged per sketch, ids 0..n-1, as the Rust translator's sketch.reporters,
        default 1), "sketch_col_base" and "sketch_rep_base" (first column and first reporter slot of this
        collector's sketches in the Sketch-Merge registers, default 0),
        "udp_src_port_base" (UDP source port of QP i is base + i, default 49152, as the Rust translator)}.
    build: the program's compile-time options (keys of DEFAULT_BUILD; "n_max" is TR_N_MAX, default 8).
    Region i (Key-Increment regions first) uses the collector's QP i mod #QPs. Regions of a kind the build
    does not serve (`serves`: Postcarding without -DTR_POSTCARDING, Sketch without -DTR_SKETCH, Append with
    -DTR_NO_APPEND) are listed under "ignored": their reports are dropped and counted by the switch. Raises ValueError when the Welcome does not fit
    the compiled program.
    """
    if welcome.get("type", "welcome") != "welcome":
        raise ValueError(f"not a welcome: {welcome.get('error', welcome.get('type'))}")
    if welcome["version"] != CONTROL_VERSION:
        raise ValueError(f"control protocol version {welcome['version']}, expected {CONTROL_VERSION}")
    cidx = site["collector_idx"]
    port = site["collector_port"]
    qp_base = site.get("qp_base", 0)
    list_base = site.get("list_base", 0)
    sport_base = site.get("udp_src_port_base", 49152)
    qps, my_qps = welcome["qps"], hello["qps"]
    if len(qps) != len(my_qps) or not qps:
        raise ValueError("collector and translator disagree on the number of QPs")
    for theirs, mine in zip(qps, my_qps):
        if theirs["peer_qpn"] != mine["qpn"]:
            raise ValueError(f"collector QP {theirs['qpn']} is connected to {theirs['peer_qpn']}, "
                             f"not to our QP {mine['qpn']}")
    nqp = len(qps)
    if qp_base + nqp > MAX_QPS:
        raise ValueError(f"QP indices {qp_base}..{qp_base + nqp - 1} exceed MAX_QPS {MAX_QPS}")

    served, ignored = [], []
    for r in welcome["regions"]:
        kind = CHANNEL_KINDS.get(r["geometry"]["kind"])
        if kind is None or not serves(build, kind):
            ignored.append({"id": r["id"], "kind": r["geometry"]["kind"]})
        else:
            served.append((kind, r))
    served.sort(key=lambda kr: (kr[0] != KIND_KEYINC, kr[0], kr[1]["id"]))
    if welcome["max_dest_rd_atomic"] <= 0 and any(k == KIND_KEYINC for k, _ in served):
        raise ValueError("collector QPs accept no atomics (max_dest_rd_atomic = 0) but a Key-Increment "
                         "region is announced")
    largest = max([4 + build["kw_data_bytes"]]
                  + [4 * build["append_batch"] if has_append(build) else 0]
                  + [POSTCARD_CHUNK_BYTES if build.get("postcarding") else 0]
                  + [4 * build["sketch_rows"] if build.get("sketch") else 0])
    if welcome["path_mtu"] < largest:
        raise ValueError(f"path MTU {welcome['path_mtu']} below the program's {largest}-byte writes")

    copies = build.get("n_max", N_MAX)
    for kind, r in served:
        if kind not in (KIND_APPEND, KIND_SKETCH) and r["geometry"]["n_max"] > copies:
            raise ValueError(f"region {r['id']}: n_max {r['geometry']['n_max']} copies, but the program places "
                             f"at most {copies} (TR_N_MAX: one CRC polynomial per copy)")

    src_ip, dst_ip = ip_str(hello["ip"]), ip_str(welcome["ip"])
    n_max = {KIND_KEYWRITE: 0, KIND_KEYINC: 0, KIND_POSTCARD: 1}
    out = {"tbl_collector": [], "tbl_copies": [], "tbl_region": [], "tbl_qpn": [], "reg_psn": [],
           "tbl_sk_reporter": [], "reg_clear": [], "mcast_groups": mcast_groups(cidx, port), "ignored": ignored}
    sk_reporters = site.get("sketch_reporters", 1)
    sk_col = site.get("sketch_col_base", 0)
    sk_rep = site.get("sketch_rep_base", 0)
    if build.get("sketch") and not 1 <= sk_reporters <= 1 << 16:
        raise ValueError(f"sketch_reporters {sk_reporters} outside 1..65536")

    def region_entry(action, kind, list_id, qp, r, mask=None, extra=None):
        dest_qp = qps[qp]["qpn"]
        sport = sport_base + qp
        data = {"qp_idx": qp_base + qp, "dest_qp": dest_qp}
        if mask is not None:
            data["mask"] = mask
        data.update({"icrc_k_le": bswap32(icrc_prefix_constant(kind, src_ip, dst_ip, sport, dest_qp, build)),
                     "udp_src_port": sport, "src_mac": mac_int(hello["mac"]), "dst_mac": mac_int(welcome["mac"]),
                     "src_ip": ip_int(hello["ip"]), "va": r["va"], "rkey": r["rkey"]})
        data.update(extra or {})
        return {"key": {"ig_md.collector_idx": cidx, "ig_md.kind": kind, "ig_md.list_id": list_id},
                "action": action, "data": data}

    list_idx = list_base
    for i, (kind, r) in enumerate(served):
        g = r["geometry"]
        qp = i % nqp
        if kind == KIND_KEYWRITE:
            if g["entry_size"] != 4 + build["kw_data_bytes"]:
                raise ValueError(f"Key-Write entry size {g['entry_size']} but the program writes "
                                 f"{4 + build['kw_data_bytes']} (KW_DATA_BYTES)")
            slots = _pow2(g["slots"], "Key-Write slot count")
            if slots * g["entry_size"] > 1 << 32:
                raise ValueError("Key-Write region above 4 GiB")
            n_max[kind] = max(n_max[kind], g["n_max"])
            out["tbl_region"].append(region_entry("region_keywrite", kind, 0, qp, r, slots - 1))
        elif kind == KIND_KEYINC:
            slots = _pow2(g["slots"], "Key-Increment slot count")
            if r["va"] % 8:
                raise ValueError("Key-Increment region not 8-byte aligned")
            if slots * 8 > 1 << 32:
                raise ValueError("Key-Increment region above 4 GiB")
            n_max[kind] = max(n_max[kind], g["n_max"])
            out["tbl_region"].append(region_entry("region_keyinc", kind, 0, qp, r, slots - 1))
        elif kind == KIND_POSTCARD:
            chunks = _pow2(g["chunks"], "chunk count")
            if g["hops"] != build["postcard_hops"]:
                raise ValueError(f"path length {g['hops']} differs from the compiled POSTCARD_HOPS "
                                 f"{build['postcard_hops']}")
            if chunks * POSTCARD_CHUNK_BYTES > 1 << 32:
                raise ValueError("Postcarding region above 4 GiB")
            n_max[kind] = max(n_max[kind], g["n_max"])
            out["tbl_region"].append(region_entry("region_postcard", kind, 0, qp, r, chunks - 1))
        elif kind == KIND_SKETCH:
            rows, columns = g["rows"], g["columns"]
            if rows != build["sketch_rows"]:
                raise ValueError(f"sketch {r['id']}: {rows} rows, but the program merges columns of "
                                 f"{build['sketch_rows']} (SKETCH_ROWS)")
            if not 1 <= columns <= SKETCH_MAX_COLUMNS:
                raise ValueError(f"sketch {r['id']}: {columns} columns, the program takes 1..{SKETCH_MAX_COLUMNS}")
            if not 0 <= r["id"] <= 255:
                raise ValueError(f"sketch {r['id']}: the report's sketch id is 8 bits")
            if sk_col + columns > build["sketch_columns"]:
                raise ValueError(f"sketch {r['id']}: columns {sk_col}..{sk_col + columns - 1} exceed the program's "
                                 f"SKETCH_COLUMNS {build['sketch_columns']}")
            if sk_rep + sk_reporters > build["sketch_reporter_slots"]:
                raise ValueError(f"sketch {r['id']}: reporter slots {sk_rep}..{sk_rep + sk_reporters - 1} exceed "
                                 f"SKETCH_REPORTER_SLOTS {build['sketch_reporter_slots']}")
            out["tbl_region"].append(region_entry(
                "region_sketch", kind, r["id"], qp, r,
                extra={"col_base": sk_col, "last_col": columns - 1, "reporters_m1": sk_reporters - 1}))
            # the order-check slot of each reporter 0..n-1; other reporter ids miss and are dropped
            for rep in range(sk_reporters):
                out["tbl_sk_reporter"].append({
                    "key": {"ig_md.collector_idx": cidx, "hdr.dta_sketch.sketch_id": r["id"],
                            "hdr.dta_sketch.reporter_id": rep},
                    "action": "reporter_slot", "data": {"slot": sk_rep + rep}})
            # a fresh round: every reporter starts at column 0, no partial column is kept
            out["reg_clear"].append({"registers": ["reg_expected", "reg_expected_copy"],
                                     "start": sk_rep, "count": sk_reporters})
            out["reg_clear"].append({"registers": ["reg_contrib"] + [f"reg_row_{i}" for i in range(rows)],
                                     "start": sk_col, "count": columns})
            sk_col += columns
            sk_rep += sk_reporters
        else:
            entries, batch = g["entries"], build["append_batch"]
            if g["entry_size"] != 4:
                raise ValueError(f"Append list {r['id']}: entry size {g['entry_size']}; the P4 translator "
                                 "writes 4-byte entries only")
            if g["batch_size"] != batch:
                raise ValueError(f"Append list {r['id']}: batch size {g['batch_size']}, program batch {batch}")
            if APPEND_HEADER_BYTES + 4 * entries > 1 << 32:
                raise ValueError(f"Append list {r['id']}: above 4 GiB")
            if list_idx >= MAX_LISTS:
                raise ValueError(f"more than MAX_LISTS {MAX_LISTS} Append lists")
            out["tbl_region"].append(region_entry(
                "region_append", kind, r["id"], qp, r,
                extra={"list_idx": list_idx, "last_head": 4 * (entries - batch)}))
            list_idx += 1

    out["tbl_collector"].append({
        "key": {"hdr.ipv4.dst_addr": ip_int(welcome["ip"])},
        "action": "collector",
        "data": {"collector_idx": cidx, "port": port,
                 "mcast_append_hdr": mcast_group_id(cidx, 2),
                 "mcast_postcard": mcast_group_id(cidx, n_max[KIND_POSTCARD])}})
    for n in range(1, max(n_max[KIND_KEYWRITE], n_max[KIND_KEYINC]) + 1):
        out["tbl_copies"].append({"key": {"ig_md.collector_idx": cidx, "ig_md.redundancy": n},
                                  "action": "copies", "data": {"grp": mcast_group_id(cidx, n)}})
    for q in range(nqp):
        out["tbl_qpn"].append({"key": {"hdr.bth.dest_qp": my_qps[q]["qpn"]}, "action": "our_qp",
                               "data": {"qp_idx": qp_base + q, "collector_port": port}})
        out["reg_psn"].append({"index": qp_base + q, "value": my_qps[q]["start_psn"] & 0xFFFFFF})
    return out


# ---------------------------------------------------------------- the control channel
def hello_message(token, mac, ip, qps):
    """The Hello of control.rs. mac: [6 ints], ip: [4 ints], qps: [(qpn, start_psn)]. The GID is the
    IPv4-mapped IPv6 address, as RoCEv2 uses it."""
    gid = [0] * 10 + [0xFF, 0xFF] + list(ip)
    return {"type": "hello", "version": CONTROL_VERSION, "token": token, "mac": list(mac), "ip": list(ip),
            "gid": gid, "qps": [{"qpn": q, "start_psn": p} for q, p in qps]}


def request_welcome(host, port, hello, timeout=10.0):
    """Send the Hello as one JSON line and return the collector's Welcome; raise on a refusal."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(json.dumps(hello).encode() + b"\n")
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            buf += chunk
    msg = json.loads(buf.decode())
    if msg.get("type") == "refusal":
        raise ValueError(f"collector refused: {msg.get('error')}")
    if msg.get("type") != "welcome":
        raise ValueError(f"unexpected control message {msg.get('type')!r}")
    return msg


# ---------------------------------------------------------------- writing to the switch
def load(bfrt, entries, pipe="pipe"):  # pragma: no cover - needs a switch
    """Write `entries` (from compute_entries) with bfrt_python's object API."""
    p4 = getattr(bfrt.dta_translator, pipe)
    ing, eg = p4.TrIngress, p4.TrEgress
    tables = {
        "tbl_collector": ing.tbl_collector,
        "tbl_copies": ing.kv_copies.tbl_copies,
        "tbl_qpn": ing.roce_response.tbl_qpn,
        "tbl_region": ing.rdma_build.tbl_region,
    }
    if entries.get("tbl_sk_reporter"):
        tables["tbl_sk_reporter"] = ing.sketch_reporter.tbl_sk_reporter
    for name, table in tables.items():
        for e in entries[name]:
            args = {k.split(".")[-1]: v for k, v in e["key"].items()}
            args.update(e["data"])
            getattr(table, "add_with_" + e["action"])(**args)
    for r in entries["reg_psn"]:
        eg.craft.reg_psn.mod(REGISTER_INDEX=r["index"], f1=r["value"])
    for c in entries.get("reg_clear", []):
        for name in c["registers"]:
            reg = getattr(ing.sketch_merge, name)
            for i in range(c["start"], c["start"] + c["count"]):
                reg.mod(REGISTER_INDEX=i, f1=0)
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
    """bfshell -b: reads the JSON site file named by DTA_TRANSLATOR_CONFIG (default translator_p4.json):
    {"collector": "host:port", "token", "mac": [..], "ip": [..], "qps": [[qpn, start_psn], ...],
     "collector_idx", "collector_port", "build": {...}}."""
    import os
    cfg_path = os.environ.get("DTA_TRANSLATOR_CONFIG", "translator_p4.json")
    with open(cfg_path) as f:
        site = json.load(f)
    host, _, cport = site["collector"].rpartition(":")
    hello = hello_message(site["token"], site["mac"], site["ip"], site["qps"])
    welcome = request_welcome(host, int(cport or CONTROL_PORT), hello)
    entries = compute_entries(welcome, hello, site, site.get("build", DEFAULT_BUILD))
    load(bfrt, entries)  # noqa: F821  (bfrt is defined by bfshell -b)


if __name__ == "__main__":  # pragma: no cover
    try:
        bfrt  # noqa: F821  (defined by bfshell -b)
    except NameError:
        raise SystemExit("run inside bfshell: bfshell -b p4/translator/controlplane/translator_cp.py")
    main()
