import os
import random
import struct
import zlib

import pytest

import translator_cp as cp
from crc_ref import crc32_reflected

CRC32 = 0x04C11DB7

ANSWER = {
    "version": 1,
    "mac": "02:00:00:00:00:02",
    "ip": "198.18.0.2",
    "qpns": [0x11, 0x12],
    "max_dest_rd_atomic": 16,
    "regions": [
        {"kind": "keywrite", "id": 0, "va": 0x7F0000001000, "rkey": 0x1234, "length": 256 * 8,
         "geometry": {"slots": 256, "entry_size": 8, "n_max": 4}},
        {"kind": "keyincrement", "id": 0, "va": 0x7F0000100000, "rkey": 0x2345, "length": 1024 * 8,
         "geometry": {"slots": 1024, "n_max": 4}},
        {"kind": "append", "id": 3, "va": 0x7F0000200000, "rkey": 0x3456, "length": 64 + 4 * 1000,
         "geometry": {"entries": 1000, "entry_size": 4, "batch_size": 4}},
        {"kind": "postcard", "id": 0, "va": 0x7F0000300000, "rkey": 0x4567, "length": 4096 * 32,
         "geometry": {"chunks": 4096, "chunk_stride": 32, "hops": 5}},
    ],
}
LOCAL = {"collector_idx": 1, "collector_port": 136, "mac": "02:00:00:00:00:01", "ip": "198.18.0.1",
         "qpns": [0x101, 0x102], "psns": [0x100, 0xFFFFFF + 5], "udp_src_ports": [49152, 49153],
         "postcard_copies": 2}


def test_keywrite_vectors():
    # DESIGN.md section 3
    for key, checksum, slots in [(0, 0x2144DF1C, [29, 139, 49, 167]), (1, 0x99F8B879, [173, 59, 129, 23]),
                                 (123, 0x9D7AF881, [195, 85, 239, 121])]:
        assert zlib.crc32(cp.key_le(key)) == checksum
        assert crc32_reflected(cp.key_le(key), CRC32) == checksum
        assert [cp.slot(key, n, 256) for n in range(4)] == slots
        assert [crc32_reflected(cp.key_le(key) + bytes([n]), CRC32) & 255 for n in range(4)] == slots


def test_icrc_matches_toolchain_vector():
    # TOOLCHAIN.md: 106-byte RC WRITE ONLY frame, iCRC wire bytes 92 1b 9b 06
    frame = bytes.fromhex(
        "02000000000202000000000108004502005c1234400040119c33c6120001c6120002c00012b7004800000a00ffff"
        "000000118000010000007f00000010000000123400000020000102030405060708090a0b0c0d0e0f1011121314"
        "15161718191a1b1c1d1e1f921b9b06")
    ip_to_payload = frame[14:-4]
    assert struct.pack("<I", cp.roce_icrc(ip_to_payload)) == frame[-4:]


@pytest.mark.parametrize("kind", [cp.KIND_KEYWRITE, cp.KIND_KEYINC, cp.KIND_APPEND, cp.KIND_APPEND_HDR,
                                  cp.KIND_POSTCARD])
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


def test_compute_entries_exact():
    e = cp.compute_entries(ANSWER, LOCAL)
    assert e["tbl_collector"] == [{"key": {"hdr.ipv4.dst_addr": 0xC6120002}, "action": "collector",
                                   "data": {"collector_idx": 1, "port": 136, "mcast_append_hdr": 18,
                                            "mcast_postcard": 18}}]
    assert e["tbl_copies"] == [{"key": {"ig_md.collector_idx": 1, "ig_md.redundancy": n}, "action": "copies",
                                "data": {"grp": 16 + n}} for n in range(1, 5)]
    assert e["tbl_list"] == [{"key": {"ig_md.collector_idx": 1, "hdr.dta_append.list_id": 3},
                              "action": "set_list", "data": {"list_idx": 0, "last_head": 996}}]
    assert e["tbl_qpn"] == [
        {"key": {"hdr.bth.dest_qp": 0x101}, "action": "our_qp", "data": {"qp_idx": 0, "collector_port": 136}},
        {"key": {"hdr.bth.dest_qp": 0x102}, "action": "our_qp", "data": {"qp_idx": 1, "collector_port": 136}}]
    assert e["reg_psn"] == [{"index": 0, "value": 0x100}, {"index": 1, "value": 4}]

    regions = {(r["key"]["eg_md.region_kind"], r["key"]["hdr.bridge.list_idx"]): r["data"]
               for r in e["tbl_region"]}
    assert set(regions) == {(cp.KIND_KEYINC, 0), (cp.KIND_KEYWRITE, 0), (cp.KIND_APPEND, 0),
                            (cp.KIND_APPEND_HDR, 0), (cp.KIND_POSTCARD, 0)}
    # Key-Increment first, on QP 0; then Key-Write (QP 1), Append (QP 0), Postcarding (QP 1)
    ki = regions[(cp.KIND_KEYINC, 0)]
    assert (ki["qp_idx"], ki["dest_qp"], ki["rkey"], ki["base"], ki["slot_mask"]) == \
        (0, 0x11, 0x2345, 0x7F0000100000, 1023)
    kw = regions[(cp.KIND_KEYWRITE, 0)]
    assert (kw["qp_idx"], kw["dest_qp"], kw["rkey"], kw["base"], kw["slot_mask"], kw["udp_src_port"]) == \
        (1, 0x12, 0x1234, 0x7F0000001000, 255, 49153)
    ap = regions[(cp.KIND_APPEND, 0)]
    assert (ap["qp_idx"], ap["base"], ap["slot_mask"]) == (0, 0x7F0000200000 + 64, 0)
    assert regions[(cp.KIND_APPEND_HDR, 0)]["base"] == 0x7F0000200000
    pc = regions[(cp.KIND_POSTCARD, 0)]
    assert (pc["qp_idx"], pc["base"], pc["slot_mask"]) == (1, 0x7F0000300000, 4095)
    for data in regions.values():
        assert data["src_mac"] == 0x020000000001 and data["dst_mac"] == 0x020000000002
        assert data["src_ip"] == 0xC6120001 and data["dst_ip"] == 0xC6120002
    assert kw["icrc_k"] == cp.icrc_prefix_constant(cp.KIND_KEYWRITE, "198.18.0.1", "198.18.0.2", 49153, 0x12)


def test_compute_entries_rejects_mismatches():
    bad = dict(ANSWER, regions=[dict(ANSWER["regions"][0], geometry={"slots": 300, "entry_size": 8})])
    with pytest.raises(ValueError):
        cp.compute_entries(bad, LOCAL)
    bad = dict(ANSWER, regions=[dict(ANSWER["regions"][0], geometry={"slots": 256, "entry_size": 16})])
    with pytest.raises(ValueError):
        cp.compute_entries(bad, LOCAL)
    bad = dict(ANSWER, max_dest_rd_atomic=0)
    with pytest.raises(ValueError):
        cp.compute_entries(bad, LOCAL)
    bad = dict(ANSWER, regions=[dict(ANSWER["regions"][2], geometry={"entries": 1001, "batch_size": 4})])
    with pytest.raises(ValueError):
        cp.compute_entries(bad, LOCAL)


def test_append_wrap_has_no_double_write():
    """The head register's rule (TrAppendBatch.next_head): every slot is written once per lap."""
    entries, batch = 1000, 4
    last_head = entries - batch
    head, written = 0, []
    for _ in range(2 * entries // batch):
        written.append(head)
        head = 0 if head >= last_head else head + batch
    lap = written[:entries // batch]
    assert lap == list(range(0, entries, batch))
    assert written[entries // batch:] == lap


def test_bfrt_not_imported():
    import sys
    assert "bfrt" not in sys.modules and "bfrt_grpc" not in sys.modules
