import json
import os
import random
import socket
import threading
import struct
import zlib

import pytest

import translator_cp as cp
from crc_ref import crc32_reflected

CRC32 = 0x04C11DB7

# A Welcome exactly as dta-protocol's control.rs serialises it (CollectorMessage::Welcome, serde tag "type").
WELCOME = json.loads("""
{"type": "welcome", "version": 1, "mac": [2, 0, 0, 0, 0, 2], "ip": [198, 18, 0, 2],
 "qps": [{"qpn": 17, "peer_qpn": 257}, {"qpn": 18, "peer_qpn": 258}],
 "max_dest_rd_atomic": 16, "path_mtu": 1024,
 "regions": [
  {"id": 0, "va": 139637976731648, "rkey": 4660,
   "geometry": {"kind": "key_write", "slots": 256, "entry_size": 8, "n_max": 4}},
  {"id": 0, "va": 139637977772032, "rkey": 9029,
   "geometry": {"kind": "key_increment", "slots": 1024, "n_max": 3}},
  {"id": 3, "va": 139637978820608, "rkey": 13398,
   "geometry": {"kind": "append", "entries": 1000, "entry_size": 4, "batch_size": 4}},
  {"id": 0, "va": 139637979869184, "rkey": 17767,
   "geometry": {"kind": "postcarding", "chunks": 4096, "hops": 5, "n_max": 2}},
  {"id": 7, "va": 139637980917760, "rkey": 22136,
   "geometry": {"kind": "sketch", "rows": 4, "columns": 1024}}]}
""")
HELLO = cp.hello_message("secret", [2, 0, 0, 0, 0, 1], [198, 18, 0, 1], [(0x101, 0x100), (0x102, 0xFFFFFF + 5)])
SITE = {"collector_idx": 1, "collector_port": 136}
SRC_MAC, DST_MAC = 0x020000000001, 0x020000000002
SRC_IP, DST_IP = 0xC6120001, 0xC6120002


# dta-protocol's PLACEMENT_POLYNOMIALS (protocol/src/hash.rs), written out here so the test does not read them
# from the module under test
PLACEMENT_POLYNOMIALS = [0x04C11DB7, 0xA833982B, 0xD419CC15, 0xBA0DC66B,
                         0xB39E201D, 0x725243AB, 0xD8046B21, 0x63A4CD11]


def ref_placement(key, n):
    """Independent bitwise placement hash: CRC-32 with Q_n over key_le || n (reflected, init/xorout ~0)."""
    return crc32_reflected(struct.pack("<I", key) + bytes([n]), PLACEMENT_POLYNOMIALS[n])


def test_keywrite_vectors():
    # the contract's vectors (protocol/src/hash.rs): checksums crc32(key_le), slots for S = 256, n = 0..3
    for key, checksum, slots in [(0, 0x2144DF1C, [29, 104, 84, 26]), (1, 0x99F8B879, [173, 100, 212, 95]),
                                 (123, 0x9D7AF881, [195, 93, 86, 128])]:
        assert zlib.crc32(cp.key_le(key)) == checksum
        assert crc32_reflected(cp.key_le(key), CRC32) == checksum
        assert [cp.slot(key, n, 256) for n in range(4)] == slots
        assert [ref_placement(key, n) & 255 for n in range(4)] == slots


def test_placement_hash_vectors():
    full = [0x5F10B818, 0xFC8A4FFC, 0x678FDC15, 0x117DFD67, 0x9FD3AB7A, 0xABDE766F, 0xC0A0D3A1, 0xD9B855CA]
    assert [ref_placement(0xDEADBEEF, n) for n in range(8)] == full
    assert [cp.placement_hash(0xDEADBEEF, n) for n in range(8)] == full
    assert list(cp.PLACEMENT_POLYNOMIALS) == PLACEMENT_POLYNOMIALS


def test_placement_matches_independent_crc():
    rng = random.Random(10)
    keys = [0, 1, 0xFFFFFFFF, 0x80000000] + [rng.getrandbits(32) for _ in range(200)]
    for key in keys:
        for n in range(8):
            assert cp.placement_hash(key, n) == ref_placement(key, n)
            for s in (1, 256, 1 << 20, 1 << 29):
                assert cp.slot(key, n, s) == ref_placement(key, n) & (s - 1)
        # copy 0 is zlib's CRC-32 (N = 1 places as the reference)
        assert cp.placement_hash(key, 0) == zlib.crc32(cp.key_le(key) + b"\x00")
    with pytest.raises(ValueError):
        cp.placement_hash(0, 8)


def test_placement_polynomials_match_the_p4():
    """define.p4's PLACEMENT_POLY_n are the contract's polynomials, and the egress hashes copy n with Q_n."""
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "include", "define.p4")) as f:
        define = f.read()
    for n, q in enumerate(PLACEMENT_POLYNOMIALS):
        assert f"#define PLACEMENT_POLY_{n} 32w0x{q:08X}" in define
    with open(os.path.join(here, "..", "include", "control", "tr_rdma_craft.p4")) as f:
        craft = f.read()
    assert "PLACEMENT_POLY_##i" in craft
    for n in range(8):
        assert f"egress_rid == {n}" in craft or n == 7       # copy 7 is the chain's last else
        assert f"placement_{n}();" in craft


def test_copies_of_a_key_are_not_at_a_fixed_offset():
    """With one polynomial, slot(k, 1) ^ slot(k, 0) would be the same for every key (CRC is linear)."""
    offsets = {cp.slot(k, 1, 1 << 16) ^ cp.slot(k, 0, 1 << 16) for k in range(64)}
    assert len(offsets) > 32


def test_icrc_matches_toolchain_vector():
    # TOOLCHAIN.md: 106-byte RC WRITE ONLY frame, iCRC wire bytes 92 1b 9b 06
    frame = bytes.fromhex(
        "02000000000202000000000108004502005c1234400040119c33c6120001c6120002c00012b7004800000a00ffff"
        "000000118000010000007f00000010000000123400000020000102030405060708090a0b0c0d0e0f1011121314"
        "15161718191a1b1c1d1e1f921b9b06")
    ip_to_payload = frame[14:-4]
    assert struct.pack("<I", cp.roce_icrc(ip_to_payload)) == frame[-4:]


@pytest.mark.parametrize("kind", [cp.KIND_KEYWRITE, cp.KIND_KEYINC, cp.KIND_APPEND, cp.KIND_POSTCARD])
def test_icrc_split_prefix_constant_plus_tail(kind):
    """What the P4 computes (K xor crc0(tail)) equals the iCRC of the whole frame."""
    rng = random.Random(kind)
    k = cp.icrc_prefix_constant(kind, "198.18.0.1", "198.18.0.2", 49152, 0x11)
    prefix = cp.frame_prefix(kind, "198.18.0.1", "198.18.0.2", 49152, 0x11)
    for _ in range(20):
        tail = bytes(rng.randrange(256) for _ in range(cp.tail_len(kind)))
        whole = cp.roce_icrc(prefix + tail)
        assert k ^ crc32_reflected(tail, CRC32, init=0, xorout=0) == whole


def test_frame_prefix_lengths_and_checksum():
    p = cp.frame_prefix(cp.KIND_KEYWRITE, "198.18.0.1", "198.18.0.2", 49152, 0x11)
    assert len(p) == 36
    assert struct.unpack("!H", p[2:4])[0] == 68          # 20 + 8 + 12 + 16 + 8 + 4
    assert struct.unpack("!H", p[24:26])[0] == 48        # UDP length
    s = sum(struct.unpack("!10H", p[:20]))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    assert s == 0xFFFF                                   # valid IPv4 header checksum
    assert p[28:36] == bytes([0x0A, 0x40, 0xFF, 0xFF, 0, 0, 0, 0x11])
    assert cp.ip_total_len(cp.KIND_KEYINC) == 72


def test_mcast_groups_rids():
    groups = cp.mcast_groups(1, 136)
    assert [g["group_id"] for g in groups] == list(range(17, 25))
    for n, g in enumerate(groups, start=1):
        assert [node["rid"] for node in g["nodes"]] == list(range(n))
        assert all(node["ports"] == [136] for node in g["nodes"])
    ids = [node["node_id"] for g in groups for node in g["nodes"]]
    assert len(ids) == len(set(ids))
    with pytest.raises(ValueError):
        cp.mcast_group_id(0, 9)


def k_le(kind, sport, dest_qp, build=cp.DEFAULT_BUILD):
    return cp.bswap32(cp.icrc_prefix_constant(kind, "198.18.0.1", "198.18.0.2", sport, dest_qp, build))


def region(action, kind, list_id, qp, va, rkey, mask=None, extra=None, build=cp.DEFAULT_BUILD):
    data = {"qp_idx": qp, "dest_qp": 17 + qp}
    if mask is not None:
        data["mask"] = mask
    data.update({"icrc_k_le": k_le(kind, 49152 + qp, 17 + qp, build), "udp_src_port": 49152 + qp,
                 "src_mac": SRC_MAC, "dst_mac": DST_MAC, "src_ip": SRC_IP,
                 "va": va, "rkey": rkey})
    data.update(extra or {})
    return {"key": {"ig_md.collector_idx": 1, "ig_md.kind": kind, "ig_md.list_id": list_id},
            "action": action, "data": data}


def test_hello_shape():
    assert HELLO == {"type": "hello", "version": 1, "token": "secret", "mac": [2, 0, 0, 0, 0, 1],
                     "ip": [198, 18, 0, 1], "gid": [0] * 10 + [255, 255, 198, 18, 0, 1],
                     "qps": [{"qpn": 0x101, "start_psn": 0x100}, {"qpn": 0x102, "start_psn": 0xFFFFFF + 5}]}


def test_compute_entries_exact():
    e = cp.compute_entries(WELCOME, HELLO, SITE)
    assert e["tbl_collector"] == [{"key": {"hdr.ipv4.dst_addr": DST_IP}, "action": "collector",
                                   "data": {"collector_idx": 1, "port": 136, "mcast_append_hdr": 18,
                                            "mcast_postcard": 17}}]
    assert e["tbl_copies"] == [{"key": {"ig_md.collector_idx": 1, "ig_md.redundancy": n}, "action": "copies",
                                "data": {"grp": 16 + n}} for n in (1, 2, 3, 4)]
    # Key-Increment first (QP 0), then Key-Write (QP 1), then Append (QP 0); postcarding is not compiled in
    assert e["tbl_region"] == [
        region("region_keyinc", cp.KIND_KEYINC, 0, 0, 139637977772032, 9029, mask=1023),
        region("region_keywrite", cp.KIND_KEYWRITE, 0, 1, 139637976731648, 4660, mask=255),
        region("region_append", cp.KIND_APPEND, 3, 0, 139637978820608, 13398,
               extra={"list_idx": 0, "last_head": 4 * 996}),
    ]
    assert e["ignored"] == [{"id": 0, "kind": "postcarding"}, {"id": 7, "kind": "sketch"}]
    assert e["tbl_qpn"] == [
        {"key": {"hdr.bth.dest_qp": 0x101}, "action": "our_qp", "data": {"qp_idx": 0, "collector_port": 136}},
        {"key": {"hdr.bth.dest_qp": 0x102}, "action": "our_qp", "data": {"qp_idx": 1, "collector_port": 136}}]
    assert e["reg_psn"] == [{"index": 0, "value": 0x100}, {"index": 1, "value": 4}]
    assert len(e["mcast_groups"]) == 8


def test_compute_entries_with_postcarding_build():
    build = cp.POSTCARDING_BUILD
    e = cp.compute_entries(WELCOME, HELLO, dict(SITE, qp_base=4, udp_src_port_base=50000), build)
    pc = [r for r in e["tbl_region"] if r["action"] == "region_postcard"]
    assert len(pc) == 1
    assert pc[0]["data"]["mask"] == 4095 and pc[0]["data"]["qp_idx"] == 4 + 1
    assert pc[0]["data"]["udp_src_port"] == 50001
    assert e["tbl_collector"][0]["data"]["mcast_postcard"] == 16 + 2      # n_max 2 chunk copies
    assert e["reg_psn"][0]["index"] == 4
    assert e["ignored"] == [{"id": 7, "kind": "sketch"}]
    # -DTR_POSTCARDING -DTR_NO_APPEND: Append is ignored too
    e = cp.compute_entries(WELCOME, HELLO, SITE, dict(build, append=False))
    assert e["ignored"] == [{"id": 3, "kind": "append"}, {"id": 7, "kind": "sketch"}]
    assert [r["action"] for r in e["tbl_region"]] == ["region_keyinc", "region_keywrite", "region_postcard"]


def test_compute_entries_postcarding_profile_exact():
    """-DTR_POSTCARDING: Key-Increment (QP 0), Key-Write (QP 1), Append (QP 0), Postcarding (QP 1); Sketch ignored."""
    build = cp.POSTCARDING_BUILD
    e = cp.compute_entries(WELCOME, HELLO, SITE, build)
    assert e["tbl_collector"] == [{"key": {"hdr.ipv4.dst_addr": DST_IP}, "action": "collector",
                                   "data": {"collector_idx": 1, "port": 136, "mcast_append_hdr": 18,
                                            "mcast_postcard": 18}}]
    assert e["tbl_copies"] == [{"key": {"ig_md.collector_idx": 1, "ig_md.redundancy": n}, "action": "copies",
                                "data": {"grp": 16 + n}} for n in (1, 2, 3, 4)]
    assert e["tbl_region"] == [
        region("region_keyinc", cp.KIND_KEYINC, 0, 0, 139637977772032, 9029, mask=1023, build=build),
        region("region_keywrite", cp.KIND_KEYWRITE, 0, 1, 139637976731648, 4660, mask=255, build=build),
        region("region_append", cp.KIND_APPEND, 3, 0, 139637978820608, 13398, build=build,
               extra={"list_idx": 0, "last_head": 4 * 996}),
        region("region_postcard", cp.KIND_POSTCARD, 0, 1, 139637979869184, 17767, mask=4095, build=build),
    ]
    # the postcard frame: IPv4 length 20 + 8 + 12 + RETH 16 + chunk 32 + iCRC 4, and its K by hand
    assert cp.ip_total_len(cp.KIND_POSTCARD, build) == 92
    k = cp.icrc_prefix_constant(cp.KIND_POSTCARD, "198.18.0.1", "198.18.0.2", 49153, 18, build)
    assert e["tbl_region"][3]["data"]["icrc_k_le"] == int.from_bytes(k.to_bytes(4, "big"), "little")
    assert e["ignored"] == [{"id": 7, "kind": "sketch"}]
    assert e["tbl_qpn"] == [
        {"key": {"hdr.bth.dest_qp": 0x101}, "action": "our_qp", "data": {"qp_idx": 0, "collector_port": 136}},
        {"key": {"hdr.bth.dest_qp": 0x102}, "action": "our_qp", "data": {"qp_idx": 1, "collector_port": 136}}]
    assert e["reg_psn"] == [{"index": 0, "value": 0x100}, {"index": 1, "value": 4}]
    assert len(e["mcast_groups"]) == 8
    # without Append (-DTR_NO_APPEND) a path MTU of one chunk is enough
    assert cp.compute_entries(dict(WELCOME, path_mtu=32), HELLO, SITE, dict(build, append=False))["ignored"][0][
        "kind"] == "append"


def test_compute_entries_sketch_profile_exact():
    """-DTR_SKETCH: Key-Increment (QP 0), Key-Write (QP 1), Append (QP 0), sketch 7 (QP 1); Postcarding ignored."""
    build = cp.SKETCH_BUILD
    site = dict(SITE, sketch_reporters=3, sketch_col_base=100, sketch_rep_base=10)
    e = cp.compute_entries(WELCOME, HELLO, site, build)
    assert e["tbl_region"] == [
        region("region_keyinc", cp.KIND_KEYINC, 0, 0, 139637977772032, 9029, mask=1023, build=build),
        region("region_keywrite", cp.KIND_KEYWRITE, 0, 1, 139637976731648, 4660, mask=255, build=build),
        region("region_append", cp.KIND_APPEND, 3, 0, 139637978820608, 13398, build=build,
               extra={"list_idx": 0, "last_head": 4 * 996}),
        region("region_sketch", cp.KIND_SKETCH, 7, 1, 139637980917760, 22136, build=build,
               extra={"col_base": 100, "last_col": 1023, "reporters_m1": 2}),
    ]
    assert e["tbl_sk_reporter"] == [
        {"key": {"ig_md.collector_idx": 1, "hdr.dta_sketch.sketch_id": 7, "hdr.dta_sketch.reporter_id": r},
         "action": "reporter_slot", "data": {"slot": 10 + r}} for r in range(3)]
    # one column of 4 counters per WRITE: IPv4 length 20 + 8 + 12 + RETH 16 + 16 + iCRC 4
    assert cp.tail_len(cp.KIND_SKETCH, build) == 4 + 16 + 16
    assert cp.ip_total_len(cp.KIND_SKETCH, build) == 76
    assert e["ignored"] == [{"id": 0, "kind": "postcarding"}]
    assert e["reg_clear"] == [
        {"registers": ["reg_expected", "reg_expected_copy"], "start": 10, "count": 3},
        {"registers": ["reg_contrib", "reg_row_0", "reg_row_1", "reg_row_2", "reg_row_3"], "start": 100,
         "count": 1024}]
    assert e["tbl_collector"][0]["data"]["collector_idx"] == 1
    assert e["reg_psn"] == [{"index": 0, "value": 0x100}, {"index": 1, "value": 4}]
    # the default build lists the sketch under ignored and clears nothing
    d = cp.compute_entries(WELCOME, HELLO, SITE)
    assert {"id": 7, "kind": "sketch"} in d["ignored"] and d["reg_clear"] == [] and d["tbl_sk_reporter"] == []


def test_compute_entries_sketch_refusals():
    def sketch(**geometry):
        r = dict(WELCOME["regions"][4], geometry=dict(WELCOME["regions"][4]["geometry"], **geometry))
        return dict(WELCOME, regions=[r])
    build = cp.SKETCH_BUILD
    assert len(cp.compute_entries(sketch(columns=32768), HELLO, SITE, build)["tbl_region"]) == 1
    for bad in (sketch(rows=2), sketch(rows=8), sketch(columns=32769)):
        with pytest.raises(ValueError):
            cp.compute_entries(bad, HELLO, SITE, build)
    with pytest.raises(ValueError, match="SKETCH_COLUMNS"):
        cp.compute_entries(WELCOME, HELLO, dict(SITE, sketch_col_base=32000), build)
    with pytest.raises(ValueError, match="SKETCH_REPORTER_SLOTS"):
        cp.compute_entries(WELCOME, HELLO, dict(SITE, sketch_reporters=4097), build)
    with pytest.raises(ValueError, match="8 bits"):
        cp.compute_entries(dict(WELCOME, regions=[dict(WELCOME["regions"][4], id=256)]), HELLO, SITE, build)


@pytest.mark.parametrize("rows", [1, 2, 4, 8])
def test_icrc_split_for_sketch_columns(rows):
    build = dict(cp.SKETCH_BUILD, sketch_rows=rows)
    rng = random.Random(rows)
    k = cp.icrc_prefix_constant(cp.KIND_SKETCH, "198.18.0.1", "198.18.0.2", 49152, 0x11, build)
    prefix = cp.frame_prefix(cp.KIND_SKETCH, "198.18.0.1", "198.18.0.2", 49152, 0x11, build)
    for _ in range(5):
        tail = bytes(rng.randrange(256) for _ in range(cp.tail_len(cp.KIND_SKETCH, build)))
        assert k ^ crc32_reflected(tail, CRC32, init=0, xorout=0) == cp.roce_icrc(prefix + tail)


def test_compute_entries_rejects_mismatches():
    def with_region(i, **geometry):
        r = dict(WELCOME["regions"][i], geometry=dict(WELCOME["regions"][i]["geometry"], **geometry))
        return dict(WELCOME, regions=[r])
    for bad in (with_region(0, slots=300), with_region(0, entry_size=16), with_region(2, batch_size=8),
                with_region(2, entry_size=8), dict(WELCOME, max_dest_rd_atomic=0), dict(WELCOME, version=2),
                dict(WELCOME, qps=WELCOME["qps"][:1]),
                dict(WELCOME, qps=[{"qpn": 17, "peer_qpn": 999}, WELCOME["qps"][1]]),
                {"type": "refusal", "version": 1, "error": "bad token"}):
        with pytest.raises(ValueError):
            cp.compute_entries(bad, HELLO, SITE)
    with pytest.raises(ValueError):
        cp.compute_entries(with_region(3, hops=4), HELLO, SITE, dict(cp.DEFAULT_BUILD, postcarding=True))


def test_compute_entries_refuses_more_copies_than_the_program_places():
    def with_n_max(i, n):
        r = dict(WELCOME["regions"][i], geometry=dict(WELCOME["regions"][i]["geometry"], n_max=n))
        return dict(WELCOME, regions=[r])
    # the default program places 8 copies (TR_N_MAX 8)
    e = cp.compute_entries(with_n_max(0, 8), HELLO, SITE)
    assert [c["key"]["ig_md.redundancy"] for c in e["tbl_copies"]] == list(range(1, 9))
    for i in (0, 1):
        with pytest.raises(ValueError, match="TR_N_MAX"):
            cp.compute_entries(with_n_max(i, 9), HELLO, SITE)
    # a -DTR_N_MAX=4 build: n_max 4 is served, 5 is refused (Key-Write, Key-Increment and Postcarding)
    four = dict(cp.DEFAULT_BUILD, n_max=4)
    e = cp.compute_entries(with_n_max(0, 4), HELLO, SITE, four)
    assert [c["key"]["ig_md.redundancy"] for c in e["tbl_copies"]] == [1, 2, 3, 4]
    for i in (0, 1, 3):
        with pytest.raises(ValueError, match="TR_N_MAX"):
            cp.compute_entries(with_n_max(i, 5), HELLO, SITE, dict(four, postcarding=True))


def test_append_header_copy_shares_the_prefix_constant():
    """The list-header write (copy 1) has the batch's frame length, so the batch's K serves it."""
    frame = cp.frame_prefix(cp.KIND_APPEND, "198.18.0.1", "198.18.0.2", 49152, 17)
    header_payload = (1234).to_bytes(8, "little") + bytes(4 * cp.DEFAULT_BUILD["append_batch"] - 8)
    tail = bytes([0x80, 0, 0, 5]) + (139637978820608).to_bytes(8, "big") + (13398).to_bytes(4, "big") + \
        (16).to_bytes(4, "big") + header_payload
    k = cp.icrc_prefix_constant(cp.KIND_APPEND, "198.18.0.1", "198.18.0.2", 49152, 17)
    assert k ^ crc32_reflected(tail, CRC32, init=0, xorout=0) == cp.roce_icrc(frame + tail)


def test_request_welcome_over_tcp():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    got = {}

    def serve():
        conn, _ = srv.accept()
        with conn:
            got["hello"] = json.loads(conn.makefile().readline())
            conn.sendall(json.dumps(WELCOME).encode() + b"\n")
    t = threading.Thread(target=serve)
    t.start()
    try:
        assert cp.request_welcome("127.0.0.1", srv.getsockname()[1], HELLO) == WELCOME
    finally:
        t.join()
        srv.close()
    assert got["hello"] == HELLO


def test_append_wrap_has_no_double_write():
    """The head register's rule (TrAppendBatch.next_head): every slot is written once per lap."""
    entries, batch = 1000, 4
    last_head = 4 * (entries - batch)          # the register counts bytes
    head, written = 0, []
    for _ in range(2 * entries // batch):
        written.append(head)
        head = 0 if head >= last_head else head + 4 * batch
    lap = written[:entries // batch]
    assert lap == list(range(0, 4 * entries, 4 * batch))
    assert written[entries // batch:] == lap


def test_bfrt_not_imported():
    import sys
    assert "bfrt" not in sys.modules and "bfrt_grpc" not in sys.modules
