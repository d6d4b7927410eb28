#!/usr/bin/env python3
"""Independent oracle for dta-protocol: scapy builds random frames, this script writes them as JSON.

Scapy's own RoCE layer (scapy.contrib.roce) builds the BTH and computes the iCRC; RETH, AtomicETH and the
DTA headers are defined here from DESIGN.md's tables, not from the Rust code. Hashes come from zlib and a
bit-at-a-time CRC. The Rust test `protocol/tests/scapy_cross_check.rs` rebuilds every case with
dta-protocol and must produce the same bytes and accept scapy's iCRC.

Usage: scapy_vectors.py OUT.json [COUNT] [SEED]
"""
import json
import random
import sys
import zlib

from scapy.fields import (BitField, ByteField, FieldListField, IntField, LongField, ShortField,
                          StrLenField, XLongField, XIntField)
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw
from scapy.contrib.roce import BTH, AETH


class RETH(Packet):
    name = "RETH"
    fields_desc = [XLongField("va", 0), XIntField("rkey", 0), IntField("dma_len", 0)]


class AtomicETH(Packet):
    name = "AtomicETH"
    fields_desc = [XLongField("va", 0), XIntField("rkey", 0), LongField("swap_add", 0),
                   LongField("compare", 0)]


class AtomicAckETH(Packet):
    name = "AtomicAckETH"
    fields_desc = [LongField("orig", 0)]


class DTABaseSeq(Packet):
    fields_desc = [ByteField("opcode", 1), ByteField("seqnum", 0), BitField("immediate", 0, 1),
                   BitField("retransmit", 0, 1), BitField("reserved", 0, 6)]


class DTABaseCompact(Packet):
    fields_desc = [ByteField("opcode", 1), BitField("immediate", 0, 1), BitField("retransmit", 0, 1),
                   BitField("reserved", 0, 6)]


class KeyWrite(Packet):
    fields_desc = [ByteField("redundancy", 1), IntField("key", 0), StrLenField("data", b"")]


class Append(Packet):
    fields_desc = [IntField("list_id", 0), StrLenField("data", b"")]


class KeyIncrement(Packet):
    fields_desc = [ByteField("redundancy", 1), IntField("key", 0), LongField("counter", 0)]


class Postcard(Packet):
    fields_desc = [IntField("key", 0), ByteField("hop", 1), IntField("data", 0)]


class PostcardPathLen(Packet):
    fields_desc = [IntField("key", 0), ByteField("hop", 1), ByteField("path_len", 1), IntField("data", 0)]


class Sketch(Packet):
    fields_desc = [ByteField("sketch_id", 0), ByteField("op", 0), ShortField("reporter_id", 0),
                   ShortField("column", 0), ByteField("rows", 0), ByteField("reserved", 0),
                   FieldListField("counters", [], IntField("", 0), count_from=lambda p: p.rows)]


class Nack(Packet):
    fields_desc = [ByteField("seqnum", 0), BitField("nack", 1, 1), BitField("reserved", 0, 7)]


def mac(rng):
    return ":".join("%02x" % b for b in [0x02] + [rng.randrange(256) for _ in range(5)])


def ip(rng):
    return "198.%d.%d.%d" % (rng.choice([18, 19]), rng.randrange(256), rng.randrange(1, 255))


def endpoints(rng, dport):
    return {
        "src_mac": mac(rng), "dst_mac": mac(rng), "src_ip": ip(rng), "dst_ip": ip(rng),
        "src_port": rng.randrange(1024, 65536), "dst_port": dport,
        "dscp": rng.randrange(64), "ecn": rng.randrange(4), "ip_id": rng.randrange(65536),
        "ttl": rng.randrange(1, 256),
    }


def envelope(ep):
    # UDP checksum 0, as dta sends (RoCEv2 requires it; DTA reports may carry 0).
    return (Ether(src=ep["src_mac"], dst=ep["dst_mac"]) /
            IP(src=ep["src_ip"], dst=ep["dst_ip"], tos=(ep["dscp"] << 2) | ep["ecn"], id=ep["ip_id"],
               flags="DF", ttl=ep["ttl"]) /
            UDP(sport=ep["src_port"], dport=ep["dst_port"], chksum=0))


def rand_bytes(rng, n):
    return bytes(rng.randrange(256) for _ in range(n))


def roce_case(rng):
    ep = endpoints(rng, 4791)
    kind = rng.choice(["write", "write", "fetch_add", "ack", "atomic_ack"])
    qp, psn = rng.randrange(1 << 24), rng.randrange(1 << 24)
    ack_req = rng.randrange(2)
    case = {"kind": kind, "endpoints": ep, "dest_qp": qp, "psn": psn, "ack_req": ack_req}
    if kind == "write":
        va, rkey = rng.randrange(1 << 64), rng.randrange(1 << 32)
        payload = rand_bytes(rng, rng.randrange(0, 80))
        pad = (4 - len(payload) % 4) % 4
        pkt = envelope(ep) / BTH(opcode=0x0A, padcount=pad, dqpn=qp, ackreq=ack_req, psn=psn) / \
            RETH(va=va, rkey=rkey, dma_len=len(payload)) / Raw(payload + b"\0" * pad)
        case.update(va=va, rkey=rkey, payload=payload.hex())
    elif kind == "fetch_add":
        va, rkey, add = rng.randrange(1 << 61) * 8, rng.randrange(1 << 32), rng.randrange(1 << 64)
        pkt = envelope(ep) / BTH(opcode=0x14, dqpn=qp, ackreq=ack_req, psn=psn) / \
            AtomicETH(va=va, rkey=rkey, swap_add=add, compare=0)
        case.update(va=va, rkey=rkey, add=add)
    else:
        # AETH syndromes: ACK with credits, RNR NAK with a timer, NAK codes 0-3.
        syndrome = rng.choice([rng.randrange(32), 0x20 | rng.randrange(32), 0x60 | rng.randrange(4)])
        msn = rng.randrange(1 << 24)
        case.update(ack_req=0, syndrome=syndrome, msn=msn)
        if kind == "ack":
            pkt = envelope(ep) / BTH(opcode=0x11, dqpn=qp, psn=psn) / AETH(syndrome=syndrome, msn=msn)
        else:
            orig = rng.randrange(1 << 64)
            case["orig"] = orig
            pkt = envelope(ep) / BTH(opcode=0x12, dqpn=qp, psn=psn) / \
                AETH(syndrome=syndrome, msn=msn) / AtomicAckETH(orig=orig)
    case["frame"] = bytes(pkt).hex()
    return case


def report_case(rng):
    form = rng.choice(["seq", "compact"])
    ep = endpoints(rng, 40040)
    kw_len = rng.choice([4, 12, 28])
    ap_len = rng.choice([4, 8, 16])
    opcode = rng.choice([1, 2, 3, 4, 5, 6, "nack"])
    seq = rng.randrange(256)
    flags = {"immediate": rng.randrange(2), "retransmit": rng.randrange(2)}
    case = {"form": form, "endpoints": ep, "keywrite_data_len": kw_len, "append_entry_len": ap_len,
            "seqnum": seq, **flags}
    real_opcode = rng.randrange(1, 7) if opcode == "nack" else opcode

    def base(op):
        if form == "seq":
            return DTABaseSeq(opcode=op, seqnum=seq, **flags)
        return DTABaseCompact(opcode=op, **flags)

    if opcode == "nack":
        ep["dst_port"] = 40044
        flags.update(immediate=0, retransmit=0)
        case.update(kind="nack", opcode=real_opcode, immediate=0, retransmit=0)
        body = Nack(seqnum=seq, nack=1)
        hdr = base(real_opcode)
    else:
        case["opcode"] = opcode
        hdr = base(opcode)
        if opcode == 1:
            red, key, data = rng.randrange(1, 9), rng.randrange(1 << 32), rand_bytes(rng, kw_len)
            body = KeyWrite(redundancy=red, key=key, data=data)
            case.update(kind="keywrite", redundancy=red, key=key, data=data.hex())
        elif opcode == 2:
            lst, data = rng.randrange(1 << 32), rand_bytes(rng, ap_len)
            body = Append(list_id=lst, data=data)
            case.update(kind="append", list_id=lst, data=data.hex())
        elif opcode == 3:
            red, key, ctr = rng.randrange(1, 9), rng.randrange(1 << 32), rng.randrange(1 << 64)
            body = KeyIncrement(redundancy=red, key=key, counter=ctr)
            case.update(kind="keyincrement", redundancy=red, key=key, counter=ctr)
        elif opcode == 4:
            key, hop, data = rng.randrange(1 << 32), rng.randrange(1, 9), rng.randrange(1 << 32)
            body = Postcard(key=key, hop=hop, data=data)
            case.update(kind="postcard", key=key, hop=hop, data=data)
        elif opcode == 5:
            rows = rng.randrange(1, 9)
            counters = [rng.randrange(1 << 32) for _ in range(rows)]
            sid, op, rep, col = rng.randrange(256), rng.randrange(2), rng.randrange(1 << 16), rng.randrange(1 << 16)
            body = Sketch(sketch_id=sid, op=op, reporter_id=rep, column=col, rows=rows, counters=counters)
            case.update(kind="sketch", sketch_id=sid, op=op, reporter_id=rep, column=col, counters=counters)
        else:
            path_len = rng.randrange(1, 9)
            key, hop, data = rng.randrange(1 << 32), rng.randrange(1, path_len + 1), rng.randrange(1 << 32)
            body = PostcardPathLen(key=key, hop=hop, path_len=path_len, data=data)
            case.update(kind="postcard_path_len", key=key, hop=hop, path_len=path_len, data=data)
    case["frame"] = bytes(envelope(ep) / hdr / body).hex()
    return case


def reflected_crc(poly, data, init=0xFFFFFFFF, xorout=0xFFFFFFFF):
    rp = int("{:032b}".format(poly)[::-1], 2)
    c = init
    for b in data:
        c ^= b
        for _ in range(8):
            c = (c >> 1) ^ rp if c & 1 else c >> 1
    return c ^ xorout


# Placement: copy n uses its own polynomial (copy 0 is zlib's CRC-32), DESIGN.md section 3 as amended.
PLACEMENT_POLYS = [0x04C11DB7, 0xA833982B, 0xD419CC15, 0xBA0DC66B, 0xB39E201D, 0x725243AB, 0xD8046B21, 0x63A4CD11]
HOP_POLYS = [0x1e12a700, 0x65b96595, 0x49cf878b, 0x36518f0d, 0x7a40a908, 0x1edc6f41, 0x741b8cd7, 0x814141ab]


def hash_case(rng):
    key = rng.randrange(1 << 32)
    key_le = key.to_bytes(4, "little")
    slots = 1 << rng.randrange(1, 28)
    value = rng.randrange(1 << 32)
    return {
        "key": key, "slots": slots, "value": value,
        "checksum": zlib.crc32(key_le),
        "slot_indices": [reflected_crc(PLACEMENT_POLYS[n], key_le + bytes([n])) & (slots - 1) for n in range(8)],
        "hop_checksums": [reflected_crc(p, key_le) for p in HOP_POLYS],
        "g": reflected_crc(0x1EDC6F41, value.to_bytes(4, "big")),
    }


def main():
    out = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 2023)
    assert reflected_crc(0x04C11DB7, b"123456789") == zlib.crc32(b"123456789")
    assert reflected_crc(PLACEMENT_POLYS[0], b"\0" * 5) == zlib.crc32(b"\0" * 5)
    # scapy's own CNP test vector (a ConnectX-4 Lx CNP) must still give 82 fd 00 2a with this scapy.
    cnp = bytes.fromhex(
        "e41d2dab2bc27cfe90643b32080045c2003c718c4000401191610a0011010a001201000012b700280000"
        "8100ffff40000118000000000000000000000000000000000000000082fd002a")
    recomputed = Ether(cnp)
    del recomputed[BTH].icrc
    assert bytes(Ether(bytes(recomputed)))[-4:] == bytes.fromhex("82fd002a"), "scapy's CNP vector changed"
    data = {
        "roce": [roce_case(rng) for _ in range(count)],
        "reports": [report_case(rng) for _ in range(count)],
        "hashes": [hash_case(rng) for _ in range(count)],
        "cnp_frame": cnp.hex(),
    }
    with open(out, "w") as f:
        json.dump(data, f)
    print("scapy_vectors: %d RoCE frames, %d DTA reports, %d hash cases -> %s" % (count, count, count, out))


if __name__ == "__main__":
    main()
